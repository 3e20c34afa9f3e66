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
// goes out as the mma.sync kernel's does (dhOut's rules). With
// dbsplit > 0 the dh CTAs leave dB out (no h tile) and the launch's last
// ⌈out/64⌉·dbsplit CTAs are dB's (dbCTA): their slots hold a row block's
// dY tile of one chunk and its h tile, and dB's chunk is summed in
// registers over their part of the row blocks.

// dyTMABars is the offset of the TMA dY kernel's mbarriers from its
// aligned base: after the ring's slots and the h tile (none with
// dbsplit > 0). The ring's full and empty barriers come first, then h's.
func (g geom) dyTMABars() int {
	if g.dbsplit > 0 {
		return g.stages * g.stageDY()
	}
	return g.stages*g.stageDY() + g.tileBytes
}

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
		if g.dbsplit == 0 {
			k.MbarInit(hBar, ptx.Imm(1))
		}
	})
	k.BarSync(0)
	c := newCTA(k, g.bt, g.osplit, g.out)
	dt := &dyTMA{k: k, g: g, w: w, ring: ring, base: base, dy: dy, lead: k.Setp("eq", ptx.U32, w.tid, ptx.Imm(0))}
	wg := hopper.Warpgroup(k, w.tid)
	loadScale := func() { dt.s = k.Ld(ptx.Global, ptx.F32, 1, ptx.At(scale, 0), gen.LdNC)[0] }
	if g.dbsplit == 0 {
		f := &fusedDB{bar: hBar, hTile: k.Add(ptx.U32, base, ptx.Imm(g.stages*g.stageDY())), db32: db32}
		hopper.Roles(k, wg, func() {
			dt.produceDH(c, bw, func() {
				k.MbarArriveExpectTx(hBar, ptx.Imm(g.tileBytes))
				k.TmaLoad(ptx.At(f.hTile, 0), h, []ptx.Operand{ptx.Imm(0), c.row0}, hBar)
			})
		}, func() {
			loadScale()
			dt.consumeDH(c, t, dh, dh32, f)
		})
		return
	}
	d := newDBCTA(k, g, t)
	hopper.Roles(k, wg, func() {
		k.IfElse(d.is, func() { dt.produceDB(d, h) }, func() { dt.produceDH(c, bw, nil) })
	}, func() {
		loadScale()
		k.IfElse(d.is, func() { dt.consumeDB(d, db32) }, func() { dt.consumeDH(c, t, dh, dh32, nil) })
	})
}

// dyTMAThreads is the TMA dY kernel's block: a producer warpgroup and a
// consumer.
const dyTMAThreads = 256

// dyTMA is the TMA dY kernel: its ring, and the scale its consumer
// warpgroup loads.
type dyTMA struct {
	k    *ptx.Func
	g    geom
	w    warpCtx
	ring hopper.Ring
	base ptx.Reg // the aligned shared-memory base
	dy   ptx.Reg // dY's tensor map
	lead ptx.Reg // thread 0, the producer's one issuing thread
	s    ptx.Reg // the scale (consumer)
}

// fusedDB is what a dh CTA that also computes dB's chunks (dbsplit = 0)
// keeps: its h tile, loaded once on its own mbarrier, and db32.
type fusedDB struct {
	bar   ptx.Addr
	hTile ptx.Reg
	db32  ptx.Reg
}

// dbCTA is a dB CTA of the dbsplit > 0 kernel: CTAs ⌈t/bt⌉·osplit on
// are dB's, CTA j of them takes chunk j / dbsplit of out over part
// j mod dbsplit of the ⌈t/bt⌉ row blocks (cnt of them from first; none
// where the part is empty at this t).
type dbCTA struct {
	is                ptx.Reg // the CTA is a dB CTA
	chunk, first, cnt ptx.Reg
	start             int // 0; 1 with the planted dropBlock
}

func newDBCTA(k *ptx.Func, g geom, t ptx.Reg) dbCTA {
	nb := k.Shr(ptx.U32, k.Add(ptx.U32, t, ptx.Imm(g.bt-1)), ptx.Imm(gen.Log2(g.bt)))
	id := k.Mov(ptx.U32, ptx.CtaidX)
	nDH := k.Mul(ptx.U32, nb, ptx.Imm(g.osplit))
	j := k.Sub(ptx.U32, id, nDH)
	lg := gen.Log2(g.dbsplit)
	per := k.Shr(ptx.U32, k.Add(ptx.U32, nb, ptx.Imm(g.dbsplit-1)), ptx.Imm(lg))
	first := k.Mul(ptx.U32, k.And(ptx.U32, j, ptx.Imm(g.dbsplit-1)), per)
	cnt := k.Selp(ptx.U32, k.Min(ptx.U32, k.Sub(ptx.U32, nb, first), per), ptx.Imm(0), k.Setp("lt", ptx.U32, first, nb))
	d := dbCTA{is: k.Setp("ge", ptx.U32, id, nDH), chunk: k.Shr(ptx.U32, j, ptx.Imm(lg)), first: first, cnt: cnt}
	if planted.dropBlock {
		d.start = 1
	}
	return d
}

// produceDH is a dh CTA's producer: thread 0 runs first (if any), then
// brings, per chunk of the CTA's share of out, the dY tile and the B
// tile into the ring.
func (dt *dyTMA) produceDH(c cta, bw ptx.Reg, first func()) {
	k, g := dt.k, dt.g
	k.If(dt.lead, func() {
		if first != nil {
			first()
		}
		prod := dt.ring.Cursor(k)
		k.For(ptx.U32, ptx.Imm(0), c.cnt, ptx.Imm(1), func(i ptx.Reg) {
			col := k.Shl(ptx.U32, k.Add(ptx.U32, c.first, i), ptx.Imm(6))
			prod.WaitEmpty(dt.base)
			full, dst := prod.Full(dt.base), prod.Data(dt.base)
			k.MbarArriveExpectTx(full, ptx.Imm(g.tileBytes+chunk*g.rowBytes))
			k.TmaLoad(ptx.At(dst, 0), dt.dy, []ptx.Operand{col, c.row0}, full)
			k.TmaLoad(ptx.At(dst, int64(g.tileBytes)), bw, []ptx.Operand{ptx.Imm(0), col}, full)
			prod.Next()
		})
	})
}

// produceDB is a dB CTA's producer: thread 0 brings, per row block of
// its part, the dY tile of its chunk and the h tile into the ring.
func (dt *dyTMA) produceDB(d dbCTA, h ptx.Reg) {
	k, g := dt.k, dt.g
	k.If(dt.lead, func() {
		prod := dt.ring.Cursor(k)
		col := k.Shl(ptx.U32, d.chunk, ptx.Imm(6))
		k.For(ptx.U32, ptx.Imm(d.start), d.cnt, ptx.Imm(1), func(i ptx.Reg) {
			row := k.Shl(ptx.U32, k.Add(ptx.U32, d.first, i), ptx.Imm(gen.Log2(g.bt)))
			prod.WaitEmpty(dt.base)
			full, dst := prod.Full(dt.base), prod.Data(dt.base)
			k.MbarArriveExpectTx(full, ptx.Imm(2*g.tileBytes))
			k.TmaLoad(ptx.At(dst, 0), dt.dy, []ptx.Operand{col, row}, full)
			k.TmaLoad(ptx.At(dst, int64(g.tileBytes)), h, []ptx.Operand{ptx.Imm(0), row}, full)
			prod.Next()
		})
	})
}

// consumeDH is a dh CTA's consumer: per chunk one wgmma group, dh += dY·B
// (and, fused, dB's chunk dYᵀ·h, added into db32 once the slot is
// released); at the end dh goes out (dhOut).
func (dt *dyTMA) consumeDH(c cta, t, dh, dh32 ptx.Reg, f *fusedDB) {
	k, g := dt.k, dt.g
	var dhAcc [][]ptx.Reg
	for range g.bt / 64 {
		dhAcc = append(dhAcc, zeroedWG(k))
	}
	if f != nil {
		k.MbarWait(f.bar, ptx.Imm(0))
	}
	cons := dt.ring.Cursor(k)
	lane0 := k.Setp("eq", ptx.U32, dt.w.lane, ptx.Imm(0))
	k.For(ptx.U32, ptx.Imm(0), c.cnt, ptx.Imm(1), func(i ptx.Reg) {
		cons.WaitFull(dt.base)
		slot := cons.Data(dt.base)
		k.WgmmaFence()
		dt.dhGroup(slot, dhAcc)
		var db []ptx.Reg
		if f != nil {
			db = k.WgmmaAcc(chunk)
			dt.dbGroup(slot, f.hTile, db, true)
		}
		k.WgmmaCommit()
		k.WgmmaWait(0)
		cons.Release(dt.base, lane0) // the group is complete
		cons.Next()
		if f != nil {
			dt.flushDB(db, k.Add(ptx.U32, c.first, i), f.db32)
		}
	})
	dt.dhOut(dhAcc, c.row0, t, dh, dh32)
}

// consumeDB is a dB CTA's consumer: per row block one wgmma group adds
// dYᵀ·h into the chunk's accumulator; at the end s times it goes into
// db32 by red.add.
func (dt *dyTMA) consumeDB(d dbCTA, db32 ptx.Reg) {
	k, g := dt.k, dt.g
	acc := zeroedWG(k)
	cons := dt.ring.Cursor(k)
	lane0 := k.Setp("eq", ptx.U32, dt.w.lane, ptx.Imm(0))
	k.For(ptx.U32, ptx.Imm(d.start), d.cnt, ptx.Imm(1), func(ptx.Reg) {
		cons.WaitFull(dt.base)
		slot := cons.Data(dt.base)
		k.WgmmaFence()
		dt.dbGroup(slot, k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes)), acc, false)
		k.WgmmaCommit()
		k.WgmmaWait(0)
		cons.Release(dt.base, lane0)
		cons.Next()
	})
	k.If(k.Setp("gt", ptx.U32, d.cnt, ptx.Imm(d.start)), func() { dt.flushDB(acc, d.chunk, db32) })
}

// desc is the wgmma descriptor of a 128-byte-swizzled tile at addr + off.
func (dt *dyTMA) desc(addr ptx.Reg, off, lbo int) ptx.Reg {
	k := dt.k
	return k.WgmmaDesc(k.Add(ptx.U32, addr, ptx.Imm(off)), lbo, 1024, ptx.Swizzle128B)
}

// dhGroup issues dh += dY·B on the slot (dY tile, then B tile): A the dY
// rows, K-major; B the B tile, MN-major; 4 k16 steps an accumulator.
func (dt *dyTMA) dhGroup(slot ptx.Reg, dh [][]ptx.Reg) {
	k, g := dt.k, dt.g
	ab := gen.HalfType(g.dt)
	bTile := k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes))
	for m, acc := range dh {
		for kk := range chunk / 16 {
			if planted.dropStep && kk == chunk/16-1 {
				break
			}
			k.Wgmma(ab, acc, dt.desc(slot, m*64*g.rowBytes+kk*32, 16), dt.desc(bTile, kk*16*g.rowBytes, chunk*g.rowBytes), ptx.WgmmaOpts{ScaleD: ptx.Imm(1), TransB: true})
		}
	}
}

// dbGroup issues dB's chunk (+)= dYᵀ·h over a tile's bt rows: A the dY
// tile read transposed (the chunk's columns as M), B the h tile,
// MN-major; fresh: the first k16 step overwrites the accumulator.
func (dt *dyTMA) dbGroup(dyTile, hTile ptx.Reg, db []ptx.Reg, fresh bool) {
	k, g := dt.k, dt.g
	ab := gen.HalfType(g.dt)
	for kt := range g.bt / 16 {
		var scale ptx.Operand = ptx.Imm(1)
		if fresh && kt == 0 {
			scale = ptx.Imm(0)
		}
		k.Wgmma(ab, db, dt.desc(dyTile, kt*16*g.rowBytes, g.tileBytes), dt.desc(hTile, kt*16*g.rowBytes, g.tileBytes), ptx.WgmmaOpts{ScaleD: scale, TransA: true, TransB: true})
	}
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
