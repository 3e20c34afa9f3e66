package norm

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/kernels/rows"
)

// finalize is the emission state of the kernel that adds the CTAs'
// partial column sums: a CTA takes 32 columns (of the c = na·n) and the
// G partial rows (G the row kernel's CTAs, a launch argument) in S = 32
// slices; slice s adds rows s, s+S, …; a shared-memory transpose lets
// warp w add the slices of columns w, w+S, … with a butterfly.
type finalize struct {
	k                 *ptx.Func
	c, n              int
	outs              []ptx.Reg
	lane, slice, col0 ptx.Reg
}

// finalizeSlices is S, the slices of the partial rows a finalize CTA adds
// at once (its warps).
const finalizeSlices = 32

// emitFinalize writes the finalize kernel. With pdl it starts with
// griddepcontrol.wait: the row kernel's partials are complete after it.
func (f *family) emitFinalize(mod *ptx.Module, entry string, g rows.Geom, pdl bool) kernels.Launch {
	k := mod.Func(entry)
	fz := &finalize{k: k, c: f.ncols() * g.N, n: g.N}
	block := 32 * finalizeSlices
	k.ReqNTid(block)
	if pdl {
		k.GridDepWait()
	}
	part := gen.Param(k, "partials")
	for _, a := range f.colArgs() {
		fz.outs = append(fz.outs, gen.Param(k, a.Buffer))
	}
	ctas := k.LdParam(k.Param("ctas", ptx.U32))
	tid := k.Mov(ptx.U32, ptx.TidX)
	fz.lane = k.And(ptx.U32, tid, ptx.Imm(31))
	fz.slice = k.Shr(ptx.U32, tid, ptx.Imm(5))
	fz.col0 = k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(32))
	fz.transpose(fz.sliceSum(part, k.Add(ptx.U32, fz.col0, fz.lane), ctas))
	args := append([]kernels.Arg{{Buffer: "partials"}}, f.colArgs()...)
	return kernels.Launch{Entry: entry, Grid: configs.Grid(gen.CeilDiv(fz.c, 32), 1, 1), Block: [3]int{block, 1, 1},
		Args: append(args, kernels.Arg{Scalar: g.GridExpr(), Type: configs.U32})}
}

// sliceSum adds this thread's slice of column col's ctas partial rows:
// eight rows at a time, unguarded while all eight exist, then the fewer
// than eight left, guarded.
func (fz *finalize) sliceSum(part, col, ctas ptx.Reg) ptx.Reg {
	k, c := fz.k, fz.c
	const unroll, sl = 8, finalizeSlices
	colc := col
	if c%32 != 0 {
		colc = k.Min(ptx.U32, col, ptx.Imm(c-1))
	}
	colPtr := k.Add(ptx.U64, part, k.MulWide(ptx.U32, colc, ptx.Imm(4)))
	nc := ptx.LdOpts{NC: true}
	// rows adds partial rows r, r+S, …: count of them, those at i ≥ from
	// guarded by r + i·S < ctas.
	rows := func(r ptx.Reg, count, from int) ptx.Reg {
		at := k.Add(ptx.U64, colPtr, k.MulWide(ptx.U32, r, ptx.Imm(c*4)))
		vals := make([]ptx.Reg, count)
		for i := range vals {
			var ok ptx.Reg
			if i >= from {
				ok = k.Setp("lt", ptx.U32, k.Add(ptx.U32, r, ptx.Imm(i*sl)), ctas)
			}
			vals[i] = gen.LdRaw(k, ptx.Global, dtype.F32, 1, ptx.At(at, int64(i*sl*c*4)), ok, nc)[0]
		}
		return gen.SumTree(k, vals)
	}
	// r < fullEnd: rows r … r+(unroll−1)·S all exist.
	span := (unroll - 1) * sl
	fullEnd := k.Sub(ptx.U32, k.Max(ptx.U32, ctas, ptx.Imm(span)), ptx.Imm(span))
	acc := k.Mov(ptx.F32, ptx.F32Imm(0))
	r := k.Mov(ptx.U32, fz.slice)
	k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, r, fullEnd) }, func() {
		k.MovTo(acc, k.Add(ptx.F32, acc, rows(r, unroll, unroll)))
		k.MovTo(r, k.Add(ptx.U32, r, ptx.Imm(unroll*sl)))
	})
	return k.Add(ptx.F32, acc, rows(r, unroll-1, 0))
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
// reads slice l of column w (S is 32, the CTA's columns), and a butterfly
// adds them.
func (fz *finalize) transpose(acc ptx.Reg) {
	k, lane := fz.k, fz.lane
	const pitch = 33
	sm := k.Mov(ptx.U32, k.SharedArray("t", ptx.F32, finalizeSlices*pitch, 0))
	k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, k.Mad(ptx.U32, fz.slice, ptx.Imm(pitch), lane), ptx.Imm(4), sm), 0), []ptx.Reg{acc})
	k.BarSync(0)
	at := k.Mad(ptx.U32, k.Mad(ptx.U32, lane, ptx.Imm(pitch), fz.slice), ptx.Imm(4), sm)
	v := k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(at, 0))[0]
	for off := 16; off >= 1; off /= 2 {
		v = k.Add(ptx.F32, v, k.BitsToF32(k.ShflSync("bfly", v, ptx.Imm(off), ptx.Imm(31), 0xffffffff)))
	}
	colr := k.Add(ptx.U32, fz.col0, fz.slice)
	ok := k.Setp("eq", ptx.U32, lane, ptx.Imm(0))
	if fz.c%32 != 0 {
		ok = k.And(ptx.Pred, ok, k.Setp("lt", ptx.U32, colr, ptx.Imm(fz.c)))
	}
	fz.store(colr, v, ok)
}
