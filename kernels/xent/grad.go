package xent

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// emitGrad is the gradient kernel: CTA c (counted from the last with
// reverse) takes part c mod split of row c/split, merges the row's split
// partials in order (every thread alike), and writes
// dlogits = p·gp + coef with p = 2^(z·log₂e − lseL), lseL = mL + lg₂ s,
// g = dloss/n_valid (0 for an ignored row), gp = g·(1 + 2λ·lse) (g
// without z-loss) and coef = −g·ε/v, less g·(1−ε) at the label (which
// fixLabel writes after the loop). The part-0 CTA's thread 0 writes the
// row's lse and loss. The logits it
// reads are its own part's, each element once, by the thread that then
// writes its gradient, after the loads of its batch: so the gradient may
// be written over the logits.
func emitGrad(k *ptx.Func, g geom) {
	declareBlock(k, g)
	gp := declareGrad(k, g, true)
	logits, labels, partials, dlogits := gp.logits, gp.labels, gp.partials, gp.dlogits
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	if g.reverse {
		cta = k.Sub(ptx.U32, k.Sub(ptx.U32, k.Mov(ptx.U32, ptx.NCtaidX), cta), ptx.Imm(1))
	}
	w := newWalk(k, g, cta)
	r := rowEnd{row: w.row, lab: loadLabel(k, g, labels, w.row)}
	st := rowStat(k, g, partials, w.row, &r)
	var late func(first ptx.Reg)
	if g.labelLate {
		late = func(first ptx.Reg) { r.zl = labelLogit(k, g, logits, w.row, r.lab, first) }
	}
	gr := finishRow(k, g, w, st, &r, gp.row, late)
	var ld []ptx.LdOpts
	if !g.alias {
		ld = []ptx.LdOpts{gen.LdNC}
	}
	w.each(func(vi, off ptx.Reg, ok []ptx.Reg) {
		gr.store(w, dlogits, vi, off, ok, w.load(logits, off, ok, ld...))
	})
	gr.fixLabelIn(w, r, dlogits)
}

// labelOffset is the byte offset of z[row, lab] in a [t × v] tensor.
func labelOffset(k *ptx.Func, g geom, row, lab ptx.Reg) ptx.Reg {
	return k.Add(ptx.U64, k.MulWide(ptx.U32, row, ptx.Imm(g.v*g.dt.Size())), k.MulWide(ptx.U32, lab, ptx.Imm(g.dt.Size())))
}

// rowParams are the gradient's per-row inputs and outputs.
type rowParams struct{ dloss, nValid, zscale, lse, loss ptx.Reg }

// gradParams are a gradient kernel's parameters (gradArgs' order).
type gradParams struct {
	logits, labels, partials, dlogits ptx.Reg
	row                               rowParams
}

// declareGrad declares them: the partials only in the two-pass kernel.
func declareGrad(k *ptx.Func, g geom, partials bool) gradParams {
	p := gradParams{logits: gen.Param(k, "logits"), labels: gen.Param(k, "labels")}
	p.row.dloss, p.row.nValid = gen.Param(k, "dloss"), gen.Param(k, "n_valid")
	if g.zloss {
		p.row.zscale = gen.Param(k, "zloss_scale")
	}
	if partials {
		p.partials = gen.Param(k, "partials")
	}
	p.dlogits = gen.Param(k, "dlogits")
	p.row.lse, p.row.loss = gen.Param(k, "lse"), gen.Param(k, "loss")
	return p
}

// gradient is a row's gradient once its statistics are merged:
// dlogits = 2^(z·log₂e − lseL)·gp + miss, and + onLabel instead at the
// label, which fixLabel writes over the loop's value from zl, z[label]
// as the merged statistics hold it.
type gradient struct {
	k                      *ptx.Func
	g                      geom
	neg, gp, miss, onLabel ptx.Reg // −lseL, the p coefficient and the additive terms
	zl                     ptx.Reg
}

// finishRow completes row r from its merged stat st: lse, validity and
// the scales; the part-0 CTA's thread 0 writes lse and loss (after late,
// when set, which tests use to plant a late z[label] read).
func finishRow(k *ptx.Func, g geom, w *walk, st stat, r *rowEnd, p rowParams, late func(first ptx.Reg)) gradient {
	lseL := k.Add(ptx.F32, st.mL, k.Lg2Approx(st.s))
	r.lse = k.Mul(ptx.F32, lseL, ln2)
	r.valid = k.Setp("ne", ptx.U32, r.lab, ptx.Imm(ignoreBits))
	gs, gp := scales(k, g, p.dloss, p.nValid, p.zscale, r)
	first := k.And(ptx.Pred, k.Setp("eq", ptx.U32, w.part, ptx.Imm(0)), k.Setp("eq", ptx.U32, w.tid, ptx.Imm(0)))
	zl := r.zl
	if late != nil {
		late(first)
	}
	k.If(first, func() { rowOut(k, g, p.lse, p.loss, st, *r) })
	miss := k.Mul(ptx.F32, gs, gen.F32Imm(-g.eps/float64(g.v)))
	return gradient{k: k, g: g, neg: k.Neg(ptx.F32, lseL), gp: gp, miss: miss,
		onLabel: k.Fma(ptx.F32, gs, gen.F32Imm(-(1 - g.eps)), miss), zl: zl}
}

// store writes the gradient of a batch's vectors (vals, as loaded at
// vector vi, byte offset off, guards ok) into out.
func (gr gradient) store(w *walk, out, vi, off ptx.Reg, ok []ptx.Reg, vals [][]ptx.Reg) {
	at := gr.k.Add(ptx.U64, out, off)
	for q, v := range vals {
		gen.StVals(gr.k, gr.g.dt, ptx.At(at, int64(q*gr.g.block*gr.g.vb)), gr.of(v), guardOf(ok, q))
	}
}

// of is the gradient of a vector whose values are v, each element taken
// as off the label.
func (gr gradient) of(v []ptx.Reg) []ptx.Reg {
	k := gr.k
	res := make([]ptx.Reg, len(v))
	for e, x := range v {
		p := k.Ex2ApproxFtz(k.Fma(ptx.F32, x, log2e, gr.neg))
		res[e] = k.Fma(ptx.F32, p, gr.gp, gr.miss)
	}
	return res
}

// fixLabel writes the label's element with the label's term, where this
// CTA's part holds the label: by the thread whose loop stored the
// vector holding it (vector rel/vec of the part, at thread (rel/vec) mod
// block), after that store in its own program order, so no barrier
// orders the two; from gr.zl, by the loop's arithmetic, into space sp at
// at(lab, rel), rel the label's element index in the part. An ignored
// row's label, or one outside [0, v), lies in no part.
func (gr gradient) fixLabel(w *walk, r rowEnd, sp ptx.Space, at func(lab, rel ptx.Reg) ptx.Reg) {
	k, g := gr.k, gr.g
	rel := k.Sub(ptx.U32, r.lab, k.Mul(ptx.U32, w.begin, ptx.Imm(g.vec)))
	mine := k.Setp("lt", ptx.U32, rel, k.Mul(ptx.U32, w.cnt, ptx.Imm(g.vec)))
	owner := k.And(ptx.U32, k.Shr(ptx.U32, rel, ptx.Imm(gen.Log2(g.vec))), ptx.Imm(g.block-1))
	mine = k.And(ptx.Pred, mine, k.Setp("eq", ptx.U32, w.tid, owner))
	if g.plant == "nolabel" {
		return
	}
	k.If(mine, func() {
		p := k.Ex2ApproxFtz(k.Fma(ptx.F32, gr.zl, log2e, gr.neg))
		gen.StValsIn(k, sp, g.dt, ptx.At(at(r.lab, rel), 0), []ptx.Reg{k.Fma(ptx.F32, p, gr.gp, gr.onLabel)}, ptx.Reg{})
	})
}

// fixLabelIn is fixLabel for a gradient stored into out (global memory).
func (gr gradient) fixLabelIn(w *walk, r rowEnd, out ptx.Reg) {
	gr.fixLabel(w, r, ptx.Global, func(lab, _ ptx.Reg) ptx.Reg {
		return gr.k.Add(ptx.U64, out, labelOffset(gr.k, gr.g, w.row, lab))
	})
}

// scales returns g = dloss/n_valid (0 for an ignored row) and the p
// coefficient gp = g·(1 + 2λ·lse) (g without z-loss), setting r.lambda.
func scales(k *ptx.Func, g geom, dloss, nValid, zscale ptx.Reg, r *rowEnd) (gs, gp ptx.Reg) {
	ld := func(at ptx.Reg) ptx.Reg { return gen.LdF32(k, ptx.Global, ptx.At(at, 0), 1, ptx.Reg{}, gen.LdNC)[0] }
	gs = k.Selp(ptx.F32, k.Div(ptx.F32, ld(dloss), ld(nValid)), ptx.F32Imm(0), r.valid)
	if !g.zloss {
		return gs, gs
	}
	r.lambda = ld(zscale)
	return gs, k.Mul(ptx.F32, gs, k.Fma(ptx.F32, k.Add(ptx.F32, r.lambda, r.lambda), r.lse, ptx.F32Imm(1)))
}

// ignoreBits is IgnoreIndex as a u32 reads the labels' low word.
const ignoreBits = 1<<32 + IgnoreIndex

// rowEnd is what the part-0 CTA's thread 0 needs to finish its row: the
// row, its label (u32), whether it is valid, z[label] (zl), lse and λ
// (z-loss only).
type rowEnd struct {
	row, lab, valid, zl, lse, lambda ptx.Reg
}

// rowStat merges the split partials of row row, in order, and sets
// r.zl from partial 0.
func rowStat(k *ptx.Func, g geom, partials, row ptx.Reg, r *rowEnd) stat {
	base := k.Add(ptx.U64, partials, k.MulWide(ptx.U32, row, ptx.Imm(g.split*4*statWords)))
	return mergeParts(k, g, r, func(i int) []ptx.Reg {
		return gen.LdF32(k, ptx.Global, ptx.At(base, int64(i*4*statWords)), statWords, ptx.Reg{})
	})
}

// mergeParts merges a row's split partials in order, part i's words
// (mL, s, Σz, zl) as load gives them, and sets r.zl from part 0's.
func mergeParts(k *ptx.Func, g geom, r *rowEnd, load func(i int) []ptx.Reg) stat {
	var st stat
	for i := range g.split {
		v := load(i)
		if i == 0 {
			st, r.zl = stat{v[0], v[1], v[2]}, v[3]
			continue
		}
		st = merge(k, st, stat{v[0], v[1], v[2]}, g.eps > 0)
	}
	return st
}

// rowOut writes row r.row's lse and loss: lse − (1−ε)·z[label] −
// ε/v·Σz + λ·lse², 0 for an ignored row.
func rowOut(k *ptx.Func, g geom, lse, loss ptx.Reg, st stat, r rowEnd) {
	k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, lse, k.MulWide(ptx.U32, r.row, ptx.Imm(4))), 0), []ptx.Reg{r.lse})
	v := k.Fma(ptx.F32, r.zl, gen.F32Imm(-(1 - g.eps)), r.lse)
	if g.eps > 0 {
		v = k.Fma(ptx.F32, st.z, gen.F32Imm(-g.eps/float64(g.v)), v)
	}
	if g.zloss {
		v = k.Fma(ptx.F32, k.Mul(ptx.F32, r.lambda, r.lse), r.lse, v)
	}
	v = k.Selp(ptx.F32, v, ptx.F32Imm(0), r.valid)
	k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, loss, k.MulWide(ptx.U32, r.row, ptx.Imm(4))), 0), []ptx.Reg{v})
}
