package gemm_test

import (
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

// copier is a gemm.BProducer that copies gemm_bwd's own B ("w") into the
// produced buffer: the protocol with nothing else to get wrong.
type copier struct{ w ptx.Reg }

func (c *copier) Declare(k *ptx.Func) []kernels.Arg {
	c.w = gen.Param(k, "w")
	return []kernels.Arg{{Buffer: "w"}}
}

func (c *copier) Setup(*ptx.Func, ptx.Reg) {}

// Chunk: lane l copies 8 elements (16 bytes) of rows l/8, l/8 + 4, ...
func (c *copier) Chunk(k *ptx.Func, b, lane, row0, col0 ptx.Reg) {
	const K = producedK
	row := k.Add(ptx.U32, row0, k.Shr(ptx.U32, lane, ptx.Imm(3)))
	e := k.Mad(ptx.U32, row, ptx.Imm(K), k.Add(ptx.U32, col0, k.Shl(ptx.U32, k.And(ptx.U32, lane, ptx.Imm(7)), ptx.Imm(3))))
	off := k.MulWide(ptx.U32, e, ptx.Imm(2))
	src, dst := k.Add(ptx.U64, c.w, off), k.Add(ptx.U64, b, off)
	for s := range gemm.ChunkRows / 4 {
		v := k.Ld(ptx.Global, ptx.B32, 4, ptx.At(src, int64(s*4*K*2)))
		k.St(ptx.Global, ptx.B32, ptx.At(dst, int64(s*4*K*2)), v)
	}
}

// The produced-B test shape: dX of 130 rows (a row tail), a reduction of
// four k-tiles, three 64-column chunks.
const producedM, producedN, producedK = 130, 256, 192

// producedPoints are the wgmma points of gemm_bwd's space at the test
// shape that a produced B takes.
func producedPoints(t *testing.T, d gemm.DXGemm) []gemm.Params {
	t.Helper()
	s, all := simtest.Points(t, gemm.Families()[0], simtest.Case{Spec: "m=130,n=256,k=192,grad=dx", DType: dtype.BF16})
	_ = s
	var out []gemm.Params
	for _, p := range all {
		pv, err := variants.Decode[gemm.Params](p)
		if err != nil {
			t.Fatal(err)
		}
		if d.Check(pv) == nil {
			out = append(out, pv)
		}
	}
	if len(out) == 0 {
		t.Fatal("no point of gemm_bwd's space at the test shape takes a produced B")
	}
	return out
}

// TestProducedB validates on the interpreter gemm_bwd's dX kernel reading
// a B its own spare warps copy in chunks (gemm.BProducer), at every point
// of the shape's space that takes one, and shows that each planted bug of
// the protocol fails validation: a chunk's flag raised before the chunk
// is written (the waiting TMA load reads the scratch buffer unwritten), a
// state the last CTA does not zero (the next run would find flags up),
// and, with split-K, a split left out of the reduce.
func TestProducedB(t *testing.T) {
	f := gemm.Families()[0]
	d := gemm.DXGemm{M: producedM, N: producedN, K: producedK, DType: dtype.BF16, B: "w_copy", Entry: "produced", Producer: &copier{}}
	s := simtest.Shape(t, f, "m=130,n=256,k=192,grad=dx", dtype.BF16)
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	if err := ss.Prepare(f, s, 1); err != nil {
		t.Fatal(err)
	}
	emit := func(p gemm.Params) kernels.Program {
		prog, err := d.Emit(p)
		if err != nil {
			t.Fatalf("%s: %v", variants.Encode(p), err)
		}
		return prog
	}
	run := func(p gemm.Params) error { return simtest.ValidateProgram(ss, emit(p)) }
	pts := producedPoints(t, d)
	var split *gemm.Params
	for i, p := range pts {
		if err := simtest.ValidateSweep(ss, emit(p), i); err != nil {
			t.Errorf("%s: %v", variants.Encode(p), err)
		}
		if p.SplitK > 1 && split == nil {
			split = &pts[i]
		}
	}
	t.Logf("%d points validated", len(pts))
	if split == nil {
		t.Fatal("no split-K point at the test shape")
	}
	for _, c := range []struct {
		bug  string
		p    gemm.Params
		want string
	}{
		{"flagFirst", pts[0], "dx["},
		{"keepState", pts[0], "state buffer bstate not left zero"},
		{"dropSplit", *split, "dx["},
	} {
		restore := gemm.Plant(c.bug)
		err := run(c.p)
		restore()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("planted %s in %s: validation says %v, want an error with %q", c.bug, variants.Encode(c.p), err, c.want)
		}
	}
}
