package lora

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// dyKernel is the build state of the dY kernel: a CTA takes bt rows of dY
// and its share of out's 64-column chunks; per chunk it adds dY·B into
// dh's accumulators (held to the end) and adds s·dYᵀ·h, the chunk's
// partial of dB over its rows, into db32 by red.add.
type dyKernel struct {
	k   *ptx.Func
	g   geom
	w   warpCtx
	s   ptx.Reg // the scale
	wr0 ptx.Reg // the warp's first row in the CTA's block
	// dB's share of a warp: m16 block mw of the chunk's 64 rows of dB
	// (o), n8 blocks nb0 .. nb0+nbw−1 of r.
	mw, nb0 ptx.Reg
	nbw     int
	held    [][2]ptx.Reg // with holdH: the warp's B fragments of dB (h), per (k16 step, n8 block)
}

// holdH reports whether the dY kernel's warps keep their B fragments of
// dB (h, the same for every chunk) in registers instead of loading them
// from the h tile at every chunk: where they fit in 64 registers (two
// per n8 block and k16 step of the row block) and no register cap
// holds the kernel to fewer.
func (g geom) holdH() bool {
	nbw := g.r / 8 / (g.warps / 4)
	return g.maxnreg == 0 && g.bt/16*nbw*2 <= 64
}

// emitDY writes the dY kernel.
func emitDY(k *ptx.Func, g geom) {
	if g.dytma {
		emitDYTMA(k, g)
		return
	}
	dy, bw, h, scale := gen.Param(k, "dy"), gen.Param(k, "b"), gen.Param(k, "h"), gen.Param(k, "scale")
	dh, dh32, db32 := gen.Param(k, "dh"), gen.Param(k, "dh32"), gen.Param(k, "db32")
	t := k.LdParam(k.Param(Dim, ptx.U32))
	k.ReqNTid(g.threads)
	if g.maxnreg > 0 {
		k.MaxNReg(g.maxnreg)
	}
	if g.pdl {
		k.GridDepLaunch() // the first launch: it reads nothing a launch of this run wrote
	}
	smem := k.Mov(ptx.U32, k.DynamicShared("smem", 128))
	dk := &dyKernel{k: k, g: g, w: newWarpCtx(k)}
	dk.s = k.Ld(ptx.Global, ptx.F32, 1, ptx.At(scale, 0), gen.LdNC)[0]
	dk.wr0 = k.Mul(ptx.U32, dk.w.warp, ptx.Imm(g.wrows))
	wn := g.warps / 4
	dk.nbw = g.r / 8 / wn
	dk.mw = k.And(ptx.U32, dk.w.warp, ptx.Imm(3))
	dk.nb0 = k.Mul(ptx.U32, k.Shr(ptx.U32, dk.w.warp, ptx.Imm(2)), ptx.Imm(dk.nbw))
	c := newCTA(k, g.bt, g.osplit, g.out)
	hTile := k.Add(ptx.U32, smem, ptx.Imm(g.stages*g.stageDY()))
	newTileCopy(k, dk.w.tid, g.bt, g.r, g.rp, g.r, g.threads).issue(hTile, h, c.row0, imm(k, 0), t, ptx.Imm(g.r))
	dyc := newTileCopy(k, dk.w.tid, g.bt, chunk, chunk, g.out, g.threads)
	bc := newTileCopy(k, dk.w.tid, chunk, g.r, g.rp, g.r, g.threads)
	load := func(slot, ch ptx.Reg) {
		col := k.Shl(ptx.U32, ch, ptx.Imm(6))
		dyc.issue(slot, dy, c.row0, col, t, ptx.Imm(g.out))
		bc.issue(k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes)), bw, col, imm(k, 0), ptx.Imm(g.out), ptx.Imm(g.r))
	}
	dhAcc := zeroAcc(k, g.mt*g.r/8)
	fr := dk.frags()
	var ready func() // with holdH: once the first group (h and chunk 0) is in, load h's fragments
	if g.holdH() {
		ready = func() {
			k.CpAsyncWait(g.stages - 2)
			k.BarSync(0)
			dk.held = dk.loadH(fr, hTile)
		}
	}
	ring(k, smem, g.stageDY(), g.stages, c.first, c.cnt, load, func(slot, ch ptx.Reg) {
		dk.dh(fr, slot, dhAcc)
		dk.db(fr, slot, hTile, ch, db32)
	}, ready, false)
	dk.dhOut(dhAcc, c.row0, t, dh, dh32)
}

// dyFrags are the dY kernel's fragment offsets: dh's A (dY, K-major) per
// k16 step of the chunk and B (the B tile) per pair of n8 blocks; dB's A
// (dY, MN-major) and B (the h tile) per pair of the warp's n8 blocks.
type dyFrags struct {
	dhA, dhB, dbB []frag
	dbA           frag
}

func (dk *dyKernel) frags() dyFrags {
	k, g, l, z := dk.k, dk.g, dk.w.l, dk.w.zrow
	var f dyFrags
	for kk := range chunk / 16 {
		f.dhA = append(f.dhA, aKMajor(k, l, chunk, dk.wr0, imm(k, 2*kk), false))
	}
	for nc := 0; nc < g.r/8; nc += 2 {
		f.dhB = append(f.dhB, bMNMajor(k, l, g.rp, z, imm(k, nc), nc+1 < g.r/8, false))
	}
	f.dbA = aMNMajor(k, l, chunk, z, k.Shl(ptx.U32, dk.mw, ptx.Imm(1)), false)
	for nc := 0; nc < dk.nbw; nc += 2 {
		f.dbB = append(f.dbB, bMNMajor(k, l, g.rp, z, k.Add(ptx.U32, dk.nb0, ptx.Imm(nc)), nc+1 < dk.nbw, false))
	}
	return f
}

// dh adds the chunk's dY·B into dh's accumulators: [mt][r/8] blocks.
func (dk *dyKernel) dh(f dyFrags, slot ptx.Reg, acc [][4]ptx.Reg) {
	k, g, ab := dk.k, dk.g, gen.HalfType(dk.g.dt)
	bTile := k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes))
	for kk, fa := range f.dhA {
		if planted.dropStep && kk == len(f.dhA)-1 {
			break
		}
		var bs [][2]ptx.Reg
		for _, fb := range f.dhB {
			bs = append(bs, bRegs(fb, fb.load(k, bTile, kk), dk.w.zero, false)...)
		}
		for mi := range g.mt {
			a := aRegs(fa, fa.load(k, slot, mi), dk.w.zero)
			for ni, b := range bs {
				d := acc[mi*len(bs)+ni]
				k.MmaSyncTo(ab, d, a, b, d)
			}
		}
	}
}

// loadH loads the warp's B fragments of dB from the h tile, per k16
// step of the row block and n8 block.
func (dk *dyKernel) loadH(f dyFrags, hTile ptx.Reg) [][2]ptx.Reg {
	var out [][2]ptx.Reg
	for kt := range dk.g.bt / 16 {
		for _, fb := range f.dbB {
			out = append(out, bRegs(fb, fb.load(dk.k, hTile, kt), dk.w.zero, false)...)
		}
	}
	return out
}

// db computes the warp's share of s·dYᵀ·h over the CTA's rows for chunk
// ch and adds it into db32 [out × r].
func (dk *dyKernel) db(f dyFrags, slot, hTile, ch, db32 ptx.Reg) {
	k, g, w, ab := dk.k, dk.g, dk.w, gen.HalfType(dk.g.dt)
	// In two sets (accSets), even and odd k16 steps accumulate apart, so
	// that consecutive mma of an n8 block do not wait on each other.
	sets := accSets(dk.nbw)
	acc := zeroAcc(k, sets*dk.nbw)
	for kt := range g.bt / 16 {
		a := aRegs(f.dbA, f.dbA.load(k, slot, kt), w.zero)
		bs := dk.held
		if bs != nil {
			bs = bs[kt*dk.nbw : (kt+1)*dk.nbw]
		} else {
			for _, fb := range f.dbB {
				bs = append(bs, bRegs(fb, fb.load(k, hTile, kt), w.zero, false)...)
			}
		}
		for ni, b := range bs {
			d := acc[kt%sets*dk.nbw+ni]
			k.MmaSyncTo(ab, d, a, b, d)
		}
	}
	o := k.Add(ptx.U32, k.Add(ptx.U32, k.Shl(ptx.U32, ch, ptx.Imm(6)), k.Shl(ptx.U32, dk.mw, ptx.Imm(4))), w.g4)
	col := k.Add(ptx.U32, k.Shl(ptx.U32, dk.nb0, ptx.Imm(3)), w.tig)
	inOut := func(row, _ ptx.Reg) ptx.Reg { return k.Setp("lt", ptx.U32, row, ptx.Imm(g.out)) }
	for ni := range dk.nbw {
		redQuad(k, w, db32, o, k.Add(ptx.U32, col, ptx.Imm(8*ni)), g.r, scaled(k, setSum(k, acc, dk.nbw, ni), dk.s), inOut)
	}
}

// dhOut scales dh's accumulators by s and, with one CTA a row block,
// stores them to dh (rounded) and dh32; with several, adds them into
// dh32 by red.add. Rows at or past t are not written.
func (dk *dyKernel) dhOut(acc [][4]ptx.Reg, row0, t, dh, dh32 ptx.Reg) {
	k, g, w := dk.k, dk.g, dk.w
	nb := g.r / 8
	base := k.Add(ptx.U32, k.Add(ptx.U32, row0, dk.wr0), w.g4)
	if g.osplit > 1 {
		inT := func(row, _ ptx.Reg) ptx.Reg { return k.Setp("lt", ptx.U32, row, t) }
		for mi := range g.mt {
			row := k.Add(ptx.U32, base, ptx.Imm(16*mi))
			for ni := range nb {
				redQuad(k, w, dh32, row, k.Add(ptx.U32, w.tig, ptx.Imm(8*ni)), g.r, scaled(k, acc[mi*nb+ni], dk.s), inT)
			}
		}
		return
	}
	for mi := range g.mt {
		for half := range 2 {
			row := k.Add(ptx.U32, base, ptx.Imm(16*mi+8*half))
			ok := k.Setp("lt", ptx.U32, row, t)
			for ni := range nb {
				d := acc[mi*nb+ni]
				v := []ptx.Reg{k.Mul(ptx.F32, d[2*half], dk.s), k.Mul(ptx.F32, d[2*half+1], dk.s)}
				storeDHPair(k, g, row, k.Add(ptx.U32, w.tig, ptx.Imm(8*ni)), v, ok, dh, dh32)
			}
		}
	}
}

// storeDHPair stores two consecutive values of dh's row at col, scaled
// and unrounded, to dh (rounded) and dh32, where ok holds.
func storeDHPair(k *ptx.Func, g geom, row, col ptx.Reg, v []ptx.Reg, ok, dh, dh32 ptx.Reg) {
	elem := k.Mad(ptx.U32, row, ptx.Imm(g.r), col)
	gen.StVals(k, g.dt, ptx.At(k.Add(ptx.U64, dh, k.MulWide(ptx.U32, elem, ptx.Imm(g.dt.Size()))), 0), v, ok)
	gen.StF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, dh32, k.MulWide(ptx.U32, elem, ptx.Imm(4))), 0), v, ok)
}

// planted holds bugs a test plants in emission (export_test.go): dropStep
// leaves out the last k16 step of each chunk from dh (16 of every 64
// reduction indices), dropLo the lo half of dh from dA, keepDA the
// zeroing of dA's accumulators after a chunk's row group (rg > 1: the
// next chunk adds the last one's sums), drawEarly (fold) takes a chunk's
// first ticket for its last, dropBlock (dbsplit) has each dB CTA skip the
// first row block of its part.
var planted struct{ dropStep, dropLo, keepDA, drawEarly, dropBlock bool }
