package softmax

import (
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/rows"
)

// Emit generates one variant: a single kernel, one launch, the row count
// taken at run time (package rows).
func (f family) Emit(s rows.Shape, p Params) (kernels.Program, error) {
	g := cfg.Geom(s, p.Row())
	entry := f.Name() + "_" + s.DType.String()
	m := ptx.NewModule()
	k := m.Func(entry)
	y, dy, dx := gen.Param(k, "y"), gen.Param(k, "dy"), gen.Param(k, "dx")
	rk := rows.NewKernel(k, g)
	rk.ForRows(loadRegs(rk, y, dy), func(rs []rows.Row, regs []ptx.Reg) {
		if g.Store == rows.StoreRegs {
			computeRegs(rk, dx, rs, regs)
		} else {
			computeTiles(rk, y, dy, dx, rs[0])
		}
	})
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	return kernels.Program{PTX: built.String(), Launches: []kernels.Launch{{
		Entry: entry, Grid: g.LaunchGrid(), Block: [3]int{g.Block, 1, 1}, SharedBytes: g.Smem,
		Args: []kernels.Arg{{Buffer: "y"}, {Buffer: "dy"}, {Buffer: "dx"}, rows.DimArg},
	}}, RuntimeDims: []string{rows.Dim}}, nil
}

// loadRegs issues the loads of a batch (store=regs; nothing otherwise):
// per row and chunk, the words of y then of dy.
func loadRegs(rk *rows.Kernel, y, dy ptx.Reg) func(rs []rows.Row) []ptx.Reg {
	k, g := rk.K, rk.G
	return func(rs []rows.Row) []ptx.Reg {
		if g.Store != rows.StoreRegs {
			return nil
		}
		t := rk.OneTile()
		var regs []ptx.Reg
		for _, r := range rs {
			yp, dyp := rk.RowPtr(y, r, t), rk.RowPtr(dy, r, t)
			for j := 0; j < g.VPT; j++ {
				regs = append(regs, gen.LdRaw(k, ptx.Global, g.DType, g.Vec, rk.ChunkAt(yp, j), t.OK[j], rk.Ld)...)
				regs = append(regs, gen.LdRaw(k, ptx.Global, g.DType, g.Vec, rk.ChunkAt(dyp, j), t.OK[j], rk.Ld)...)
			}
		}
		return regs
	}
}

// computeRegs finishes a batch held in registers (one tile): the rows'
// dot products in vec fma chains added pairwise, reduced together, then
// dx = y·(dy − dot).
func computeRegs(rk *rows.Kernel, dx ptx.Reg, rs []rows.Row, regs []ptx.Reg) {
	k, g := rk.K, rk.G
	vec, vpt := g.Vec, g.VPT
	_, nw := gen.RawType(g.DType, vec)
	t := rk.OneTile()
	ys := make([][][]ptx.Reg, len(rs))
	dys := make([][][]ptx.Reg, len(rs))
	for q := range rs {
		for j := 0; j < vpt; j++ {
			ys[q] = append(ys[q], gen.Widen(k, g.DType, regs[:nw]))
			dys[q] = append(dys[q], gen.Widen(k, g.DType, regs[nw:2*nw]))
			regs = regs[2*nw:]
		}
	}
	dots := make([]ptx.Reg, len(rs))
	for q := range rs {
		acc := make([]ptx.Reg, vec)
		for j := 0; j < vpt; j++ {
			for e := range acc {
				if j == 0 {
					acc[e] = k.Mul(ptx.F32, ys[q][j][e], dys[q][j][e])
				} else {
					acc[e] = k.Fma(ptx.F32, ys[q][j][e], dys[q][j][e], acc[e])
				}
			}
		}
		dots[q] = gen.SumTree(k, acc)
	}
	dots = rk.Red.Sum(dots)
	for q, r := range rs {
		dxp := rk.RowPtr(dx, r, t)
		for j := 0; j < vpt; j++ {
			out := make([]ptx.Reg, vec)
			for e := range out {
				out[e] = k.Mul(ptx.F32, ys[q][j][e], k.Sub(ptx.F32, dys[q][j][e], dots[q]))
			}
			gen.StVals(k, g.DType, rk.ChunkAt(dxp, j), out, gen.Both(k, r.Valid, t.OK[j]))
		}
	}
}

// computeTiles does one row in two passes over its tiles (store=reread
// or smem): the dot product, then dx from the re-read (or stashed) row.
func computeTiles(rk *rows.Kernel, y, dy, dx ptx.Reg, r rows.Row) {
	k, g := rk.K, rk.G
	stash := rk.StashBase()
	acc := make([]ptx.Reg, g.Vec)
	for e := range acc {
		acc[e] = k.Mov(ptx.F32, ptx.F32Imm(0))
	}
	rk.ForTiles(stash, func(t rows.Tile) {
		yp, dyp := rk.RowPtr(y, r, t), rk.RowPtr(dy, r, t)
		for j := 0; j < g.VPT; j++ {
			yv, dyv := rk.LoadPair(t, j, yp, dyp)
			for e := range acc {
				k.MovTo(acc[e], k.Fma(ptx.F32, yv[e], dyv[e], acc[e]))
			}
		}
	})
	dot := rk.Red.Sum([]ptx.Reg{gen.SumTree(k, acc)})[0]
	rk.ForTiles(stash, func(t rows.Tile) {
		yp, dyp, dxp := rk.RowPtr(y, r, t), rk.RowPtr(dy, r, t), rk.RowPtr(dx, r, t)
		for j := 0; j < g.VPT; j++ {
			yv, dyv := rk.ReloadPair(t, j, yp, dyp)
			out := make([]ptx.Reg, g.Vec)
			for e := range out {
				out[e] = k.Mul(ptx.F32, yv[e], k.Sub(ptx.F32, dyv[e], dot))
			}
			gen.StVals(k, g.DType, rk.ChunkAt(dxp, j), out, gen.Both(k, r.Valid, t.OK[j]))
		}
	})
}
