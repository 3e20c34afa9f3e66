package linxent

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/variants"
)

// logitSpread is the standard deviation of the generated logits: w's
// bound is chosen from h so that z = x·wᵀ spreads this wide at every h.
const logitSpread = 2

// zlossLo and zlossHi bound the generated z-loss coefficient λ (above a
// trainer's 1e-4, so that validation sees its terms).
const (
	zlossLo = 0.01
	zlossHi = 0.1
)

// ignoreEvery: row r of the generated labels is ignored when
// (r + seed) mod ignoreEvery = ignoreEvery − 1.
const ignoreEvery = 8

// wBound is the bound of the generated weights, 3·spread/√h: with x
// uniform in [−1, 1], z has standard deviation logitSpread.
func wBound(h int) float64 { return 3 * logitSpread / math.Sqrt(float64(h)) }

// Inputs: x uniform in [−1, 1] and w uniform in [−wBound, wBound],
// rounded to the dtype; labels uniform in [0, v), every eighth row
// (offset by the seed) ignore_index; dloss uniform in [0.5, 2); n_valid
// the count of labels that are not ignored.
func (family) Inputs(s Shape, seed uint64) map[string][]float64 {
	key := variants.ShapeOf(s).Key()
	labels, valid := kernels.Labels(s.T, s.V, IgnoreIndex, ignoreEvery, seed, key+"/labels")
	b := wBound(s.H)
	in := map[string][]float64{
		"x":       kernels.Uniform(s.DType, s.T*s.H, -1, 1, seed, key+"/x"),
		"w":       kernels.Uniform(s.DType, s.V*s.H, -b, b, seed, key+"/w"),
		"labels":  labels,
		"dloss":   kernels.Uniform(dtype.F32, 1, 0.5, 2, seed, key+"/dloss"),
		"n_valid": {float64(valid)},
	}
	if s.DW == dwAdd {
		in["dw"] = kernels.Uniform(dtype.F32, s.V*s.H, -1, 1, seed, key+"/dw")
	}
	if s.zloss() {
		in["zloss_scale"] = kernels.Uniform(dtype.F32, 1, zlossLo, zlossHi, seed, key+"/zloss_scale")
	}
	return in
}

// Reference, per row in float64: z = x·wᵀ, lse = log Σ e^z, p = e^(z −
// lse); dx = g·Σ_c (F·p_c − ε/v − (1−ε)·[c = label])·w_c with F = 1 +
// 2λ·lse, loss = lse − (1−ε)·z_label − ε/v·Σz + λ·lse², both 0 on an
// ignored row (g = dloss/n_valid; λ = 0 without z-loss); lse on every
// row; dW the same coefficients times x. Rows go in blocks of
// refBlock, so each row of w is read once per block.
func (family) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	out := map[string][]float64{"dx": make([]float64, s.T*s.H), "lse": make([]float64, s.T), "loss": make([]float64, s.T)}
	kernels.ParallelRows(gen.CeilDiv(s.T, refBlock), func(b int) {
		refRows(s, in, out, b*refBlock, min(s.T, (b+1)*refBlock))
	})
	if s.DW != dwNone {
		out["dw"] = make([]float64, s.V*s.H)
		if s.DW == dwAdd {
			copy(out["dw"], in["dw"])
		}
		kernels.ParallelRows(gen.CeilDiv(s.V, refBlock), func(b int) {
			refDW(s, in, out["lse"], out["dw"], b*refBlock, min(s.V, (b+1)*refBlock))
		})
	}
	return out
}

// refDW adds classes c0..c1−1 of dW = Σ_r g·(p[r,c] − [c = label[r]])·x[r]
// into dw (ignored rows add nothing), from the rows' lse.
func refDW(s Shape, in map[string][]float64, lse, dw []float64, c0, c1 int) {
	x, w, labels := in["x"], in["w"], in["labels"]
	g := in["dloss"][0] / in["n_valid"][0]
	lambda, eps := zlossScale(s, in), s.eps()
	h := s.H
	for c := c0; c < c1; c++ {
		wc, d := w[c*h:(c+1)*h], dw[c*h:(c+1)*h]
		for r := range s.T {
			lab := int(labels[r])
			if lab == IgnoreIndex {
				continue
			}
			xr := x[r*h : (r+1)*h]
			k := g * ((1+2*lambda*lse[r])*math.Exp(dot(xr, wc)-lse[r]) - eps/float64(s.V))
			if lab == c {
				k -= g * (1 - eps)
			}
			for j, xv := range xr {
				d[j] += k * xv
			}
		}
	}
}

// refBlock is the rows the reference takes together.
const refBlock = 16

// refRows computes rows r0..r1−1 of the reference into out.
func refRows(s Shape, in, out map[string][]float64, r0, r1 int) {
	x, w, labels := in["x"], in["w"], in["labels"]
	g := in["dloss"][0] / in["n_valid"][0]
	lambda, eps := zlossScale(s, in), s.eps()
	h, v, n := s.H, s.V, r1-r0
	z := make([]float64, n*v)
	logitsOf(x, w, z, h, v, r0, n)
	coef := make([]float64, n*v) // g·p, 0 on an ignored row
	for i := range n {
		r, zr := r0+i, z[i*v:(i+1)*v]
		top := math.Inf(-1)
		for _, zc := range zr {
			top = math.Max(top, zc)
		}
		sum := 0.0
		for _, zc := range zr {
			sum += math.Exp(zc - top)
		}
		lse := top + math.Log(sum)
		out["lse"][r] = lse
		lab := int(labels[r])
		if lab == IgnoreIndex {
			continue
		}
		sumz := 0.0
		for _, zc := range zr {
			sumz += zc
		}
		out["loss"][r] = lse - (1-eps)*zr[lab] - eps/float64(v)*sumz + lambda*lse*lse
		f := 1 + 2*lambda*lse
		for c, zc := range zr {
			coef[i*v+c] = g * (f*math.Exp(zc-lse) - eps/float64(v))
		}
		coef[i*v+lab] -= g * (1 - eps)
	}
	addGrads(out["dx"], w, coef, h, v, r0, n)
}

// zlossScale is λ, 0 without z-loss.
func zlossScale(s Shape, in map[string][]float64) float64 {
	if !s.zloss() {
		return 0
	}
	return in["zloss_scale"][0]
}

// dot is Σ a·b over four running sums, so that the additions overlap
// instead of waiting on one another.
func dot(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Tolerance (u = 2⁻²⁴, the terms of errs, W = wBound, λmax = zlossHi
// with z-loss, else 0; ε the label smoothing):
//
//	lse   Atol = E_lse
//	loss  Atol = E_lse + E_z + ε·(E_z + zmax·(chunks + 64)·u)
//	      + λmax·(2·zmax·E_lse + 4·zmax²·u)
//	dx    Atol = gmax·W·(f·(ε_P + 2·E_z + 64u·(chunks + 16)) + 2·λmax·E_lse)
//	      + gmax·ε·W·(⌈v/256⌉ + 64)·u, plus the rounding of dx's dtype
//
// P's rounding moves Σ p·w by at most ε_P·Σ p·|w| ≤ ε_P·W, the logits'
// errors move p by a factor of at most e^(2·E_z), F's relative error is
// 2·λmax·E_lse, and Σz and the column sums of w are f32 sums in chunks.
func (family) Tolerance(s Shape, buffer string) kernels.Tolerance {
	e := errorsOf(s)
	switch buffer {
	case "lse":
		return kernels.Tolerance{Atol: e.lse}
	case "loss":
		zl := 0.0
		if s.zloss() {
			zl = zlossHi * (2*e.zmax*e.lse + 4*e.zmax*e.zmax*kernels.U32)
		}
		smooth := s.eps() * (e.z + e.zmax*(e.chunks+64)*kernels.U32)
		return kernels.Tolerance{Atol: e.lse + e.z + smooth + zl}
	case "dw":
		return dwTolerance(s, e)
	}
	w := wBound(s.H)
	a := e.gmax * w * (e.f*(e.p+2*e.z+64*kernels.U32*(e.chunks+16)) + 2*zlossOf(s)*e.lse)
	a += e.gmax * s.eps() * w * (float64(gen.CeilDiv(s.V, 8*wsumSplits)) + 64) * kernels.U32
	return kernels.StoreTol(kernels.Tolerance{Atol: a}, s.DType)
}

// errs are the error terms of a shape's tolerances: a logit's f32 error
// z = γ·Z (Z = h·wBound bounds Σ|x·w|, γ the GEMM's (2·⌈h/16⌉ + 2)·2⁻²³),
// lse's (2·z plus 64u per chunk of 256 and per unit of zmax, the rescales'
// and ex2/lg2 errors), zmax = 6·logitSpread + ln v bounding |z| and
// |lse| but for six-sigma events, the chunks of 256, gmax = 2/max(1, t −
// ⌈t/8⌉) bounding g, p the unit roundoff of the probabilities' dtype
// (2⁻⁹ bf16, 2⁻¹² f16) and f = 1 + 2·λmax·zmax bounding z-loss's factor F
// (1 without).
type errs struct {
	z, lse, zmax, chunks, gmax, p, f float64
}

func errorsOf(s Shape) errs {
	e := errs{z: (2*math.Ceil(float64(s.H)/16) + 2) * 0x1p-23 * float64(s.H) * wBound(s.H),
		chunks: float64(gen.CeilDiv(s.V, 256)), zmax: 6*logitSpread + math.Log(float64(s.V)),
		gmax: 2 / math.Max(1, float64(s.T-gen.CeilDiv(s.T, ignoreEvery))), p: 0x1p-9}
	e.lse = 2*e.z + 64*kernels.U32*(e.zmax+e.chunks)
	if s.DType == dtype.F16 {
		e.p = 0x1p-12
	}
	e.f = 1 + 2*zlossOf(s)*e.zmax
	return e
}

// zlossOf is λmax with z-loss, else 0.
func zlossOf(s Shape) float64 {
	if s.zloss() {
		return zlossHi
	}
	return 0
}

// dwTolerance: G = g·(p − onehot) is rounded to the dtype (ε_P) after p
// took the logits' and lse's errors (a factor e^(E_z + E_lse)), so
// |ΔdW[c]| ≤ gmax·(ε_P + 2·(E_z + E_lse))·Σ_r (p[r,c] + [c = label[r]])
// (|x| ≤ 1), plus the f32 sum over t rows (t·2⁻²³ of each term) and, with
// dw=2, the rounding of the sum with the initial value (|dw| ≤ 1 + the
// term, u each). Σ_r p[r,c], a sum of t softmax entries of mean 1/v and
// second moment at most e^(σ²)/v² (σ = logitSpread, logits near normal),
// is taken at most t/v + 12·√(t·e^(σ²))/v + 1 (twelve deviations and one
// entry near 1) and never more than t; the labels of one class are at
// most L = t/v + 6·√(t/v) + 6.
func dwTolerance(s Shape, e errs) kernels.Tolerance {
	t, v := float64(s.T), float64(s.V)
	probs := math.Min(t, t/v+12*math.Sqrt(t*math.Exp(logitSpread*logitSpread))/v+1)
	mass := e.f*probs + t/v + 6*math.Sqrt(t/v) + 6 + t*s.eps()/v
	a := e.gmax*mass*(e.p+2*(e.z+e.lse)+t*0x1p-23) + e.gmax*probs*2*zlossOf(s)*e.lse + 4*kernels.U32
	return kernels.Tolerance{Atol: a, Rtol: 2 * kernels.U32}
}
