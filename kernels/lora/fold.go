package lora

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// With fold=1 (the TMA x kernel) there is no finalize launch; the x
// kernel does its work:
//   - dB: db32 is complete once the dY kernel is (the x kernel waits for
//     it before it reads dh32): every x-kernel CTA rounds its share of
//     db32's vectors of four into db and zeroes them (foldDB);
//   - dA: a chunk's column of da32 is complete once every row group has
//     added its partial. At its end a CTA makes its red.adds visible at
//     gpu scope (membar.gl) and draws a ticket per chunk it took (atom.inc
//     on tickets[chunk], wrapping at row groups − 1, so that it is 0 again
//     after the run); the CTA that draws the last rounds the chunk's da32
//     into da and zeroes it;
//   - dh32 (osplit > 1, a State buffer): a row group's rows are read by
//     isplit CTAs; each draws a ticket on tickets[chunks(in) + group]
//     after its reads, and the last zeroes the rows.

// foldDB rounds the CTA's share of db32 (vectors of four, strided by the
// grid) into db and zeroes it. Every thread of the CTA takes part.
func (xk *xKernel) foldDB(db32, db ptx.Reg) {
	k, g := xk.k, xk.g
	first := k.Shl(ptx.U32, k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(g.xThreads), xk.w.tid), ptx.Imm(2))
	stride := k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.NCtaidX), ptx.Imm(4*g.xThreads))
	k.For(ptx.U32, first, ptx.Imm(g.out*g.r), stride, func(e ptx.Reg) {
		roundZero(k, g.dt, db32, db, e, foldLoad)
	})
}

// foldLoad reads what other CTAs' red.adds left in L2, past L1.
var foldLoad = ptx.LdOpts{Cache: ptx.CacheGlobal}

// foldFlags is the words of a fold kernel's drawn tickets in shared
// memory: one per chunk a CTA takes, and its row group's dh32.
func (g geom) foldFlags() int { return gen.CeilDiv(chunks(g.in), g.isplit) + 1 }

// foldEnd is the end of a fold kernel's consumer warpgroup (threads
// 128 .. 255, named barrier 1): its tickets for dA's chunks first ..
// first+cnt−1 (and its row group's of dh32 where dh32 is State), then
// the copies of what it drew last.
func (xk *xKernel) foldEnd(c cta, t ptx.Reg, xp xParams) {
	k, g := xk.k, xk.g
	ct := k.Sub(ptx.U32, xk.w.tid, ptx.Imm(128)) // the thread's index in the warpgroup
	perCTA := g.foldFlags() - 1
	flags := k.SharedArray("drew_last", ptx.U32, perCTA+1, 4)
	fa := k.Mov(ptx.U32, flags)
	groups := k.Div(ptx.U32, k.Add(ptx.U32, t, ptx.Imm(g.rg*g.bt-1)), ptx.Imm(g.rg*g.bt))
	k.Membar("gl")
	k.BarSyncN(1, 128)
	draw := func(slot, ticket, limit ptx.Reg) {
		old := k.Atom(ptx.Global, "inc", ptx.U32, ptx.At(k.Add(ptx.U64, xp.tickets, k.MulWide(ptx.U32, ticket, ptx.Imm(4))), 0), limit)
		last := k.Selp(ptx.U32, ptx.Imm(1), ptx.Imm(0), k.Setp("eq", ptx.U32, old, limit))
		if planted.drawEarly {
			last = k.Selp(ptx.U32, ptx.Imm(1), ptx.Imm(0), k.Setp("eq", ptx.U32, old, ptx.Imm(0)))
		}
		k.St(ptx.Shared, ptx.U32, ptx.At(k.Mad(ptx.U32, slot, ptx.Imm(4), fa), 0), []ptx.Reg{last})
	}
	lastGroup := k.Sub(ptx.U32, groups, ptx.Imm(1))
	k.For(ptx.U32, ct, c.cnt, ptx.Imm(128), func(j ptx.Reg) {
		draw(j, k.Add(ptx.U32, c.first, j), lastGroup)
	})
	if g.osplit > 1 {
		k.If(k.Setp("eq", ptx.U32, ct, ptx.Imm(0)), func() {
			group := k.Div(ptx.U32, c.row0, ptx.Imm(g.rg*g.bt))
			draw(imm(k, perCTA), k.Add(ptx.U32, group, ptx.Imm(chunks(g.in))), imm(k, g.isplit-1))
		})
	}
	k.BarSyncN(1, 128)
	k.Membar("gl")
	k.For(ptx.U32, ptx.Imm(0), c.cnt, ptx.Imm(1), func(j ptx.Reg) {
		drew := k.Ld(ptx.Shared, ptx.U32, 1, ptx.At(k.Mad(ptx.U32, j, ptx.Imm(4), fa), 0))[0]
		k.If(k.Setp("ne", ptx.U32, drew, ptx.Imm(0)), func() { xk.foldDA(k.Add(ptx.U32, c.first, j), ct, xp) })
	})
	if g.osplit > 1 {
		drew := k.Ld(ptx.Shared, ptx.U32, 1, ptx.At(fa, int64(4*perCTA)))[0]
		k.If(k.Setp("ne", ptx.U32, drew, ptx.Imm(0)), func() { xk.zeroDH32(c.row0, t, ct, xp.dh32) })
	}
}

// foldDA rounds chunk ch's columns of da32 [r × in] into da and zeroes
// them: vectors of four, columns past in left out (in is a multiple of
// 8, so a vector is all in or all out).
func (xk *xKernel) foldDA(ch, ct ptx.Reg, xp xParams) {
	k, g := xk.k, xk.g
	col0 := k.Shl(ptx.U32, ch, ptx.Imm(6))
	k.For(ptx.U32, ct, ptx.Imm(g.r*chunk/4), ptx.Imm(128), func(v ptx.Reg) {
		row := k.Shr(ptx.U32, v, ptx.Imm(4))
		col := k.Add(ptx.U32, col0, k.Shl(ptx.U32, k.And(ptx.U32, v, ptx.Imm(15)), ptx.Imm(2)))
		k.If(k.Setp("lt", ptx.U32, col, ptx.Imm(g.in)), func() {
			roundZero(k, g.dt, xp.da32, xp.da, k.Mad(ptx.U32, row, ptx.Imm(g.in), col), foldLoad)
		})
	})
}

// zeroDH32 zeroes the row group's rows of dh32 [t × r] below t.
func (xk *xKernel) zeroDH32(row0, t, ct, dh32 ptx.Reg) {
	k, g := xk.k, xk.g
	end := k.Min(ptx.U32, k.Add(ptx.U32, row0, ptx.Imm(g.rg*g.bt)), t)
	first := k.Mul(ptx.U32, row0, ptx.Imm(g.r/4))
	last := k.Mul(ptx.U32, end, ptx.Imm(g.r/4))
	z := k.Mov(ptx.F32, ptx.F32Imm(0))
	k.For(ptx.U32, k.Add(ptx.U32, first, ct), last, ptx.Imm(128), func(q ptx.Reg) {
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, dh32, k.MulWide(ptx.U32, q, ptx.Imm(16))), 0), []ptx.Reg{z, z, z, z})
	})
}
