package norm

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/rows"
)

// atomic1Elect starts an atomic1 kernel: thread 0 draws a start ticket
// (atom.inc on ticket[0], wrapping at G−1, where G is the CTAs launched:
// %nctaid.x, so that it is 0 again after the run) and returns it; every
// other thread holds 1. The CTA that draws 0
// started first, so it is running: its warp 0 zeroes dγ (and dβ) once
// the first rows' loads are in flight (the row kernel's Early, which
// hides the atom's latency behind them), makes the zeros visible at gpu
// scope (membar.gl) and counts itself on ticket[1], the flag the others
// wait for (atomic1Wait). No CTA waits for one that has not started, so
// the wait cannot deadlock whatever the grid size.
func (mk *mainKernel) atomic1Elect() ptx.Reg {
	k, rk := mk.k, mk.rk
	t := k.Mov(ptx.U32, ptx.Imm(1))
	k.If(k.Setp("eq", ptx.U32, rk.Tid, ptx.Imm(0)), func() {
		k.MovTo(t, k.Atom(ptx.Global, "inc", ptx.U32, ptx.At(mk.ticket, 0), mk.lastCTA))
	})
	rk.Early = func() {
		// Lane 0 of warp 0 holds thread 0's ticket, lane 0 of every other
		// warp 1: only warp 0 of the electing CTA zeroes.
		t0 := k.ShflSync("idx", t, ptx.Imm(0), ptx.Imm(31), 0xffffffff)
		k.If(k.Setp("eq", ptx.U32, t0, ptx.Imm(0)), mk.atomic1Zero)
	}
	return t
}

// atomic1Zero is the electing warp's work: zero dγ (and dβ) in the
// widest f32 vectors that divide n, fence, raise the flag.
func (mk *mainKernel) atomic1Zero() {
	k, g, rk := mk.k, mk.g, mk.rk
	w := rows.WidestVec(dtype.F32, g.N)
	zeros := make([]ptx.Reg, w)
	zero := k.Mov(ptx.F32, ptx.F32Imm(0))
	for e := range zeros {
		zeros[e] = zero
	}
	for _, c := range mk.cols {
		k.For(ptx.U32, rk.Tid, ptx.Imm(g.N/w), ptx.Imm(32), func(i ptx.Reg) {
			k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, c, k.MulWide(ptx.U32, i, ptx.Imm(4*w))), 0), zeros)
		})
	}
	k.Membar("gl")
	lane0 := k.Setp("eq", ptx.U32, rk.Tid, ptx.Imm(0))
	k.Red(ptx.Global, "inc", ptx.U32, ptx.At(mk.ticket, 4), mk.lastCTA)
	k.Guard(lane0, false)
}

// atomic1Wait holds thread 0 of every CTA but the electing one until the
// flag ticket[1] is non-zero (an acquire read: dγ's zeros are visible
// after it; the caller's bar.sync passes that on to the CTA's threads),
// then counts the CTA on the flag. The G counts (the electing CTA's
// included) wrap it to 0: the CTA that counts last is the last to read
// it, so the run leaves both words zero.
func (mk *mainKernel) atomic1Wait() {
	k, rk := mk.k, mk.rk
	waits := k.And(ptx.Pred, k.Setp("eq", ptx.U32, rk.Tid, ptx.Imm(0)), k.Setp("ne", ptx.U32, mk.elect, ptx.Imm(0)))
	k.If(waits, func() {
		k.While(func() ptx.Reg {
			v := k.Atom(ptx.Global, "or", ptx.B32, ptx.At(mk.ticket, 4), ptx.Imm(0), ptx.AtomOpts{Sem: "acquire"})
			return k.Setp("eq", ptx.B32, v, ptx.Imm(0))
		}, nil)
		k.Red(ptx.Global, "inc", ptx.U32, ptx.At(mk.ticket, 4), mk.lastCTA)
	})
}

// emitTicket ends a ticket variant: every thread's red.adds into colsum
// are performed at gpu scope (membar.gl) before the CTA takes a ticket
// (atom.inc, wrapping at G−1, G the CTAs launched, so that the counter is
// 0 again after the run); the CTA that draws G−1 is the last, so every
// other CTA's sums are in colsum: it copies them to dγ (and dβ) and
// clears colsum for the next run.
func (mk *mainKernel) emitTicket() {
	k, rk := mk.k, mk.rk
	k.Membar("gl")
	k.BarSync(0)
	flag := k.SharedArray("last", ptx.U32, 1, 0)
	k.If(k.Setp("eq", ptx.U32, rk.Tid, ptx.Imm(0)), func() {
		old := k.Atom(ptx.Global, "inc", ptx.U32, ptx.At(mk.ticket, 0), mk.lastCTA)
		v := k.Selp(ptx.U32, ptx.Imm(1), ptx.Imm(0), k.Setp("eq", ptx.U32, old, mk.lastCTA))
		k.St(ptx.Shared, ptx.U32, ptx.At(flag, 0), []ptx.Reg{v})
	})
	k.BarSync(0)
	last := k.Setp("ne", ptx.U32, k.Ld(ptx.Shared, ptx.U32, 1, ptx.At(flag, 0))[0], ptx.Imm(0))
	k.If(last, func() {
		k.Membar("gl")
		mk.ticketCopy()
	})
}

// ticketCopy is the last CTA's copy of colsum to dγ (and dβ), clearing
// colsum behind it: eight vectors per thread loaded at a time, then
// stored, so that the loads are in flight together.
func (mk *mainKernel) ticketCopy() {
	k, g, rk := mk.k, mk.g, mk.rk
	vec := g.Vec
	q := mk.f.ncols() * g.NV // column vectors
	iters := gen.CeilDiv(q, g.Block)
	zero := k.Mov(ptx.F32, ptx.F32Imm(0))
	zeros := make([]ptx.Reg, vec)
	for e := range zeros {
		zeros[e] = zero
	}
	type vecRef struct {
		qi, ok, at ptx.Reg
		vals       []ptx.Reg
	}
	for i0 := 0; i0 < iters; i0 += 8 {
		var vs []vecRef
		for i := i0; i < min(iters, i0+8); i++ {
			var v vecRef
			v.qi = k.Add(ptx.U32, rk.Tid, ptx.Imm(i*g.Block))
			if (i+1)*g.Block > q {
				v.ok = k.Setp("lt", ptx.U32, v.qi, ptx.Imm(q))
			}
			v.at = k.Add(ptx.U64, mk.cols[0], k.MulWide(ptx.U32, v.qi, ptx.Imm(vec*4)))
			v.vals = gen.LdF32(k, ptx.Global, ptx.At(v.at, 0), vec, v.ok, ptx.LdOpts{Cache: ptx.CacheGlobal})
			vs = append(vs, v)
		}
		for _, v := range vs {
			base := mk.colBase(mk.outs, v.qi)
			gen.StF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, base, k.MulWide(ptx.U32, v.qi, ptx.Imm(vec*4))), 0), v.vals, v.ok)
			gen.StF32(k, ptx.Global, ptx.At(v.at, 0), zeros, v.ok)
		}
	}
}
