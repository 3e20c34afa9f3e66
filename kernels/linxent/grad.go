package linxent

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// gradKernel is the dW pass's kernel: CTA r writes row r of the chunk's
// gradient of the logits,
//
//	G = gF·2^(z·log₂e − lseL) − g·ε/v − g·(1−ε)·[c = label − c0]
//
// in the dtype (0 in the pad), from the row's final statistics
// (rowCoefs).
type gradKernel struct {
	dt       dtype.DType
	w, ld    int
	block    int
	tm       terms
	noOneHot bool // planted bug: no −g·(1−ε) at the label
}

func (gk gradKernel) entry() string { return fmt.Sprintf("%s_grad_w%d_%v", prefix, gk.w, gk.dt) }

func (gk gradKernel) emit(k *ptx.Func) {
	k.ReqNTid(gk.block)
	z, pp, labels, stats := gen.Param(k, "z"), gen.Param(k, "p"), gen.Param(k, "labels"), gen.Param(k, "stats")
	dloss, nValid := gen.Param(k, "dloss"), gen.Param(k, "n_valid")
	var zscale ptx.Reg
	if gk.tm.zloss {
		zscale = gen.Param(k, "zloss_scale")
	}
	c0 := k.LdParam(k.Param("c0", ptx.U32))
	row := loadRow(k, gk.dt, gk.w, gk.ld, gk.block, z, pp, false)
	c := loadCoefs(k, gk.tm, row.row, stats, labels, dloss, nValid, zscale)
	negLse := k.Neg(ptx.F32, c.lseL)
	rel := k.Sub(ptx.U32, c.lab, c0) // an ignored or earlier chunk's label wraps past w
	base := k.Mul(ptx.F32, c.g, gen.F32Imm(-gk.tm.eps/float64(gk.tm.v)))
	hot := k.Selp(ptx.F32, k.Mul(ptx.F32, c.g, gen.F32Imm(-(1-gk.tm.eps))), ptx.F32Imm(0), k.Setp("lt", ptx.U32, rel, ptx.Imm(gk.w)))
	if gk.noOneHot {
		hot = k.Mov(ptx.F32, ptx.F32Imm(0))
	}
	row.store(func(x, col ptx.Reg) ptx.Reg {
		p := k.Ex2ApproxFtz(k.Fma(ptx.F32, x, log2e, negLse))
		in := k.Setp("lt", ptx.U32, col, ptx.Imm(gk.w)) // the pad stays 0
		off := k.Selp(ptx.F32, k.Add(ptx.F32, base, k.Selp(ptx.F32, hot, ptx.F32Imm(0), k.Setp("eq", ptx.U32, col, rel))), ptx.F32Imm(0), in)
		return k.Fma(ptx.F32, c.gF, p, off)
	})
}
