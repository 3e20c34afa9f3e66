package lora

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// ticket is one counter of the State buffer tickets: the CTAs that
// contribute to what it guards count themselves on it, and the one that
// counts last finishes that work. atom.inc wraps at last (u32: the
// contributors less one), so the counter is 0 again after the run.
type ticket struct {
	word ptx.Reg // u32 index in tickets
	last ptx.Operand
}

// lastOf counts the CTA on each ticket once every thread's red.adds are
// performed at gpu scope (membar.gl, then the CTA's barrier), thread i
// taking ticket i, and returns, to every thread, whether the CTA counted
// last on each; where it did, its later loads see every contributor's
// sums (a second membar.gl, on the caller's path).
func lastOf(k *ptx.Func, tid, tickets ptx.Reg, ts []ticket) []ptx.Reg {
	k.Membar("gl")
	k.BarSync(0)
	flags := k.Mov(ptx.U32, k.SharedArray("last", ptx.U32, len(ts), 4))
	for i, t := range ts {
		k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(i)), func() {
			at := k.Add(ptx.U64, tickets, k.MulWide(ptx.U32, t.word, ptx.Imm(4)))
			wrap := t.last
			if planted.ticketOff {
				wrap = k.Add(ptx.U32, t.last, ptx.Imm(1))
			}
			old := k.Atom(ptx.Global, "inc", ptx.U32, ptx.At(at, 0), wrap)
			k.St(ptx.Shared, ptx.U32, ptx.At(flags, int64(4*i)), []ptx.Reg{k.Selp(ptx.U32, ptx.Imm(1), ptx.Imm(0), k.Setp("eq", ptx.U32, old, t.last))})
		})
	}
	k.BarSync(0)
	out := make([]ptx.Reg, len(ts))
	for i := range ts {
		out[i] = k.Setp("ne", ptx.U32, k.Ld(ptx.Shared, ptx.U32, 1, ptx.At(flags, int64(4*i)))[0], ptx.Imm(0))
	}
	return out
}

// block is a rectangle of an f32 accumulator [· × ld] that a last CTA
// finishes: rows [row0, row0+rows) below rowLim, columns [col0,
// col0+cols) below colLim (cols a multiple of 4, ld and col0 too); each
// element rounded into out at the same index (where out is valid) and
// zeroed in the accumulator.
type block struct {
	acc, out       ptx.Reg
	ld, rows, cols int
	row0, col0     ptx.Reg
	rowLim, colLim ptx.Operand
}

// finish walks the block four columns a thread at a time, block threads
// apart: loads through L2 (ld.global.cg: other CTAs' red.adds live
// there), stores rounded to dt, zeroes.
func (b block) finish(k *ptx.Func, tid ptx.Reg, threads int, dt dtype.DType) {
	vpr := b.cols / 4
	zero := k.Mov(ptx.F32, ptx.F32Imm(0))
	zeros := []ptx.Reg{zero, zero, zero, zero}
	k.For(ptx.U32, tid, ptx.Imm(b.rows*vpr), ptx.Imm(threads), func(i ptx.Reg) {
		q := k.Div(ptx.U32, i, ptx.Imm(vpr))
		row := k.Add(ptx.U32, b.row0, q)
		col := k.Add(ptx.U32, b.col0, k.Shl(ptx.U32, k.Sub(ptx.U32, i, k.Mul(ptx.U32, q, ptx.Imm(vpr))), ptx.Imm(2)))
		ok := k.And(ptx.Pred, k.Setp("lt", ptx.U32, row, b.rowLim), k.Setp("lt", ptx.U32, col, b.colLim))
		k.If(ok, func() {
			elem := k.Mad(ptx.U32, row, ptx.Imm(b.ld), col)
			src := k.Add(ptx.U64, b.acc, k.MulWide(ptx.U32, elem, ptx.Imm(4)))
			if b.out.Valid() {
				v := gen.LdF32(k, ptx.Global, ptx.At(src, 0), 4, ptx.Reg{}, ptx.LdOpts{Cache: ptx.CacheGlobal})
				gen.StVals(k, dt, ptx.At(k.Add(ptx.U64, b.out, k.MulWide(ptx.U32, elem, ptx.Imm(dt.Size()))), 0), v, ptx.Reg{})
			}
			k.St(ptx.Global, ptx.F32, ptx.At(src, 0), zeros)
		})
	})
}

// lastFinish takes the CTA's tickets and finishes, for each it counted
// last on, its block (after a membar.gl).
func lastFinish(k *ptx.Func, tid, tickets ptx.Reg, threads int, dt dtype.DType, ts []ticket, bs []block) {
	for i, last := range lastOf(k, tid, tickets, ts) {
		k.If(last, func() {
			k.Membar("gl")
			bs[i].finish(k, tid, threads, dt)
		})
	}
}
