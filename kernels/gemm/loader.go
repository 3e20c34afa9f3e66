package gemm

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// loader copies one operand's k-tiles into shared memory with cp.async.
// The tile is [rows][cols] elements (cols contiguous, as in the buffer);
// along the reduction runs its rows (kRows: an MN-major operand) or its
// columns (K-major). Each thread owns n chunks of 16 bytes: column chunk
// cc of rows rr0 + i·step. Chunks outside the matrix are zero-filled
// (cp.async with source size 0, from the buffer's base).
type loader struct {
	k          *ptx.Func
	kRows      bool
	rows, cols int
	n, step    int
	ld         int // bytes between the buffer's rows
	l          ext // reduction length
	base, ptr  ptx.Reg
	kOff       ptx.Reg   // u32: the reduction index of chunk 0 within a k-tile
	kLeft      ptx.Reg   // u32, for a runtime l: l − kOff (kRows)
	fixed      []ptx.Reg // per chunk: the other index is inside the matrix
	sOff       ptx.Reg   // u32: chunk 0's offset within the tile
	kStride    int64     // bytes ptr advances per k-tile
}

// newLoader sets up the chunks of thread tid for an operand whose tile
// starts at (first row or column of C) at0 of limit extent, the k-tile
// kt0 first, over a reduction of l. bk is the k-tile depth.
func newLoader(k *ptx.Func, o operand, base, tid, at0, kt0 ptx.Reg, tileMN, bk int, limit, l ext, threads int) *loader {
	ld := &loader{k: k, kRows: !o.kMajor, ld: 2 * o.ld, l: l, base: base}
	ld.rows, ld.cols = tileMN, bk
	if ld.kRows {
		ld.rows, ld.cols = bk, tileMN
	}
	chunks := ld.cols / 8
	ld.n, ld.step = ld.rows*chunks/threads, threads/chunks
	rr0 := k.Shr(ptx.U32, tid, ptx.Imm(gen.Log2(chunks)))
	cc := k.And(ptx.U32, tid, ptx.Imm(chunks-1))
	ld.sOff = gen.SwizzledTileOffset(k, rr0, cc, ld.cols)
	c8 := k.Shl(ptx.U32, cc, ptx.Imm(3))
	kbase := k.Mul(ptx.U32, kt0, ptx.Imm(bk))
	// The global row and column of chunk 0 at k-tile kt0.
	var grow, gcol ptx.Reg
	if ld.kRows {
		ld.kOff = rr0
		if l.runtime() {
			ld.kLeft = k.Sub(ptx.U32, l.reg, rr0)
		}
		grow, gcol = k.Add(ptx.U32, kbase, rr0), k.Add(ptx.U32, at0, c8)
		ld.fixed = []ptx.Reg{k.Setp("lt", ptx.U32, gcol, limit.op())}
		ld.kStride = int64(bk) * int64(ld.ld)
	} else {
		ld.kOff = c8
		grow, gcol = k.Add(ptx.U32, at0, rr0), k.Add(ptx.U32, kbase, c8)
		rows := newBound(k, grow, limit)
		for i := range ld.n {
			ld.fixed = append(ld.fixed, rows.below(i*ld.step))
		}
		ld.kStride = int64(2 * bk)
	}
	elem := k.Mad(ptx.U32, grow, ptx.Imm(o.ld), gcol)
	ld.ptr = k.Add(ptx.U64, base, k.MulWide(ptx.U32, elem, ptx.Imm(2)))
	return ld
}

// load issues the copies of the k-tile whose first reduction index is
// kbase (u32) into the tile at shared address dst, then advances ptr to
// the next k-tile.
func (ld *loader) load(dst, kbase ptx.Reg) {
	k := ld.k
	d := k.Add(ptx.U32, dst, ld.sOff)
	var kc ptx.Reg
	var ks *bound // kRows: chunk i's k-row against l
	switch {
	case ld.kLeft.Valid():
		ks = leftBound(k, ld.l, k.Sub(ptx.U32, ld.kLeft, kbase))
	case ld.kRows:
		kc = k.Add(ptx.U32, kbase, ld.kOff)
		ks = newBound(k, kc, ld.l)
	default:
		kc = k.Add(ptx.U32, kbase, ld.kOff)
	}
	for i := range ld.n {
		ok := ld.fixed[0]
		var inK ptx.Reg
		if ld.kRows {
			inK = ks.below(i * ld.step)
		} else {
			ok = ld.fixed[i]
			inK = k.Setp("lt", ptx.U32, kc, ld.l.op())
		}
		ok = k.And(ptx.Pred, ok, inK)
		src := k.Selp(ptx.U64, k.Add(ptx.U64, ld.ptr, ptx.Imm(int64(i*ld.step)*int64(ld.ld))), ld.base, ok)
		size := k.Selp(ptx.U32, ptx.Imm(16), ptx.Imm(0), ok)
		k.Raw(80, 70, "cp.async.cg.shared.global", ptx.At(d, int64(i*ld.step*ld.cols*2)), ptx.At(src, 0), ptx.Imm(16), size)
	}
	k.MovTo(ld.ptr, k.Add(ptx.U64, ld.ptr, ptx.Imm(ld.kStride)))
}
