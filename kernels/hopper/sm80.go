package hopper

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The sm80 path: a CTA of warps in a grid computes a BM×BN tile of C,
// each warp a TM×TN part of it in m16n8k16 blocks of mma.sync, from a
// cp.async ring of Stages slots in dynamic shared memory. A slot holds A
// ([BM][BK] K-major or [BK][BM] MN-major) then, at ABytes, B
// ([BK][BN]), every row of 16-byte chunks XOR-swizzled by its row bits
// (gen.SwizzledTileOffset), so that ldmatrix phases and the stores that
// fill the slot spread over the banks.

// WarpOf is the thread's lane and its warp's row and column in a warp
// grid of wn columns (a power of two).
func WarpOf(k *ptx.Func, tid ptx.Reg, wn int) (lane, wr, wc ptx.Reg) {
	lane = k.And(ptx.U32, tid, ptx.Imm(31))
	warp := k.Shr(ptx.U32, tid, ptx.Imm(5))
	wr = k.Shr(ptx.U32, warp, ptx.Imm(int64(gen.Log2(wn))))
	wc = k.And(ptx.U32, warp, ptx.Imm(int64(wn-1)))
	return lane, wr, wc
}

// Warp is a warp's part of an sm80 CTA tile.
type Warp struct {
	K          *ptx.Func
	In         dtype.DType // the operands' dtype, f16 or bf16
	BM, BN, BK int         // the CTA tile
	TM, TN     int         // the warp tile
	AKMajor    bool        // A's reduction index is contiguous
	ABytes     int         // A's bytes in a slot; B follows
	Lane       ptx.Reg     // u32: the thread's lane
	Row, Col   ptx.Reg     // u32: the warp's row and column in the warp grid
	// KeepHi computes the MN-major A's lane rows for a K-major A too,
	// unused there: gemm_bwd's sync kernels always have, and their PTX
	// stays byte-identical while they share this code (issue 28).
	KeepHi bool
}

// FragOffsets returns each lane's ldmatrix row address within a slot's
// A tile (per m16 block and k16 step) and B tile (per pair of n8 blocks
// and k16 step). Lane 8i+r gives row r of matrix i; the matrices are
// ordered as mma.sync's fragment registers: A's (rows 0-7, k 0-7), (rows
// 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15); B's two n8
// blocks' (k 0-7), (k 8-15).
func (w Warp) FragOffsets() (aOff, bOff [][]ptx.Reg) {
	k := w.K
	i := k.Shr(ptx.U32, w.Lane, ptx.Imm(3))
	r := k.And(ptx.U32, w.Lane, ptx.Imm(7))
	i0, i1 := k.And(ptx.U32, i, ptx.Imm(1)), k.Shr(ptx.U32, i, ptx.Imm(1))
	lo := k.Mad(ptx.U32, i0, ptx.Imm(8), r) // r + 8·(i&1)
	var hi ptx.Reg
	if !w.AKMajor || w.KeepHi {
		hi = k.Mad(ptx.U32, i1, ptx.Imm(8), r) // r + 8·(i>>1)
	}
	wrow := k.Mul(ptx.U32, w.Row, ptx.Imm(int64(w.TM)))
	wcol := k.Mul(ptx.U32, w.Col, ptx.Imm(int64(w.TN)))
	for mi := range w.TM / 16 {
		var row []ptx.Reg
		for kk := range w.BK / 16 {
			if w.AKMajor {
				m := k.Add(ptx.U32, k.Add(ptx.U32, wrow, lo), ptx.Imm(int64(16*mi)))
				row = append(row, gen.SwizzledTileOffset(k, m, k.Add(ptx.U32, i1, ptx.Imm(int64(2*kk))), w.BK))
			} else {
				ch := k.Add(ptx.U32, k.Shr(ptx.U32, wrow, ptx.Imm(3)), k.Add(ptx.U32, i0, ptx.Imm(int64(2*mi))))
				row = append(row, gen.SwizzledTileOffset(k, k.Add(ptx.U32, hi, ptx.Imm(int64(16*kk))), ch, w.BM))
			}
		}
		aOff = append(aOff, row)
	}
	for nj := range w.TN / 16 {
		var row []ptx.Reg
		for kk := range w.BK / 16 {
			ch := k.Add(ptx.U32, k.Shr(ptx.U32, wcol, ptx.Imm(3)), k.Add(ptx.U32, i1, ptx.Imm(int64(2*nj))))
			row = append(row, gen.SwizzledTileOffset(k, k.Add(ptx.U32, lo, ptx.Imm(int64(16*kk))), ch, w.BN))
		}
		bOff = append(bOff, row)
	}
	return aOff, bOff
}

// ZeroAcc allocates the warp tile's accumulators, zeroed: [m16][n8][4]
// f32, the m16n8 block's c0..c3.
func (w Warp) ZeroAcc() [][][4]ptx.Reg {
	acc := make([][][4]ptx.Reg, w.TM/16)
	for mi := range acc {
		acc[mi] = make([][4]ptx.Reg, w.TN/8)
		for ni := range acc[mi] {
			for j := range 4 {
				acc[mi][ni][j] = w.K.Mov(ptx.F32, ptx.F32Imm(0))
			}
		}
	}
	return acc
}

// Compute multiplies the slot's tiles into the accumulators, one k16
// step at a time: A fragments by ldmatrix (.trans for an MN-major A), B
// fragments by ldmatrix.trans, then every m16n8k16 of the warp tile.
func (w Warp) Compute(slot ptx.Reg, aOff, bOff [][]ptx.Reg, acc [][][4]ptx.Reg) {
	k := w.K
	ab := gen.HalfType(w.In)
	for kk := range w.BK / 16 {
		var af [][]ptx.Reg
		for mi := range aOff {
			af = append(af, k.Ldmatrix(4, !w.AKMajor, ptx.At(k.Add(ptx.U32, slot, aOff[mi][kk]), 0)))
		}
		var bf [][]ptx.Reg
		for nj := range bOff {
			bf = append(bf, k.Ldmatrix(4, true, ptx.At(k.Add(ptx.U32, slot, bOff[nj][kk]), int64(w.ABytes))))
		}
		for mi := range acc {
			for ni := range acc[mi] {
				h := 2 * (ni % 2)
				b := [2]ptx.Reg{bf[ni/2][h], bf[ni/2][h+1]}
				k.MmaSyncTo(ab, acc[mi][ni], [4]ptx.Reg(af[mi]), b, acc[mi][ni])
			}
		}
	}
}

// Store stores the accumulators straight from registers into C (ldc
// columns, od elements, at c): lane l holds, of each m16n8 block, rows
// l/4 and l/4+8 at columns 2·(l%4) and the next, stored as a pair
// (rounded to od). Columns at or past ldc are not stored (C has a
// multiple of 8 columns, so a pair is both in or both out); rows(row),
// called once with the thread's first row, returns the guard of the row
// dr below it.
func (w Warp) Store(c, row0, col0 ptx.Reg, od dtype.DType, ldc int, rows func(row ptx.Reg) func(dr int) ptx.Reg, acc [][][4]ptx.Reg) {
	k := w.K
	q := k.Shr(ptx.U32, w.Lane, ptx.Imm(2))
	row := k.Add(ptx.U32, k.Mad(ptx.U32, w.Row, ptx.Imm(int64(w.TM)), row0), q)
	col := k.Add(ptx.U32, k.Mad(ptx.U32, w.Col, ptx.Imm(int64(w.TN)), col0),
		k.Shl(ptx.U32, k.And(ptx.U32, w.Lane, ptx.Imm(3)), ptx.Imm(1)))
	ptr := k.Add(ptx.U64, c, k.MulWide(ptx.U32, k.Mad(ptx.U32, row, ptx.Imm(int64(ldc)), col), ptx.Imm(int64(od.Size()))))
	var colOK []ptx.Reg
	for ni := range w.TN / 8 {
		colOK = append(colOK, k.Setp("lt", ptx.S32, col, ptx.Imm(int64(ldc-8*ni))))
	}
	below := rows(row)
	for mi := range acc {
		for h := range 2 {
			dr := 16*mi + 8*h
			rowOK := below(dr)
			for ni := range acc[mi] {
				off := int64(dr*ldc+8*ni) * int64(od.Size())
				vals := []ptx.Reg{acc[mi][ni][2*h], acc[mi][ni][2*h+1]}
				gen.StVals(k, od, ptx.At(ptr, off), vals, k.And(ptx.Pred, rowOK, colOK[ni]))
			}
		}
	}
}

// CpAsyncLoop runs the cp.async ring of stages slots of stage bytes at
// smem over nk k-tiles (a register, or an immediate: then the prologue's
// guards are resolved here): stages−1 k-tiles in flight before the loop;
// each iteration waits for its k-tile, passes a CTA barrier (after which
// no warp still reads the slot the next copy overwrites), issues the
// copy of the k-tile stages−1 ahead (load, into that slot) and computes
// on its own slot. Every iteration commits a group, empty or not, so
// that wait_group counts stay aligned.
func CpAsyncLoop(k *ptx.Func, smem ptx.Reg, stages, stage int, nk ptx.Operand, load, compute func(slot ptx.Reg)) {
	for s := range stages - 1 {
		at := func() ptx.Reg { return k.Add(ptx.U32, smem, ptx.Imm(int64(s*stage))) }
		if n, ok := nk.(ptx.Imm); ok {
			if int64(s) < int64(n) {
				load(at())
			}
		} else {
			k.If(k.Setp("gt", ptx.U32, nk, ptx.Imm(int64(s))), func() { load(at()) })
		}
		k.CpAsyncCommit()
	}
	end := k.Add(ptx.U32, smem, ptx.Imm(int64(stages*stage)))
	next := func(slot ptx.Reg) {
		k.MovTo(slot, k.Add(ptx.U32, slot, ptx.Imm(int64(stage))))
		k.MovTo(slot, k.Selp(ptx.U32, smem, slot, k.Setp("eq", ptx.U32, slot, end)))
	}
	rd := k.Mov(ptx.U32, smem)
	wr := k.Add(ptx.U32, smem, ptx.Imm(int64((stages-1)*stage)))
	k.For(ptx.U32, ptx.Imm(0), nk, ptx.Imm(1), func(it ptx.Reg) {
		k.CpAsyncWait(stages - 2)
		k.BarSync(0)
		ahead := k.Add(ptx.U32, it, ptx.Imm(int64(stages-1)))
		k.If(k.Setp("lt", ptx.U32, ahead, nk), func() { load(wr) })
		k.CpAsyncCommit()
		compute(rd)
		next(rd)
		next(wr)
	})
	k.CpAsyncWait(0)
}
