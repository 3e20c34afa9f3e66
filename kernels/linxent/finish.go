package linxent

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
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
	// planted bugs: no −g·ε/v·Σ_c w_c; g for gF
	noWSum, noZFactor bool
}

func (f finish) entry() string { return fmt.Sprintf("%s_finish_%v", prefix, f.dt) }

func (f finish) emit(k *ptx.Func) {
	k.ReqNTid(finishBlock)
	acc, w, labels, stats := gen.Param(k, "acc"), gen.Param(k, "w"), gen.Param(k, "labels"), gen.Param(k, "stats")
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
	c := loadCoefs(k, f.tm, row, stats, labels, dloss, nValid, zscale)
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
