package xent

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// emitGrad is the gradient kernel: CTA c (counted from the last with
// reverse) takes part c mod split of row c/split, merges the row's split
// partials in order (every thread alike), and writes
// dlogits = p·g + coef with p = 2^(z·log₂e − lseL), lseL = mL + lg₂ s,
// g = dloss/n_valid (0 for an ignored row) and coef = −g·ε/v, less
// g·(1−ε) at the label. The part-0 CTA's thread 0 writes the row's lse
// and loss.
func emitGrad(k *ptx.Func, g geom) {
	k.ReqNTid(g.block)
	logits, labels, dloss, nValid := gen.Param(k, "logits"), gen.Param(k, "labels"), gen.Param(k, "dloss"), gen.Param(k, "n_valid")
	partials, dlogits, lse, loss := gen.Param(k, "partials"), gen.Param(k, "dlogits"), gen.Param(k, "lse"), gen.Param(k, "loss")
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	if g.reverse {
		cta = k.Sub(ptx.U32, k.Sub(ptx.U32, k.Mov(ptx.U32, ptx.NCtaidX), cta), ptx.Imm(1))
	}
	w := newWalk(k, g, cta)
	st := rowStat(k, g, partials, w.row)
	lseL := k.Add(ptx.F32, st.mL, k.Lg2Approx(st.s))
	lab := k.Ld(ptx.Global, ptx.U32, 1, ptx.At(k.Add(ptx.U64, labels, k.MulWide(ptx.U32, w.row, ptx.Imm(4))), 0), gen.LdNC)[0]
	valid := k.Setp("ne", ptx.U32, lab, ptx.Imm(ignoreBits))
	scale := k.Div(ptx.F32, gen.LdF32(k, ptx.Global, ptx.At(dloss, 0), 1, ptx.Reg{}, gen.LdNC)[0],
		gen.LdF32(k, ptx.Global, ptx.At(nValid, 0), 1, ptx.Reg{}, gen.LdNC)[0])
	gs := k.Selp(ptx.F32, scale, ptx.F32Imm(0), valid)
	first := k.And(ptx.Pred, k.Setp("eq", ptx.U32, w.part, ptx.Imm(0)), k.Setp("eq", ptx.U32, w.tid, ptx.Imm(0)))
	k.If(first, func() { rowOut(k, g, logits, lse, loss, w.row, lab, valid, st, lseL) })
	c := newCoefs(k, g, gs, lab)
	neg := k.Neg(ptx.F32, lseL)
	w.each(func(vi, off ptx.Reg, ok []ptx.Reg) {
		at := k.Add(ptx.U64, dlogits, off)
		for q, v := range w.load(logits, off, ok) {
			hit := k.Setp("eq", ptx.U32, w.plus(vi, q), c.labVec)
			out := make([]ptx.Reg, len(v))
			for e, x := range v {
				p := k.Ex2Approx(k.Fma(ptx.F32, x, log2e, neg))
				out[e] = k.Fma(ptx.F32, p, gs, k.Selp(ptx.F32, c.hit[e], c.miss, hit))
			}
			var guard ptx.Reg
			if ok != nil {
				guard = ok[q]
			}
			gen.StVals(k, g.dt, ptx.At(at, int64(q*g.block*g.vb)), out, guard)
		}
	})
}

// ignoreBits is IgnoreIndex as a u32 reads the labels' i32.
const ignoreBits = 1<<32 + IgnoreIndex

// rowStat merges the split partials of row row, in order.
func rowStat(k *ptx.Func, g geom, partials, row ptx.Reg) stat {
	base := k.Add(ptx.U64, partials, k.MulWide(ptx.U32, row, ptx.Imm(g.split*4*statWords)))
	var st stat
	for i := 0; i < g.split; i++ {
		v := gen.LdF32(k, ptx.Global, ptx.At(base, int64(i*4*statWords)), statWords, ptx.Reg{})
		if i == 0 {
			st = stat{v[0], v[1], v[2]}
			continue
		}
		st = merge(k, st, stat{v[0], v[1], v[2]}, g.eps > 0)
	}
	return st
}

// rowOut writes row row's lse (lseL·ln 2) and loss: lse − (1−ε)·z[label]
// − ε/v·Σz, 0 for an ignored row. A label outside [0, v) reads nothing.
func rowOut(k *ptx.Func, g geom, logits, lse, loss, row, lab, valid ptx.Reg, st stat, lseL ptx.Reg) {
	l := k.Mul(ptx.F32, lseL, ln2)
	k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, lse, k.MulWide(ptx.U32, row, ptx.Imm(4))), 0), []ptx.Reg{l})
	inRow := k.Setp("lt", ptx.U32, lab, ptx.Imm(g.v))
	at := k.Add(ptx.U64, logits, k.Add(ptx.U64, k.MulWide(ptx.U32, row, ptx.Imm(g.v*g.dt.Size())), k.MulWide(ptx.U32, lab, ptx.Imm(g.dt.Size()))))
	zl := gen.LdVals(k, ptx.Global, g.dt, 1, ptx.At(at, 0), inRow)[0]
	v := k.Fma(ptx.F32, zl, gen.F32Imm(-(1 - g.eps)), l)
	if g.eps > 0 {
		v = k.Fma(ptx.F32, st.z, gen.F32Imm(-g.eps/float64(g.v)), v)
	}
	v = k.Selp(ptx.F32, v, ptx.F32Imm(0), valid)
	k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, loss, k.MulWide(ptx.U32, row, ptx.Imm(4))), 0), []ptx.Reg{v})
}

// coefs are a thread's additive terms of the gradient: miss = −g·ε/v,
// hit[e] the term of element e of the vector holding the label
// (miss − g·(1−ε) at the label's lane, miss elsewhere), and labVec that
// vector's index (u32: ignore_index matches none).
type coefs struct {
	miss, labVec ptx.Reg
	hit          []ptx.Reg
}

func newCoefs(k *ptx.Func, g geom, gs, lab ptx.Reg) coefs {
	c := coefs{miss: k.Mul(ptx.F32, gs, gen.F32Imm(-g.eps/float64(g.v))), labVec: lab}
	onLabel := k.Fma(ptx.F32, gs, gen.F32Imm(-(1 - g.eps)), c.miss)
	if g.vec == 1 {
		c.hit = []ptx.Reg{onLabel}
		return c
	}
	c.labVec = k.Shr(ptx.U32, lab, ptx.Imm(gen.Log2(g.vec)))
	lane := k.And(ptx.U32, lab, ptx.Imm(g.vec-1))
	for e := 0; e < g.vec; e++ {
		c.hit = append(c.hit, k.Selp(ptx.F32, onLabel, c.miss, k.Setp("eq", ptx.U32, lane, ptx.Imm(e))))
	}
	return c
}
