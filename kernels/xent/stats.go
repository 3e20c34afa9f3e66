package xent

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// stat is a running log-sum-exp in log₂ units: the maximum seen times
// log₂e, as rounded to f32 (mL), the sum of 2^(z·log₂e − mL) (s, exact
// arguments by fma) and, with label smoothing, the sum of z. Keeping mL
// rounded makes a rescale by an unchanged maximum exactly 1.
type stat struct{ mL, s, z ptx.Reg }

// newStat is the stat of nothing seen.
func newStat(k *ptx.Func) stat {
	return stat{k.Mov(ptx.F32, noMax), k.Mov(ptx.F32, ptx.F32Imm(0)), k.Mov(ptx.F32, ptx.F32Imm(0))}
}

// absorb adds a batch of values to st in place: xm for the maximum and
// the exponentials (−∞ where guarded off), xs for Σz (0 there).
func (st stat) absorb(k *ptx.Func, xm, xs []ptx.Reg, smooth bool) {
	mL := k.Max(ptx.F32, st.mL, k.Mul(ptx.F32, maxTree(k, xm), log2e))
	neg := k.Neg(ptx.F32, mL)
	terms := make([]ptx.Reg, len(xm))
	for i, x := range xm {
		terms[i] = k.Ex2ApproxFtz(k.Fma(ptx.F32, x, log2e, neg))
	}
	scale := k.Ex2ApproxFtz(k.Sub(ptx.F32, st.mL, mL))
	k.MovTo(st.s, k.Fma(ptx.F32, st.s, scale, gen.SumTree(k, terms)))
	k.MovTo(st.mL, mL)
	if smooth {
		k.MovTo(st.z, k.Add(ptx.F32, st.z, gen.SumTree(k, xs)))
	}
}

// absorbBatch absorbs a batch's values (vals[q], vector q guarded by
// ok[q]; ok nil: all valid): guarded-off values count −∞ for the maximum
// and 0 for Σz (a guarded load reads zeros).
func (st stat) absorbBatch(k *ptx.Func, vals [][]ptx.Reg, ok []ptx.Reg, smooth bool) {
	var xm, xs []ptx.Reg
	for q, v := range vals {
		for _, x := range v {
			xs = append(xs, x)
			if ok != nil {
				x = k.Selp(ptx.F32, x, negInf, ok[q])
			}
			xm = append(xm, x)
		}
	}
	st.absorb(k, xm, xs, smooth)
}

// merge returns the stat of a and b together; it is symmetric, so both
// lanes of a butterfly agree.
func merge(k *ptx.Func, a, b stat, smooth bool) stat {
	mL := k.Max(ptx.F32, a.mL, b.mL)
	sa := k.Mul(ptx.F32, a.s, k.Ex2ApproxFtz(k.Sub(ptx.F32, a.mL, mL)))
	sb := k.Mul(ptx.F32, b.s, k.Ex2ApproxFtz(k.Sub(ptx.F32, b.mL, mL)))
	z := a.z
	if smooth {
		z = k.Add(ptx.F32, a.z, b.z)
	}
	return stat{mL, k.Add(ptx.F32, sa, sb), z}
}

// shflMerge merges st with the stat of lanes [lane ^ off] for off = n/2
// … 1: lane 0 ends with the stat of lanes 0..n−1.
func shflMerge(k *ptx.Func, st stat, n int, smooth bool) stat {
	for off := n / 2; off >= 1; off /= 2 {
		bfly := func(r ptx.Reg) ptx.Reg {
			return k.BitsToF32(k.ShflSync("bfly", r, ptx.Imm(off), ptx.Imm(31), 0xffffffff))
		}
		o := stat{bfly(st.mL), bfly(st.s), st.z}
		if smooth {
			o.z = bfly(st.z)
		}
		st = merge(k, st, o, smooth)
	}
	return st
}

// emitStats is the statistics kernel: CTA c takes part c mod split of
// row c/split and stores the stat of its vectors, merged over the CTA,
// as partial c (statWords f32 words); part 0 also stores z[row, label].
// It writes no logit, so what it reads is the caller's logits even when
// the gradient is to be written over them.
func emitStats(k *ptx.Func, g geom) {
	declareBlock(k, g)
	logits, labels, partials := gen.Param(k, "logits"), gen.Param(k, "labels"), gen.Param(k, "partials")
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	w := newWalk(k, g, cta)
	smooth := g.eps > 0
	st := newStat(k)
	w.each(func(_, off ptx.Reg, ok []ptx.Reg) {
		st.absorbBatch(k, w.load(logits, off, ok, gen.LdNC), ok, smooth)
	})
	st = ctaMerge(k, g, w.tid, shflMerge(k, st, 32, smooth), smooth)
	t0 := k.Setp("eq", ptx.U32, w.tid, ptx.Imm(0))
	first := k.And(ptx.Pred, t0, k.Setp("eq", ptx.U32, w.part, ptx.Imm(0)))
	zl := labelLogit(k, g, logits, w.row, loadLabel(k, g, labels, w.row), first, gen.LdNC)
	at := k.Add(ptx.U64, partials, k.MulWide(ptx.U32, cta, ptx.Imm(4*statWords)))
	k.St(ptx.Global, ptx.F32, ptx.At(at, 0), []ptx.Reg{st.mL, st.s, st.z, zl})
	k.Guard(t0, false)
}

// ctaMerge merges the warps' stats (each in its lane 0) into thread 0's:
// lane 0 of each warp writes a shared slot, one barrier, and warp 0
// merges the slots over a butterfly.
func ctaMerge(k *ptx.Func, g geom, tid ptx.Reg, st stat, smooth bool) stat {
	nw := g.block / 32
	slots := k.Mov(ptx.U32, k.SharedArray("warps", ptx.F32, nw*statWords, 16))
	lane := k.And(ptx.U32, tid, ptx.Imm(31))
	warp := k.Shr(ptx.U32, tid, ptx.Imm(5))
	slot, lane0 := k.Mad(ptx.U32, warp, ptx.Imm(4*statWords), slots), k.Setp("eq", ptx.U32, lane, ptx.Imm(0))
	k.St(ptx.Shared, ptx.F32, ptx.At(slot, 0), []ptx.Reg{st.mL, st.s, st.z, st.z})
	k.Guard(lane0, false)
	k.BarSync(0)
	out := newStat(k)
	k.If(k.Setp("eq", ptx.U32, warp, ptx.Imm(0)), func() {
		ok := k.Setp("lt", ptx.U32, lane, ptx.Imm(nw))
		v := gen.LdF32(k, ptx.Shared, ptx.At(k.Mad(ptx.U32, lane, ptx.Imm(4*statWords), slots), 0), statWords, ok)
		m := shflMerge(k, stat{v[0], v[1], v[2]}, nw, smooth)
		k.MovTo(out.mL, m.mL)
		k.MovTo(out.s, m.s)
		k.MovTo(out.z, m.z)
	})
	return out
}

// maxTree is the maximum of v, taken pairwise.
func maxTree(k *ptx.Func, v []ptx.Reg) ptx.Reg {
	return gen.Tree(v, func(a, b ptx.Reg) ptx.Reg { return k.Max(ptx.F32, a, b) })
}
