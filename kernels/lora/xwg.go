package lora

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The x kernel with mma=wgmma (sm_90a): one warpgroup, the same ring,
// CTA shares and dh split as the mma.sync kernel, every tile in the
// 128-byte swizzle (gen.SwizzledTileOffset of 64-column rows) from a
// 1024-aligned base. Per step it issues, as one wgmma group:
//   - dX's blocks [64 × 64] (bt/64 of them): A dh's hi or lo rows (K-major,
//     the rank), B the A tile (MN-major), ⌈r/16⌉ k16 steps each;
//   - dA's chunk [64 × 64]: A dh's hi or lo tile read transposed (the rank
//     as M, MN-major), B the x tile (MN-major), bt/16 k16 steps each;
// then waits for it (the next step's copy overwrites this slot), stores
// dX and, after the chunk's last row block (or, fed by TMA, the CTA's
// last step), adds dA by red.add.

// emitXWG writes the wgmma x kernel.
func emitXWG(k *ptx.Func, g geom, xp xParams) {
	switch {
	case g.tparts > 0:
		emitXStream(k, g, xp)
		return
	case g.tma:
		emitXTMA(k, g, xp)
		return
	}
	base := hopper.AlignedBase(k)
	xk := newXKernel(k, g)
	xr := xk.setup(xp, base, xFrags{})
	da := xk.daWG(g.rg > 1 || planted.keepDA) // dA's chunk: rank rows 16w + g4 (+8), columns 8j + tig (+1)
	ring(k, base, g.stageX(), g.stages, xr.first, xr.cnt, xr.load, func(slot, item ptx.Reg) {
		it := xk.item(item, xr.c.row0)
		col0 := k.Shl(ptx.U32, it.ch, ptx.Imm(6))
		hiJ, loJ := xr.tiles(k, g, it)
		first := xk.firstScale(it, func() ptx.Reg { return k.Setp("ne", ptx.U32, item, xr.first) })
		xk.wgStep(slot, k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes)), hiJ, loJ, da, first, it.row0, col0, xp)
		xk.afterBlock(it, func() { xk.flushDAWG(da, col0, xp.da32) })
	}, xr.ready, true)
}

// daWG is dA's chunk accumulator of a wgmma x kernel, zeroed where the
// first step's scale-d is a predicate ptxas cannot know false.
func (xk *xKernel) daWG(zero bool) []ptx.Reg {
	if zero {
		return zeroedWG(xk.k)
	}
	return xk.k.WgmmaAcc(chunk)
}

// zeroedWG is a wgmma accumulator [64 × 64] of zeros, zeroed here (not
// by ptxas between the wgmma: C7515).
func zeroedWG(k *ptx.Func) []ptx.Reg {
	acc := k.WgmmaAcc(chunk)
	for _, r := range acc {
		k.MovTo(r, ptx.F32Imm(0))
	}
	return acc
}

// wgStep issues a step's wgmma group on the x tile in slot and the hi
// and lo tiles (hi alone with the planted dropLo): with dX its blocks
// from aTile, and dA's chunk into da, the first product scaled by first;
// it waits for the group (the slot is free after it) and stores dX's
// rows from row0 at column col0.
func (xk *xKernel) wgStep(slot, aTile, hi, lo ptx.Reg, da []ptx.Reg, first ptx.Operand, row0, col0 ptx.Reg, xp xParams) {
	k, g := xk.k, xk.g
	ab := gen.HalfType(g.dt)
	tiles := []ptx.Reg{hi, lo}
	if planted.dropLo {
		tiles = tiles[:1]
	}
	k.WgmmaFence()
	var dx [][]ptx.Reg
	if g.dx {
		dx = xk.wgDX(ab, aTile, tiles)
	}
	xk.wgDA(ab, da, slot, tiles, first)
	k.WgmmaCommit()
	k.WgmmaWait(0)
	if g.dx {
		xk.storeDXWG(dx, row0, col0, xp.t, xp.dx)
	}
}

// wgDA issues dA += hiᵀ·x + loᵀ·x over the step's row block into da, the
// first product scaled by first (0 overwrites): A the hi or lo tile of
// the block (the rank as M, MN-major), B the slot's x tile (MN-major).
func (xk *xKernel) wgDA(ab ptx.Type, da []ptx.Reg, slot ptx.Reg, tiles []ptx.Reg, first ptx.Operand) {
	k, g := xk.k, xk.g
	for kt := range g.bt / 16 {
		for ti, tile := range tiles {
			var scale ptx.Operand = ptx.Imm(1)
			if kt == 0 && ti == 0 {
				scale = first
			}
			a := k.WgmmaDesc(k.Add(ptx.U32, tile, ptx.Imm(kt*16*g.rowBytes)), g.tileBytes, 1024, ptx.Swizzle128B)
			b := k.WgmmaDesc(k.Add(ptx.U32, slot, ptx.Imm(kt*16*g.rowBytes)), g.tileBytes, 1024, ptx.Swizzle128B)
			k.Wgmma(ab, da, a, b, ptx.WgmmaOpts{ScaleD: scale, TransA: true, TransB: true})
		}
	}
}

// wgDX issues dX = hi·A + lo·A for the step's row block, one accumulator
// [64 × 64] per 64 rows; aTile is the chunk's A tile [ar × 64].
func (xk *xKernel) wgDX(ab ptx.Type, aTile ptx.Reg, tiles []ptx.Reg) [][]ptx.Reg {
	k, g := xk.k, xk.g
	var out [][]ptx.Reg
	for m := range g.bt / 64 {
		acc := k.WgmmaAcc(chunk)
		for kk := range g.kSteps {
			for ti, tile := range tiles {
				var scale ptx.Operand = ptx.Imm(1)
				if kk == 0 && ti == 0 {
					scale = ptx.Imm(0)
				}
				a := k.WgmmaDesc(k.Add(ptx.U32, tile, ptx.Imm(m*64*g.rowBytes+kk*32)), 16, 1024, ptx.Swizzle128B)
				b := k.WgmmaDesc(k.Add(ptx.U32, aTile, ptx.Imm(kk*16*g.rowBytes)), g.ar*g.rowBytes, 1024, ptx.Swizzle128B)
				k.Wgmma(ab, acc, a, b, ptx.WgmmaOpts{ScaleD: scale, TransB: true})
			}
		}
		out = append(out, acc)
	}
	return out
}

// storeDXWG stores the row block's dX accumulators rounded: warp w of
// block m holds rows 64m + 16w + g4 and +8; rows at or past t and
// columns past in are left out.
func (xk *xKernel) storeDXWG(acc [][]ptx.Reg, row0, col0, t, dx ptx.Reg) {
	k, g, w := xk.k, xk.g, xk.w
	col := k.Add(ptx.U32, col0, w.tig)
	for m, d := range acc {
		base := k.Add(ptx.U32, k.Add(ptx.U32, row0, xk.w.wgRow(k)), ptx.Imm(64*m))
		for half := range 2 {
			row := k.Add(ptx.U32, base, ptx.Imm(8*half))
			rowOK := k.Setp("lt", ptx.U32, row, t)
			for j := range chunk / 8 {
				cn := k.Add(ptx.U32, col, ptx.Imm(8*j))
				ok := k.And(ptx.Pred, rowOK, k.Setp("lt", ptx.U32, cn, ptx.Imm(g.in)))
				elem := k.Mad(ptx.U32, row, ptx.Imm(g.in), cn)
				gen.StVals(k, g.dt, ptx.At(k.Add(ptx.U64, dx, k.MulWide(ptx.U32, elem, ptx.Imm(g.dt.Size()))), 0), []ptx.Reg{d[4*j+2*half], d[4*j+2*half+1]}, ok)
			}
		}
	}
}

// wgRow is the thread's row g4 of its warp's 16 in a wgmma accumulator
// [64 × n]: 16·(warp mod 4) + g4 (the warp's place in its warpgroup).
func (w warpCtx) wgRow(k *ptx.Func) ptx.Reg {
	return k.Add(ptx.U32, k.Shl(ptx.U32, k.And(ptx.U32, w.warp, ptx.Imm(3)), ptx.Imm(4)), w.g4)
}

// flushDAWG adds dA's chunk accumulator (columns from col0) into da32
// [r × in]: rank rows at or past r and columns past in left out.
func (xk *xKernel) flushDAWG(acc []ptx.Reg, col0, da32 ptx.Reg) {
	k, g, w := xk.k, xk.g, xk.w
	row := xk.w.wgRow(k)
	col := k.Add(ptx.U32, col0, w.tig)
	ok := func(row, cn ptx.Reg) ptx.Reg {
		return k.And(ptx.Pred, k.Setp("lt", ptx.U32, row, ptx.Imm(g.r)), k.Setp("lt", ptx.U32, cn, ptx.Imm(g.in)))
	}
	for j := range chunk / 8 {
		redQuad(k, w, da32, row, k.Add(ptx.U32, col, ptx.Imm(8*j)), g.in, [4]ptx.Reg(acc[4*j:4*j+4]), ok)
	}
}

// emitXStream writes the streaming wgmma x kernel (tparts > 0): CTA c
// takes chunk c mod nc of in (nc chunks) over part ⌊c/nc⌋ of the row
// blocks, ⌈nb/tparts⌉ of them (nb = ⌈t/bt⌉ at run time; a last part may
// have fewer or none). Its A tile is loaded once; each ring slot holds
// the block's x tile and its rows of dh32, which each thread splits into
// the hi and lo tiles from the copies it made itself; then the wgmma
// step as emitXWG's, dA's partial added once, after the part's last block.
func emitXStream(k *ptx.Func, g geom, xp xParams) {
	base := hopper.AlignedBase(k)
	xk := newXKernel(k, g)
	nc := chunks(g.in)
	id := k.Mov(ptx.U32, ptx.CtaidX)
	part := k.Div(ptx.U32, id, ptx.Imm(nc))
	col0 := k.Shl(ptx.U32, k.Sub(ptx.U32, id, k.Mul(ptx.U32, part, ptx.Imm(nc))), ptx.Imm(6))
	nb := k.Shr(ptx.U32, k.Add(ptx.U32, xp.t, ptx.Imm(g.bt-1)), ptx.Imm(gen.Log2(g.bt)))
	q := k.Div(ptx.U32, k.Add(ptx.U32, nb, ptx.Imm(g.tparts-1)), ptx.Imm(g.tparts))
	b0 := k.Min(ptx.U32, k.Mul(ptx.U32, part, q), nb)
	cnt := k.Min(ptx.U32, q, k.Sub(ptx.U32, nb, b0))
	row0 := k.Mul(ptx.U32, b0, ptx.Imm(g.bt))
	hi := k.Add(ptx.U32, base, ptx.Imm(g.stages*g.stageX()))
	lo := k.Add(ptx.U32, hi, ptx.Imm(g.tileBytes))
	aTile := k.Add(ptx.U32, lo, ptx.Imm(g.tileBytes))
	if g.r < g.hp {
		xk.padDH(hi, lo)
	}
	if g.dx { // the ring's first group
		newTileCopy(k, xk.w.tid, g.ar, chunk, chunk, g.in, g.xThreads).issue(aTile, xp.a, imm(k, 0), col0, ptx.Imm(g.r), ptx.Imm(g.in))
	}
	if g.pdl {
		k.GridDepWait() // the ring's first copies read dh32
	}
	xc := newTileCopy(k, xk.w.tid, g.bt, chunk, chunk, g.in, g.xThreads)
	dc := newTileCopy(k, xk.w.tid, g.bt, 2*g.r, 2*g.rp, 2*g.r, g.xThreads) // dh32's rows as pairs of 16-bit units
	load := func(slot, j ptx.Reg) {
		row := k.Mad(ptx.U32, j, ptx.Imm(g.bt), row0)
		xc.issue(slot, xp.x, row, col0, xp.t, ptx.Imm(g.in))
		dc.issue(k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes)), xp.dh32, row, imm(k, 0), xp.t, ptx.Imm(2*g.r))
	}
	var storeDH ptx.Reg // with osplit > 1 the CTAs of chunk 0 store dh rounded
	if xp.dh.Valid() {
		storeDH = k.Setp("eq", ptx.U32, col0, ptx.Imm(0))
	}
	da := xk.daWG(true)
	split := xk.newSplit(dc)
	ring(k, base, g.stageX(), g.stages, imm(k, 0), cnt, load, func(slot, j ptx.Reg) {
		rowJ := k.Mad(ptx.U32, j, ptx.Imm(g.bt), row0)
		split.own(k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes)), hi, lo, rowJ, xp.t, xp.dh, storeDH)
		k.FenceProxyAsync()
		k.BarSync(0)
		var first ptx.Operand = k.Setp("ne", ptx.U32, j, ptx.Imm(0))
		if planted.keepDA {
			first = ptx.Imm(1)
		}
		xk.wgStep(slot, aTile, hi, lo, da, first, rowJ, col0, xp)
		k.If(k.Setp("eq", ptx.U32, j, k.Sub(ptx.U32, cnt, ptx.Imm(1))), func() { xk.flushDAWG(da, col0, xp.da32) })
	}, nil, true)
}

// ownSplit is a thread's part of the streaming kernel's dh split: per
// chunk of its dh32 copies (four f32 of a row each), the chunk's first
// rank and its offset in the hi and lo tiles, the same at every step.
type ownSplit struct {
	xk        *xKernel
	dc        *tileCopy
	rank, off []ptx.Reg
}

func (xk *xKernel) newSplit(dc *tileCopy) ownSplit {
	k := xk.k
	o := ownSplit{xk: xk, dc: dc}
	for i := range dc.rowIn {
		rank := k.Shr(ptx.U32, dc.colIn[i], ptx.Imm(1))
		o.rank = append(o.rank, rank)
		o.off = append(o.off, k.Add(ptx.U32, gen.SwizzledTileOffset(k, dc.rowIn[i], k.Shr(ptx.U32, rank, ptx.Imm(3)), chunk),
			k.Shl(ptx.U32, k.And(ptx.U32, rank, ptx.Imm(7)), ptx.Imm(1))))
	}
	return o
}

// own splits the thread's own copies in the slot's dh32 rows at rows
// into the hi and lo tiles; where store holds (and dh is a buffer) it
// also stores hi, dh rounded, for rows below t.
func (o ownSplit) own(rows, hi, lo, row0, t, dh, store ptx.Reg) {
	k, g, dc := o.xk.k, o.xk.g, o.dc
	dc.each(func(i int) {
		v := k.Ld(ptx.Shared, ptx.F32, 4, ptx.At(k.Add(ptx.U32, rows, dc.sOff[i]), 0))
		hw, lw := hiLo(k, g.dt, v)
		k.St(ptx.Shared, ptx.B32, ptx.At(k.Add(ptx.U32, hi, o.off[i]), 0), hw)
		k.St(ptx.Shared, ptx.B32, ptx.At(k.Add(ptx.U32, lo, o.off[i]), 0), lw)
		if dh.Valid() {
			row := k.Add(ptx.U32, row0, dc.rowIn[i])
			o.xk.storeDH(dh, k.Mad(ptx.U32, row, ptx.Imm(g.r), o.rank[i]), hw, k.And(ptx.Pred, store, k.Setp("lt", ptx.U32, row, t)))
		}
	})
}

// emitXTMA writes the wgmma x kernel over row groups fed by TMA
// (xload=tma): warpgroup 0's thread 0 brings each step's x tile (and A
// tile) as 128-byte-swizzled boxes on the slot's full mbarrier (x's with
// an L2 evict_first policy: it is read once), the first
// lap of the ring before pdl's wait (x and A are inputs no launch
// writes); all 256 threads split dh32 into the hi and lo tiles; then
// warpgroup 1 runs the steps of emitXWG, releasing each slot (an arrival
// a warp on its empty barrier) once its wgmma group is complete. No CTA
// barrier is passed a step.
func emitXTMA(k *ptx.Func, g geom, xp xParams) {
	base := hopper.AlignedBase(k)
	xk := newXKernel(k, g)
	tid := xk.w.tid
	hiOff := g.stages * g.stageX()
	ring := hopper.Ring{N: g.stages, Stride: g.stageX(), Bars: hiOff + 2*g.rg*g.bt*g.hp*2}
	hopper.InitBarriers(k, tid, func() {
		for s := range g.stages {
			ring.InitSlot(k, base, s, 1, 4)
		}
	})
	k.BarSync(0)
	c := newCTA(k, g.rg*g.bt, g.isplit, g.in)
	hi := k.Add(ptx.U32, base, ptx.Imm(hiOff))
	lo := k.Add(ptx.U32, hi, ptx.Imm(g.rg*g.bt*g.hp*2))
	first, cnt := xk.steps(c)
	prod := ring.Cursor(k)
	// x is read once: its lines go first when L2 must make room, so that
	// streaming it keeps dh32 and dA's accumulator (whose lines take the
	// red.add of every CTA) in L2 instead of pushing them out.
	xPolicy := k.CreatePolicy(ptx.L2EvictFirst)
	issue := func(i ptx.Reg) {
		it := xk.item(k.Add(ptx.U32, first, i), c.row0)
		col := k.Shl(ptx.U32, it.ch, ptx.Imm(6))
		full, dst := prod.Full(base), prod.Data(base)
		k.MbarArriveExpectTx(full, ptx.Imm(g.stageX()))
		k.TmaLoadHinted(ptx.At(dst, 0), xp.x, []ptx.Operand{col, it.row0}, full, xPolicy)
		if g.dx {
			k.TmaLoad(ptx.At(dst, int64(g.tileBytes)), xp.a, []ptx.Operand{col, ptx.Imm(0)}, full)
		}
		prod.Next()
	}
	lead := k.Setp("eq", ptx.U32, tid, ptx.Imm(0))
	pre := k.Min(ptx.U32, cnt, ptx.Imm(g.stages))
	k.If(lead, func() { k.For(ptx.U32, ptx.Imm(0), pre, ptx.Imm(1), issue) })
	if g.pdl {
		k.GridDepWait()
	}
	xk.takeDH(xFrags{}, c, xp.dh32, hi, lo, xp.t, xp.dh)
	if g.fold {
		xk.foldDB(xp.db32, xp.db)
	}
	k.FenceProxyAsync() // the hi and lo tiles are read by wgmma
	k.BarSync(0)
	hopper.Roles(k, hopper.Warpgroup(k, tid), func() {
		k.If(lead, func() {
			k.For(ptx.U32, pre, cnt, ptx.Imm(1), func(i ptx.Reg) {
				prod.WaitEmpty(base)
				issue(i)
			})
		})
	}, func() { xk.consumeTMA(ring, base, c, first, cnt, hi, lo, xp) })
}

// steps are the TMA x kernel CTA's first step and count (a step a chunk
// of one row block; chunk-major, rg blocks each). With fold a CTA takes
// whole chunks (newCTA's), as fold's tickets count a chunk's row groups;
// otherwise the row group's nc·rg steps are split evenly, part p taking
// [⌊p·S/isplit⌋, ⌊(p+1)·S/isplit⌋), so a CTA may begin or end inside a
// chunk (and flush a chunk's partial sum of fewer than rg blocks).
func (xk *xKernel) steps(c cta) (first, cnt ptx.Reg) {
	k, g := xk.k, xk.g
	if g.fold {
		return xk.chunkSteps(c)
	}
	s := chunks(g.in) * g.rg
	at := func(p ptx.Reg) ptx.Reg { return k.Div(ptx.U32, k.Mul(ptx.U32, p, ptx.Imm(s)), ptx.Imm(g.isplit)) }
	first = at(c.part)
	return first, k.Sub(ptx.U32, at(k.Add(ptx.U32, c.part, ptx.Imm(1))), first)
}

// consumeTMA is the TMA x kernel's consumer warpgroup: emitXWG's step on
// each slot as it fills, the slot released once its wgmma are complete;
// a chunk's dA goes out after its last block or the CTA's last step.
func (xk *xKernel) consumeTMA(ring hopper.Ring, base ptx.Reg, c cta, first, cnt, hi, lo ptx.Reg, xp xParams) {
	k, g := xk.k, xk.g
	lane0 := k.Setp("eq", ptx.U32, xk.w.lane, ptx.Imm(0))
	xr := xRing{c: c, hi: hi, lo: lo}
	da := xk.daWG(g.rg > 1 || planted.keepDA)
	cons := ring.Cursor(k)
	k.For(ptx.U32, ptx.Imm(0), cnt, ptx.Imm(1), func(i ptx.Reg) {
		it := xk.item(k.Add(ptx.U32, first, i), c.row0)
		col0 := k.Shl(ptx.U32, it.ch, ptx.Imm(6))
		hiJ, loJ := xr.tiles(k, g, it)
		// A CTA that begins inside a chunk adds onto daWG's zeros.
		scale := xk.firstScale(it, func() ptx.Reg { return k.Setp("ne", ptx.U32, i, ptx.Imm(0)) })
		cons.WaitFull(base)
		slot := cons.Data(base)
		xk.wgStep(slot, k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes)), hiJ, loJ, da, scale, it.row0, col0, xp)
		cons.Release(base, lane0) // the group is complete
		cons.Next()
		var last ptx.Reg
		if !g.fold {
			last = k.Setp("eq", ptx.U32, i, k.Sub(ptx.U32, cnt, ptx.Imm(1))) // or end inside one
		}
		xk.afterBlockOr(it, last, func() { xk.flushDAWG(da, col0, xp.da32) })
	})
	if g.fold {
		xk.foldEnd(c, xp.t, xp)
	}
}
