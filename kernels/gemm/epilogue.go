package gemm

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// epilogue stores the accumulators straight from registers: lane l holds,
// of each m16n8 block, rows l/4 and l/4+8 at columns 2·(l%4) and the next,
// stored as a pair (rounded to the output dtype, or f32 into the split's
// slice of the workspace). Rows (of r) and columns outside C are not stored; the
// columns of a pair are both in or both out (C has a multiple of 8).
func (sk *syncKernel) epilogue(c ptx.Reg, t tile, r ext, acc [][][4]ptx.Reg) {
	k, g := sk.k, sk.g
	od := g.od
	if sk.p.SplitK > 1 {
		od = dtype.F32
		c = splitSlice(k, c, t.split, r, g.c)
	}
	rows := func(row ptx.Reg) func(dr int) ptx.Reg { return newBound(k, row, r).below }
	sk.w.Store(c, t.row0, t.col0, od, g.c, rows, acc)
}
