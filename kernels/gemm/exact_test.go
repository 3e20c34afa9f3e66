package gemm_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// TestExactPattern: no output sums more than terms products, every
// reduction index has a nonzero product in some output, and a shape with
// fewer outputs than classes has no pattern.
func TestExactPattern(t *testing.T) {
	for _, c := range []struct{ r, c, l, terms int }{
		{1, 8, 100, 100}, {1, 8, 100, 13}, {3, 8, 100, 13}, {64, 64, 8960, 256},
		{5, 2, 1000, 100}, {2, 3, 59, 10}, {3, 4, 100, 10}, {16, 1, 1000, 63},
	} {
		p, ok := gemm.NewExactPattern(c.r, c.c, c.l, c.terms)
		if !ok {
			t.Errorf("%+v: no pattern", c)
			continue
		}
		covered := make([]bool, c.l)
		for i := range c.r {
			for j := range c.c {
				n := 0
				for k := range c.l {
					if p.A(i, k) && p.B(k, j) {
						n++
						covered[k] = true
					}
				}
				if n > c.terms {
					t.Errorf("%+v, pattern %+v: output (%d, %d) sums %d products", c, p, i, j, n)
				}
			}
		}
		if k := slices.Index(covered, false); k >= 0 {
			t.Errorf("%+v, pattern %+v: index %d has no nonzero product", c, p, k)
		}
		if p.Dense() != (c.l <= c.terms) {
			t.Errorf("%+v: pattern %+v", c, p)
		}
	}
	if p, ok := gemm.NewExactPattern(2, 3, 61, 10); ok {
		t.Errorf("7 classes over 2×3 outputs: pattern %+v", p)
	}
}

// TestExactInputs: at every class of shape, nonzero integers of the
// dtype, in ±1..±3 while 9·L < 2²⁴ (±1 beyond), whose every output's
// Σ|a·b| is below 2²⁴ (so every partial sum is exact in f32, in any
// order); deterministic, seeded, not the random inputs; and no exact set
// where the outputs cannot carry every index.
func TestExactInputs(t *testing.T) {
	f := gemm.Families()[0]
	ex := f.(kernels.Exacter)
	for _, c := range []struct {
		s    gemm.Shape
		v    float64
		full bool // check Σ|a·b| of every output, the seed and the determinism
	}{
		{gemm.Shape{M: 100, N: 72, K: 136, Grad: gemm.DX, DType: dtype.BF16}, 3, true},
		{gemm.Shape{M: 100, N: 72, K: 136, Grad: gemm.DW, Out: "f32", DType: dtype.F16}, 3, true},
		{gemm.Shape{M: 64, N: 8960, K: 64, Grad: gemm.DX, DType: dtype.BF16}, 3, true},
		{gemm.Shape{M: 2048, N: 8960, K: 1536, Grad: gemm.DW, DType: dtype.BF16}, 3, false},
		{gemm.Shape{M: 1, N: 1864136, K: 8, Grad: gemm.DX, DType: dtype.BF16}, 1, true}, // 9·L ≥ 2²⁴
	} {
		s := variants.ShapeOf(c.s)
		in, ok := ex.ExactInputs(s, 1)
		if !ok {
			t.Errorf("%s: no exact inputs", s.Key())
			continue
		}
		var again, other, random map[string][]float64
		if c.full {
			again, _ = ex.ExactInputs(s, 1)
			other, _ = ex.ExactInputs(s, 2)
			random = f.Inputs(s, 1)
		}
		for _, b := range f.Buffers(s) {
			if b.Role != kernels.Input {
				continue
			}
			v := in[b.Name]
			if len(v) != kernels.Elems(b, s) {
				t.Fatalf("%s: %s has %d values, want %d", s.Key(), b.Name, len(v), kernels.Elems(b, s))
			}
			seen := map[float64]bool{}
			for _, x := range v {
				if x != math.Trunc(x) || x == 0 || math.Abs(x) > c.v || b.DType.Round(x) != x {
					t.Fatalf("%s: %s holds %g, not a nonzero integer of %v within ±%g", s.Key(), b.Name, x, b.DType, c.v)
				}
				seen[x] = true
			}
			if len(seen) != int(2*c.v) {
				t.Errorf("%s: %s holds %d distinct values, want %g", s.Key(), b.Name, len(seen), 2*c.v)
			}
			if c.full && (!slices.Equal(v, again[b.Name]) || slices.Equal(v, other[b.Name]) || slices.Equal(v[:64], random[b.Name][:64])) {
				t.Errorf("%s: %s not deterministic, seeded and apart from the random inputs", s.Key(), b.Name)
			}
		}
		if c.full {
			abs := map[string][]float64{}
			for name, v := range in {
				abs[name] = make([]float64, len(v))
				for i, x := range v {
					abs[name][i] = math.Abs(x)
				}
			}
			for name, out := range f.Reference(s, abs) {
				if m := slices.Max(out); m >= 1<<24 {
					t.Errorf("%s: an output of %s has Σ|a·b| = %g", s.Key(), name, m)
				}
			}
		}
	}
	// n·k ≤ 2³¹: n = 2²⁸ − 8 needs 17 classes of at most 2²⁴ − 1 terms,
	// over m·k = 8 outputs.
	s := variants.ShapeOf(gemm.Shape{M: 1, N: 1<<28 - 8, K: 8, Grad: gemm.DX, DType: dtype.BF16})
	if _, ok := ex.ExactInputs(s, 1); ok {
		t.Errorf("%s: exact inputs over 8 outputs", s.Key())
	}
}

// denseSource is B = w (the gemm_bwd dx buffer) as a gemm.BSource, each
// filler copying 16-byte chunks of w into the swizzled B tile, with a
// bug planted: bug(kc, row, col, words) returns the words of the chunk
// of B rows kc+row, columns col .. col+8, as the kernel writes them.
type denseSource struct {
	n, k    int
	bn      int
	bug     func(k *ptx.Func, kc, row, col ptx.Reg, words []ptx.Reg) []ptx.Reg
	w       ptx.Reg
	fillers int
}

func (d *denseSource) Declare(k *ptx.Func) []kernels.Arg {
	d.w = gen.Param(k, "w")
	return []kernels.Arg{{Buffer: "w"}}
}
func (d *denseSource) Setup(k *ptx.Func, tid ptx.Reg, fillers int, share gemm.Share) {
	d.fillers = fillers
}
func (d *denseSource) RawBytes(gemm.Params) int                                     { return 0 }
func (d *denseSource) Issue(*ptx.Func, ptx.Reg, ptx.Addr, ptx.Reg, ptx.Reg)         {}
func (d *denseSource) Load(*ptx.Func, ptx.Reg, ptx.Reg, ptx.Reg, ptx.Reg) []ptx.Reg { return nil }

// Fill: chunk u = i, i+fillers, ... of the k-tile's 64·bn/8 is row u/(bn/8),
// chunk u%(bn/8) (8 columns); shapes without tails (n a multiple of 64,
// k of bn).
func (d *denseSource) Fill(k *ptx.Func, b, raw, col0, kc, i ptx.Reg, _ []ptx.Reg) {
	per := d.bn / 8
	n := 64 * per
	for j := range gen.CeilDiv(n, d.fillers) {
		u := k.Add(ptx.U32, i, ptx.Imm(j*d.fillers))
		ok := k.Setp("lt", ptx.U32, u, ptx.Imm(n))
		u = k.Selp(ptx.U32, u, ptx.Imm(0), ok)
		row := k.Div(ptx.U32, u, ptx.Imm(per))
		q := k.Sub(ptx.U32, u, k.Mul(ptx.U32, row, ptx.Imm(per)))
		col := k.Mad(ptx.U32, q, ptx.Imm(8), col0)
		e := k.Mad(ptx.U32, k.Add(ptx.U32, kc, row), ptx.Imm(d.k), col)
		words := k.Ld(ptx.Global, ptx.B32, 4, ptx.At(k.Add(ptx.U64, d.w, k.MulWide(ptx.U32, e, ptx.Imm(2))), 0))
		if d.bug != nil {
			words = d.bug(k, kc, row, col, words)
		}
		// Element (row, n) of the tile: atom n/64, chunk (n%64)/8 of the
		// row's 128 bytes, swizzled by row%8.
		atom, c := k.Shr(ptx.U32, q, ptx.Imm(3)), k.And(ptx.U32, q, ptx.Imm(7))
		at := k.Add(ptx.U32, b, k.Mad(ptx.U32, atom, ptx.Imm(8192), k.Mul(ptx.U32, row, ptx.Imm(128))))
		at = k.Add(ptx.U32, at, k.Shl(ptx.U32, k.Xor(ptx.U32, c, k.And(ptx.U32, row, ptx.Imm(7))), ptx.Imm(4)))
		k.St(ptx.Shared, ptx.B32, ptx.At(at, 0), words)
		k.Guard(ok, false)
	}
}

// rowBug changes B row k0 (a k-tile's first row when k0 is a multiple of
// 64): every word through change.
func rowBug(k0 int, change func(k *ptx.Func, w ptx.Reg) ptx.Reg) func(*ptx.Func, ptx.Reg, ptx.Reg, ptx.Reg, []ptx.Reg) []ptx.Reg {
	return func(k *ptx.Func, kc, row, col ptx.Reg, words []ptx.Reg) []ptx.Reg {
		hit := k.Setp("eq", ptx.U32, k.Add(ptx.U32, kc, row), ptx.Imm(k0))
		out := make([]ptx.Reg, len(words))
		for i, w := range words {
			out[i] = k.Selp(ptx.B32, change(k, w), w, hit)
		}
		return out
	}
}

// elemBug writes B[k0][j0] as zero.
func elemBug(k0, j0 int) func(*ptx.Func, ptx.Reg, ptx.Reg, ptx.Reg, []ptx.Reg) []ptx.Reg {
	return func(k *ptx.Func, kc, row, col ptx.Reg, words []ptx.Reg) []ptx.Reg {
		hit := k.And(ptx.Pred, k.Setp("eq", ptx.U32, k.Add(ptx.U32, kc, row), ptx.Imm(k0)),
			k.Setp("eq", ptx.U32, col, ptx.Imm(j0&^7)))
		out := slices.Clone(words)
		w := (j0 % 8) / 2
		mask := int64(0xffff0000) // element j0 in the low half (the lower address)
		if j0%2 == 1 {
			mask = 0xffff
		}
		out[w] = k.Selp(ptx.B32, k.And(ptx.B32, words[w], ptx.Imm(mask)), words[w], hit)
		return out
	}
}

// TestPlantedBugsAtLongReduction plants, in the wgmma kernel at the
// reduction of qwen's down projection (dX with n = 8960, m = k = 64), a
// dropped and a doubled reduction index (the first B row of k-tile 70) and
// one B element read as zero. Each moves an output by |a·b| < 1 on the
// random inputs, within their bound γ·L ≈ 1.2: the random set passes all
// three. The exact set catches each.
func TestPlantedBugsAtLongReduction(t *testing.T) {
	f := gemm.Families()[0]
	shape := gemm.Shape{M: 64, N: 8960, K: 64, Grad: gemm.DX, DType: dtype.BF16}
	s := variants.ShapeOf(shape)
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	if err := ss.Prepare(f, s, 1); err != nil {
		t.Fatal(err)
	}
	wb := gemm.WrittenB{M: shape.M, N: shape.N, K: shape.K, DType: shape.DType, Entry: "planted"}
	p := gemm.Params{MMA: gemm.WGMMA, BM: 64, BN: 64, BK: 64, Stages: 4, Consumers: 1, Cluster: 1, SplitK: 1,
		Reduce: gemm.ReduceLaunch, Order: gemm.OrderM, Epilogue: gemm.Direct, RegSplit: true}
	const k0 = 70 * 64
	zero := func(k *ptx.Func, w ptx.Reg) ptx.Reg { return k.Mov(ptx.B32, ptx.Imm(0)) }
	double := func(k *ptx.Func, w ptx.Reg) ptx.Reg { return k.Add(ptx.BF16x2, w, w) }
	for _, c := range []struct {
		name string
		bug  func(*ptx.Func, ptx.Reg, ptx.Reg, ptx.Reg, []ptx.Reg) []ptx.Reg
	}{
		{"none", nil},
		{"reduction index 4480 (k-tile 70's first row) dropped", rowBug(k0, zero)},
		{"reduction index 4480 doubled", rowBug(k0, double)},
		{"B[4517][21] read as zero", elemBug(k0+37, 21)},
	} {
		prog, err := wb.Emit(p, &denseSource{n: shape.N, k: shape.K, bn: p.BN, bug: c.bug})
		if err != nil {
			t.Fatal(err)
		}
		chk := simtest.CheckBothSets(t, ss, prog)
		random, exact := chk.Sets[0], chk.Sets[1]
		tol := f.Tolerance(s, "dx")
		t.Logf("%s: random inputs ok=%v (max abs error %.3g, atol %.3g); exact inputs ok=%v %s", c.name, random.OK, random.MaxAbs, tol.Atol, exact.OK, exact.Message)
		switch {
		case c.bug == nil && !chk.OK:
			t.Errorf("the correct kernel fails: %s", chk.Message)
		case c.bug == nil:
		case !random.OK:
			t.Errorf("%s: the random inputs caught it (%s): the bug is not one the bound misses", c.name, random.Message)
		case exact.OK || chk.OK || !strings.HasPrefix(chk.Message, "exact inputs: dx["):
			t.Errorf("%s passed the exact inputs: %+v", c.name, chk)
		}
	}
}
