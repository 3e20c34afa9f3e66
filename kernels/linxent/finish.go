package linxent

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// finish is the last kernel of the online pass: CTA r turns row r's
// statistics into lse and loss (rowCoefs) and the accumulator into
//
//	dx = gF/s·acc − g·(1−ε)·w[label] − g·ε/v·Σ_c w_c
//
// in the dtype (0 on an ignored row; a label at or past v reads no row of
// w); Σ_c w_c comes from the column-sum kernels (label smoothing only).
type finish struct {
	dt dtype.DType
	h  int
	tm terms
	// online, where set, is the epilogue path's row layout: the
	// statistics come from its words (and rec on a repaired row), and
	// the kernel zeroes them
	online *rowStats
	// planted bugs: no −g·ε/v·Σ_c w_c; g for gF
	noWSum, noZFactor bool
}

func (f finish) entry() string {
	if f.online != nil {
		return fmt.Sprintf("%s_finish_online_%v", prefix, f.dt)
	}
	return fmt.Sprintf("%s_finish_%v", prefix, f.dt)
}

// add writes the kernel into m and returns its launch, one CTA a row:
// acc, w, labels, the statistics (stats, or rows and rec on the
// epilogue path), dloss, n_valid, dx, lse, loss, then zloss_scale and
// ws's column sums where the loss has them.
func (f finish) add(m *ptx.Module, ws wsumKernels) kernels.Launch {
	f.emit(m.Func(f.entry()))
	args := []kernels.Arg{{Buffer: "acc"}, {Buffer: "w"}, {Buffer: "labels"}}
	if f.online == nil {
		args = append(args, kernels.Arg{Buffer: "stats"})
	} else {
		args = append(args, kernels.Arg{Buffer: "rows"}, kernels.Arg{Buffer: "rec"})
	}
	args = append(args, kernels.Arg{Buffer: "dloss"}, kernels.Arg{Buffer: "n_valid"}, kernels.Arg{Buffer: "dx"}, kernels.Arg{Buffer: "lse"},
		kernels.Arg{Buffer: "loss"})
	if f.tm.zloss {
		args = append(args, kernels.Arg{Buffer: "zloss_scale"})
	}
	if f.tm.eps > 0 {
		args = append(args, ws.sums())
	}
	return kernels.Launch{Entry: f.entry(), Grid: rowsGrid(), Block: [3]int{finishBlock, 1, 1}, Args: args}
}

func (f finish) emit(k *ptx.Func) {
	k.ReqNTid(finishBlock)
	acc, w, labels := gen.Param(k, "acc"), gen.Param(k, "w"), gen.Param(k, "labels")
	var stats, rows, rec ptx.Reg
	if f.online == nil {
		stats = gen.Param(k, "stats")
	} else {
		rows, rec = gen.Param(k, "rows"), gen.Param(k, "rec")
	}
	dloss, nValid := gen.Param(k, "dloss"), gen.Param(k, "n_valid")
	dx, lse, loss := gen.Param(k, "dx"), gen.Param(k, "lse"), gen.Param(k, "loss")
	var zscale, wsum ptx.Reg
	if f.tm.zloss {
		zscale = gen.Param(k, "zloss_scale")
	}
	if f.tm.eps > 0 {
		wsum = gen.Param(k, "wsum")
	}
	row := k.Mov(ptx.U32, ptx.CtaidX)
	tid := k.Mov(ptx.U32, ptx.TidX)
	var c rowCoefs
	scale := ptx.Reg{} // acc's factor beside gF/s (the epilogue path's)
	if f.online == nil {
		c = loadCoefs(k, f.tm, row, stats, labels, dloss, nValid, zscale)
	} else {
		var st []ptx.Reg
		st, scale = f.onlineStats(k, rows, rec, row, tid)
		c = coefsOf(k, f.tm, st, row, labels, dloss, nValid, zscale)
	}
	inV := k.Setp("lt", ptx.U32, c.lab, ptx.Imm(f.tm.v))
	k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
		rowAt := func(buf ptx.Reg) ptx.Addr { return ptx.At(k.Add(ptx.U64, buf, k.MulWide(ptx.U32, row, ptx.Imm(4))), 0) }
		k.St(ptx.Global, ptx.F32, rowAt(lse), []ptx.Reg{c.lse})
		k.St(ptx.Global, ptx.F32, rowAt(loss), []ptx.Reg{c.loss(k, f.tm)})
	})
	gF := c.gF
	if f.noZFactor {
		gF = c.g
	}
	a := k.Div(ptx.F32, gF, c.st[1])
	if scale.Valid() {
		a = k.Mul(ptx.F32, a, scale)
	}
	cw := k.Mul(ptx.F32, c.g, gen.F32Imm(-(1 - f.tm.eps)))
	cs := k.Mul(ptx.F32, c.g, gen.F32Imm(-f.tm.eps/float64(f.tm.v)))
	accR := k.Add(ptx.U64, acc, k.MulWide(ptx.U32, row, ptx.Imm(4*f.h)))
	dxR := k.Add(ptx.U64, dx, k.MulWide(ptx.U32, row, ptx.Imm(f.h*f.dt.Size())))
	wR := k.Add(ptx.U64, w, k.MulWide(ptx.U32, k.Selp(ptx.U32, c.lab, ptx.Imm(0), inV), ptx.Imm(f.h*f.dt.Size())))
	vb := 4 * f.dt.Size()
	k.For(ptx.U32, tid, ptx.Imm(f.h/4), ptx.Imm(finishBlock), func(c4 ptx.Reg) {
		av := gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, accR, k.MulWide(ptx.U32, c4, ptx.Imm(16))), 0), 4, ptx.Reg{})
		wv := gen.LdVals(k, ptx.Global, f.dt, 4, ptx.At(k.Add(ptx.U64, wR, k.MulWide(ptx.U32, c4, ptx.Imm(vb))), 0), inV, gen.LdNC)
		var sv []ptx.Reg
		if f.tm.eps > 0 && !f.noWSum {
			sv = gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, wsum, k.MulWide(ptx.U32, c4, ptx.Imm(16))), 0), 4, ptx.Reg{})
		}
		out := make([]ptx.Reg, 4)
		for i := range out {
			rest := k.Mul(ptx.F32, cw, wv[i])
			if sv != nil {
				rest = k.Fma(ptx.F32, cs, sv[i], rest)
			}
			out[i] = k.Fma(ptx.F32, av[i], a, rest)
		}
		gen.StVals(k, f.dt, ptx.At(k.Add(ptx.U64, dxR, k.MulWide(ptx.U32, c4, ptx.Imm(vb))), 0), out, ptx.Reg{})
	})
}

// onlineStats is the epilogue path's statistics of row (mL, s,
// z[label], Σz) and acc's factor 2^(ref_{n−1} − mL), after which the
// CTA zeroes the row's words: mL = ref_n, s = Σ_j s_j·2^(ref_j − mL)
// (ref=fixed: every ref_j is ref_0, and the factor 1)
// (thread j takes chunk j), or on a repaired row mL and s from rec and
// the factor 1.
func (f finish) onlineStats(k *ptx.Func, rows, rec, row, tid ptx.Reg) (st []ptx.Reg, scale ptx.Reg) {
	rs := *f.online
	rowAt := rs.rowAt(k, rows, row)
	ld := func(i int) ptx.Reg { return k.Ld(ptx.Global, ptx.B32, 1, ptx.At(rowAt, int64(4*i)))[0] }
	flagged := k.Setp("ne", ptx.B32, ld(rs.flag()), ptx.Imm(0))
	mL := fromOrdered(k, ld(rs.refAt(rs.n)))
	accRef := fromOrdered(k, ld(rs.refAt(rs.n-1)))
	zl := k.BitsToF32(ld(rs.zlab()))
	term, zt := k.Mov(ptx.F32, ptx.F32Imm(0)), k.Mov(ptx.F32, ptx.F32Imm(0))
	k.If(k.Setp("lt", ptx.U32, tid, ptx.Imm(rs.n)), func() {
		base := wordAt(k, rowAt, tid) // chunk tid's words
		w := func(i int) ptx.Reg { return k.Ld(ptx.Global, ptx.B32, 1, ptx.At(base, int64(4*i)))[0] }
		refj := fromOrdered(k, k.Ld(ptx.Global, ptx.B32, 1, rs.refOf(rowAt, base))[0])
		k.MovTo(term, k.Mul(ptx.F32, k.BitsToF32(w(rs.sum(0))), k.Ex2ApproxFtz(k.Sub(ptx.F32, refj, mL))))
		if f.tm.eps > 0 {
			k.MovTo(zt, k.BitsToF32(w(rs.zsum(0))))
		}
	})
	red := newBlockReduce(k, tid, finishBlock)
	s := red.sum(term)
	zs := zt
	if f.tm.eps > 0 {
		zs = red.sum(zt)
	}
	scale = k.Ex2ApproxFtz(k.Sub(ptx.F32, accRef, mL))
	k.If(flagged, func() {
		r := gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, rec, k.MulWide(ptx.U32, row, ptx.Imm(8))), 0), 2, ptx.Reg{})
		k.MovTo(mL, r[0])
		k.MovTo(s, r[1])
		k.MovTo(scale, ptx.F32Imm(1))
	})
	k.Comment("every thread has read the row's words: zero them for the next run")
	k.BarSync(0)
	k.For(ptx.U32, tid, ptx.Imm(rs.stride()), ptx.Imm(finishBlock), func(i ptx.Reg) {
		k.St(ptx.Global, ptx.U32, ptx.At(wordAt(k, rowAt, i), 0), []ptx.Reg{k.Mov(ptx.U32, ptx.Imm(0))})
	})
	return []ptx.Reg{mL, s, zl, zs}, scale
}
