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
	return in
}

// Reference, per row in float64: z = x·wᵀ, lse = log Σ e^z, p = e^(z −
// lse); dx = g·(Σ_c p_c·w_c − w_label), loss = lse − z_label, both 0 on an
// ignored row (g = dloss/n_valid); lse on every row. Rows go in blocks of
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
	h := s.H
	for c := c0; c < c1; c++ {
		wc, d := w[c*h:(c+1)*h], dw[c*h:(c+1)*h]
		for r := range s.T {
			lab := int(labels[r])
			if lab == IgnoreIndex {
				continue
			}
			xr := x[r*h : (r+1)*h]
			k := g * math.Exp(dot(xr, wc)-lse[r])
			if lab == c {
				k -= g
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
	h, v, n := s.H, s.V, r1-r0
	z := make([]float64, n*v)
	for c := range v {
		wc := w[c*h : (c+1)*h]
		for i := range n {
			z[i*v+c] = dot(x[(r0+i)*h:(r0+i+1)*h], wc)
		}
	}
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
		out["loss"][r] = lse - zr[lab]
		for c, zc := range zr {
			coef[i*v+c] = g * math.Exp(zc-lse)
		}
		coef[i*v+lab] -= g
	}
	for c := range v {
		wc := w[c*h : (c+1)*h]
		for i := range n {
			if k := coef[i*v+c]; k != 0 {
				d := out["dx"][(r0+i)*h : (r0+i+1)*h]
				for j, wv := range wc {
					d[j] += k * wv
				}
			}
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, av := range a {
		s += av * b[i]
	}
	return s
}

// Tolerance (u = 2⁻²⁴, ε_P the unit roundoff of the probabilities'
// dtype, 2⁻⁹ for bf16 and 2⁻¹² for f16; Z = h·wBound bounds Σ|x·w| of a
// logit, so a logit's f32 error is at most E_z = γ·Z with γ the GEMM's
// (2·⌈h/16⌉ + 2)·2⁻²³; zmax = 6·logitSpread + ln v a six-sigma bound on
// |lse|; W = wBound):
//
//	lse   Atol = 2·E_z + 64u·(zmax + ⌈v/chunk_min⌉)   (the row's rescales, ex2/lg2)
//	loss  Atol = lse's + E_z
//	dx    Atol = gmax·W·(ε_P + 2·E_z + 64u·(⌈v/chunk_min⌉ + ⌈v/16⌉/v·16)),
//	      plus the rounding of dx's dtype
//
// with gmax = 2/max(1, t − ⌈t/8⌉): P's rounding moves Σ p·w by at most
// ε_P·Σ p·|w| ≤ ε_P·W, and the logits' errors move p by a factor of at
// most e^(2·E_z).
func (family) Tolerance(s Shape, buffer string) kernels.Tolerance {
	ez := (2*math.Ceil(float64(s.H)/16) + 2) * 0x1p-23 * float64(s.H) * wBound(s.H)
	chunks := float64(gen.CeilDiv(s.V, 256))
	zmax := 6*logitSpread + math.Log(float64(s.V))
	lse := 2*ez + 64*kernels.U32*(zmax+chunks)
	switch buffer {
	case "lse":
		return kernels.Tolerance{Atol: lse}
	case "loss":
		return kernels.Tolerance{Atol: lse + ez}
	case "dw":
		return dwTolerance(s, ez, lse)
	}
	eps := 0x1p-9
	if s.DType == dtype.F16 {
		eps = 0x1p-12
	}
	gmax := 2 / math.Max(1, float64(s.T-gen.CeilDiv(s.T, ignoreEvery)))
	a := gmax * wBound(s.H) * (eps + 2*ez + 64*kernels.U32*(chunks+16))
	return kernels.StoreTol(kernels.Tolerance{Atol: a}, s.DType)
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
func dwTolerance(s Shape, ez, lse float64) kernels.Tolerance {
	eps := 0x1p-9
	if s.DType == dtype.F16 {
		eps = 0x1p-12
	}
	t, v := float64(s.T), float64(s.V)
	gmax := 2 / math.Max(1, t-float64(gen.CeilDiv(s.T, ignoreEvery)))
	probs := math.Min(t, t/v+12*math.Sqrt(t*math.Exp(logitSpread*logitSpread))/v+1)
	mass := probs + t/v + 6*math.Sqrt(t/v) + 6
	a := gmax*mass*(eps+2*(ez+lse)+t*0x1p-23) + 4*kernels.U32
	return kernels.Tolerance{Atol: a, Rtol: 2 * kernels.U32}
}
