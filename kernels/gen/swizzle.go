package gen

import "github.com/gradtune/gradtune/kernels/ptx"

// Swizzled shared-memory tiles (the mma.sync GEMMs) are [rows][cols] of 16-bit
// elements, cols contiguous, moved in 16-byte chunks of 8 elements. The
// chunk of a row is XORed with bits of the row so that the 8 rows an
// ldmatrix phase reads (and cp.async writes) fall in distinct banks:
//
//	chunks per row ≥ 8: chunk ^ (row & 7)
//	4:                  chunk ^ ((row >> 1) & 3)
//
// The row bits used are below 8, so rows that differ by a multiple of 8
// share the XOR mask.

// SwizzledChunk is the stored chunk of a row's logical chunk, in Go.
func SwizzledChunk(row, chunk, chunks int) int {
	if chunks >= 8 {
		return chunk ^ row&7
	}
	return chunk ^ (row>>1)&(chunks-1)
}

// SwizzledTileOffset returns the byte offset (u32) of chunk `chunk` of
// row `row` in a swizzled tile of `cols` 16-bit elements per row.
func SwizzledTileOffset(k *ptx.Func, row, chunk ptx.Reg, cols int) ptx.Reg {
	chunks := cols / 8
	var mask ptx.Reg
	if chunks >= 8 {
		mask = k.And(ptx.U32, row, ptx.Imm(7))
	} else {
		mask = k.And(ptx.U32, k.Shr(ptx.U32, row, ptx.Imm(1)), ptx.Imm(chunks-1))
	}
	sw := k.Shl(ptx.U32, k.Xor(ptx.U32, chunk, mask), ptx.Imm(4))
	return k.Mad(ptx.U32, row, ptx.Imm(2*cols), sw)
}

// Log2 is the exponent of the smallest power of two ≥ n.
func Log2(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}
