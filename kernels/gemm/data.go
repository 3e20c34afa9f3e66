package gemm

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
)

// exactMaxL is the longest reduction whose shapes get exact-integer
// inputs (see the package doc, Validation).
const exactMaxL = 1024

// maxSplits bounds the split-K factor; the tolerance counts the reduce's
// additions with it.
const maxSplits = 16

// exact reports whether s is of the exact-integer class.
func (s Shape) exact() bool { return problemOf(s).l <= exactMaxL }

// Inputs: integers in −3..3 for the exact class, uniform in [−1, 1)
// rounded to the dtype otherwise.
func (def) Inputs(s Shape, seed uint64) map[string][]float64 {
	p := problemOf(s)
	key := "gemm_bwd/"
	gen := func(buf string, n int) []float64 {
		if !s.exact() {
			return kernels.Uniform(s.DType, n, -1, 1, seed, key+buf)
		}
		v := kernels.Uniform(dtype.F64, n, -3, 4, seed, key+buf)
		for i := range v {
			v[i] = math.Floor(v[i])
		}
		return v
	}
	return map[string][]float64{
		"dy":    gen("dy", s.M*s.N),
		p.b.buf: gen(p.b.buf, p.l*p.c),
	}
}

// Reference computes the product in float64, rows in parallel. For the
// exact class it is rounded to the output dtype (the kernels' f32 sums are
// exact, so their rounded outputs match it bit for bit); otherwise it is
// the float64 value.
func (def) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	p := problemOf(s)
	a, b := in["dy"], in[p.b.buf]
	out := make([]float64, p.r*p.c)
	kernels.ParallelRows(p.r, func(i int) { refRow(p, a, b, out[i*p.c:(i+1)*p.c], i) })
	if s.exact() {
		for i, v := range out {
			out[i] = p.od.Round(v)
		}
	}
	return map[string][]float64{p.out: out}
}

// refRow computes row i of C: Σ_k A[i][k]·B[k][:].
func refRow(p problem, a, b []float64, c []float64, i int) {
	for k := range p.l {
		av := a[p.a.index(i, k)]
		if av == 0 {
			continue
		}
		brow := b[k*p.b.ld : k*p.b.ld+p.c]
		for j, bv := range brow {
			c[j] += av * bv
		}
	}
}

// Tolerance: zero for the exact class. Otherwise, with |a|, |b| ≤ 1 so
// that Σ_k|a·b| ≤ L, the f32 sum is within γ·L of the exact one, γ =
// (2·⌈L/16⌉ + maxSplits)·2⁻²³ (products are exact in f32; each k16 step
// of a tensor-core MMA may truncate its block sum and its addition to the
// accumulator, one ulp each; the split-K reduce adds at most maxSplits
// partials), widened by the output's rounding.
func (def) Tolerance(s Shape, _ string) kernels.Tolerance {
	if s.exact() {
		return kernels.Tolerance{}
	}
	l := float64(problemOf(s).l)
	gamma := (2*math.Ceil(l/16) + maxSplits) * 0x1p-23
	return kernels.StoreTol(kernels.Tolerance{Atol: gamma * l}, s.outDType())
}
