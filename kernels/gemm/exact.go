package gemm

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
)

// exactLimit bounds the partial sums of the exact inputs: every one is an
// integer of magnitude below 2²⁴, so f32 holds it exactly.
const exactLimit = 1 << 24

// ExactInputs (kernels.Exacter): nonzero integers in −3..3 while
// 9·L < 2²⁴, else ±1 in an ExactPattern of at most 2²⁴ − 1 terms an
// output; false only where r·c outputs cannot carry all L reduction
// indices that way (L ≥ 2²⁴ over fewer than ⌈L/(2²⁴−1)⌉ outputs), and
// with an adapter where the pattern is not dense (L counts its rank). See
// the package doc, Validation.
func (def) ExactInputs(s Shape, seed uint64) (map[string][]float64, bool) {
	p := problemOf(s)
	l := p.l + s.LoRA
	v := 3
	if 9*l >= exactLimit {
		v = 1
	}
	pat, ok := NewExactPattern(p.r, p.c, l, (exactLimit-1)/(v*v))
	if !ok || s.LoRA > 0 && !pat.Dense() {
		return nil, false
	}
	key := "gemm_bwd/exact/"
	a := ExactValues(v, s.M*s.N, seed, key+"dy")
	b := ExactValues(v, p.l*p.c, seed, key+p.b.buf)
	if !pat.Dense() {
		for i := range p.r {
			for k := range p.l {
				if !pat.A(i, k) {
					a[p.a.index(i, k)] = 0
				}
			}
		}
		for k := range p.l {
			for j := range p.c {
				if !pat.B(k, j) {
					b[k*p.b.ld+j] = 0
				}
			}
		}
	}
	in := map[string][]float64{"dy": a, p.b.buf: b}
	if s.LoRA > 0 {
		in[loraH] = ExactValues(v, s.M*s.LoRA, seed, key+loraH)
		in[loraA] = ExactValues(v, s.LoRA*s.K, seed, key+loraA)
	}
	return in, true
}

// ExactValues returns n integers drawn uniformly from ±1 .. ±v (never 0,
// so every product of two of them is nonzero), from a generator seeded
// by seed and stream as kernels.Uniform's.
func ExactValues(v, n int, seed uint64, stream string) []float64 {
	u := kernels.Uniform(dtype.F64, n, 0, float64(2*v), seed, stream)
	for i, x := range u {
		q := int(math.Floor(x)) // 0 .. 2v−1
		if q >= v {
			u[i] = float64(q - v + 1)
		} else {
			u[i] = float64(q - v)
		}
	}
	return u
}

// ExactPattern places the nonzeros of the operands of C[r×c] = A[r×l]·B[l×c]
// for exact inputs whose reduction is too long for every output to sum all
// of it: the reduction indices fall into D1·D2 classes, index k in class
// q = k mod D1·D2 = q1 + D1·q2 (q1 < D1, q2 < D2); A[i][k] may be nonzero
// only where q1 = i mod D1 and B[k][j] only where q2 = j mod D2. Output
// (i, j) then sums the indices of one class, at most ⌈l/(D1·D2)⌉ nonzero
// products, and every index of class (q1, q2) has a nonzero product in
// output (q1, q2): a bug at any one index shows in some output. D1 = D2 =
// 1 is the dense pattern.
type ExactPattern struct{ D1, D2 int }

// NewExactPattern returns the pattern for r×c outputs of a reduction over
// l in which no output sums more than terms nonzero products: D1·D2 =
// ⌈l/terms⌉ classes, D1 = min(r, ⌈l/terms⌉). It is false when D2 would
// exceed c: fewer outputs than classes.
func NewExactPattern(r, c, l, terms int) (ExactPattern, bool) {
	d := max(1, (l+terms-1)/terms)
	d1 := min(r, d)
	d2 := (d + d1 - 1) / d1
	if d2 > c {
		return ExactPattern{}, false
	}
	return ExactPattern{d1, d2}, true
}

// Dense reports whether every element may be nonzero.
func (p ExactPattern) Dense() bool { return p.D1*p.D2 == 1 }

// A reports whether A[i][k] may be nonzero.
func (p ExactPattern) A(i, k int) bool { return k%(p.D1*p.D2)%p.D1 == i%p.D1 }

// B reports whether B[k][j] may be nonzero.
func (p ExactPattern) B(k, j int) bool { return k%(p.D1*p.D2)/p.D1 == j%p.D2 }
