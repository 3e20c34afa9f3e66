package linxent

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// finish is the last kernel: CTA r turns row r's statistics into lse =
// (mL + log₂ s)·ln 2 and loss = lse − z[label] (0 on an ignored row),
// and the accumulator into dx = g·(acc/s − w[label]) with g =
// dloss/n_valid (0 on an ignored row; a label at or past v reads no row
// of w).
type finish struct {
	dt       dtype.DType
	h, v     int
	labBytes int
}

func (f finish) entry() string { return fmt.Sprintf("%s_finish_%v", prefix, f.dt) }

func (f finish) emit(k *ptx.Func) {
	k.ReqNTid(finishBlock)
	acc, w, labels, stats := gen.Param(k, "acc"), gen.Param(k, "w"), gen.Param(k, "labels"), gen.Param(k, "stats")
	dloss, nValid := gen.Param(k, "dloss"), gen.Param(k, "n_valid")
	dx, lse, loss := gen.Param(k, "dx"), gen.Param(k, "lse"), gen.Param(k, "loss")
	row := k.Mov(ptx.U32, ptx.CtaidX)
	tid := k.Mov(ptx.U32, ptx.TidX)
	st := gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, stats, k.MulWide(ptx.U32, row, ptx.Imm(4*statWords))), 0), 4, ptx.Reg{})
	lab := k.Ld(ptx.Global, ptx.U32, 1, ptx.At(k.Add(ptx.U64, labels, k.MulWide(ptx.U32, row, ptx.Imm(f.labBytes))), 0), gen.LdNC)[0]
	valid := k.Setp("ne", ptx.U32, lab, ptx.Imm(IgnoreIndex))
	inV := k.Setp("lt", ptx.U32, lab, ptx.Imm(f.v))
	l := k.Mul(ptx.F32, k.Add(ptx.F32, st[0], k.Lg2Approx(st[1])), ln2)
	k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
		rowAt := func(buf ptx.Reg) ptx.Addr { return ptx.At(k.Add(ptx.U64, buf, k.MulWide(ptx.U32, row, ptx.Imm(4))), 0) }
		k.St(ptx.Global, ptx.F32, rowAt(lse), []ptx.Reg{l})
		k.St(ptx.Global, ptx.F32, rowAt(loss), []ptx.Reg{k.Selp(ptx.F32, k.Sub(ptx.F32, l, st[2]), ptx.F32Imm(0), valid)})
	})
	g := k.Div(ptx.F32, gen.LdF32(k, ptx.Global, ptx.At(dloss, 0), 1, ptx.Reg{})[0], gen.LdF32(k, ptx.Global, ptx.At(nValid, 0), 1, ptx.Reg{})[0])
	g = k.Selp(ptx.F32, g, ptx.F32Imm(0), valid)
	a := k.Div(ptx.F32, g, st[1])
	negG := k.Neg(ptx.F32, g)
	accR := k.Add(ptx.U64, acc, k.MulWide(ptx.U32, row, ptx.Imm(4*f.h)))
	dxR := k.Add(ptx.U64, dx, k.MulWide(ptx.U32, row, ptx.Imm(f.h*f.dt.Size())))
	wR := k.Add(ptx.U64, w, k.MulWide(ptx.U32, k.Selp(ptx.U32, lab, ptx.Imm(0), inV), ptx.Imm(f.h*f.dt.Size())))
	vb := 4 * f.dt.Size()
	k.For(ptx.U32, tid, ptx.Imm(f.h/4), ptx.Imm(finishBlock), func(c4 ptx.Reg) {
		av := gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, accR, k.MulWide(ptx.U32, c4, ptx.Imm(16))), 0), 4, ptx.Reg{})
		wv := gen.LdVals(k, ptx.Global, f.dt, 4, ptx.At(k.Add(ptx.U64, wR, k.MulWide(ptx.U32, c4, ptx.Imm(vb))), 0), inV, gen.LdNC)
		out := make([]ptx.Reg, 4)
		for i := range out {
			out[i] = k.Fma(ptx.F32, av[i], a, k.Mul(ptx.F32, negG, wv[i]))
		}
		gen.StVals(k, f.dt, ptx.At(k.Add(ptx.U64, dxR, k.MulWide(ptx.U32, c4, ptx.Imm(vb))), 0), out, ptx.Reg{})
	})
}
