package gemm

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// Stream-K (order=streamk, wgmma path). The grid is persistent, one CTA
// per SM: nctaid CTAs (read from %nctaid, never assumed) share the flat
// space of n = tiles·kTiles iterations (tile t in order m, k-tile kk at
// t·kTiles + kk; n depends on M). The CTA at position q = nctaid−1−ctaid
// takes iterations ⌊q·n/nctaid⌋ up to ⌊(q+1)·n/nctaid⌋ (computed as
// q·⌊n/nctaid⌋ + ⌊q·(n mod nctaid)/nctaid⌋, within u32 for any n), one
// segment per tile it touches,
// each through the same ring and k-loop as a whole tile. A tile's owner
// is the position that runs its first k-tile; the positions after it
// that hold the rest of the tile are its contributors.
//
//   - A contributor's segment is the first of its range. Each consumer
//     warpgroup stores its f32 accumulators into the position's slot of
//     the workspace (Scratch, [nctaid][BM·BN] f32, in the register
//     layout: group i of four accumulators of thread l at (i·128 + l)·16
//     bytes of the warpgroup's part, coalesced and free of tails), meets
//     at its named barrier, and thread 0 raises the warpgroup's flag
//     (State, [nctaid][consumers] u32) with red.release.gpu.add.
//   - The owner's segment is the last of its range. After the k-loop each
//     consumer warpgroup takes its contributors in position order: thread
//     0 spins on atom.acquire.gpu.exch 0 of the flag until it reads
//     non-zero (acquiring the partial and leaving the flag zero for the
//     next run), the warpgroup meets at its named barrier, and every
//     thread adds the partial (ld.global.cg) into its accumulators; then
//     the tile's epilogue (direct or TMA store). The order of the sum is
//     fixed for a given grid: the result does not depend on timing.
//
// Waiting is safe because every CTA is resident at once (at most one per
// SM and no more than the SMs: a stream-K launch asks for
// min(132, n) CTAs with GridPerSM 1) and an owner waits only for
// contributors, which publish before they wait for anything. It is rare
// because contributors publish at the start of their range and owners
// wait at the end of theirs. The positions run opposite to the CTA index
// so that a tile's contributors have lower indices than its owner: an
// interpreter that runs CTAs in index order finds their flags raised.

// skFlags is the stream-K flags' buffer; the partials go to workspace.
const skFlags = "skflags"

// skGrid is the CTAs a stream-K launch asks for: one per SM of the H200,
// no more than there are iterations, so that every CTA has at least one
// (the runner launches fewer on fewer SMs).
func skGrid(g problem, p Params) configs.Expr {
	return configs.Min(configs.Int(numSMs), tilesExpr(g, p).Times(kTilesExpr(g, p)))
}

// streamKBuffers are the partials' workspace and the flags, one slot and
// one flag per consumer warpgroup for every CTA the launch may have.
func streamKBuffers(g problem, p Params) []kernels.Buffer {
	n := skGrid(g, p)
	return []kernels.Buffer{
		{Name: workspace, DType: dtype.F32, Elems: n.TimesInt(p.BM * p.BN), Role: kernels.Scratch},
		{Name: skFlags, DType: dtype.F32, Elems: n.TimesInt(p.Consumers), Role: kernels.State},
	}
}

// skPosition is the CTA's stream-K position, nctaid−1−ctaid, and nctaid.
func skPosition(k *ptx.Func) (pos, nct ptx.Reg) {
	nct = k.Mov(ptx.U32, ptx.NCtaidX)
	pos = k.Sub(ptx.U32, k.Sub(ptx.U32, nct, ptx.Imm(1)), k.Mov(ptx.U32, ptx.CtaidX))
	return pos, nct
}

// skRanges is the partition of a stream-K grid's iterations: position
// j's range starts at j·per + ⌊j·extra/nct⌋ (= ⌊j·n/nct⌋).
type skRanges struct {
	k               *ptx.Func
	sz              sizes
	nct, per, extra ptx.Reg // u32: the grid's CTAs, ⌊n/nct⌋, n mod nct
}

// skPartition computes the sizes and the partition of n = tiles·k-tiles
// iterations over the grid's nct CTAs.
func (wk *wgKernel) skPartition(nct ptx.Reg) skRanges {
	k := wk.k
	sz := wk.sizes()
	n := mulExt(k, sz.tiles, sz.kt).op()
	per := k.Div(ptx.U32, n, nct)
	return skRanges{k: k, sz: sz, nct: nct, per: per, extra: k.Sub(ptx.U32, n, k.Mul(ptx.U32, per, nct))}
}

// start is the first iteration of position j (u32, at most nct).
func (sr skRanges) start(j ptx.Reg) ptx.Reg {
	k := sr.k
	return k.Mad(ptx.U32, j, sr.per, k.Div(ptx.U32, k.Mul(ptx.U32, j, sr.extra), sr.nct))
}

// forStreamK calls body with each segment of the CTA's range: the tile,
// its first k-tile in the range and how many follow.
func (wk *wgKernel) forStreamK(body func(t tile)) {
	k, p := wk.k, wk.p
	pos, nct := skPosition(k)
	sr := wk.skPartition(nct)
	kt := sr.sz.kt
	it := sr.start(pos)
	end := sr.start(k.Add(ptx.U32, pos, ptx.Imm(1)))
	k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, it, end) }, func() {
		var t tile
		t.index = k.Div(ptx.U32, it, kt.op())
		t.row0, t.col0 = tileCorner(k, p, OrderM, t.index, sr.sz.tr, sr.sz.tc)
		t.kt0 = k.Sub(ptx.U32, it, k.Mul(ptx.U32, t.index, kt.op()))
		ktReg := kt.reg
		if !kt.runtime() {
			ktReg = k.Mov(ptx.U32, ptx.Imm(kt.v))
		}
		t.nk = k.Min(ptx.U32, k.Sub(ptx.U32, ktReg, t.kt0), k.Sub(ptx.U32, end, it))
		body(t)
		k.MovTo(it, k.Add(ptx.U32, it, t.nk))
	})
}

// fixup is a consumer warpgroup's side of the stream-K reduction.
type fixup struct {
	wk       *wgKernel
	pos, nct ptx.Reg // u32: the CTA's position, the grid's CTAs
	part     ptx.Reg // u64: the thread's first word in position 0's slot
	flag     ptx.Reg // u64: the warpgroup's flag of position 0
	cw       ptx.Reg // u32: the consumer warpgroup
	first    ptx.Reg // cw == 0
	elected  ptx.Reg // thread 0 of the warpgroup
}

// newFixup loads the workspace and flags parameters for consumer cw,
// thread l; nil unless the variant is stream-K.
func (wk *wgKernel) newFixup(ws, flags ptx.Sym, cw, l ptx.Reg) *fixup {
	if wk.p.Order != StreamK {
		return nil
	}
	k, p := wk.k, wk.p
	fx := &fixup{wk: wk, cw: cw}
	fx.pos, fx.nct = skPosition(k)
	words := k.Mad(ptx.U32, cw, ptx.Imm(wk.rowsPC*p.BN), k.Shl(ptx.U32, l, ptx.Imm(2)))
	fx.part = k.Add(ptx.U64, k.Cvta(ptx.Global, k.LdParam(ws)), k.MulWide(ptx.U32, words, ptx.Imm(4)))
	fx.flag = k.Add(ptx.U64, k.Cvta(ptx.Global, k.LdParam(flags)), k.MulWide(ptx.U32, cw, ptx.Imm(4)))
	fx.first = k.Setp("eq", ptx.U32, cw, ptx.Imm(0))
	fx.elected = k.Setp("eq", ptx.U32, l, ptx.Imm(0))
	return fx
}

// finish ends segment t: the epilogue (always, without stream-K), or for
// a contributor the published partial, for an owner the contributors'
// partials added and then the epilogue.
func (fx *fixup) finish(t tile, acc [][]ptx.Reg, epilogue func()) {
	if fx == nil {
		epilogue()
		return
	}
	k := fx.wk.k
	k.IfElse(k.Setp("ne", ptx.U32, t.kt0, ptx.Imm(0)), func() { fx.publish(acc) }, func() {
		fx.gather(t, acc)
		epilogue()
	})
}

// slot is the thread's first word of position j's partial; flagAt the
// warpgroup's flag of position j.
func (fx *fixup) slot(j ptx.Reg) ptx.Reg {
	k, p := fx.wk.k, fx.wk.p
	return k.Add(ptx.U64, fx.part, k.MulWide(ptx.U32, j, ptx.Imm(p.BM*p.BN*4)))
}
func (fx *fixup) flagAt(j ptx.Reg) ptx.Addr {
	k := fx.wk.k
	return ptx.At(k.Add(ptx.U64, fx.flag, k.MulWide(ptx.U32, j, ptx.Imm(4*fx.wk.p.Consumers))), 0)
}

// groups calls f with each group of four accumulators and its byte offset
// from the thread's first word of a slot.
func groups(acc [][]ptx.Reg, f func(off int64, v []ptx.Reg)) {
	per := len(acc[0]) / 4
	for mb := range acc {
		for i := range per {
			f(int64((mb*per+i)*128*16), acc[mb][4*i:4*i+4])
		}
	}
}

// publish stores the warpgroup's partial into the CTA's slot and raises
// its flag once every thread of the warpgroup has stored.
func (fx *fixup) publish(acc [][]ptx.Reg) {
	k := fx.wk.k
	k.Comment("stream-K contributor: store the partial tile, then raise the flag (release)")
	slot := fx.slot(fx.pos)
	groups(acc, func(off int64, v []ptx.Reg) { k.St(ptx.Global, ptx.F32, ptx.At(slot, off), v) })
	hopper.WarpgroupBarrier(k, fx.wk.p.Consumers, fx.first, fx.cw)
	k.If(fx.elected, func() {
		k.Red(ptx.Global, "add", ptx.U32, fx.flagAt(fx.pos), ptx.Imm(1), ptx.AtomOpts{Sem: "release"})
	})
}

// gather adds the partials of tile t's contributors, positions pos+1, …
// while their range starts inside the tile, in that order: thread 0
// waits for the flag (acquire) and clears it, the warpgroup meets, every
// thread adds its words.
func (fx *fixup) gather(t tile, acc [][]ptx.Reg) {
	k := fx.wk.k
	sr := fx.wk.skPartition(fx.nct)
	end := k.Mul(ptx.U32, k.Add(ptx.U32, t.index, ptx.Imm(1)), sr.sz.kt.op())
	j := k.Add(ptx.U32, fx.pos, ptx.Imm(1))
	k.While(func() ptx.Reg {
		return k.Setp("lt", ptx.U32, sr.start(j), end)
	}, func() {
		k.Comment("stream-K owner: wait for the next contributor's partial and add it")
		k.If(fx.elected, func() {
			flag := fx.flagAt(j)
			k.While(func() ptx.Reg {
				old := k.Atom(ptx.Global, "exch", ptx.B32, flag, ptx.Imm(0), ptx.AtomOpts{Sem: "acquire"})
				return k.Setp("eq", ptx.B32, old, ptx.Imm(0))
			}, func() {})
		})
		hopper.WarpgroupBarrier(k, fx.wk.p.Consumers, fx.first, fx.cw)
		slot := fx.slot(j)
		groups(acc, func(off int64, v []ptx.Reg) {
			w := k.Ld(ptx.Global, ptx.F32, 4, ptx.At(slot, off), ptx.LdOpts{Cache: ptx.CacheGlobal})
			for i := range v {
				k.MovTo(v[i], k.Add(ptx.F32, v[i], w[i]))
			}
		})
		k.MovTo(j, k.Add(ptx.U32, j, ptx.Imm(1)))
	})
}
