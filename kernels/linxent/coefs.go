package linxent

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// terms are the per-row terms of the loss: label smoothing ε, z-loss,
// the labels' bytes and the vocabulary.
type terms struct {
	eps      float64
	zloss    bool
	labBytes int
	v        int
}

func termsOf(s Shape) terms {
	return terms{eps: s.eps(), zloss: s.zloss(), labBytes: s.labelType().Size(), v: s.V}
}

// rowCoefs are row r's coefficients from its final statistics, for CTA
// r: lseL = mL + log₂ s, lse = lseL·ln 2, g = dloss/n_valid (0 on an
// ignored row), gF = g·(1 + 2λ·lse) (g without z-loss, λ =
// zloss_scale), and the statistics (mL, s, z[label], Σz).
type rowCoefs struct {
	st                []ptx.Reg
	lab, valid        ptx.Reg
	lseL, lse, lambda ptx.Reg
	g, gF             ptx.Reg
}

// loadCoefs loads row's statistics and label and forms its
// coefficients; zscale is the zloss_scale pointer (with z-loss).
func loadCoefs(k *ptx.Func, tm terms, row, stats, labels, dloss, nValid, zscale ptx.Reg) rowCoefs {
	st := gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, stats, k.MulWide(ptx.U32, row, ptx.Imm(4*statWords))), 0), 4, ptx.Reg{})
	return coefsOf(k, tm, st, row, labels, dloss, nValid, zscale)
}

// coefsOf forms row's coefficients from its statistics st (mL, s,
// z[label], Σz).
func coefsOf(k *ptx.Func, tm terms, st []ptx.Reg, row, labels, dloss, nValid, zscale ptx.Reg) rowCoefs {
	c := rowCoefs{st: st}
	c.lab = k.Ld(ptx.Global, ptx.U32, 1, ptx.At(k.Add(ptx.U64, labels, k.MulWide(ptx.U32, row, ptx.Imm(tm.labBytes))), 0), gen.LdNC)[0]
	c.valid = k.Setp("ne", ptx.U32, c.lab, ptx.Imm(IgnoreIndex))
	c.lseL = k.Add(ptx.F32, c.st[0], k.Lg2Approx(c.st[1]))
	c.lse = k.Mul(ptx.F32, c.lseL, ln2)
	g := k.Div(ptx.F32, gen.LdF32(k, ptx.Global, ptx.At(dloss, 0), 1, ptx.Reg{})[0], gen.LdF32(k, ptx.Global, ptx.At(nValid, 0), 1, ptx.Reg{})[0])
	c.g = k.Selp(ptx.F32, g, ptx.F32Imm(0), c.valid)
	c.gF = c.g
	if tm.zloss {
		c.lambda = gen.LdF32(k, ptx.Global, ptx.At(zscale, 0), 1, ptx.Reg{})[0]
		f := k.Fma(ptx.F32, k.Add(ptx.F32, c.lambda, c.lambda), c.lse, ptx.F32Imm(1))
		c.gF = k.Mul(ptx.F32, c.g, f)
	}
	return c
}

// loss is the row's loss: lse − (1−ε)·z[label] − ε/v·Σz + λ·lse², 0 on
// an ignored row.
func (c rowCoefs) loss(k *ptx.Func, tm terms) ptx.Reg {
	l := k.Fma(ptx.F32, c.st[2], gen.F32Imm(-(1 - tm.eps)), c.lse)
	if tm.eps > 0 {
		l = k.Fma(ptx.F32, c.st[3], gen.F32Imm(-tm.eps/float64(tm.v)), l)
	}
	if tm.zloss {
		l = k.Fma(ptx.F32, k.Mul(ptx.F32, c.lambda, c.lse), c.lse, l)
	}
	return k.Selp(ptx.F32, l, ptx.F32Imm(0), c.valid)
}
