package norm

import (
	"github.com/gradtune/gradtune/contract"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/rows"
)

// finalize is the emission state of the kernel that adds the CTAs'
// partial column sums: a CTA takes 32 columns (of the c = na·n) and S =
// min(32, 2^⌈log2 G⌉) slices of the G partial rows; slice s adds rows s,
// s+S, …; a shared-memory transpose lets warp w add the slices of
// columns w, w+S, … with a butterfly.
type finalize struct {
	k                 *ptx.Func
	c, n, gr, sl      int
	outs              []ptx.Reg
	lane, slice, col0 ptx.Reg
}

// emitFinalize writes the finalize kernel. With pdl it starts with
// griddepcontrol.wait: the row kernel's partials are complete after it.
func (f *family) emitFinalize(mod *ptx.Module, entry string, g rows.Geom, pdl bool) kernels.Launch {
	k := mod.Func(entry)
	fz := &finalize{k: k, c: f.ncols() * g.N, n: g.N, gr: g.Grid, sl: min(32, gen.Pow2Ceil(g.Grid))}
	block := 32 * fz.sl
	k.ReqNTid(block)
	if pdl {
		k.GridDepWait()
	}
	part := gen.Param(k, "partials")
	for _, a := range f.colArgs() {
		fz.outs = append(fz.outs, gen.Param(k, a.Buffer))
	}
	tid := k.Mov(ptx.U32, ptx.TidX)
	fz.lane = k.And(ptx.U32, tid, ptx.Imm(31))
	fz.slice = k.Shr(ptx.U32, tid, ptx.Imm(5))
	fz.col0 = k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(32))
	col := k.Add(ptx.U32, fz.col0, fz.lane)
	acc := fz.sliceSum(part, col)
	if fz.sl == 1 {
		var ok ptx.Reg
		if fz.c%32 != 0 {
			ok = k.Setp("lt", ptx.U32, col, ptx.Imm(fz.c))
		}
		fz.store(col, acc, ok)
	} else {
		fz.transpose(acc)
	}
	return kernels.Launch{Entry: entry, Grid: contract.Grid(gen.CeilDiv(fz.c, 32), 1, 1), Block: [3]int{block, 1, 1},
		Args: append([]kernels.Arg{{Buffer: "partials"}}, f.colArgs()...)}
}

// sliceSum adds this thread's slice of column col's partial rows.
func (fz *finalize) sliceSum(part, col ptx.Reg) ptx.Reg {
	k, c, gr, sl := fz.k, fz.c, fz.gr, fz.sl
	colc := col
	if c%32 != 0 {
		colc = k.Min(ptx.U32, col, ptx.Imm(c-1))
	}
	ptr := k.Add(ptx.U64, part, k.MulWide(ptx.U32, k.Mad(ptx.U32, fz.slice, ptx.Imm(c), colc), ptx.Imm(4)))
	loads := gen.CeilDiv(gr, sl) // partial rows per slice, at most
	rowOK := func(i ptx.Operand) ptx.Reg {
		// slice + i < G
		return k.Setp("lt", ptx.U32, k.Add(ptx.U32, fz.slice, i), ptx.Imm(gr))
	}
	nc := ptx.LdOpts{NC: true}
	if loads <= 16 {
		var vals []ptx.Reg
		for i := 0; i < loads; i++ {
			var ok ptx.Reg
			if (i+1)*sl > gr {
				ok = rowOK(ptx.Imm(i * sl))
			}
			vals = append(vals, gen.LdRaw(k, ptx.Global, dtype.F32, 1, ptx.At(ptr, int64(i*sl*c*4)), ok, nc)[0])
		}
		return gen.SumTree(k, vals)
	}
	const unroll = 8
	acc := k.Mov(ptx.F32, ptx.F32Imm(0))
	k.For(ptx.U32, ptx.Imm(0), ptx.Imm(gen.CeilDiv(loads, unroll)), ptx.Imm(1), func(it ptx.Reg) {
		first := k.Mul(ptx.U32, it, ptx.Imm(unroll*sl))
		at := k.Add(ptx.U64, ptr, k.MulWide(ptx.U32, first, ptx.Imm(c*4)))
		var vals []ptx.Reg
		for i := 0; i < unroll; i++ {
			ok := rowOK(k.Add(ptx.U32, first, ptx.Imm(i*sl)))
			vals = append(vals, gen.LdRaw(k, ptx.Global, dtype.F32, 1, ptx.At(at, int64(i*sl*c*4)), ok, nc)[0])
		}
		k.MovTo(acc, k.Add(ptx.F32, acc, gen.SumTree(k, vals)))
	})
	return acc
}

// store writes v to column colr of the c (dγ's n, then dβ's), under ok
// when valid.
func (fz *finalize) store(colr, v, ok ptx.Reg) {
	k := fz.k
	base := fz.outs[0]
	if len(fz.outs) == 2 {
		isB := k.Setp("ge", ptx.U32, colr, ptx.Imm(fz.n))
		base = k.Selp(ptx.U64, k.Sub(ptx.U64, fz.outs[1], ptx.Imm(fz.n*4)), fz.outs[0], isB)
	}
	k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, base, k.MulWide(ptx.U32, colr, ptx.Imm(4))), 0), []ptx.Reg{v})
	if ok.Valid() {
		k.Guard(ok, false)
	}
}

// transpose adds the S slices of each column: through a shared-memory
// transpose (pitch 33 floats: conflict-free columns), lane l of warp w
// reads slice l of columns w, w+S, …, and a butterfly adds them.
func (fz *finalize) transpose(acc ptx.Reg) {
	k, sl, lane := fz.k, fz.sl, fz.lane
	const pitch = 33
	sm := k.Mov(ptx.U32, k.SharedArray("t", ptx.F32, sl*pitch, 0))
	k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, k.Mad(ptx.U32, fz.slice, ptx.Imm(pitch), lane), ptx.Imm(4), sm), 0), []ptx.Reg{acc})
	k.BarSync(0)
	var laneOK ptx.Reg
	if sl < 32 {
		laneOK = k.Setp("lt", ptx.U32, lane, ptx.Imm(sl))
	}
	lane0 := k.Setp("eq", ptx.U32, lane, ptx.Imm(0))
	// Lanes ≥ S read zeros; their address is clamped so that it stays in
	// the array.
	lc := lane
	if sl < 32 {
		lc = k.Min(ptx.U32, lane, ptx.Imm(sl-1))
	}
	for i := 0; i < 32/sl; i++ {
		cc := k.Add(ptx.U32, fz.slice, ptx.Imm(i*sl)) // column in the CTA
		at := k.Mad(ptx.U32, k.Mad(ptx.U32, lc, ptx.Imm(pitch), cc), ptx.Imm(4), sm)
		v := gen.LdRaw(k, ptx.Shared, dtype.F32, 1, ptx.At(at, 0), laneOK)[0]
		for off := 16; off >= 1; off /= 2 {
			v = k.Add(ptx.F32, v, k.BitsToF32(k.ShflSync("bfly", v, ptx.Imm(off), ptx.Imm(31), 0xffffffff)))
		}
		colr := k.Add(ptx.U32, fz.col0, cc)
		ok := lane0
		if fz.c%32 != 0 {
			ok = k.And(ptx.Pred, lane0, k.Setp("lt", ptx.U32, colr, ptx.Imm(fz.c)))
		}
		fz.store(colr, v, ok)
	}
}
