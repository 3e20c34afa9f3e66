package norm

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/rows"
)

// columnSums ends the row kernel: the CTA's column sums go where the
// strategy puts them.
func (mk *mainKernel) columnSums() {
	k, p := mk.k, mk.p
	if p.PDL && p.DGamma == DGammaAtomic {
		k.GridDepWait() // dγ (and dβ) are zero from here on
	}
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	var partBase ptx.Reg
	if p.DGamma == DGammaPartial {
		partBase = k.Add(ptx.U64, mk.cols[0], k.MulWide(ptx.U32, cta, ptx.Imm(mk.f.ncols()*mk.g.N*4)))
	}
	if mk.g.Rows == 1 {
		mk.colsOneGroup(partBase)
	} else {
		mk.colsCombine(partBase)
	}
	if p.DGamma == DGammaTicket {
		mk.emitTicket()
	}
}

// vred: the column sums are added with vector red.adds (sm_90).
func (mk *mainKernel) vred() bool { return mk.p.PDL || mk.p.DGamma == DGammaAtomic1 }

// colsOneGroup: with one row group, this thread's columns are the CTA's.
func (mk *mainKernel) colsOneGroup(partBase ptx.Reg) {
	k, g, rk := mk.k, mk.g, mk.rk
	partial := mk.p.DGamma == DGammaPartial
	if mk.p.DGamma == DGammaAtomic1 {
		mk.atomic1Wait()
		k.BarSync(0)
	}
	lane4 := k.MulWide(ptx.U32, rk.Lt, ptx.Imm(g.Vec*4))
	for a := 0; a < mk.f.ncols(); a++ {
		var base ptx.Reg
		if !partial {
			base = k.Add(ptx.U64, mk.cols[a], lane4)
		} else {
			base = k.Add(ptx.U64, k.Add(ptx.U64, partBase, lane4), ptx.Imm(a*g.N*4))
		}
		for j := 0; j < g.VPT; j++ {
			off := int64(j * g.TPR * g.Vec * 4)
			if !partial {
				redCols(k, base, off, mk.acc[a][j], mk.tile.OK[j], mk.vred())
			} else {
				gen.StF32(k, ptx.Global, ptx.At(base, off), mk.acc[a][j], mk.tile.OK[j])
			}
		}
	}
}

// colsCombine adds the row groups' sums in shared memory ([group][column
// sum][n]); then each thread adds or stores column vectors of the CTA's
// sums.
func (mk *mainKernel) colsCombine(partBase ptx.Reg) {
	k, g, rk := mk.k, mk.g, mk.rk
	na, vec, n := mk.f.ncols(), g.Vec, g.N
	if g.Store == rows.StoreAsync {
		k.BarSync(0) // every thread has read its rows back: the stash is free
	}
	comb := k.Add(ptx.U32, rk.Smem, ptx.Imm(g.CombOff))
	mine := k.Mad(ptx.U32, rk.Grp, ptx.Imm(na*n*4), k.Mad(ptx.U32, rk.Lt, ptx.Imm(vec*4), comb))
	for a := 0; a < na; a++ {
		for j := 0; j < g.VPT; j++ {
			gen.StF32(k, ptx.Shared, ptx.At(mine, int64((a*n+j*g.TPR*vec)*4)), mk.acc[a][j], mk.tile.OK[j])
		}
	}
	if mk.p.DGamma == DGammaAtomic1 {
		mk.atomic1Wait()
	}
	k.BarSync(0)
	q := na * g.NV // column vectors of all sums
	for i := 0; i < gen.CeilDiv(q, g.Block); i++ {
		qi := k.Add(ptx.U32, rk.Tid, ptx.Imm(i*g.Block))
		var ok ptx.Reg
		if (i+1)*g.Block > q {
			ok = k.Setp("lt", ptx.U32, qi, ptx.Imm(q))
		}
		at := k.Mad(ptx.U32, qi, ptx.Imm(vec*4), comb)
		sum := gen.LdF32(k, ptx.Shared, ptx.At(at, 0), vec, ok)
		for gi := 1; gi < g.Rows; gi++ {
			more := gen.LdF32(k, ptx.Shared, ptx.At(at, int64(gi*na*n*4)), vec, ok)
			for e := range sum {
				sum[e] = k.Add(ptx.F32, sum[e], more[e])
			}
		}
		off64 := k.MulWide(ptx.U32, qi, ptx.Imm(vec*4))
		if mk.p.DGamma == DGammaPartial {
			gen.StF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, partBase, off64), 0), sum, ok)
			continue
		}
		redCols(k, k.Add(ptx.U64, mk.colBase(mk.cols, qi), off64), 0, sum, ok, mk.vred())
	}
}

// colBase is the base of column vector qi's sum among outs (dγ, dβ): with
// two sums, the vectors past the first n columns are dβ's, so its base is
// moved back by n columns.
func (mk *mainKernel) colBase(outs []ptx.Reg, qi ptx.Reg) ptx.Reg {
	k := mk.k
	if len(outs) < 2 {
		return outs[0]
	}
	isB := k.Setp("ge", ptx.U32, qi, ptx.Imm(mk.g.NV))
	return k.Selp(ptx.U64, k.Sub(ptx.U64, outs[1], ptx.Imm(mk.g.N*4)), outs[0], isB)
}

// redCols adds vals into consecutive f32 column sums at base+off, under
// ok when it is valid: scalar red.adds, or with vector (sm_90) as few
// red.global.add.v4/.v2.f32 as the count allows. Each vector is aligned:
// a chunk starts at a multiple of its vec·4 bytes.
func redCols(k *ptx.Func, base ptx.Reg, off int64, vals []ptx.Reg, ok ptx.Reg, vector bool) {
	for e := 0; e < len(vals); {
		w := 1
		if vector {
			for _, c := range []int{4, 2} {
				if e%c == 0 && e+c <= len(vals) {
					w = c
					break
				}
			}
		}
		k.RedAddF32(ptx.At(base, off+int64(4*e)), vals[e:e+w])
		if ok.Valid() {
			k.Guard(ok, false)
		}
		e += w
	}
}
