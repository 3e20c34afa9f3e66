package gemm

import (
	"slices"

	"github.com/gradtune/gradtune/kernels/ptx"
)

// Split-K summed in distributed shared memory (reduce=dsmem, wgmma path).
// The S = splitk CTAs of a tile are one cluster (consecutive CTA indices,
// split = rank). After its k-loop each CTA:
//
//  1. waits at named barrier dsmemBar until every consumer warpgroup's
//     wgmma has retired (the partial overwrites the ring);
//  2. stores its f32 partial at the start of the ring in the register
//     layout: consumer cw's group i of four accumulators of thread l at
//     cw·rowsPC·BN·4 + (i·128 + l)·16 (st.shared.v4, no bank conflicts);
//  3. meets the cluster at barrier.cluster.arrive.release +
//     wait.acquire (every thread of the CTA: the producer warpgroup too);
//  4. takes the groups i with i mod S = rank: each consumer thread adds
//     group i of the S partials in rank order (ld.shared::cluster.v4 from
//     each CTA through mapa: the sum does not depend on timing), rounds
//     it to the output dtype and stores it to C as the direct epilogue
//     does;
//  5. meets the cluster again before it exits (its partial is read by
//     the others until then).
//
// No workspace, no second launch and no state between runs; C is written
// once. Shared memory per SM bounds the tile (BM·BN·4 within the ring).

// dsmemBar is the named barrier of all consumer warpgroups (1..3 are the
// consumers' own).
const dsmemBar = 5

// dsmemTile is what a consumer keeps from its tile for the reduction
// after the cluster barrier.
type dsmemTile struct {
	t         tile
	cw, l     ptx.Reg
	c, groups ptx.Reg // the output pointer; u32: the thread's group 0 in this CTA's partial
}

// dsmemPublish is steps 1 and 2 for consumer cw: the partial into the
// ring's start; it records what step 4 needs.
func (wk *wgKernel) dsmemPublish(base, c ptx.Reg, t tile, cw, l ptx.Reg, acc [][]ptx.Reg) {
	k, p := wk.k, wk.p
	k.Comment("reduce=dsmem: every consumer's wgmma is done with the ring; store the partial over it")
	k.Raw(90, 80, "bar.sync", ptx.Imm(dsmemBar), ptx.Imm(128*p.Consumers))
	words := k.Mad(ptx.U32, cw, ptx.Imm(wk.rowsPC*p.BN), k.Shl(ptx.U32, l, ptx.Imm(2)))
	g0 := k.Mad(ptx.U32, words, ptx.Imm(4), base)
	groups(acc, func(off int64, v []ptx.Reg) { k.St(ptx.Shared, ptx.F32, ptx.At(g0, off), v) })
	wk.dsm = &dsmemTile{t: t, cw: cw, l: l, c: c, groups: g0}
}

// dsmemSum is step 4, run by the consumer threads after the cluster
// barrier: the rank's share of the groups, summed over the cluster.
func (wk *wgKernel) dsmemSum() {
	k, p, d := wk.k, wk.p, wk.dsm
	k.Comment("reduce=dsmem: add this rank's groups over the cluster's partials, in rank order")
	rank := k.Mov(ptx.U32, ptx.ClusterCtaRank)
	ds := wk.newDirectStore(d.c, wk.g.od, d.t, rowsExt(wk.k, wk.g, wk.m), d.cw, d.l)
	ds.rowsOf(wk.mBlocks)
	remote := make([]ptx.Reg, p.SplitK)
	for r := range remote {
		remote[r] = k.Mapa(d.groups, ptx.Imm(r))
	}
	per := p.BN / 8
	for i := range wk.mBlocks * per {
		mb, j := i/per, i%per
		k.If(k.Setp("eq", ptx.U32, rank, ptx.Imm(i%p.SplitK)), func() {
			// A copy: the ld keeps the slice it returns as its operand list.
			sum := slices.Clone(k.Ld(ptx.SharedCluster, ptx.F32, 4, ptx.At(remote[0], int64(i*128*16))))
			for r := 1; r < p.SplitK; r++ {
				v := k.Ld(ptx.SharedCluster, ptx.F32, 4, ptx.At(remote[r], int64(i*128*16)))
				for e := range sum {
					sum[e] = k.Add(ptx.F32, sum[e], v[e])
				}
			}
			ds.pair(mb, 0, j, sum[0], sum[1])
			ds.pair(mb, 1, j, sum[2], sum[3])
		})
	}
}

// dsmemSync is the cluster barrier of steps 3 and 5, for every thread.
func (wk *wgKernel) dsmemSync() {
	wk.k.ClusterArrive(true)
	wk.k.ClusterWait(true)
}
