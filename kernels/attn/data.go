package attn

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// idx is the element (token t of sequence bi, head h, column c) of a
// token-major [b·s, heads, d] tensor.
func (s Shape) idx(bi, t, heads, h, c int) int { return ((bi*s.S+t)*heads+h)*s.D + c }

// visible: key j is seen by query i (always, or j ≤ i when causal).
func (s Shape) visible(i, j int) bool { return s.Causal == 0 || j <= i }

// scores is S_ij = scale·q_i·k_j of query head h of sequence bi, [s × s],
// from the rounded inputs.
func (s Shape) scores(q, k []float64, bi, h int) []float64 {
	g := s.HQ / s.HK
	scale := 1 / math.Sqrt(float64(s.D))
	out := make([]float64, s.S*s.S)
	for i := range s.S {
		qi := q[s.idx(bi, i, s.HQ, h, 0):][:s.D]
		for j := range s.S {
			kj := k[s.idx(bi, j, s.HK, h/g, 0):][:s.D]
			var acc float64
			for c, x := range qi {
				acc += x * kj[c]
			}
			out[i*s.S+j] = acc * scale
		}
	}
	return out
}

// Inputs: q, k, v and dO uniform in [−1, 1) rounded to the dtype; o and
// lse from the forward in float64 on the rounded q, k, v: lse_i = log
// Σ_j exp(S_ij) over the visible keys (rounded to f32), o = softmax(S)·v
// rounded to the dtype.
func (family) Inputs(s Shape, seed uint64) map[string][]float64 {
	key := variants.ShapeOf(s).Key() + "/"
	u := func(name string, heads int) []float64 {
		return kernels.Uniform(s.DType, s.B*s.S*heads*s.D, -1, 1, seed, key+name)
	}
	q, k, v, do := u("q", s.HQ), u("k", s.HK), u("v", s.HK), u("do", s.HQ)
	o := make([]float64, len(q))
	lse := make([]float64, s.B*s.HQ*s.S)
	g := s.HQ / s.HK
	kernels.ParallelRows(s.B*s.HQ, func(bh int) {
		bi, h := bh/s.HQ, bh%s.HQ
		sc := s.scores(q, k, bi, h)
		for i := range s.S {
			m := math.Inf(-1)
			for j := range s.S {
				if s.visible(i, j) {
					m = math.Max(m, sc[i*s.S+j])
				}
			}
			var sum float64
			acc := make([]float64, s.D)
			for j := range s.S {
				if !s.visible(i, j) {
					continue
				}
				e := math.Exp(sc[i*s.S+j] - m)
				sum += e
				for c, x := range v[s.idx(bi, j, s.HK, h/g, 0):][:s.D] {
					acc[c] += e * x
				}
			}
			lse[bh*s.S+i] = dtype.F32.Round(m + math.Log(sum))
			for c := range acc {
				o[s.idx(bi, i, s.HQ, h, c)] = s.DType.Round(acc[c] / sum)
			}
		}
	})
	return map[string][]float64{"q": q, "k": k, "v": v, "o": o, "do": do, "lse": lse}
}

// Reference, in float64 from the inputs as given (lse as rounded, D from
// the rounded o): P = exp(S − lse) on the visible keys, dV = Σ_g Pᵀ·dO,
// dP = dO·Vᵀ, D = rowsum(dO ⊙ O), dS = P ⊙ (dP − D), dQ = dS·K·scale,
// dK = Σ_g dSᵀ·Q·scale.
func (family) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	q, k, v, o, do, lse := in["q"], in["k"], in["v"], in["o"], in["do"], in["lse"]
	g := s.HQ / s.HK
	scale := 1 / math.Sqrt(float64(s.D))
	dq := make([]float64, len(q))
	// per query head's dK, dV contributions, summed over each group after
	dkh := make([][]float64, s.B*s.HQ)
	dvh := make([][]float64, s.B*s.HQ)
	kernels.ParallelRows(s.B*s.HQ, func(bh int) {
		bi, h := bh/s.HQ, bh%s.HQ
		kv := h / g
		dk, dv := make([]float64, s.S*s.D), make([]float64, s.S*s.D)
		sc := s.scores(q, k, bi, h)
		for i := range s.S {
			doi := do[s.idx(bi, i, s.HQ, h, 0):][:s.D]
			var d float64
			for c, x := range o[s.idx(bi, i, s.HQ, h, 0):][:s.D] {
				d += x * doi[c]
			}
			qi := q[s.idx(bi, i, s.HQ, h, 0):][:s.D]
			dqi := dq[s.idx(bi, i, s.HQ, h, 0):][:s.D]
			for j := range s.S {
				if !s.visible(i, j) {
					continue
				}
				p := math.Exp(sc[i*s.S+j] - lse[bh*s.S+i])
				vj := v[s.idx(bi, j, s.HK, kv, 0):][:s.D]
				kj := k[s.idx(bi, j, s.HK, kv, 0):][:s.D]
				var dp float64
				for c, x := range doi {
					dp += x * vj[c]
					dv[j*s.D+c] += p * x
				}
				ds := p * (dp - d) * scale
				for c := range s.D {
					dqi[c] += ds * kj[c]
					dk[j*s.D+c] += ds * qi[c]
				}
			}
		}
		dkh[bh], dvh[bh] = dk, dv
	})
	dk, dv := make([]float64, s.B*s.S*s.HK*s.D), make([]float64, s.B*s.S*s.HK*s.D)
	for bh := range s.B * s.HQ {
		bi, h := bh/s.HQ, bh%s.HQ
		for j := range s.S {
			for c := range s.D {
				e := s.idx(bi, j, s.HK, h/g, c)
				dk[e] += dkh[bh][j*s.D+c]
				dv[e] += dvh[bh][j*s.D+c]
			}
		}
	}
	return map[string][]float64{"dq": dq, "dk": dk, "dv": dv}
}

// Tolerance: see tolerance.go.
func (family) Tolerance(s Shape, buffer string) kernels.Tolerance {
	return kernels.StoreTol(kernels.Tolerance{Atol: atol(s, buffer)}, s.DType)
}
