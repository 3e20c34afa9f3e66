package xent

import (
	"slices"

	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// emitOnePass is the one-pass kernel (pass=one): a cluster of split CTAs
// takes a row, CTA rank c its part c, which it reads from global memory
// once, keeping the raw vectors in its dynamic shared memory while it
// absorbs them into its stat. Thread 0 publishes the CTA's stat (and,
// in part 0, z[label]) in shared memory; after a cluster barrier every
// thread merges the split stats in rank order from the cluster's shared
// memory (the two-pass gradient kernel's merge, so the same rounding);
// a second cluster barrier keeps each CTA's stat readable until every
// CTA has read it. Then the gradient of the part is computed from the
// shared copy and written: one read and one write of the logits. The
// thread that writes a gradient element read that logit from global
// memory itself, and z[label] is read before the first barrier, so the
// gradient may be written over the logits.
func emitOnePass(k *ptx.Func, g geom) {
	declareBlock(k, g)
	gp := declareGrad(k, g, false)
	logits, labels := gp.logits, gp.labels
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	hold := k.Mov(ptx.U32, k.DynamicShared("hold", 16))
	pub := k.Mov(ptx.U32, k.SharedArray("stat", ptx.F32, statWords, 16))
	var ld []ptx.LdOpts
	if !g.alias {
		ld = []ptx.LdOpts{gen.LdNC}
	}
	w := newWalk(k, g, cta)
	begin := k.Mul(ptx.U32, w.part, ptx.Imm(g.cv))
	// held is the shared address of vector vi of the row (the part's
	// copy starts at the part's first vector).
	held := func(vi ptx.Reg) ptx.Reg {
		return k.Mad(ptx.U32, k.Sub(ptx.U32, vi, begin), ptx.Imm(g.vb), hold)
	}
	smooth := g.eps > 0
	st := newStat(k)
	w.each(func(vi, off ptx.Reg, ok []ptx.Reg) {
		raw := w.loadRaw(logits, off, ok, ld...)
		for q, r := range raw {
			k.St(ptx.Shared, r[0].Type(), ptx.At(held(w.plus(vi, q)), 0), r)
			if guard := guardOf(ok, q); guard.Valid() {
				k.Guard(guard, false)
			}
		}
		st.absorbBatch(k, w.widen(raw), ok, smooth)
	})
	st = ctaMerge(k, g, w.tid, shflMerge(k, st, 32, smooth), smooth)
	r := rowEnd{row: w.row, lab: loadLabel(k, g, labels, w.row)}
	t0 := k.Setp("eq", ptx.U32, w.tid, ptx.Imm(0))
	first := k.And(ptx.Pred, t0, k.Setp("eq", ptx.U32, w.part, ptx.Imm(0)))
	zl := labelLogit(k, g, logits, w.row, r.lab, first, ld...)
	k.St(ptx.Shared, ptx.F32, ptx.At(pub, 0), []ptx.Reg{st.mL, st.s, st.z, zl})
	k.Guard(t0, false)
	if !g.unsynced {
		rowSync(k, g)
	}
	st = clusterStat(k, g, pub, &r)
	rowSync(k, g)
	gr := finishRow(k, g, w, st, &r, gp.row, nil)
	out := gp.dlogits
	w = newWalk(k, g, cta)
	w.each(func(vi, off ptx.Reg, ok []ptx.Reg) {
		raw := make([][]ptx.Reg, g.vpt)
		for q := range raw {
			raw[q] = gen.LdRaw(k, ptx.Shared, g.dt, g.vec, ptx.At(held(w.plus(vi, q)), 0), guardOf(ok, q))
		}
		gr.store(w, out, vi, off, ok, w.widen(raw))
	})
}

// rowSync is the barrier of a row's CTAs: the cluster's, or with split 1
// (a CTA holds its row; no cluster) the CTA's.
func rowSync(k *ptx.Func, g geom) {
	if g.split == 1 {
		k.BarSync(0)
		return
	}
	k.ClusterArrive(true)
	k.ClusterWait(true)
}

// clusterStat merges the stats the cluster's split CTAs published at pub
// (mergeParts: as the two-pass kernel merges its partials).
func clusterStat(k *ptx.Func, g geom, pub ptx.Reg, r *rowEnd) stat {
	return mergeParts(k, g, r, func(i int) []ptx.Reg {
		sp, at := ptx.Shared, pub
		if g.split > 1 {
			sp, at = ptx.SharedCluster, k.Mapa(pub, ptx.Imm(int64(i)))
		}
		// A copy: the ld keeps the slice it returns as its operand list.
		return slices.Clone(k.Ld(sp, ptx.F32, statWords, ptx.At(at, 0)))
	})
}
