package gemm

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
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
	q := k.Shr(ptx.U32, sk.lane, ptx.Imm(2))
	row := k.Add(ptx.U32, k.Mad(ptx.U32, sk.wr, ptx.Imm(sk.tm), t.row0), q)
	col := k.Add(ptx.U32, k.Mad(ptx.U32, sk.wc, ptx.Imm(sk.tn), t.col0),
		k.Shl(ptx.U32, k.And(ptx.U32, sk.lane, ptx.Imm(3)), ptx.Imm(1)))
	ptr := k.Add(ptx.U64, c, k.MulWide(ptx.U32, k.Mad(ptx.U32, row, ptx.Imm(g.c), col), ptx.Imm(od.Size())))
	var colOK []ptx.Reg
	for ni := range sk.tn / 8 {
		colOK = append(colOK, k.Setp("lt", ptx.S32, col, ptx.Imm(g.c-8*ni)))
	}
	rows := newBound(k, row, r)
	for mi := range acc {
		for h := range 2 {
			dr := 16*mi + 8*h
			rowOK := rows.below(dr)
			for ni := range acc[mi] {
				off := int64(dr*g.c+8*ni) * int64(od.Size())
				vals := []ptx.Reg{acc[mi][ni][2*h], acc[mi][ni][2*h+1]}
				gen.StVals(k, od, ptx.At(ptr, off), vals, k.And(ptx.Pred, rowOK, colOK[ni]))
			}
		}
	}
}
