package norm

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/rows"
)

// nst is the number of registers of a row's saved statistics.
func (mk *mainKernel) nst() int {
	if mk.f.layer {
		return 2
	}
	return 1
}

// load issues the loads of a batch (store=regs; nothing otherwise): per
// row, the words of x and dy of each chunk, then rstd (and mean).
func (mk *mainKernel) load(rs []rows.Row) []ptx.Reg {
	k, g, rk, tile := mk.k, mk.g, mk.rk, mk.tile
	if g.Store != rows.StoreRegs {
		return nil
	}
	var regs []ptx.Reg
	for _, r := range rs {
		xp, dyp := rk.RowPtr(mk.x, r, tile), rk.RowPtr(mk.dy, r, tile)
		for j := 0; j < g.VPT; j++ {
			regs = append(regs, gen.LdRaw(k, ptx.Global, g.DType, g.Vec, rk.ChunkAt(xp, j), tile.OK[j], rk.Ld)...)
			regs = append(regs, gen.LdRaw(k, ptx.Global, g.DType, g.Vec, rk.ChunkAt(dyp, j), tile.OK[j], rk.Ld)...)
		}
		st := mk.stats(r)
		regs = append(regs, st.r)
		if mk.f.layer {
			regs = append(regs, st.mu)
		}
	}
	return regs
}

// compute finishes a batch: from the registers load or fetch filled
// (store=regs, async), or in two passes over the row (reread, smem).
func (mk *mainKernel) compute(rs []rows.Row, regs []ptx.Reg) {
	if mk.g.Store == rows.StoreRegs || mk.g.Store == rows.StoreAsync {
		mk.computeHeld(rs, regs)
	} else {
		mk.computeTwoPass(rs[0])
	}
}

// computeHeld finishes a batch held in registers: x̂, g, the row sums and
// the column sums of every row, the rows' sums reduced together, then dx.
func (mk *mainKernel) computeHeld(rs []rows.Row, regs []ptx.Reg) {
	k, g, rk, tile := mk.k, mk.g, mk.rk, mk.tile
	_, nw := gen.RawType(g.DType, g.Vec)
	xs := make([][][]ptx.Reg, len(rs))
	dys := make([][][]ptx.Reg, len(rs))
	sts := make([]rowStats, len(rs))
	for q := range rs {
		for j := 0; j < g.VPT; j++ {
			xs[q] = append(xs[q], gen.Widen(k, g.DType, regs[:nw]))
			dys[q] = append(dys[q], gen.Widen(k, g.DType, regs[nw:2*nw]))
			regs = regs[2*nw:]
		}
		sts[q].r = regs[0]
		if mk.f.layer {
			sts[q].mu = regs[1]
		}
		regs = regs[mk.nst():]
	}
	xhs := make([][][]ptx.Reg, len(rs))
	ggs := make([][][]ptx.Reg, len(rs))
	var sums []ptx.Reg
	for q, r := range rs {
		c := mk.newChains()
		for j := 0; j < g.VPT; j++ {
			xh, gg := make([]ptx.Reg, g.Vec), make([]ptx.Reg, g.Vec)
			for e := 0; e < g.Vec; e++ {
				xh[e], gg[e] = mk.xhat(xs[q][j][e], dys[q][j][e], mk.gam[j][e], sts[q])
				mk.addChains(c, e, xh[e], gg[e])
			}
			xhs[q], ggs[q] = append(xhs[q], xh), append(ggs[q], gg)
			mk.colSums(r, j, dys[q][j], xh)
		}
		sums = append(sums, mk.sumsOf(c)...)
	}
	sums = rk.Red.Sum(sums)
	for q, r := range rs {
		c := mk.coefs(sums[q*mk.f.cfg.Sums:], sts[q])
		dxp := rk.RowPtr(mk.dx, r, tile)
		for j := 0; j < g.VPT; j++ {
			out := make([]ptx.Reg, g.Vec)
			for e := range out {
				out[e] = mk.dxOf(xhs[q][j][e], ggs[q][j][e], sts[q], c)
			}
			gen.StVals(k, g.DType, rk.ChunkAt(dxp, j), out, gen.Both(k, r.Valid, tile.OK[j]))
		}
	}
}

// computeTwoPass does one row in two passes (store=reread, smem): the
// row and column sums, then dx from the re-read (or stashed) row.
func (mk *mainKernel) computeTwoPass(r rows.Row) {
	k, g, rk := mk.k, mk.g, mk.rk
	st := mk.stats(r)
	xp, dyp := rk.RowPtr(mk.x, r, mk.tile), rk.RowPtr(mk.dy, r, mk.tile)
	t := mk.tile
	t.Stash = rk.StashBase()
	c := mk.newChains()
	for j := 0; j < g.VPT; j++ {
		xv, dyv := rk.LoadPair(t, j, xp, dyp)
		xh := make([]ptx.Reg, g.Vec)
		for e := 0; e < g.Vec; e++ {
			var gg ptx.Reg
			xh[e], gg = mk.xhat(xv[e], dyv[e], mk.gam[j][e], st)
			mk.addChains(c, e, xh[e], gg)
		}
		mk.colSums(r, j, dyv, xh)
	}
	cf := mk.coefs(rk.Red.Sum(mk.sumsOf(c)), st)
	dxp := rk.RowPtr(mk.dx, r, mk.tile)
	for j := 0; j < g.VPT; j++ {
		xv, dyv := rk.ReloadPair(t, j, xp, dyp)
		out := make([]ptx.Reg, g.Vec)
		for e := range out {
			xh, gg := mk.xhat(xv[e], dyv[e], mk.gam[j][e], st)
			out[e] = mk.dxOf(xh, gg, st, cf)
		}
		gen.StVals(k, g.DType, rk.ChunkAt(dxp, j), out, gen.Both(k, r.Valid, t.OK[j]))
	}
}

// forRowsAsync walks the rows with store=async: row i's x and dy go to
// this thread's stash with cp.async (.cg, L2 only, for 16-byte vectors:
// the rows are read once); rstd (and mean) are loaded into registers at
// once.
func (mk *mainKernel) forRowsAsync() {
	k, g, rk, tile := mk.k, mk.g, mk.rk, mk.tile
	stash := rk.StashBase()
	cache := "ca"
	if g.VB == 16 {
		cache = "cg"
	}
	issue := func(r rows.Row, i int) []ptx.Reg {
		xp, dyp := rk.RowPtr(mk.x, r, tile), rk.RowPtr(mk.dy, r, tile)
		for j := 0; j < g.VPT; j++ {
			for ten, p := range []ptx.Reg{xp, dyp} {
				k.CpAsync(cache, rk.AsyncAt(stash, i, j, ten), rk.ChunkAt(p, j), g.VB)
				if tile.OK[j].Valid() {
					k.Guard(tile.OK[j], false)
				}
			}
		}
		st := mk.stats(r)
		if mk.f.layer {
			return []ptx.Reg{st.r, st.mu}
		}
		return []ptx.Reg{st.r}
	}
	fetch := func(r rows.Row, i int, held []ptx.Reg) []ptx.Reg {
		var regs []ptx.Reg
		for j := 0; j < g.VPT; j++ {
			regs = append(regs, gen.LdRaw(k, ptx.Shared, g.DType, g.Vec, rk.AsyncAt(stash, i, j, 0), tile.OK[j])...)
			regs = append(regs, gen.LdRaw(k, ptx.Shared, g.DType, g.Vec, rk.AsyncAt(stash, i, j, 1), tile.OK[j])...)
		}
		return append(regs, held...)
	}
	rk.ForRowsAsync(issue, fetch, mk.compute)
}
