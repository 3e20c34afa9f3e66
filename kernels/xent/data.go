package xent

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/variants"
)

// logit bounds the generated logits: uniform in [−logit, logit].
const logit = 8

// zlossLo and zlossHi bound the generated z-loss coefficient λ: larger
// than a trainer's (1e-4 typically), so that validation sees its terms.
const (
	zlossLo = 0.01
	zlossHi = 0.1
)

// ignoreEvery: row r of the generated labels is ignored when
// (r + seed) mod ignoreEvery = ignoreEvery − 1.
const ignoreEvery = 8

// Inputs: logits uniform in [−8, 8] rounded to the dtype; labels uniform
// in [0, v), every eighth row (from an offset set by the seed)
// ignore_index; dloss uniform in [0.5, 2) (f32); n_valid the count of
// the labels that are not ignore_index; zloss_scale (zloss=1) uniform in
// [0.01, 0.1) (f32).
func (family) Inputs(s Shape, seed uint64) map[string][]float64 {
	key := variants.ShapeOf(s).Key()
	labels, valid := kernels.Labels(s.T, s.V, IgnoreIndex, ignoreEvery, seed, key+"/labels")
	in := map[string][]float64{
		"logits":  kernels.Uniform(s.DType, s.T*s.V, -logit, logit, seed, key+"/logits"),
		"labels":  labels,
		"dloss":   kernels.Uniform(dtype.F32, 1, 0.5, 2, seed, key+"/dloss"),
		"n_valid": {float64(valid)},
	}
	if s.zloss() {
		in["zloss_scale"] = kernels.Uniform(dtype.F32, 1, zlossLo, zlossHi, seed, key+"/zloss_scale")
	}
	return in
}

// Reference: per row, lse = max + ln Σ e^(z − max), p = e^(z − lse);
// dlogits = dloss/n_valid·(p·(1 + 2λ·lse) − ε/v − (1−ε)·[c = label])
// and loss = lse − (1−ε)·z[label] − ε/v·Σz + λ·lse², both zero where
// the label is ignore_index (λ = zloss_scale, 0 without z-loss).
func (family) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	z, labels := in["logits"], in["labels"]
	eps, v, lambda := s.eps(), s.V, 0.0
	if s.zloss() {
		lambda = in["zloss_scale"][0]
	}
	g := in["dloss"][0] / in["n_valid"][0]
	out := map[string][]float64{"dlogits": make([]float64, s.T*v), "lse": make([]float64, s.T), "loss": make([]float64, s.T)}
	kernels.ParallelRows(s.T, func(r int) {
		row, d := z[r*v:(r+1)*v], out["dlogits"][r*v:(r+1)*v]
		top, sum, sumz := math.Inf(-1), 0.0, 0.0
		for _, x := range row {
			top = math.Max(top, x)
			sumz += x
		}
		for _, x := range row {
			sum += math.Exp(x - top)
		}
		lse := top + math.Log(sum)
		out["lse"][r] = lse
		lab := int(labels[r])
		if lab == IgnoreIndex {
			return
		}
		out["loss"][r] = lse - (1-eps)*row[lab] - eps/float64(v)*sumz + lambda*lse*lse
		f := 1 + 2*lambda*lse
		for c, x := range row {
			d[c] = g * (math.Exp(x-lse)*f - eps/float64(v))
		}
		d[lab] -= g * (1 - eps)
	})
	if s.grad() != "dlogits" {
		out[s.grad()] = out["dlogits"]
		delete(out, "dlogits")
	}
	return out
}

// Tolerance (u = 2⁻²⁴, K = 4·I + 160 with I the most loop iterations of a
// thread in the space, ⌈⌈v/vec_min⌉/128⌉, pmax the six-sigma bound of
// the generated softmax, gmax = 2/max(1, t − ⌈t/8⌉), lmax = 8 + ln v
// bounding |lse|; with z-loss λmax = 0.1 bounds λ, F = 1 + 2·λmax·lmax
// the factor on p, and Rz = R + 2·λmax·E_lse + 3u adds the factor's
// relative error to R; without, λmax = 0, F = 1 and Rz = R):
//
//	dlogits  Atol = gmax·(pmax·F·Rz + 4u), Rtol = Rz, R = (K + 192)·u,
//	         plus the rounding of the stored dtype
//	lse      Atol = E_lse = (K + 200 + 4·lmax)·u
//	loss     Atol = E_lse + (16 + 8·ε·K + 4·(lmax + 8))·u
//	         + λmax·(2·lmax·E_lse + 4·lmax²·u)
func (family) Tolerance(s Shape, buffer string) kernels.Tolerance {
	k := chain(s)
	lmax := logit + math.Log(float64(s.V))
	lse := (k + 200 + 4*lmax) * kernels.U32
	lambda := 0.0
	if s.zloss() {
		lambda = zlossHi
	}
	switch buffer {
	case "lse":
		return kernels.Tolerance{Atol: lse}
	case "loss":
		zl := lambda * (2*lmax*lse + 4*lmax*lmax*kernels.U32)
		return kernels.Tolerance{Atol: lse + (16+8*s.eps()*k+4*(lmax+logit))*kernels.U32 + zl}
	}
	r := (k + 192) * kernels.U32
	if s.zloss() {
		r += 2*lambda*lse + 3*kernels.U32
	}
	gmax := 2 / math.Max(1, float64(s.T-gen.CeilDiv(s.T, ignoreEvery)))
	f := 1 + 2*lambda*lmax
	return kernels.StoreTol(kernels.Tolerance{Atol: gmax * (pMax(s)*f*r + 4*kernels.U32), Rtol: r}, s.DType)
}

// chain bounds the relative error of a row's sum of exponentials in
// units of u: 4u per loop iteration of the thread with the most (one
// fma, and an ex2 when the maximum grows), plus the pairwise sums of an
// iteration, the CTA's merges and the gradient kernel's.
func chain(s Shape) float64 {
	vecMin := max(1, wideVec(s)/2)
	iters := gen.CeilDiv(gen.CeilDiv(s.V, vecMin), minBlock)
	return float64(4*iters + 160)
}

// pMax bounds the softmax of the generated logits: e^L/S, with S at
// least e^L + (v−1)·e^−L and, but for a six-sigma event, v·μ − 6·√v·σ
// (μ and σ² the mean and variance of e^z for z uniform in [−L, L]).
func pMax(s Shape) float64 {
	n := float64(s.V)
	const l = logit
	mu := math.Sinh(l) / l
	sigma := math.Sqrt(math.Sinh(2*l)/(2*l) - mu*mu)
	sum := math.Max(math.Exp(l)+(n-1)*math.Exp(-l), n*mu-6*math.Sqrt(n)*sigma)
	return math.Min(1, math.Exp(l)/sum)
}
