package lora

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The dY kernel with dyload=tma (sm_90a): the CTA is two warpgroups.
// Thread 0 of the first brings the h tile [bt × 64] once and, per chunk
// of the CTA's share of out, the dY tile [bt × 64] and the B tile
// [64 × 64] as 128-byte-swizzled TMA boxes into a ring of mbarrier
// slots (B's and h's columns past r read as zeros, so the rank is
// padded to 64). The second warpgroup, per chunk, issues one wgmma group:
//   - dh += dY·B: bt/64 accumulators [64 × 64] held to the end (A the dY
//     rows, K-major; B the B tile, MN-major), 4 k16 steps each;
//   - dB's chunk = dYᵀ·h [64 × 64] (A the dY tile read transposed, the
//     chunk's columns as M; B the h tile, MN-major), bt/16 k16 steps;
// waits for it, releases the slot (an arrival a warp on its empty
// mbarrier) and adds s·dB's chunk into db32 by red.add. At the end dh
// goes out as the mma.sync kernel's does (dhOut's rules).

// dyTMABars is the offset of the TMA dY kernel's mbarriers from its
// aligned base: after the ring's slots and the h tile. The ring's full
// and empty barriers come first, then h's.
func (g geom) dyTMABars() int { return g.stages*g.stageDY() + g.tileBytes }

// emitDYTMA writes the TMA dY kernel.
func emitDYTMA(k *ptx.Func, g geom) {
	dy, bw, h := operandParam(k, true, "dy"), operandParam(k, true, "b"), operandParam(k, true, "h")
	scale := gen.Param(k, "scale")
	dh, dh32, db32 := gen.Param(k, "dh"), gen.Param(k, "dh32"), gen.Param(k, "db32")
	t := k.LdParam(k.Param(Dim, ptx.U32))
	k.ReqNTid(dyTMAThreads)
	if g.pdl {
		k.GridDepLaunch() // the first launch: it reads nothing a launch of this run wrote
	}
	base := hopper.AlignedBase(k)
	w := newWarpCtx(k)
	ring := hopper.Ring{N: g.stages, Stride: g.stageDY(), Bars: g.dyTMABars()}
	hBar := ptx.At(base, int64(g.dyTMABars()+ring.BarsBytes()))
	hopper.InitBarriers(k, w.tid, func() {
		for s := range g.stages {
			ring.InitSlot(k, base, s, 1, 4)
		}
		k.MbarInit(hBar, ptx.Imm(1))
	})
	k.BarSync(0)
	c := newCTA(k, g.bt, g.osplit, g.out)
	hTile := k.Add(ptx.U32, base, ptx.Imm(g.stages*g.stageDY()))
	lead := k.Setp("eq", ptx.U32, w.tid, ptx.Imm(0))
	hopper.Roles(k, hopper.Warpgroup(k, w.tid), func() {
		k.If(lead, func() {
			k.MbarArriveExpectTx(hBar, ptx.Imm(g.tileBytes))
			k.TmaLoad(ptx.At(hTile, 0), h, []ptx.Operand{ptx.Imm(0), c.row0}, hBar)
			prod := ring.Cursor(k)
			k.For(ptx.U32, ptx.Imm(0), c.cnt, ptx.Imm(1), func(i ptx.Reg) {
				col := k.Shl(ptx.U32, k.Add(ptx.U32, c.first, i), ptx.Imm(6))
				prod.WaitEmpty(base)
				full, dst := prod.Full(base), prod.Data(base)
				k.MbarArriveExpectTx(full, ptx.Imm(g.stageDY()))
				k.TmaLoad(ptx.At(dst, 0), dy, []ptx.Operand{col, c.row0}, full)
				k.TmaLoad(ptx.At(dst, int64(g.tileBytes)), bw, []ptx.Operand{ptx.Imm(0), col}, full)
				prod.Next()
			})
		})
	}, func() {
		s := k.Ld(ptx.Global, ptx.F32, 1, ptx.At(scale, 0), gen.LdNC)[0]
		dt := &dyTMA{k: k, g: g, w: w, s: s}
		var dhAcc [][]ptx.Reg
		for range g.bt / 64 {
			dhAcc = append(dhAcc, zeroedWG(k))
		}
		k.MbarWait(hBar, ptx.Imm(0))
		cons := ring.Cursor(k)
		lane0 := k.Setp("eq", ptx.U32, w.lane, ptx.Imm(0))
		k.For(ptx.U32, ptx.Imm(0), c.cnt, ptx.Imm(1), func(i ptx.Reg) {
			cons.WaitFull(base)
			slot := cons.Data(base)
			db := dt.step(slot, hTile, dhAcc)
			cons.Release(base, lane0) // the group is complete
			cons.Next()
			dt.flushDB(db, k.Add(ptx.U32, c.first, i), db32)
		})
		dt.dhOut(dhAcc, c.row0, t, dh, dh32)
	})
}

// dyTMAThreads is the TMA dY kernel's block: a producer warpgroup and a
// consumer.
const dyTMAThreads = 256

// dyTMA is the TMA dY kernel's consumer warpgroup.
type dyTMA struct {
	k *ptx.Func
	g geom
	w warpCtx
	s ptx.Reg // the scale
}

// step issues the chunk's wgmma group on the slot (dY tile, then B tile)
// and the h tile, waits for it and returns dB's chunk [64 × 64].
func (dt *dyTMA) step(slot, hTile ptx.Reg, dh [][]ptx.Reg) []ptx.Reg {
	k, g := dt.k, dt.g
	ab := gen.HalfType(g.dt)
	bTile := k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes))
	desc := func(addr ptx.Reg, off, lbo int) ptx.Reg {
		return k.WgmmaDesc(k.Add(ptx.U32, addr, ptx.Imm(off)), lbo, 1024, ptx.Swizzle128B)
	}
	k.WgmmaFence()
	for m, acc := range dh {
		for kk := range chunk / 16 {
			if planted.dropStep && kk == chunk/16-1 {
				break
			}
			k.Wgmma(ab, acc, desc(slot, m*64*g.rowBytes+kk*32, 16), desc(bTile, kk*16*g.rowBytes, chunk*g.rowBytes), ptx.WgmmaOpts{ScaleD: ptx.Imm(1), TransB: true})
		}
	}
	db := k.WgmmaAcc(chunk)
	for kt := range g.bt / 16 {
		var scale ptx.Operand = ptx.Imm(1)
		if kt == 0 {
			scale = ptx.Imm(0)
		}
		k.Wgmma(ab, db, desc(slot, kt*16*g.rowBytes, g.tileBytes), desc(hTile, kt*16*g.rowBytes, g.tileBytes), ptx.WgmmaOpts{ScaleD: scale, TransA: true, TransB: true})
	}
	k.WgmmaCommit()
	k.WgmmaWait(0)
	return db
}

// flushDB adds s times dB's chunk ch (rows 64·ch + the accumulator's)
// into db32 [out × r]: rows past out and rank columns past r left out.
func (dt *dyTMA) flushDB(db []ptx.Reg, ch, db32 ptx.Reg) {
	k, g, w := dt.k, dt.g, dt.w
	row := k.Add(ptx.U32, k.Shl(ptx.U32, ch, ptx.Imm(6)), w.wgRow(k))
	ok := func(row, col ptx.Reg) ptx.Reg {
		return k.And(ptx.Pred, k.Setp("lt", ptx.U32, row, ptx.Imm(g.out)), k.Setp("lt", ptx.U32, col, ptx.Imm(g.r)))
	}
	for j := range gen.CeilDiv(g.r, 8) {
		redQuad(k, w, db32, row, k.Add(ptx.U32, w.tig, ptx.Imm(8*j)), g.r, scaled(k, [4]ptx.Reg(db[4*j:4*j+4]), dt.s), ok)
	}
}

// dhOut scales dh's accumulators by s and, with one CTA a row block,
// stores them to dh (rounded) and dh32; with several, adds them into
// dh32 by red.add. Rows at or past t are not written.
func (dt *dyTMA) dhOut(dh [][]ptx.Reg, row0, t, dhBuf, dh32 ptx.Reg) {
	k, g, w := dt.k, dt.g, dt.w
	nb := gen.CeilDiv(g.r, 8)
	for m, acc := range dh {
		base := k.Add(ptx.U32, k.Add(ptx.U32, row0, w.wgRow(k)), ptx.Imm(64*m))
		if g.osplit > 1 {
			inT := func(row, _ ptx.Reg) ptx.Reg { return k.Setp("lt", ptx.U32, row, t) }
			for j := range nb {
				redQuad(k, w, dh32, base, k.Add(ptx.U32, w.tig, ptx.Imm(8*j)), g.r, scaled(k, [4]ptx.Reg(acc[4*j:4*j+4]), dt.s), inT)
			}
			continue
		}
		for half := range 2 {
			row := k.Add(ptx.U32, base, ptx.Imm(8*half))
			ok := k.Setp("lt", ptx.U32, row, t)
			for j := range nb {
				v := []ptx.Reg{k.Mul(ptx.F32, acc[4*j+2*half], dt.s), k.Mul(ptx.F32, acc[4*j+2*half+1], dt.s)}
				storeDHPair(k, g, row, k.Add(ptx.U32, w.tig, ptx.Imm(8*j)), v, ok, dhBuf, dh32)
			}
		}
	}
}
