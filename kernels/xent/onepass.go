package xent

import (
	"slices"

	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// emitOnePass is the one-pass kernel (pass=one): a cluster of split CTAs
// takes a row, CTA rank c its part c, which it reads from global memory
// once into its dynamic shared memory while it absorbs it into its stat
// (copy=ld: each thread copies the vectors it loads; copy=in and inout:
// one bulk copy brings the whole part in, and the threads absorb it from
// shared memory; copy=stream: one bulk copy a loop step, each step
// absorbed once its own copy has landed). Thread 0 publishes the CTA's
// stat (and, in part 0, z[label])
// in shared memory; after a cluster barrier every thread merges the
// split stats in rank order from the cluster's shared memory (the
// two-pass gradient kernel's merge, so the same rounding); a second
// cluster barrier keeps each CTA's stat readable until every CTA has
// read it. Then the gradient of the part is computed from the shared
// copy and written by the threads (copy=inout: written over the shared
// copy, which one bulk store writes out): one read and one write of the
// logits. Every logit is read before any gradient is written, and
// z[label] before the first barrier, so the gradient may be written over
// the logits.
func emitOnePass(k *ptx.Func, g geom) {
	declareBlock(k, g)
	gp := declareGrad(k, g, false)
	logits, labels := gp.logits, gp.labels
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	pt := part{hold: k.Mov(ptx.U32, k.DynamicShared("hold", 16))}
	pub := k.Mov(ptx.U32, k.SharedArray("stat", ptx.F32, statWords, 16))
	var ld []ptx.LdOpts
	if !g.alias {
		ld = []ptx.LdOpts{gen.LdNC}
	}
	w := newWalk(k, g, cta)
	pt.begin = w.begin
	if g.bulkIn {
		pt.at = k.Add(ptx.U64, k.MulWide(ptx.U32, w.row, ptx.Imm(g.v*g.dt.Size())), k.MulWide(ptx.U32, pt.begin, ptx.Imm(g.vb)))
		pt.bytes = k.Mul(ptx.U32, w.cnt, ptx.Imm(g.vb))
	}
	smooth := g.eps > 0
	st := newStat(k)
	switch {
	case g.stream:
		landed := streamIn(k, g, w.tid, w.cnt, pt, logits)
		w.eachStep(func(it, vi, off ptx.Reg, ok []ptx.Reg) {
			waitStep(k, g, landed, it)
			st.absorbBatch(k, w.widen(pt.load(k, g, w, vi, ok)), ok, smooth)
		})
	case g.bulkIn:
		bulkIn(k, g, w.tid, pt, logits)
		w.each(func(vi, off ptx.Reg, ok []ptx.Reg) {
			st.absorbBatch(k, w.widen(pt.load(k, g, w, vi, ok)), ok, smooth)
		})
	default:
		w.each(func(vi, off ptx.Reg, ok []ptx.Reg) {
			raw := w.loadRaw(logits, off, ok, ld...)
			for q, r := range raw {
				k.St(ptx.Shared, r[0].Type(), ptx.At(pt.held(k, g, w.plus(vi, q)), 0), r)
				if guard := guardOf(ok, q); guard.Valid() {
					k.Guard(guard, false)
				}
			}
			st.absorbBatch(k, w.widen(raw), ok, smooth)
		})
	}
	st = ctaMerge(k, g, w.tid, shflMerge(k, st, 32, smooth), smooth)
	r := rowEnd{row: w.row, lab: loadLabel(k, g, labels, w.row)}
	t0 := k.Setp("eq", ptx.U32, w.tid, ptx.Imm(0))
	first := k.And(ptx.Pred, t0, k.Setp("eq", ptx.U32, w.part, ptx.Imm(0)))
	zl := labelLogit(k, g, logits, w.row, r.lab, first, ld...)
	k.St(ptx.Shared, ptx.F32, ptx.At(pub, 0), []ptx.Reg{st.mL, st.s, st.z, zl})
	k.Guard(t0, false)
	if g.plant != "unsynced" {
		rowSync(k, g)
	}
	st = clusterStat(k, g, pub, &r)
	rowSync(k, g)
	gr := finishRow(k, g, w, st, &r, gp.row, nil)
	out := gp.dlogits
	w = newWalk(k, g, cta)
	w.each(func(vi, off ptx.Reg, ok []ptx.Reg) {
		raw := pt.load(k, g, w, vi, ok)
		if !g.bulkOut {
			gr.store(w, out, vi, off, ok, w.widen(raw))
			return
		}
		for q, v := range w.widen(raw) {
			gen.StValsIn(k, ptx.Shared, g.dt, ptx.At(pt.held(k, g, w.plus(vi, q)), 0), gr.of(v), guardOf(ok, q))
		}
	})
	if !g.bulkOut {
		gr.fixLabelIn(w, r, out)
		return
	}
	gr.fixLabel(w, r, ptx.Shared, func(_, rel ptx.Reg) ptx.Reg {
		return k.Mad(ptx.U32, rel, ptx.Imm(g.dt.Size()), pt.hold)
	})
	bulkOut(k, g, w.tid, pt, out)
}

// part is a one-pass CTA's part of its row: its first vector in the row
// (begin), its byte offset in the tensor (at), its bytes and the shared
// memory holding it.
type part struct {
	begin, bytes, hold ptx.Reg // U32
	at                 ptx.Reg // U64
}

// held is the shared address of vector vi of the row.
func (pt part) held(k *ptx.Func, g geom, vi ptx.Reg) ptx.Reg {
	return k.Mad(ptx.U32, k.Sub(ptx.U32, vi, pt.begin), ptx.Imm(g.vb), pt.hold)
}

// load loads a batch's raw vectors (at vector vi, guards ok) from the
// part's shared copy.
func (pt part) load(k *ptx.Func, g geom, w *walk, vi ptx.Reg, ok []ptx.Reg) [][]ptx.Reg {
	raw := make([][]ptx.Reg, g.vpt)
	for q := range raw {
		raw[q] = gen.LdRaw(k, ptx.Shared, g.dt, g.vec, ptx.At(pt.held(k, g, w.plus(vi, q)), 0), guardOf(ok, q))
	}
	return raw
}

// bulkIn brings the part into its shared copy: thread 0 initializes an
// mbarrier, and after the CTA's barrier sets it to expect the part's
// bytes and issues one bulk copy (none for an empty part); every thread
// waits for it.
func bulkIn(k *ptx.Func, g geom, tid ptx.Reg, pt part, logits ptx.Reg) {
	bar := ptx.At(k.Mov(ptx.U32, k.SharedArray("full", ptx.B64, 1, 8)), 0)
	t0 := k.Setp("eq", ptx.U32, tid, ptx.Imm(0))
	k.If(t0, func() { k.MbarInit(bar, ptx.Imm(1)) })
	k.BarSync(0)
	k.If(t0, func() {
		k.MbarArriveExpectTx(bar, pt.bytes)
		k.If(k.Setp("ne", ptx.U32, pt.bytes, ptx.Imm(0)), func() {
			k.BulkLoad(ptx.At(pt.hold, 0), ptx.At(k.Add(ptx.U64, logits, pt.at), 0), pt.bytes, bar)
		})
	})
	if g.plant != "nowait" {
		k.MbarWait(bar, ptx.Imm(0))
	}
}

// streamIn brings the part (cnt vectors) into its shared copy one loop
// step (block·vpt vectors) at a time: thread 0 initializes an mbarrier a
// step (bulkCopies: the longest part's whole steps and one more, since
// the static check bounds the remainder step's index cnt/step only by
// cv/step), and after the CTA's barrier sets each to expect its step's
// bytes and issues its bulk copy (none for a step past the part, whose
// barrier completes at once). It returns the address of the barrier of
// step it, on which every thread waits (parity 0) before reading the
// step. Like bulkIn's, the copies are the CTA's own, into its own shared
// memory on its own barriers: the CTA's barrier orders the inits before
// them (fence.mbarrier_init is for a cluster's remote arrivals).
func streamIn(k *ptx.Func, g geom, tid, cnt ptx.Reg, pt part, logits ptx.Reg) func(it ptx.Reg) ptx.Addr {
	step, steps := g.step(), g.bulkCopies()
	bars := k.Mov(ptx.U32, k.SharedArray("landed", ptx.B64, steps, 8))
	bar := func(it ptx.Reg) ptx.Addr { return ptx.At(k.Mad(ptx.U32, it, ptx.Imm(8), bars), 0) }
	t0 := k.Setp("eq", ptx.U32, tid, ptx.Imm(0))
	k.If(t0, func() {
		k.For(ptx.U32, ptx.Imm(0), ptx.Imm(steps), ptx.Imm(1), func(it ptx.Reg) { k.MbarInit(bar(it), ptx.Imm(1)) })
	})
	k.BarSync(0)
	k.If(t0, func() {
		k.For(ptx.U32, ptx.Imm(0), ptx.Imm(steps), ptx.Imm(1), func(it ptx.Reg) {
			first := k.Min(ptx.U32, k.Mul(ptx.U32, it, ptx.Imm(step)), cnt)
			n := k.Min(ptx.U32, k.Sub(ptx.U32, cnt, first), ptx.Imm(step))
			bytes := k.Mul(ptx.U32, n, ptx.Imm(g.vb))
			k.MbarArriveExpectTx(bar(it), bytes)
			k.If(k.Setp("ne", ptx.U32, bytes, ptx.Imm(0)), func() {
				skip := k.Mul(ptx.U32, first, ptx.Imm(g.vb))
				src := k.Add(ptx.U64, k.Add(ptx.U64, logits, pt.at), k.Cvt(ptx.U64, ptx.U32, "", skip))
				k.BulkLoad(ptx.At(k.Add(ptx.U32, pt.hold, skip), 0), ptx.At(src, 0), bytes, bar(it))
			})
		})
	})
	return bar
}

// waitStep waits on step it's copy, or plants g.plant's bug: "nowait",
// no wait; "prevstep", each step after the first waits on the one before.
func waitStep(k *ptx.Func, g geom, landed func(it ptx.Reg) ptx.Addr, it ptx.Reg) {
	switch g.plant {
	case "nowait":
	case "prevstep":
		k.MbarWait(landed(k.Sub(ptx.U32, it, k.Min(ptx.U32, it, ptx.Imm(1)))), ptx.Imm(0))
	default:
		k.MbarWait(landed(it), ptx.Imm(0))
	}
}

// bulkOut writes the part's shared copy, which the threads have
// overwritten with the gradient, to out by one bulk store: each thread
// fences its writes for the async proxy; after the CTA's barrier thread
// 0 issues the store and waits until it has read the copy.
func bulkOut(k *ptx.Func, g geom, tid ptx.Reg, pt part, out ptx.Reg) {
	if g.plant != "nofence" {
		k.FenceProxyAsync()
	}
	k.BarSync(0)
	k.If(k.And(ptx.Pred, k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), k.Setp("ne", ptx.U32, pt.bytes, ptx.Imm(0))), func() {
		k.BulkStore(ptx.At(k.Add(ptx.U64, out, pt.at), 0), ptx.At(pt.hold, 0), pt.bytes)
		k.BulkCommit()
		k.BulkWait(0, true)
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
