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
	nb0 ptx.Reg // the warp's first n8 block of the chunk (dA)
	nbw int
}

// emitX writes the x kernel.
func emitX(k *ptx.Func, g geom) {
	var a, dx ptx.Reg
	x := gen.Param(k, "x")
	if g.dx {
		a = gen.Param(k, "a")
	}
	dh32 := gen.Param(k, "dh32")
	if g.dx {
		dx = gen.Param(k, "dx")
	}
	da32 := gen.Param(k, "da32")
	t := k.LdParam(k.Param(Dim, ptx.U32))
	k.ReqNTid(g.threads)
	smem := k.Mov(ptx.U32, k.DynamicShared("smem", 128))
	xk := &xKernel{k: k, g: g, w: newWarpCtx(k), nbw: chunk / 8 / g.warps}
	xk.wr0 = k.Mul(ptx.U32, xk.w.warp, ptx.Imm(g.wrows))
	xk.nb0 = k.Mul(ptx.U32, xk.w.warp, ptx.Imm(xk.nbw))
	c := newCTA(k, g, g.isplit, g.in)
	hi := k.Add(ptx.U32, smem, ptx.Imm(g.stages*g.stageX()))
	lo := k.Add(ptx.U32, hi, ptx.Imm(g.bt*g.rp*2))
	xk.splitDH(dh32, hi, lo, c.row0, t)
	xc := newTileCopy(k, xk.w.tid, g.bt, chunk, chunk, g.in, g.threads)
	var ac *tileCopy
	if g.dx {
		ac = newTileCopy(k, xk.w.tid, g.r, chunk, chunk, g.in, g.threads)
	}
	load := func(slot, ch ptx.Reg) {
		col := k.Shl(ptx.U32, ch, ptx.Imm(6))
		xc.issue(slot, x, c.row0, col, t, ptx.Imm(g.in))
		if g.dx {
			ac.issue(k.Add(ptx.U32, slot, ptx.Imm(g.tileBytes)), a, imm(k, 0), col, ptx.Imm(g.r), ptx.Imm(g.in))
		}
	}
	fr := xk.frags()
	ring(k, smem, g.stageX(), g.stages, c.first, c.cnt, load, func(slot, ch ptx.Reg) {
		col0 := k.Shl(ptx.U32, ch, ptx.Imm(6))
		if g.dx {
			xk.dx(fr, slot, hi, lo, c.row0, col0, t, dx)
		}
		xk.da(fr, slot, hi, lo, col0, da32)
	})
}

// splitDH loads the CTA's rows of dh32 (zeros at or past t) and stores
// hi = round(dh) and lo = round(dh − hi) in the tiles hi and lo.
func (xk *xKernel) splitDH(dh32, hi, lo, row0, t ptx.Reg) {
	k, g := xk.k, xk.g
	pt := ptx.F16x2
	if g.dt == dtype.BF16 {
		pt = ptx.BF16x2
	}
	c := newTileCopy(k, xk.w.tid, g.bt, g.r, g.rp, g.r, g.threads)
	for i := range c.rowIn {
		one := func() {
			row := k.Add(ptx.U32, row0, c.rowIn[i])
			ok := k.Setp("lt", ptx.U32, row, t)
			elem := k.Mad(ptx.U32, row, ptx.Imm(g.r), c.colIn[i])
			v := gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, dh32, k.MulWide(ptx.U32, elem, ptx.Imm(4))), 0), 8, ok)
			var hw, lw []ptx.Reg
			for j := 0; j < 8; j += 2 {
				hw = append(hw, k.PackHalf2(pt, v[j+1], v[j]))
			}
			hv := gen.Widen(k, g.dt, hw)
			for j := 0; j < 8; j += 2 {
				lw = append(lw, k.PackHalf2(pt, k.Sub(ptx.F32, v[j+1], hv[j+1]), k.Sub(ptx.F32, v[j], hv[j])))
			}
			k.St(ptx.Shared, ptx.B32, ptx.At(k.Add(ptx.U32, hi, c.sOff[i]), 0), hw)
			k.St(ptx.Shared, ptx.B32, ptx.At(k.Add(ptx.U32, lo, c.sOff[i]), 0), lw)
		}
		if c.has[i].Valid() {
			k.If(c.has[i], one)
		} else {
			one()
		}
	}
}

// xFrags are the x kernel's fragment offsets: dX's A (dh, K-major) per
// k16 step of the rank and B (the A tile) per pair of n8 blocks, whole
// and, for a rank that ends in half a step, half; dA's A (dh, MN-major)
// per m16 block of the rank and B (the x tile) for the warp's n8 blocks;
// dX's only with dx=here.
type xFrags struct {
	dxA, dxB, dxBHalf, daA []frag
	daB                    frag
}

func (xk *xKernel) frags() xFrags {
	k, g, l, z := xk.k, xk.g, xk.w.l, xk.w.zrow
	var f xFrags
	for kk := range g.kSteps {
		half := g.rHalf && kk == g.kSteps-1
		if g.dx {
			f.dxA = append(f.dxA, aKMajor(k, l, g.rp, xk.wr0, imm(k, 2*kk), half))
		}
		f.daA = append(f.daA, aMNMajor(k, l, g.rp, z, imm(k, 2*kk), half))
	}
	for nc := 0; g.dx && nc < chunk/8; nc += 2 {
		f.dxB = append(f.dxB, bMNMajor(k, l, chunk, z, imm(k, nc), true, false))
		if g.rHalf {
			f.dxBHalf = append(f.dxBHalf, bMNMajor(k, l, chunk, z, imm(k, nc), true, true))
		}
	}
	f.daB = bMNMajor(k, l, chunk, z, xk.nb0, xk.nbw == 2, false)
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

// da computes the warp's columns of dhᵀ·x over the CTA's rows for the
// chunk at column col0 and adds them into da32 [r × in].
func (xk *xKernel) da(f xFrags, slot, hi, lo, col0, da32 ptx.Reg) {
	k, g, w, ab := xk.k, xk.g, xk.w, gen.HalfType(xk.g.dt)
	acc := zeroAcc(k, g.kSteps*xk.nbw)
	for kt := range g.bt / 16 {
		bs := bRegs(f.daB, f.daB.load(k, slot, kt), w.zero, false)
		tiles := []ptx.Reg{hi, lo}
		if planted.dropLo {
			tiles = tiles[:1]
		}
		for mb, fa := range f.daA {
			for _, tile := range tiles {
				a := aRegs(fa, fa.load(k, tile, kt), w.zero)
				for ni, b := range bs {
					d := acc[mb*xk.nbw+ni]
					k.MmaSyncTo(ab, d, a, b, d)
				}
			}
		}
	}
	col := k.Add(ptx.U32, k.Add(ptx.U32, col0, k.Shl(ptx.U32, xk.nb0, ptx.Imm(3))), w.tig)
	inIn := func(_, cn ptx.Reg) ptx.Reg { return k.Setp("lt", ptx.U32, cn, ptx.Imm(g.in)) }
	for mb := range g.kSteps {
		ok := inIn
		if g.rHalf && mb == g.kSteps-1 {
			// The rank ends in this block's first 8 rows: the odd lanes'
			// row g4+8 is past it.
			ok = func(row, cn ptx.Reg) ptx.Reg {
				return k.And(ptx.Pred, inIn(row, cn), k.Setp("lt", ptx.U32, row, ptx.Imm(g.r)))
			}
		}
		row := k.Add(ptx.U32, w.g4, ptx.Imm(16*mb))
		for ni := range xk.nbw {
			redQuad(k, w, da32, row, k.Add(ptx.U32, col, ptx.Imm(8*ni)), g.in, acc[mb*xk.nbw+ni], ok)
		}
	}
}
