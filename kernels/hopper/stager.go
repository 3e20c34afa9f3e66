package hopper

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// Staging is the layout of a TMA-store epilogue: consumer warpgroup cw
// owns a staging tile of its Rows×Cols outputs in shared memory at
// Off + cw·Rows·Cols·size: atoms of 128-byte rows (64 16-bit or 32 f32
// columns of C) by Rows rows, each 1024-byte aligned and written in the
// 128B swizzle the output's tensor map reads (16-byte chunk q of row r
// at (q ^ r%8)·16); where Cols·size is not a multiple of 128, atoms of
// 64-byte rows in the 64B swizzle (chunk q of row r at
// (q ^ (r/2)%4)·16). The output's tensor map has boxes {RowBytes/size,
// Rows} in that swizzle. Per tile (Stager.Store):
//
//  1. thread 0 of the warpgroup waits until its previous store has read
//     the staging tile (cp.async.bulk.wait_group.read 0), and the
//     warpgroup meets at named barrier 1 + cw (bar.sync 1+cw, 128);
//  2. every thread writes its accumulator pairs (rounded to the output
//     dtype) with st.shared: a warp's eight rows of one 8-column group
//     land in eight distinct chunks, so the stores are free of bank
//     conflicts; then fence.proxy.async.shared::cta and the barrier again;
//  3. thread 0 issues one TMA store per atom (box {atom columns, Rows},
//     clipped by the tensor map at C's edges) and commits them as one
//     bulk group.
//
// The consumer goes on to the next tile's k-loop at once: the store
// drains while the next tile's wgmma runs (persistent grids), and the
// staging tile is waited for only before it is written again (Drain
// before the CTA exits).
type Staging struct {
	Off       int         // offset of consumer 0's staging tile from the base
	Rows      int         // a consumer's rows (64 per m64 block)
	Cols      int         // the tile's columns
	Consumers int         // consumer warpgroups (1 to 3: named barriers 1..3)
	Out       dtype.DType // the output's dtype
}

// Bytes is the staging tiles of all consumers.
func (sg Staging) Bytes() int { return sg.Consumers * sg.Rows * sg.Cols * sg.Out.Size() }

// RowBytes is the bytes of a staging atom's row: 128, or 64 where the
// tile's rows are not a multiple of 128 bytes.
func (sg Staging) RowBytes() int {
	if sg.Cols*sg.Out.Size()%128 == 0 {
		return 128
	}
	return 64
}

// Stager is a consumer thread's side of the TMA-store epilogue.
type Stager struct {
	k        *ptx.Func
	sg       Staging
	tm       ptx.Reg // the output's tensor map (generic address)
	stg      ptx.Reg // this consumer's staging tile
	cw       ptx.Reg
	first    ptx.Reg // cw == 0 (the barrier id is an immediate: one branch per consumer)
	elected  ptx.Reg // thread 0 of the warpgroup
	addr     []ptx.Reg
	atomCols int
	rowBytes int // of an atom: 128, or 64 (64B swizzle)
}

// Stager computes thread l's (of consumer cw, u32) staging addresses:
// for the 8-column group g of an atom, row 16w + lane/4 of the
// consumer's rows, the thread's pair at column 8g + 2·(lane%4),
// swizzled. tmC is the output's tensor map parameter.
func (sg Staging) Stager(k *ptx.Func, base ptx.Reg, tmC ptx.Sym, cw, l ptx.Reg) *Stager {
	osz := sg.Out.Size()
	rb := sg.RowBytes()
	st := &Stager{k: k, sg: sg, cw: cw, atomCols: rb / osz, rowBytes: rb}
	st.tm = k.TensorMapAddr(tmC)
	st.stg = k.Add(ptx.U32, k.Mad(ptx.U32, cw, ptx.Imm(int64(sg.Rows*sg.Cols*osz)), base), ptx.Imm(int64(sg.Off)))
	st.first = k.Setp("eq", ptx.U32, cw, ptx.Imm(0))
	st.elected = k.Setp("eq", ptx.U32, l, ptx.Imm(0))
	lane := k.And(ptx.U32, l, ptx.Imm(31))
	swz := k.Shr(ptx.U32, lane, ptx.Imm(2)) // the row's index within its 8-row swizzle atom
	row := k.Add(ptx.U32, k.Shl(ptx.U32, k.Shr(ptx.U32, l, ptx.Imm(5)), ptx.Imm(4)), swz)
	rowAddr := k.Mad(ptx.U32, row, ptx.Imm(int64(rb)), st.stg)
	if rb == 64 {
		swz = k.And(ptx.U32, k.Shr(ptx.U32, lane, ptx.Imm(3)), ptx.Imm(3)) // (row/2)%4
	}
	tb := k.Mul(ptx.U32, k.And(ptx.U32, lane, ptx.Imm(3)), ptx.Imm(int64(2*osz)))
	for g := range st.atomCols / 8 {
		b := k.Add(ptx.U32, tb, ptx.Imm(int64(8*osz*g)))
		chunk := k.Xor(ptx.U32, k.Shr(ptx.U32, b, ptx.Imm(4)), swz)
		off := k.Or(ptx.B32, k.Shl(ptx.U32, chunk, ptx.Imm(4)), k.And(ptx.B32, b, ptx.Imm(15)))
		st.addr = append(st.addr, k.Add(ptx.U32, rowAddr, off))
	}
	return st
}

// barrier is bar.sync 1+cw, 128: the consumer warpgroup alone.
func (st *Stager) barrier() { WarpgroupBarrier(st.k, st.sg.Consumers, st.first, st.cw) }

// WarpgroupBarrier is bar.sync 1+cw, 128, the named barrier of consumer
// warpgroup cw of consumers (first: cw == 0; the barrier id is an
// immediate, so one branch per consumer). Named barrier 0 is the CTA's.
func WarpgroupBarrier(k *ptx.Func, consumers int, first, cw ptx.Reg) {
	bar := func(id int) func() { return func() { k.Raw(90, 80, "bar.sync", ptx.Imm(int64(id)), ptx.Imm(128)) } }
	switch consumers {
	case 1:
		bar(1)()
	case 2:
		k.IfElse(first, bar(1), bar(2))
	default:
		k.IfElse(first, bar(1), func() {
			k.IfElse(k.Setp("eq", ptx.U32, cw, ptx.Imm(1)), bar(2), bar(3))
		})
	}
}

// Store writes a tile's accumulators (acc[mb]: the wgmma m64 block mb's,
// thread l of warp w holding rows 16w + (l%32)/4 and 8 below at columns
// 8j + 2(l%4) and the next) through the staging tile to C at row0 (the
// tile's first row; the consumer's are Rows further per cw) and col0.
func (st *Stager) Store(row0, col0 ptx.Reg, acc [][]ptx.Reg) {
	k, sg, od := st.k, st.sg, st.sg.Out
	k.Comment("TMA-store epilogue: the previous store has read the staging tile")
	k.If(st.elected, func() { k.BulkWait(0, true) })
	st.barrier()
	gpa := st.atomCols / 8 // 8-column groups per atom
	atomBytes := sg.Rows * st.rowBytes
	for mb := range acc {
		for h := range 2 {
			dr := 64*mb + 8*h
			for j := range sg.Cols / 8 {
				at := ptx.At(st.addr[j%gpa], int64(j/gpa*atomBytes+dr*st.rowBytes))
				v0, v1 := acc[mb][4*j+2*h], acc[mb][4*j+2*h+1]
				if od == dtype.F32 {
					k.St(ptx.Shared, ptx.F32, at, []ptx.Reg{v0, v1})
					continue
				}
				pt := ptx.F16x2
				if od == dtype.BF16 {
					pt = ptx.BF16x2
				}
				k.St(ptx.Shared, ptx.B32, at, []ptx.Reg{k.PackHalf2(pt, v1, v0)})
			}
		}
	}
	k.FenceProxyAsync()
	st.barrier()
	row := k.Mad(ptx.U32, st.cw, ptx.Imm(int64(sg.Rows)), row0)
	k.If(st.elected, func() {
		for a := range sg.Cols / st.atomCols {
			col := k.Add(ptx.U32, col0, ptx.Imm(int64(a*st.atomCols)))
			k.TmaStore(st.tm, []ptx.Operand{col, row}, ptx.At(st.stg, int64(a*atomBytes)))
		}
		k.BulkCommit()
	})
}

// Drain waits until the last store has read the staging tile: before
// the CTA exits.
func (st *Stager) Drain() { st.k.If(st.elected, func() { st.k.BulkWait(0, true) }) }
