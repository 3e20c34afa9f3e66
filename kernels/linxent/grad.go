package linxent

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// gradKernel is the dW pass's kernel: CTA r writes row r of the chunk's
// gradient of the logits, G = g·2^(z·log₂e − lseL) − g·[c = label − c0]
// in the dtype (0 in the pad), from the row's final statistics (lseL =
// mL + log₂ s) and g = dloss/n_valid (0 on an ignored row).
type gradKernel struct {
	dt       dtype.DType
	w, ld    int
	block    int
	labBytes int
	noOneHot bool // planted bug: no −g at the label
}

func (gk gradKernel) entry() string { return fmt.Sprintf("%s_grad_w%d_%v", prefix, gk.w, gk.dt) }

func (gk gradKernel) emit(k *ptx.Func) {
	k.ReqNTid(gk.block)
	z, pp, labels, stats := gen.Param(k, "z"), gen.Param(k, "p"), gen.Param(k, "labels"), gen.Param(k, "stats")
	dloss, nValid := gen.Param(k, "dloss"), gen.Param(k, "n_valid")
	c0 := k.LdParam(k.Param("c0", ptx.U32))
	c := loadRow(k, gk.dt, gk.w, gk.ld, gk.block, z, pp)
	st := gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, stats, k.MulWide(ptx.U32, c.row, ptx.Imm(4*statWords))), 0), 2, ptx.Reg{})
	negLse := k.Neg(ptx.F32, k.Add(ptx.F32, st[0], k.Lg2Approx(st[1])))
	lab := k.Ld(ptx.Global, ptx.U32, 1, ptx.At(k.Add(ptx.U64, labels, k.MulWide(ptx.U32, c.row, ptx.Imm(gk.labBytes))), 0), gen.LdNC)[0]
	g := k.Div(ptx.F32, gen.LdF32(k, ptx.Global, ptx.At(dloss, 0), 1, ptx.Reg{})[0], gen.LdF32(k, ptx.Global, ptx.At(nValid, 0), 1, ptx.Reg{})[0])
	g = k.Selp(ptx.F32, g, ptx.F32Imm(0), k.Setp("ne", ptx.U32, lab, ptx.Imm(IgnoreIndex)))
	rel := k.Sub(ptx.U32, lab, c0) // an ignored or earlier chunk's label wraps past w
	negG := k.Selp(ptx.F32, k.Neg(ptx.F32, g), ptx.F32Imm(0), k.Setp("lt", ptx.U32, rel, ptx.Imm(gk.w)))
	c.store(func(x, col ptx.Reg) ptx.Reg {
		v := k.Mul(ptx.F32, g, k.Ex2Approx(k.Fma(ptx.F32, x, log2e, negLse)))
		if gk.noOneHot {
			return v
		}
		return k.Add(ptx.F32, v, k.Selp(ptx.F32, negG, ptx.F32Imm(0), k.Setp("eq", ptx.U32, col, rel)))
	})
}
