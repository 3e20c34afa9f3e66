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

// ignoreEvery: row r of the generated labels is ignored when
// (r + seed) mod ignoreEvery = ignoreEvery − 1.
const ignoreEvery = 8

// Inputs: logits uniform in [−8, 8] rounded to the dtype; labels uniform
// in [0, v), every eighth row (from an offset set by the seed)
// ignore_index; dloss uniform in [0.5, 2) (f32); n_valid the count of
// the labels that are not ignore_index.
func (family) Inputs(s Shape, seed uint64) map[string][]float64 {
	key := variants.ShapeOf(s).Key()
	labels := kernels.Uniform(dtype.F64, s.T, 0, float64(s.V), seed, key+"/labels")
	valid := 0
	for r := range labels {
		labels[r] = math.Floor(labels[r])
		if (uint64(r)+seed)%ignoreEvery == ignoreEvery-1 {
			labels[r] = IgnoreIndex
		} else {
			valid++
		}
	}
	return map[string][]float64{
		"logits":  kernels.Uniform(s.DType, s.T*s.V, -logit, logit, seed, key+"/logits"),
		"labels":  labels,
		"dloss":   kernels.Uniform(dtype.F32, 1, 0.5, 2, seed, key+"/dloss"),
		"n_valid": {float64(valid)},
	}
}

// Reference: per row, lse = max + ln Σ e^(z − max), p = e^(z − lse);
// dlogits = dloss/n_valid·(p − ε/v − (1−ε)·[c = label]) and loss =
// lse − (1−ε)·z[label] − ε/v·Σz, both zero where the label is
// ignore_index.
func (family) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	z, labels := in["logits"], in["labels"]
	eps, v := s.eps(), s.V
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
		out["loss"][r] = lse - (1-eps)*row[lab] - eps/float64(v)*sumz
		for c, x := range row {
			d[c] = g * (math.Exp(x-lse) - eps/float64(v))
		}
		d[lab] -= g * (1 - eps)
	})
	return out
}

// Tolerance (u = 2⁻²⁴, K = 4·I + 160 with I the most loop iterations of a
// thread in the space, ⌈⌈v/vec_min⌉/128⌉, pmax the six-sigma bound of
// the generated softmax, gmax = 2/max(1, t − ⌈t/8⌉), lmax = 8 + ln v):
//
//	dlogits  Atol = gmax·(pmax·R + 4u), Rtol = R, R = (K + 192)·u,
//	         plus the rounding of the stored dtype
//	lse      Atol = (K + 200 + 4·lmax)·u
//	loss     Atol = lse's + (16 + 8·ε·K + 4·(lmax + 8))·u
func (family) Tolerance(s Shape, buffer string) kernels.Tolerance {
	k := chain(s)
	lmax := logit + math.Log(float64(s.V))
	lse := (k + 200 + 4*lmax) * kernels.U32
	switch buffer {
	case "lse":
		return kernels.Tolerance{Atol: lse}
	case "loss":
		return kernels.Tolerance{Atol: lse + (16+8*s.eps()*k+4*(lmax+logit))*kernels.U32}
	}
	r := (k + 192) * kernels.U32
	gmax := 2 / math.Max(1, float64(s.T-gen.CeilDiv(s.T, ignoreEvery)))
	return kernels.StoreTol(kernels.Tolerance{Atol: gmax * (pMax(s)*r + 4*kernels.U32), Rtol: r}, s.DType)
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
