package gemm

import (
	"math"

	"github.com/gradtune/gradtune/kernels"
)

// maxSplits bounds the split-K factor; the tolerance counts the reduce's
// additions with it.
const maxSplits = 16

// Inputs: uniform in [−1, 1) rounded to the dtype (the exact set is
// ExactInputs').
func (def) Inputs(s Shape, seed uint64) map[string][]float64 {
	p := problemOf(s)
	key := "gemm_bwd/"
	in := map[string][]float64{
		"dy":    kernels.Uniform(s.DType, s.M*s.N, -1, 1, seed, key+"dy"),
		p.b.buf: kernels.Uniform(s.DType, p.l*p.c, -1, 1, seed, key+p.b.buf),
	}
	if s.LoRA > 0 {
		in[loraH] = kernels.Uniform(s.DType, s.M*s.LoRA, -1, 1, seed, key+loraH)
		in[loraA] = kernels.Uniform(s.DType, s.LoRA*s.K, -1, 1, seed, key+loraA)
	}
	return in
}

// Reference computes the product in float64, rows in parallel, skipping
// zeros of A (the exact inputs' pattern), plus dh·A with an adapter. The runner rounds it to the
// output dtype for the exact inputs (their f32 sums are exact, so the
// rounded outputs match it bit for bit).
func (def) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	p := problemOf(s)
	a, b := in["dy"], in[p.b.buf]
	out := make([]float64, p.r*p.c)
	lora := problem{r: p.r, c: p.c, l: s.LoRA, a: operand{kMajor: true, ld: s.LoRA}, b: operand{ld: p.c}}
	kernels.ParallelRows(p.r, func(i int) {
		refRow(p, a, b, out[i*p.c:(i+1)*p.c], i)
		if s.LoRA > 0 {
			refRow(lora, in[loraH], in[loraA], out[i*p.c:(i+1)*p.c], i)
		}
	})
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

// Tolerance of the random inputs (L counts the adapter's rank too): with
// |a|, |b| ≤ 1 so that Σ_k|a·b| ≤ L,
// the f32 sum is within γ·L of the exact one, γ = (2·⌈L/16⌉ +
// maxSplits)·2⁻²³ (products are exact in f32; each k16 step of a
// tensor-core MMA may truncate its block sum and its addition to the
// accumulator, one ulp each; the split-K reduce adds at most maxSplits
// partials), widened by the output's rounding. The exact inputs are held
// to zero.
func (def) Tolerance(s Shape, _ string) kernels.Tolerance {
	l := float64(problemOf(s).l + s.LoRA)
	gamma := (2*math.Ceil(l/16) + maxSplits) * 0x1p-23
	return kernels.StoreTol(kernels.Tolerance{Atol: gamma * l}, s.outDType())
}
