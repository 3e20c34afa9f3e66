package norm

import (
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/rows"
)

// mainKernel is the emission state of the row kernel: dx, and the CTA's
// column sums.
type mainKernel struct {
	f    *family
	p    Params
	g    rows.Geom
	k    *ptx.Func
	rk   *rows.Kernel
	args []kernels.Arg

	dy, x, gamma, mean, rstd, dx ptx.Reg
	// cols: where the CTA adds its column sums (atomic, atomic1: dgamma
	// and dbeta; ticket: the halves of colsum) or stores them (partial:
	// partials). outs: ticket's dgamma and dbeta.
	cols, outs    []ptx.Reg
	ticket, elect ptx.Reg
	// lastCTA is the number of CTAs launched less one (ticket, atomic1):
	// where their counters wrap.
	lastCTA ptx.Reg
	tile    rows.Tile
	gam     [][]ptx.Reg   // γ of this thread's columns, per chunk
	acc     [][][]ptx.Reg // its column sums: [column sum][chunk][element]
}

// rowStats are a row's saved statistics: rstd (and mean).
type rowStats struct{ r, mu ptx.Reg }

// emitMain writes the row kernel.
func (f *family) emitMain(mod *ptx.Module, entry string, g rows.Geom, p Params) kernels.Launch {
	mk := &mainKernel{f: f, p: p, g: g, k: mod.Func(entry)}
	mk.bindParams()
	mk.rk = rows.NewKernel(mk.k, g)
	mk.args = append(mk.args, rows.DimArg)
	mk.tile = mk.rk.OneTile()
	if p.DGamma == DGammaTicket || p.DGamma == DGammaAtomic1 {
		mk.lastCTA = mk.k.Sub(ptx.U32, mk.k.Mov(ptx.U32, ptx.NCtaidX), ptx.Imm(1))
	}
	if p.DGamma == DGammaAtomic1 {
		mk.elect = mk.atomic1Elect()
	}
	mk.startColumns()
	if p.Store == rows.StoreAsync {
		mk.forRowsAsync()
	} else {
		mk.rk.ForRows(mk.load, mk.compute)
	}
	mk.columnSums()
	return kernels.Launch{Entry: entry, Grid: g.LaunchGrid(), Block: [3]int{g.Block, 1, 1}, SharedBytes: g.Smem, Args: mk.args}
}

// bindParams declares the kernel's buffer parameters, in the order of its
// args (the row count follows: rows.NewKernel).
func (mk *mainKernel) bindParams() {
	k, f := mk.k, mk.f
	param := func(name string) ptx.Reg {
		mk.args = append(mk.args, kernels.Arg{Buffer: name})
		return gen.Param(k, name)
	}
	mk.dy, mk.x, mk.gamma = param("dy"), param("x"), param("gamma")
	if f.layer {
		mk.mean = param("mean")
	}
	mk.rstd, mk.dx = param("rstd"), param("dx")
	switch mk.p.DGamma {
	case DGammaAtomic, DGammaAtomic1:
		for _, a := range f.colArgs() {
			mk.cols = append(mk.cols, param(a.Buffer))
		}
		if mk.p.DGamma == DGammaAtomic1 {
			mk.ticket = param("ticket")
		}
	case DGammaPartial:
		mk.cols = append(mk.cols, param("partials"))
	case DGammaTicket:
		acc := param("colsum")
		mk.ticket = param("ticket")
		for i, a := range f.colArgs() {
			mk.cols = append(mk.cols, k.Add(ptx.U64, acc, ptx.Imm(i*mk.g.N*4)))
			mk.outs = append(mk.outs, param(a.Buffer))
		}
	}
}

// startColumns loads γ of this thread's columns and zeroes its column
// sums.
func (mk *mainKernel) startColumns() {
	k, g, rk := mk.k, mk.g, mk.rk
	gp := k.Add(ptx.U64, mk.gamma, rk.LaneOff)
	mk.gam = make([][]ptx.Reg, g.VPT)
	for j := range mk.gam {
		mk.gam[j] = gen.Widen(k, g.DType, gen.LdRaw(k, ptx.Global, g.DType, g.Vec, rk.ChunkAt(gp, j), mk.tile.OK[j], rk.Ld))
	}
	mk.acc = make([][][]ptx.Reg, mk.f.ncols())
	for a := range mk.acc {
		mk.acc[a] = make([][]ptx.Reg, g.VPT)
		for j := range mk.acc[a] {
			for range g.Vec {
				mk.acc[a][j] = append(mk.acc[a][j], k.Mov(ptx.F32, ptx.F32Imm(0)))
			}
		}
	}
}

// stats loads row r's rstd (and mean).
func (mk *mainKernel) stats(r rows.Row) rowStats {
	k := mk.k
	var st rowStats
	off := k.MulWide(ptx.U32, r.Idx, ptx.Imm(4))
	st.r = k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Add(ptx.U64, mk.rstd, off), 0), mk.rk.Ld)[0]
	if mk.f.layer {
		st.mu = k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Add(ptx.U64, mk.mean, off), 0), mk.rk.Ld)[0]
	}
	return st
}

// xhat returns x̂ and g = γ·dy of one element.
func (mk *mainKernel) xhat(xv, dyv, gm ptx.Reg, st rowStats) (xh, gg ptx.Reg) {
	k := mk.k
	if mk.f.layer {
		xh = k.Mul(ptx.F32, k.Sub(ptx.F32, xv, st.mu), st.r)
	} else {
		xh = k.Mul(ptx.F32, xv, st.r)
	}
	return xh, k.Mul(ptx.F32, gm, dyv)
}

// chains are a row's sums in vec chains, started by the first chunk:
// s2 = Σ g·x̂ and, for layernorm, s1 = Σ g.
type chains struct{ s1, s2 []ptx.Reg }

func (mk *mainKernel) newChains() *chains {
	return &chains{s1: make([]ptx.Reg, mk.g.Vec), s2: make([]ptx.Reg, mk.g.Vec)}
}

func (mk *mainKernel) addChains(c *chains, e int, xh, gg ptx.Reg) {
	k := mk.k
	if !c.s2[e].Valid() {
		c.s2[e], c.s1[e] = k.Mul(ptx.F32, gg, xh), gg
		return
	}
	c.s2[e] = k.Fma(ptx.F32, gg, xh, c.s2[e])
	if mk.f.layer {
		c.s1[e] = k.Add(ptx.F32, c.s1[e], gg)
	}
}

// sumsOf adds each chain's elements pairwise: the values the row group
// reduces.
func (mk *mainKernel) sumsOf(c *chains) []ptx.Reg {
	if mk.f.layer {
		return []ptx.Reg{gen.SumTree(mk.k, c.s2), gen.SumTree(mk.k, c.s1)}
	}
	return []ptx.Reg{gen.SumTree(mk.k, c.s2)}
}

// colSums adds the row's contribution to the column sums (not for
// clamped rows past m).
func (mk *mainKernel) colSums(r rows.Row, j int, dyv, xh []ptx.Reg) {
	k, acc := mk.k, mk.acc
	for e := 0; e < mk.g.Vec; e++ {
		k.MovTo(acc[0][j][e], k.Fma(ptx.F32, dyv[e], xh[e], acc[0][j][e]))
		if r.Valid.Valid() {
			k.Guard(r.Valid, false)
		}
		if mk.f.layer {
			k.MovTo(acc[1][j][e], k.Add(ptx.F32, acc[1][j][e], dyv[e]))
			if r.Valid.Valid() {
				k.Guard(r.Valid, false)
			}
		}
	}
}

// coef are a row's coefficients: dx = fma(x̂, ca, r·g + cb).
type coef struct{ ca, cb ptx.Reg }

func (mk *mainKernel) coefs(sums []ptx.Reg, st rowStats) coef {
	k := mk.k
	rn := k.Mul(ptx.F32, st.r, gen.F32Imm(1/float64(mk.g.N)))
	c := coef{ca: k.Neg(ptx.F32, k.Mul(ptx.F32, rn, sums[0]))}
	if mk.f.layer {
		c.cb = k.Neg(ptx.F32, k.Mul(ptx.F32, rn, sums[1]))
	}
	return c
}

func (mk *mainKernel) dxOf(xh, gg ptx.Reg, st rowStats, c coef) ptx.Reg {
	k := mk.k
	var t ptx.Reg
	if mk.f.layer {
		t = k.Fma(ptx.F32, st.r, gg, c.cb)
	} else {
		t = k.Mul(ptx.F32, st.r, gg)
	}
	return k.Fma(ptx.F32, xh, c.ca, t)
}
