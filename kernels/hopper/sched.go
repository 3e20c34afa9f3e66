package hopper

import "github.com/gradtune/gradtune/kernels/ptx"

// Tile schedulers: a CTA takes the tile at its index, or, in a
// persistent grid (one CTA per SM at most, never more CTAs than tiles),
// the tiles ctaid, ctaid + nctaid, ... (nctaid read from %nctaid: a GPU
// with fewer SMs runs fewer CTAs). A ring's cursors carry over from one
// tile to the next, so the producer loads the next tile's first k-tiles
// while the consumers store this one. The orders map a linear tile
// index (u32) to the tile row and column of a grid of tr×tc tiles.

// ForTiles calls body with the CTA's linear tile index, or with
// persistent in a loop over ctaid, ctaid + nctaid, ... below tiles()
// (called once, only then).
func ForTiles(k *ptx.Func, persistent bool, tiles func() ptx.Operand, body func(i ptx.Reg)) {
	if !persistent {
		body(k.Mov(ptx.U32, ptx.CtaidX))
		return
	}
	k.For(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), tiles(), k.Mov(ptx.U32, ptx.NCtaidX), body)
}

// DownRows is the order that goes down the tile rows (tr of them), one
// tile column after the other: neighbouring CTAs share B's tile column.
func DownRows(k *ptx.Func, t ptx.Reg, tr ptx.Operand) (r, c ptx.Reg) {
	c = k.Div(ptx.U32, t, tr)
	r = k.Sub(ptx.U32, t, k.Mul(ptx.U32, c, tr))
	return r, c
}

// AlongCols is the order that goes along the tile columns (tc of them),
// one tile row after the other.
func AlongCols(k *ptx.Func, t ptx.Reg, tc ptx.Operand) (r, c ptx.Reg) {
	r = k.Div(ptx.U32, t, tc)
	c = k.Sub(ptx.U32, t, k.Mul(ptx.U32, r, tc))
	return r, c
}

// Grouped is Triton's grouped order: groups of group tile rows (the last
// group may be shorter), each walked column by column, so that a wave of
// CTAs reads a square of A's and B's tiles (L2 reuse). tr is the tile
// rows (an immediate or a register), tc the tile columns.
func Grouped(k *ptx.Func, t ptx.Reg, tr ptx.Operand, tc, group int) (r, c ptx.Reg) {
	per := group * tc
	grp := k.Div(ptx.U32, t, ptx.Imm(int64(per)))
	in := k.Sub(ptx.U32, t, k.Mul(ptx.U32, grp, ptx.Imm(int64(per))))
	first := k.Mul(ptx.U32, grp, ptx.Imm(int64(group)))
	rows, ok := tr.(ptx.Reg)
	if !ok {
		rows = k.Mov(ptx.U32, tr)
	}
	size := k.Min(ptx.U32, k.Sub(ptx.U32, rows, first), ptx.Imm(int64(group)))
	c = k.Div(ptx.U32, in, size)
	r = k.Add(ptx.U32, first, k.Sub(ptx.U32, in, k.Mul(ptx.U32, c, size)))
	return r, c
}
