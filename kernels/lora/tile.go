package lora

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// Shared-memory tiles hold 16-bit elements in rows of pitch elements
// (a power of two, at least 8), moved in 16-byte chunks whose position in
// a row is swizzled by gen.SwizzledTileOffset. A tile of width w < pitch
// uses the first w/8 logical chunks of each row.

// tileCopy is one thread's share of the cp.async copies of a [rows × cols]
// tile of a row-major matrix of 16-bit elements whose rows are ld
// elements apart: chunk q = tid + i·threads of the tile is row q/(cols/8),
// logical chunk q mod (cols/8).
type tileCopy struct {
	k            *ptx.Func
	pitch, ld    int
	rowIn, colIn []ptx.Reg // per chunk: its row and first column in the tile
	sOff         []ptx.Reg // per chunk: its byte offset in the tile
	has          []ptx.Reg // per chunk: the thread has one (invalid: always)
}

func newTileCopy(k *ptx.Func, tid ptx.Reg, rows, cols, pitch, ld, threads int) *tileCopy {
	c := &tileCopy{k: k, pitch: pitch, ld: ld}
	cpr := cols / 8
	total := rows * cpr
	for i := 0; i*threads < total; i++ {
		q := k.Add(ptx.U32, tid, ptx.Imm(i*threads))
		var row, cc ptx.Reg
		if cpr&(cpr-1) == 0 {
			row = k.Shr(ptx.U32, q, ptx.Imm(gen.Log2(cpr)))
			cc = k.And(ptx.U32, q, ptx.Imm(cpr-1))
		} else {
			row = k.Div(ptx.U32, q, ptx.Imm(cpr))
			cc = k.Sub(ptx.U32, q, k.Mul(ptx.U32, row, ptx.Imm(cpr)))
		}
		var has ptx.Reg
		if (i+1)*threads > total {
			has = k.Setp("lt", ptx.U32, q, ptx.Imm(total))
		}
		c.rowIn = append(c.rowIn, row)
		c.colIn = append(c.colIn, k.Shl(ptx.U32, cc, ptx.Imm(3)))
		c.sOff = append(c.sOff, gen.SwizzledTileOffset(k, row, cc, pitch))
		c.has = append(c.has, has)
	}
	return c
}

// each emits do(i) for each of the thread's chunks i, under the guard of
// the ones a thread may not have.
func (c *tileCopy) each(do func(i int)) {
	for i := range c.rowIn {
		if c.has[i].Valid() {
			c.k.If(c.has[i], func() { do(i) })
		} else {
			do(i)
		}
	}
}

// put stores the words w of chunk i into the tile at tile (shared), where
// the thread has the chunk.
func (c *tileCopy) put(tile ptx.Reg, i int, w []ptx.Reg) {
	c.k.St(ptx.Shared, ptx.B32, ptx.At(c.k.Add(ptx.U32, tile, c.sOff[i]), 0), w)
	if c.has[i].Valid() {
		c.k.Guard(c.has[i], false)
	}
}

// issue copies the tile whose first element is (row0, col0) of the
// matrix at base into shared memory at dst (u32), zero-filling the chunks
// at rows ≥ rowLim or columns ≥ colLim (u32 operands).
func (c *tileCopy) issue(dst, base ptx.Reg, row0, col0, rowLim, colLim ptx.Operand) {
	k := c.k
	c.each(func(i int) {
		row := k.Add(ptx.U32, row0, c.rowIn[i])
		col := k.Add(ptx.U32, col0, c.colIn[i])
		ok := k.And(ptx.Pred, k.Setp("lt", ptx.U32, row, rowLim), k.Setp("lt", ptx.U32, col, colLim))
		elem := k.Mad(ptx.U32, row, ptx.Imm(c.ld), col)
		src := k.Selp(ptx.U64, k.Add(ptx.U64, base, k.MulWide(ptx.U32, elem, ptx.Imm(2))), base, ok)
		size := k.Selp(ptx.U32, ptx.Imm(16), ptx.Imm(0), ok)
		k.Raw(80, 70, "cp.async.cg.shared.global", ptx.At(k.Add(ptx.U32, dst, c.sOff[i]), 0), ptx.At(src, 0), ptx.Imm(16), size)
	})
}

// lanes is a lane's place in ldmatrix's address pattern: lane 8·i + r
// gives row r of matrix i; i0 = i & 1, i1 = i >> 1.
type lanes struct {
	r, i0, i1 ptx.Reg
}

func newLanes(k *ptx.Func, lane ptx.Reg) lanes {
	i := k.Shr(ptx.U32, lane, ptx.Imm(3))
	return lanes{r: k.And(ptx.U32, lane, ptx.Imm(7)), i0: k.And(ptx.U32, i, ptx.Imm(1)), i1: k.Shr(ptx.U32, i, ptx.Imm(1))}
}

// frag is the ldmatrix of one fragment from a tile of pitch elements: the
// lane's byte offset (its row at row 0 of the fragment's first 16-row
// step; a further step of 16 rows adds 32·pitch bytes, the swizzle using
// row bits below 4 only), the matrices, and whether they are transposed.
type frag struct {
	off   ptx.Reg
	n     int
	trans bool
	pitch int
}

// at is the fragment of lane row row0 + r + 8·sel (sel invalid: + 0) and
// logical chunk c0 + csel (csel invalid: c0).
func at(k *ptx.Func, l lanes, pitch int, row0, sel, c0, csel ptx.Reg, n int, trans bool) frag {
	row := k.Add(ptx.U32, row0, l.r)
	if sel.Valid() {
		row = k.Mad(ptx.U32, sel, ptx.Imm(8), row)
	}
	c := c0
	if csel.Valid() {
		c = k.Add(ptx.U32, csel, c0)
	}
	return frag{off: gen.SwizzledTileOffset(k, row, c, pitch), n: n, trans: trans, pitch: pitch}
}

// load issues the ldmatrix at tile base + off + 16·step rows.
func (f frag) load(k *ptx.Func, base ptx.Reg, step int) []ptx.Reg {
	return k.Ldmatrix(f.n, f.trans, ptx.At(k.Add(ptx.U32, base, f.off), int64(step*32*f.pitch)))
}

// The fragments of mma.sync m16n8k16 (ptx.MmaSync has the layouts) from
// tiles, by how the operand lies in its tile. A half block has only its
// first 8 rows (m or k) in the tile; its other registers are zero.

// aKMajor: A from a tile of rows m, columns k (ldmatrix); rows m0..m0+15,
// chunks kc, kc+1 (kHalf: kc only, k 8..15 zero).
func aKMajor(k *ptx.Func, l lanes, pitch int, m0, kc ptx.Reg, kHalf bool) frag {
	if kHalf {
		return at(k, l, pitch, m0, l.i0, kc, ptx.Reg{}, 2, false)
	}
	return at(k, l, pitch, m0, l.i0, kc, l.i1, 4, false)
}

// aMNMajor: A from a tile of rows k, columns m (ldmatrix.trans); rows
// k0..k0+15, chunks mc, mc+1 (mHalf: mc only, m 8..15 zero).
func aMNMajor(k *ptx.Func, l lanes, pitch int, k0, mc ptx.Reg, mHalf bool) frag {
	if mHalf {
		return at(k, l, pitch, k0, l.i0, mc, ptx.Reg{}, 2, true)
	}
	return at(k, l, pitch, k0, l.i1, mc, l.i0, 4, true)
}

// bMNMajor: B for n8 blocks nc (and nc+1 when pair) from a tile of rows
// k, columns n (ldmatrix.trans); rows k0..k0+15 (kHalf: k0..k0+7).
func bMNMajor(k *ptx.Func, l lanes, pitch int, k0, nc ptx.Reg, pair, kHalf bool) frag {
	switch {
	case pair && !kHalf:
		return at(k, l, pitch, k0, l.i0, nc, l.i1, 4, true)
	case !kHalf:
		return at(k, l, pitch, k0, l.i0, nc, ptx.Reg{}, 2, true)
	case pair:
		return at(k, l, pitch, k0, ptx.Reg{}, nc, l.i0, 2, true)
	}
	return at(k, l, pitch, k0, ptx.Reg{}, nc, ptx.Reg{}, 1, true)
}

// aRegs arranges an A fragment's matrices as mma's a0..a3 (zero for a
// half block's missing ones); zero is a b32 register holding 0.
func aRegs(f frag, d []ptx.Reg, zero ptx.Reg) [4]ptx.Reg {
	switch {
	case f.n == 4:
		return [4]ptx.Reg(d)
	case f.trans: // mHalf
		return [4]ptx.Reg{d[0], zero, d[1], zero}
	}
	return [4]ptx.Reg{d[0], d[1], zero, zero} // kHalf
}

// bRegs arranges a B fragment's matrices as the b0, b1 of its one or two
// n8 blocks.
func bRegs(f frag, d []ptx.Reg, zero ptx.Reg, kHalf bool) [][2]ptx.Reg {
	if kHalf {
		out := make([][2]ptx.Reg, len(d))
		for i := range d {
			out[i] = [2]ptx.Reg{d[i], zero}
		}
		return out
	}
	out := make([][2]ptx.Reg, len(d)/2)
	for i := range out {
		out[i] = [2]ptx.Reg{d[2*i], d[2*i+1]}
	}
	return out
}
