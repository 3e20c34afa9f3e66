package hopper

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// Fragments of mma.sync m16n8k16 from swizzled shared tiles, for kernels
// whose operands are not a GEMM's fixed A-then-B slot (Warp): each tile
// is [rows][pitch] 16-bit elements in gen.SwizzledTileOffset's layout
// (pitch a power of two, at least 64), filled by a TileLoader.
//
// An Ldsm is one lane's ldmatrix.x4 address pattern: lane 8i + r gives
// row r of matrix i, at tile row row0 + r + 8·(a bit of i) and chunk
// 2·step + (the other bit). Which bit picks the row half is the operand's
// form:
//
//	A, K-major (tile rows m, columns k):    rows by i&1, chunk by i>>1, no trans
//	A, MN-major (tile rows k, columns m):   rows by i>>1, chunk by i&1, trans
//	B, K-major (tile rows n, columns k):    rows by i>>1, chunk by i&1, no trans
//	B, MN-major (tile rows k, columns n):   rows by i&1, chunk by i>>1, trans
//
// so that the four registers are mma's a0..a3, or b0, b1 of n8 block 2j
// then b0, b1 of block 2j+1. Since the swizzle XORs a chunk's bits 0..2
// with row bits below 8 and 16-row steps leave those bits alone, the
// address of chunk step j is the step-0 offset XOR 32·j, and a step of
// 16 rows adds 32·pitch bytes: one register per pattern.

// Ldsm is a lane's ldmatrix.x4 pattern in a tile of Pitch elements.
type Ldsm struct {
	Off   ptx.Reg // u32: byte offset of the lane's row at row step 0, chunk step 0
	Pitch int
	Trans bool
}

// Operand forms of NewLdsm.
const (
	AKMajor  = iota // A from [m][k]
	AMNMajor        // A from [k][m]
	BKMajor         // B from [n][k]
	BMNMajor        // B from [k][n]
)

// NewLdsm is the pattern of operand form (AKMajor ...) for the lane
// (u32) in a tile of pitch elements, its 16-row blocks counted from row0
// (u32).
func NewLdsm(k *ptx.Func, lane, row0 ptx.Reg, pitch, form int) Ldsm {
	i := k.Shr(ptx.U32, lane, ptx.Imm(3))
	lo, hi := k.And(ptx.U32, i, ptx.Imm(1)), k.Shr(ptx.U32, i, ptx.Imm(1))
	rowBit, chunk := lo, hi
	if form == AMNMajor || form == BKMajor {
		rowBit, chunk = hi, lo
	}
	row := k.Add(ptx.U32, row0, k.Mad(ptx.U32, rowBit, ptx.Imm(8), k.And(ptx.U32, lane, ptx.Imm(7))))
	return Ldsm{Off: gen.SwizzledTileOffset(k, row, chunk, pitch), Pitch: pitch, Trans: form == AMNMajor || form == BMNMajor}
}

// Load issues the ldmatrix.x4 at tile (u32 shared address) for row block
// rows (16 rows each) and chunk step step (a u32 register, or invalid
// for an immediate imm).
func (l Ldsm) Load(k *ptx.Func, tile ptx.Reg, rows int, step ptx.Reg, imm int) []ptx.Reg {
	var off ptx.Reg
	switch {
	case step.Valid():
		off = k.Xor(ptx.U32, l.Off, k.Shl(ptx.U32, step, ptx.Imm(5)))
	case imm != 0:
		off = k.Xor(ptx.U32, l.Off, ptx.Imm(int64(32*imm)))
	default:
		off = l.Off
	}
	return k.Ldmatrix(4, l.Trans, ptx.At(k.Add(ptx.U32, tile, off), int64(rows*32*l.Pitch)))
}

// PackA packs the f32 accumulators of two adjacent m16n8 blocks (columns
// 16t .. 16t+15 of an m16 row block) into the A fragment of k16 step t
// of a product that reduces over those columns, rounded to dt: the
// accumulator layout of mma.sync is its A layout, pair by pair.
func PackA(k *ptx.Func, dt dtype.DType, lo, hi [4]ptx.Reg) [4]ptx.Reg {
	pt := ptx.F16x2
	if dt == dtype.BF16 {
		pt = ptx.BF16x2
	}
	pack := func(c [4]ptx.Reg, h int) ptx.Reg { return k.PackHalf2(pt, c[2*h+1], c[2*h]) }
	return [4]ptx.Reg{pack(lo, 0), pack(lo, 1), pack(hi, 0), pack(hi, 1)}
}

// TileLoader is one thread's share of the cp.async copies of a [Rows]
// [Pitch] tile of 16-bit elements from whole rows of a row-major matrix
// whose rows are LD elements apart: 16-byte chunk c = tid + n·threads is
// row c/(Pitch/8), chunk c mod (Pitch/8).
type TileLoader struct {
	LD   int
	rows []ptx.Reg // per chunk of the thread: its row in the tile
	col  []ptx.Reg // its first column
	dst  []ptx.Reg // its swizzled byte offset
	last ptx.Reg   // guard of the thread's last chunk where the tile's chunks do not split evenly
}

// NewTileLoader spreads a [rows][pitch] tile's chunks over threads.
func NewTileLoader(k *ptx.Func, tid ptx.Reg, rows, pitch, ld, threads int) TileLoader {
	perRow := pitch / 8
	chunks := rows * perRow
	t := TileLoader{LD: ld}
	for n := 0; n*threads < chunks; n++ {
		c := k.Add(ptx.U32, tid, ptx.Imm(int64(n*threads)))
		r := k.Shr(ptx.U32, c, ptx.Imm(int64(gen.Log2(perRow))))
		ch := k.And(ptx.U32, c, ptx.Imm(int64(perRow-1)))
		t.rows = append(t.rows, r)
		t.col = append(t.col, k.Shl(ptx.U32, ch, ptx.Imm(3)))
		t.dst = append(t.dst, gen.SwizzledTileOffset(k, r, ch, pitch))
		if (n+1)*threads > chunks {
			t.last = k.Setp("lt", ptx.U32, c, ptx.Imm(int64(chunks)))
		}
	}
	return t
}

// Issue copies rows row0 .. row0+Rows−1 of the matrix at src (u64, its
// row 0) into the tile at dst (u32): rows at or past lim (u32) are
// zero-filled (cp.async's source size 0, reading nothing).
func (t TileLoader) Issue(k *ptx.Func, dst, src, row0 ptx.Reg, lim ptx.Operand) {
	for n := range t.rows {
		one := func() {
			row := k.Add(ptx.U32, row0, t.rows[n])
			in := k.Setp("lt", ptx.U32, row, lim)
			at := k.Add(ptx.U64, src, k.MulWide(ptx.U32, k.Mad(ptx.U32, row, ptx.Imm(int64(t.LD)), t.col[n]), ptx.Imm(2)))
			from := k.Selp(ptx.U64, at, src, in)
			bytes := k.Selp(ptx.U32, ptx.Imm(16), ptx.Imm(0), in)
			k.Raw(80, 70, "cp.async.cg.shared.global", ptx.At(k.Add(ptx.U32, dst, t.dst[n]), 0), ptx.At(from, 0), ptx.Imm(16), bytes)
		}
		if n == len(t.rows)-1 && t.last.Valid() {
			k.If(t.last, one)
			continue
		}
		one()
	}
}
