package lora

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// xKernel is the build state of the x kernel: a CTA takes bt rows and its
// share of in's 64-column chunks; it splits its rows of dh32 into bf16 or
// f16 hi and lo tiles (dh = hi + lo to 16 bits or more), and per chunk
// stores dX = dh·A (hi·A + lo·A) and adds dhᵀ·x (likewise) into da32 by
// red.add.
type xKernel struct {
	k   *ptx.Func
	g   geom
	w   warpCtx
	wr0 ptx.Reg // the warp's first row in the CTA's block (dX)
	// dA: the warp takes m16 blocks mb0 .. mb0+mbw−1 of the rank and n8
	// blocks nb0 .. nb0+nbw−1 of the chunk (daSplit).
	mb0, nb0 ptx.Reg
	mbw, nbw int
	held     [][4]ptx.Reg // with holdA: the warp's A fragments of dA, per (k16 step, m16 block, hi/lo)
}

// daSplit is how the x kernel's warps share a chunk of dA [r × 64]: mw
// groups of warps take kSteps/mw m16 blocks of the rank each, and the
// warps of a group 64/(warps/mw) columns each. More groups mean fewer A
// fragments (dh) loaded per warp for the same mma.sync: mw is the
// largest of 4, 2, 1 that divides both the m16 blocks and the warps,
// 1 for a rank that ends in half a block.
func (g geom) daSplit() (mw, mbw, nbw int) {
	mw = 1
	for _, c := range []int{4, 2} {
		if !g.rHalf && g.kSteps%c == 0 && g.warps%c == 0 {
			mw = c
			break
		}
	}
	return mw, g.kSteps / mw, chunk / 8 * mw / g.warps
}

// holdA reports whether the x kernel keeps its warps' A fragments of dA
// (dh's hi and lo, transposed) in registers for the CTA's life instead
// of loading them from shared memory at every step: with one row block a
// CTA (rg = 1), where they fit in 64 registers and no register cap holds
// the kernel to fewer.
func (g geom) holdA() bool {
	_, mbw, _ := g.daSplit()
	return !g.wgmma && g.maxnreg == 0 && g.rg == 1 && g.bt/16*mbw*2*4 <= 64
}

// xParams are the x kernel's parameters: a and dx with dX only, dh
// (which the x kernel rounds dh32 into) with osplit > 1; with xload=tma
// x and a are their tensor maps' addresses.
type xParams struct {
	x, a, dh32, dx, da32, dh, t ptx.Reg
	db32, db, da, tickets       ptx.Reg // with fold
}

func declareX(k *ptx.Func, g geom) xParams {
	var p xParams
	p.x = operandParam(k, g.tma, "x")
	if g.dx {
		p.a = operandParam(k, g.tma, "a")
	}
	p.dh32 = gen.Param(k, "dh32")
	if g.dx {
		p.dx = gen.Param(k, "dx")
	}
	p.da32 = gen.Param(k, "da32")
	if g.osplit > 1 {
		p.dh = gen.Param(k, "dh")
	}
	if g.fold {
		p.db32, p.db, p.da, p.tickets = gen.Param(k, "db32"), gen.Param(k, "db"), gen.Param(k, "da"), gen.Param(k, "tickets")
	}
	p.t = k.LdParam(k.Param(Dim, ptx.U32))
	k.ReqNTid(g.xThreads)
	if g.pdl {
		k.GridDepLaunch()
	}
	return p
}

// emitX writes the x kernel.
func emitX(k *ptx.Func, g geom) {
	xp := declareX(k, g)
	if g.wgmma {
		emitXWG(k, g, xp)
		return
	}
	dx, da32, t := xp.dx, xp.da32, xp.t
	switch {
	case g.maxnreg > 0:
		k.MaxNReg(g.maxnreg)
	case g.rg > 1:
		// dA's accumulators live across the ring's steps beside dX's: left
		// to itself ptxas held some variants to 128 registers and spilled.
		k.MaxNReg(255)
	}
	smem := k.Mov(ptx.U32, k.DynamicShared("smem", 128))
	xk := newXKernel(k, g)
	fr := xk.frags()
	xr := xk.setup(xp, smem, fr)
	acc := xk.zeroDA() // dA's accumulators, summed over a chunk's row blocks
	ring(k, smem, g.stageX(), g.stages, xr.first, xr.cnt, xr.load, func(slot, item ptx.Reg) {
		it := xk.item(item, xr.c.row0)
		col0 := k.Shl(ptx.U32, it.ch, ptx.Imm(6))
		hiJ, loJ := xr.tiles(k, g, it)
		if g.dx {
			xk.dx(fr, slot, hiJ, loJ, it.row0, col0, t, dx)
		}
		xk.addDA(fr, slot, hiJ, loJ, acc)
		flush := func() {
			xk.flushDA(acc, col0, da32)
			if planted.keepDA {
				return
			}
			for _, q := range acc {
				for _, r := range q {
					k.MovTo(r, ptx.F32Imm(0))
				}
			}
		}
		xk.afterBlock(it, flush)
	}, xr.ready, false)
}

// afterBlock runs flush after the last row block of a chunk's group:
// after every step with rg = 1, else where the step's block is rg−1.
func (xk *xKernel) afterBlock(it xItem, flush func()) { xk.afterBlockOr(it, ptx.Reg{}, flush) }

// afterBlockOr runs flush after the last row block of a chunk's group
// or, where last is a register, where it holds.
func (xk *xKernel) afterBlockOr(it xItem, last ptx.Reg, flush func()) {
	k := xk.k
	if xk.g.rg == 1 {
		flush()
		return
	}
	end := k.Setp("eq", ptx.U32, it.j, ptx.Imm(xk.g.rg-1))
	if last.Valid() {
		end = k.Or(ptx.Pred, end, last)
	}
	k.If(end, flush)
}

// firstScale is the scale-d of a chunk's first product in a wgmma x
// kernel over row groups: 0 (overwrite what the last chunk left) on a
// group's first block and 1 after it; with the planted keepDA, 0 only on
// the CTA's first step (notFirst, emitted only then, false).
func (xk *xKernel) firstScale(it xItem, notFirst func() ptx.Reg) ptx.Operand {
	switch {
	case planted.keepDA:
		return notFirst()
	case xk.g.rg > 1:
		return xk.k.Setp("ne", ptx.U32, it.j, ptx.Imm(0))
	}
	return ptx.Imm(0)
}

// xRing is what either x kernel sets up before its ring: the CTA's row
// group and chunks, dh's hi and lo tiles (split at ready, or before ready
// is set), the ring's items (chunk-major, rg row blocks each) and their
// copies.
type xRing struct {
	c          cta
	hi, lo     ptx.Reg
	ready      func()
	load       func(slot, item ptx.Reg)
	first, cnt ptx.Reg
}

func (xk *xKernel) setup(xp xParams, smem ptx.Reg, fr xFrags) xRing {
	k, g := xk.k, xk.g
	var xr xRing
	xr.c = newCTA(k, g.rg*g.bt, g.isplit, g.in)
	xr.hi = k.Add(ptx.U32, smem, ptx.Imm(g.stages*g.stageX()))
	xr.lo = k.Add(ptx.U32, xr.hi, ptx.Imm(g.rg*g.bt*g.hp*2))
	split := func() { xk.takeDH(fr, xr.c, xp.dh32, xr.hi, xr.lo, xp.t, xp.dh) }
	if g.pdl { // after the first x tiles are issued, wait for dh32, then split it
		xr.ready = func() {
			k.GridDepWait()
			split()
		}
	} else {
		split()
	}
	xc := newTileCopy(k, xk.w.tid, g.bt, chunk, chunk, g.in, g.xThreads)
	var ac *tileCopy
	if g.dx {
		ac = newTileCopy(k, xk.w.tid, g.ar, chunk, chunk, g.in, g.xThreads)
	}
	xr.load = func(slot, item ptx.Reg) {
		it := xk.item(item, xr.c.row0)
		col := k.Shl(ptx.U32, it.ch, ptx.Imm(6))
		xc.issue(slot, xp.x, it.row0, col, xp.t, ptx.Imm(g.in))
		if g.dx {
			ac.issue(k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes)), xp.a, imm(k, 0), col, ptx.Imm(g.r), ptx.Imm(g.in))
		}
	}
	xr.first, xr.cnt = xk.chunkSteps(xr.c)
	return xr
}

// chunkSteps are the first step and the step count of a CTA that takes
// whole chunks (newCTA's first and cnt), rg steps a chunk.
func (xk *xKernel) chunkSteps(c cta) (first, cnt ptx.Reg) {
	if xk.g.rg == 1 {
		return c.first, c.cnt
	}
	sh := ptx.Imm(gen.Log2(xk.g.rg))
	return xk.k.Shl(ptx.U32, c.first, sh), xk.k.Shl(ptx.U32, c.cnt, sh)
}

// tiles are the hi and lo tiles of item it's row block.
func (xr xRing) tiles(k *ptx.Func, g geom, it xItem) (hi, lo ptx.Reg) {
	if g.rg == 1 {
		return xr.hi, xr.lo
	}
	off := k.Mul(ptx.U32, it.j, ptx.Imm(g.bt*g.hp*2))
	return k.Add(ptx.U32, xr.hi, off), k.Add(ptx.U32, xr.lo, off)
}

// newXKernel sets up the x kernel's warps: their rows of dX and their
// block of dA (daSplit).
func newXKernel(k *ptx.Func, g geom) *xKernel {
	xk := &xKernel{k: k, g: g, w: newWarpCtx(k)}
	xk.wr0 = k.Mul(ptx.U32, xk.w.warp, ptx.Imm(g.wrows))
	mw, mbw, nbw := g.daSplit()
	xk.mbw, xk.nbw = mbw, nbw
	xk.mb0, xk.nb0 = imm(k, 0), k.Mul(ptx.U32, xk.w.warp, ptx.Imm(nbw))
	if mw > 1 {
		xk.mb0 = k.Mul(ptx.U32, k.And(ptx.U32, xk.w.warp, ptx.Imm(mw-1)), ptx.Imm(mbw))
		xk.nb0 = k.Mul(ptx.U32, k.Shr(ptx.U32, xk.w.warp, ptx.Imm(gen.Log2(mw))), ptx.Imm(nbw))
	}
	return xk
}

// takeDH splits the CTA's rows of dh32 into the hi and lo tiles (the
// CTAs of part 0 of their row group also store dh rounded, where dh is
// a buffer: osplit > 1) and, with holdA, loads the warp's A fragments of
// dA from them once.
func (xk *xKernel) takeDH(fr xFrags, c cta, dh32, hi, lo, t, dh ptx.Reg) {
	k := xk.k
	var dhOut ptx.Reg
	if dh.Valid() {
		dhOut = k.Setp("eq", ptx.U32, c.part, ptx.Imm(0))
	}
	xk.splitDH(dh32, hi, lo, c.row0, t, dh, dhOut)
	if xk.g.wgmma && xk.g.r < xk.g.hp {
		xk.padDH(hi, lo)
	}
	if xk.g.holdA() {
		k.BarSync(0) // every warp's hi and lo rows are in shared memory
		xk.held = xk.loadA(fr, hi, lo)
	}
}

// xItem is one step of the x kernel's ring: chunk ch of row block j of
// the CTA's group; row0 is the block's first row.
type xItem struct{ ch, j, row0 ptx.Reg }

// item splits ring step i (the CTA's chunks in order, each over its
// group's rg row blocks) into its chunk and row block.
func (xk *xKernel) item(i, groupRow0 ptx.Reg) xItem {
	k, g := xk.k, xk.g
	if g.rg == 1 {
		return xItem{ch: i, row0: groupRow0} // j is 0, and unused
	}
	j := k.And(ptx.U32, i, ptx.Imm(g.rg-1))
	return xItem{ch: k.Shr(ptx.U32, i, ptx.Imm(gen.Log2(g.rg))), j: j, row0: k.Mad(ptx.U32, j, ptx.Imm(g.bt), groupRow0)}
}

// splitDH loads the CTA's rows of dh32 (zeros at or past t) and stores
// hi = round(dh) and lo = round(dh − hi) in the tiles hi and lo; where
// out holds (and dh is a buffer) it also stores hi, dh rounded, into dh.
// A thread loads g.dhBatch of its chunks before it splits any of them.
func (xk *xKernel) splitDH(dh32, hi, lo, row0, t, dh, out ptx.Reg) {
	k, g := xk.k, xk.g
	c := newTileCopy(k, xk.w.tid, g.rg*g.bt, g.r, g.hp, g.r, g.xThreads)
	batch := g.dhBatch(len(c.rowIn))
	for b := 0; b < len(c.rowIn); b += batch {
		n := min(batch, len(c.rowIn)-b)
		elem, ok, vals := make([]ptx.Reg, n), make([]ptx.Reg, n), make([][]ptx.Reg, n)
		for j := range n {
			i := b + j
			row := k.Add(ptx.U32, row0, c.rowIn[i])
			ok[j] = k.Setp("lt", ptx.U32, row, t)
			if c.has[i].Valid() {
				ok[j] = k.And(ptx.Pred, ok[j], c.has[i])
			}
			elem[j] = k.Mad(ptx.U32, row, ptx.Imm(g.r), c.colIn[i])
			vals[j] = gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, dh32, k.MulWide(ptx.U32, elem[j], ptx.Imm(4))), 0), 8, ok[j])
		}
		for j := range n {
			i := b + j
			hw, lw := hiLo(k, g.dt, vals[j])
			c.put(hi, i, hw)
			c.put(lo, i, lw)
			if dh.Valid() {
				xk.storeDH(dh, elem[j], hw, k.And(ptx.Pred, ok[j], out))
			}
		}
	}
}

// dhBatch is how many of its n chunks of dh32 a thread of splitDH has
// in flight: one round trip to memory a batch instead of one a chunk, for
// 8 registers a chunk that the split frees again. The TMA x kernel takes
// all n at once (at 512 rows of rank 64, 16): its shared memory holds it
// to one CTA an SM, whose 256 threads have registers to spare. The
// others take 8: their CTAs of 128 threads have up to 16 chunks a thread
// at 256 rows, beside the fragments they hold.
func (g geom) dhBatch(n int) int {
	if g.tma {
		return n
	}
	return 8
}

// storeDH stores hi (dh rounded, four or eight values packed two a b32)
// at element elem of dh where ok holds.
func (xk *xKernel) storeDH(dh, elem ptx.Reg, hw []ptx.Reg, ok ptx.Reg) {
	k := xk.k
	k.St(ptx.Global, ptx.B32, ptx.At(k.Add(ptx.U64, dh, k.MulWide(ptx.U32, elem, ptx.Imm(2))), 0), hw)
	k.Guard(ok, false)
}

// padDH zeroes the columns r .. hp−1 of the hi and lo tiles, which wgmma
// reads as rank rows (dA's, never stored) and k steps (dX's, times the A
// tile's zero rows).
func (xk *xKernel) padDH(hi, lo ptx.Reg) {
	k, g := xk.k, xk.g
	nz := (g.hp - g.r) / 8 // zero chunks a row
	total := g.rg * g.bt * nz
	z := k.Mov(ptx.B32, ptx.Imm(0))
	for i := 0; i*g.xThreads < total; i++ {
		q := k.Add(ptx.U32, xk.w.tid, ptx.Imm(i*g.xThreads))
		one := func() {
			row := k.Div(ptx.U32, q, ptx.Imm(nz))
			cc := k.Add(ptx.U32, k.Sub(ptx.U32, q, k.Mul(ptx.U32, row, ptx.Imm(nz))), ptx.Imm(g.r/8))
			off := gen.SwizzledTileOffset(k, row, cc, g.hp)
			for _, tile := range []ptx.Reg{hi, lo} {
				k.St(ptx.Shared, ptx.B32, ptx.At(k.Add(ptx.U32, tile, off), 0), []ptx.Reg{z, z, z, z})
			}
		}
		if (i+1)*g.xThreads > total {
			k.If(k.Setp("lt", ptx.U32, q, ptx.Imm(total)), one)
		} else {
			one()
		}
	}
}

// hiLo splits f32 values v (an even count) into hi = round(v) and lo =
// round(v − hi) in dt, packed two a b32 (the first value low).
func hiLo(k *ptx.Func, dt dtype.DType, v []ptx.Reg) (hw, lw []ptx.Reg) {
	pt := ptx.F16x2
	if dt == dtype.BF16 {
		pt = ptx.BF16x2
	}
	for j := 0; j < len(v); j += 2 {
		hw = append(hw, k.PackHalf2(pt, v[j+1], v[j]))
	}
	hv := gen.Widen(k, dt, hw)
	for j := 0; j < len(v); j += 2 {
		lw = append(lw, k.PackHalf2(pt, k.Sub(ptx.F32, v[j+1], hv[j+1]), k.Sub(ptx.F32, v[j], hv[j])))
	}
	return hw, lw
}

// xFrags are the x kernel's fragment offsets: dX's A (dh, K-major) per
// k16 step of the rank and B (the A tile) per pair of n8 blocks, whole
// and, for a rank that ends in half a step, half; dA's A (dh, MN-major)
// per m16 block of the rank and B (the x tile) for the warp's n8 blocks;
// dX's only with dx=here.
type xFrags struct {
	dxA, dxB, dxBHalf, daA, daB []frag
}

func (xk *xKernel) frags() xFrags {
	k, g, l, z := xk.k, xk.g, xk.w.l, xk.w.zrow
	var f xFrags
	for kk := range g.kSteps {
		half := g.rHalf && kk == g.kSteps-1
		if g.dx {
			f.dxA = append(f.dxA, aKMajor(k, l, g.hp, xk.wr0, imm(k, 2*kk), half))
		}
	}
	for i := range xk.mbw {
		mc := k.Shl(ptx.U32, k.Add(ptx.U32, xk.mb0, ptx.Imm(i)), ptx.Imm(1))
		f.daA = append(f.daA, aMNMajor(k, l, g.hp, z, mc, g.rHalf && i == g.kSteps-1))
	}
	for nc := 0; g.dx && nc < chunk/8; nc += 2 {
		f.dxB = append(f.dxB, bMNMajor(k, l, chunk, z, imm(k, nc), true, false))
		if g.rHalf {
			f.dxBHalf = append(f.dxBHalf, bMNMajor(k, l, chunk, z, imm(k, nc), true, true))
		}
	}
	for nc := 0; nc < xk.nbw; nc += 2 {
		f.daB = append(f.daB, bMNMajor(k, l, chunk, z, k.Add(ptx.U32, xk.nb0, ptx.Imm(nc)), nc+1 < xk.nbw, false))
	}
	return f
}

// dx computes the warp's rows of dX for the chunk at column col0 and
// stores them rounded, rows at or past t and columns past in left out.
func (xk *xKernel) dx(f xFrags, slot, hi, lo, row0, col0, t, dx ptx.Reg) {
	k, g, w, ab := xk.k, xk.g, xk.w, gen.HalfType(xk.g.dt)
	aTile := k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes))
	nb := chunk / 8
	acc := zeroAcc(k, g.mt*nb)
	for kk, fa := range f.dxA {
		half := g.rHalf && kk == g.kSteps-1
		fbs := f.dxB
		if half {
			fbs = f.dxBHalf
		}
		var bs [][2]ptx.Reg
		for _, fb := range fbs {
			bs = append(bs, bRegs(fb, fb.load(k, aTile, kk), w.zero, half)...)
		}
		for mi := range g.mt {
			for _, tile := range []ptx.Reg{hi, lo} {
				a := aRegs(fa, fa.load(k, tile, mi), w.zero)
				for ni, b := range bs {
					d := acc[mi*nb+ni]
					k.MmaSyncTo(ab, d, a, b, d)
				}
			}
		}
	}
	base := k.Add(ptx.U32, k.Add(ptx.U32, row0, xk.wr0), w.g4)
	col := k.Add(ptx.U32, col0, w.tig)
	for mi := range g.mt {
		for half := range 2 {
			row := k.Add(ptx.U32, base, ptx.Imm(16*mi+8*half))
			rowOK := k.Setp("lt", ptx.U32, row, t)
			for ni := range nb {
				cn := k.Add(ptx.U32, col, ptx.Imm(8*ni))
				ok := k.And(ptx.Pred, rowOK, k.Setp("lt", ptx.U32, cn, ptx.Imm(g.in)))
				elem := k.Mad(ptx.U32, row, ptx.Imm(g.in), cn)
				d := acc[mi*nb+ni]
				gen.StVals(k, g.dt, ptx.At(k.Add(ptx.U64, dx, k.MulWide(ptx.U32, elem, ptx.Imm(g.dt.Size()))), 0), []ptx.Reg{d[2*half], d[2*half+1]}, ok)
			}
		}
	}
}

// zeroDA is the warp's dA accumulators for one chunk, zeroed: with fewer
// than independentAcc blocks, the hi products' blocks, then the lo
// products' (apart, so that the two mma of a pair do not wait on each
// other), summed by flushDA; else one set.
func (xk *xKernel) zeroDA() [][4]ptx.Reg {
	n := xk.mbw * xk.nbw
	return zeroAcc(xk.k, accSets(n)*n)
}

// independentAcc is how many accumulator blocks a warp's mma.sync chain
// needs to interleave so that none waits on the one before.
const independentAcc = 8

// accSets is how many sets a warp keeps n accumulator blocks in: below
// independentAcc two, the second set summed into the first before the
// blocks are stored (setSum).
func accSets(n int) int {
	if n < independentAcc {
		return 2
	}
	return 1
}

// setSum is block i of accumulators acc of n blocks a set, its sets
// summed.
func setSum(k *ptx.Func, acc [][4]ptx.Reg, n, i int) [4]ptx.Reg {
	q := acc[i]
	for j := n + i; j < len(acc); j += n {
		q = sum4(k, q, acc[j])
	}
	return q
}

// loadA loads the warp's A fragments of dA (per k16 step of the row
// block, m16 block and tile: hi, then lo) from the tiles hi and lo.
func (xk *xKernel) loadA(f xFrags, hi, lo ptx.Reg) [][4]ptx.Reg {
	var out [][4]ptx.Reg
	for kt := range xk.g.bt / 16 {
		for _, fa := range f.daA {
			for _, tile := range []ptx.Reg{hi, lo} {
				out = append(out, aRegs(fa, fa.load(xk.k, tile, kt), xk.w.zero))
			}
		}
	}
	return out
}

// addDA adds the warp's block of dhᵀ·x over one row block (dh's hi and
// lo tiles of its bt rows, or the fragments held from them; the slot's x
// tile) into acc.
func (xk *xKernel) addDA(f xFrags, slot, hi, lo ptx.Reg, acc [][4]ptx.Reg) {
	k, g, w, ab := xk.k, xk.g, xk.w, gen.HalfType(xk.g.dt)
	tiles := []ptx.Reg{hi, lo}
	for kt := range g.bt / 16 {
		var bs [][2]ptx.Reg
		for _, fb := range f.daB {
			bs = append(bs, bRegs(fb, fb.load(k, slot, kt), w.zero, false)...)
		}
		for mb, fa := range f.daA {
			for ti, tile := range tiles {
				if planted.dropLo && ti == 1 {
					continue
				}
				var a [4]ptx.Reg
				if xk.held != nil {
					a = xk.held[(kt*len(f.daA)+mb)*2+ti]
				} else {
					a = aRegs(fa, fa.load(k, tile, kt), w.zero)
				}
				for ni, b := range bs {
					set := ti % accSets(xk.mbw*xk.nbw) // the lo products' set, where there are two
					d := acc[(set*len(f.daA)+mb)*xk.nbw+ni]
					k.MmaSyncTo(ab, d, a, b, d)
				}
			}
		}
	}
}

// flushDA adds the warp's dA accumulators for the chunk at column col0
// (hi's and lo's blocks summed) into da32 [r × in].
func (xk *xKernel) flushDA(acc [][4]ptx.Reg, col0, da32 ptx.Reg) {
	k, g, w := xk.k, xk.g, xk.w
	col := k.Add(ptx.U32, k.Add(ptx.U32, col0, k.Shl(ptx.U32, xk.nb0, ptx.Imm(3))), w.tig)
	inIn := func(_, cn ptx.Reg) ptx.Reg { return k.Setp("lt", ptx.U32, cn, ptx.Imm(g.in)) }
	for mb := range xk.mbw {
		ok := inIn
		if g.rHalf && mb == g.kSteps-1 { // mbw = kSteps here (daSplit)
			// The rank ends in this block's first 8 rows: the odd lanes'
			// row g4+8 is past it.
			ok = func(row, cn ptx.Reg) ptx.Reg {
				return k.And(ptx.Pred, inIn(row, cn), k.Setp("lt", ptx.U32, row, ptx.Imm(g.r)))
			}
		}
		row := k.Add(ptx.U32, w.g4, k.Shl(ptx.U32, k.Add(ptx.U32, xk.mb0, ptx.Imm(mb)), ptx.Imm(4)))
		for ni := range xk.nbw {
			q := setSum(k, acc, xk.mbw*xk.nbw, mb*xk.nbw+ni)
			redQuad(k, w, da32, row, k.Add(ptx.U32, col, ptx.Imm(8*ni)), g.in, q, ok)
		}
	}
}
