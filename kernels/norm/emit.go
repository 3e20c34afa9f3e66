package norm

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/rows"
)

// Emit generates one variant: zero + main (atomic), main + finalize
// (partial), or main alone (ticket, atomic1); the row count is taken at
// run time (package rows).
func (f *family) Emit(s rows.Shape, p Params) (kernels.Program, error) {
	g := f.cfg.Geom(s, p.Row())
	entry := f.name + "_" + s.DType.String()
	mod := ptx.NewModule()
	var launches []kernels.Launch
	if p.DGamma == DGammaAtomic {
		launches = append(launches, f.emitZero(mod, entry+"_zero", g, p.PDL))
	}
	launches = append(launches, f.emitMain(mod, entry, g, p))
	if p.DGamma == DGammaPartial {
		launches = append(launches, f.emitFinalize(mod, entry+"_finalize", g, p.PDL))
	}
	// With pdl the second launch overlaps the first one's tail (see
	// kernels.Launch.Dependent); its kernel waits before it touches what
	// the first writes.
	if p.PDL {
		launches[1].Dependent = true
	}
	built, err := mod.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	return kernels.Program{PTX: built.String(), Launches: launches, Buffers: f.ownBuffers(g, p.DGamma), RuntimeDims: []string{rows.Dim}}, nil
}

// ownBuffers are the buffers a strategy's program needs beside the
// shape's data: partial's per-CTA sums (Scratch, one row of na·n per CTA
// of the row kernel's grid);
// ticket's accumulator colsum and its counter (word 0 of ticket);
// atomic1's start ticket and flag (words 0 and 1 of ticket). colsum and
// ticket are State: every run leaves them zero.
func (f *family) ownBuffers(g rows.Geom, dg DGamma) []kernels.Buffer {
	na := f.ncols()
	switch dg {
	case DGammaPartial:
		return []kernels.Buffer{{Name: "partials", DType: dtype.F32, Elems: g.GridExpr().TimesInt(na * g.N), Role: kernels.Scratch}}
	case DGammaTicket:
		return []kernels.Buffer{
			{Name: "colsum", DType: dtype.F32, Elems: configs.Int(na * g.N), Role: kernels.State},
			{Name: "ticket", DType: dtype.F32, Elems: configs.Int(1), Role: kernels.State},
		}
	case DGammaAtomic1:
		return []kernels.Buffer{{Name: "ticket", DType: dtype.F32, Elems: configs.Int(2), Role: kernels.State}}
	}
	return nil
}

// colArgs are the column-sum buffers: dgamma (and dbeta).
func (f *family) colArgs() []kernels.Arg {
	a := []kernels.Arg{{Buffer: "dgamma"}}
	if f.layer {
		a = append(a, kernels.Arg{Buffer: "dbeta"})
	}
	return a
}

// emitZero writes the kernel that zeroes the column sums: one thread per
// column. With pdl, the row kernel waits for it before its red.adds, and
// may start streaming rows at once.
func (f *family) emitZero(mod *ptx.Module, entry string, g rows.Geom, pdl bool) kernels.Launch {
	const block = 256
	k := mod.Func(entry)
	k.ReqNTid(block)
	if pdl {
		k.GridDepLaunch()
	}
	var bases []ptx.Reg
	for _, a := range f.colArgs() {
		bases = append(bases, gen.Param(k, a.Buffer))
	}
	i := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(block), k.Mov(ptx.U32, ptx.TidX))
	off := k.MulWide(ptx.U32, i, ptx.Imm(4))
	var ok ptx.Reg
	if g.N%block != 0 {
		ok = k.Setp("lt", ptx.U32, i, ptx.Imm(g.N))
	}
	zero := k.Mov(ptx.F32, ptx.F32Imm(0))
	for _, b := range bases {
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, b, off), 0), []ptx.Reg{zero})
		if ok.Valid() {
			k.Guard(ok, false)
		}
	}
	return kernels.Launch{Entry: entry, Grid: configs.Grid(gen.CeilDiv(g.N, block), 1, 1), Block: [3]int{block, 1, 1}, Args: f.colArgs()}
}
