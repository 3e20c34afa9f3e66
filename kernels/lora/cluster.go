package lora

import (
	"github.com/gradtune/gradtune/kernels/ptx"
)

// clusterSum sums a per-chunk partial over the CTAs of a cluster in
// distributed shared memory before it reaches global memory: each CTA
// stores its partial (nq accumulator quads a thread) into one of two
// buffers, and after the cluster's barrier each warp adds, for the quads
// it owns, the cluster's C partials in rank order and sends the sum by
// red.add. Quad q of warp w is owned by rank (q·warps + w) mod C, the
// same in every CTA, so C CTAs issue 1/C of the red.add a CTA alone
// would.
//
// The barrier of chunk i is met late: a CTA arrives after storing chunk
// i's partial, computes chunk i+1, then waits for chunk i's phase and
// sums chunk i while the others may still compute. That wait precedes
// the store of chunk i+1's partial into the buffer chunk i−1's took,
// which every CTA has read before it arrived for chunk i (C is a power of
// two; two buffers), and every arrival follows the wait of the phase
// before, as barrier.cluster requires. finish sums the last chunk and meets the cluster once more,
// so that no CTA exits while another reads its buffer. Every thread of
// every CTA of the cluster calls flush the same number of times, then
// finish.
type clusterSum struct {
	k             *ptx.Func
	c, nq, thread int // cluster size, quads a thread, threads a CTA
	warps         int
	buf           ptx.Reg // this CTA's two buffers (shared, u32)
	own           ptx.Reg // this thread's quad 0 in a buffer: tid·16
	rank, warp    ptx.Reg
	phase         ptx.Reg // flushes so far
	prevCh        ptx.Reg // the chunk of the pending phase
	what          string  // the output the sums go to ("db", "da"), for planted bugs
}

// clusterSumBytes is the shared memory of a clusterSum: two buffers of
// nq quads for each of threads threads.
func clusterSumBytes(nq, threads int) int { return 2 * nq * threads * 16 }

func newClusterSum(k *ptx.Func, what string, c, nq, threads int, buf, tid, warp ptx.Reg) *clusterSum {
	return &clusterSum{k: k, what: what, c: c, nq: nq, thread: threads, warps: threads / 32, buf: buf,
		own:  k.Shl(ptx.U32, tid, ptx.Imm(4)),
		rank: k.Mov(ptx.U32, ptx.ClusterCtaRank), warp: warp,
		phase: k.Mov(ptx.U32, ptx.Imm(0)), prevCh: k.Mov(ptx.U32, ptx.Imm(0))}
}

// at is quad q's address in the buffer of phase p's parity.
func (cs *clusterSum) at(p ptx.Reg, q int) ptx.Reg {
	k := cs.k
	half := k.Mul(ptx.U32, k.And(ptx.U32, p, ptx.Imm(1)), ptx.Imm(cs.nq*cs.thread*16))
	return k.Add(ptx.U32, k.Add(ptx.U32, cs.buf, half), k.Add(ptx.U32, cs.own, ptx.Imm(q*cs.thread*16)))
}

// flush takes chunk ch's partial (nq quads) and sums the pending chunk's
// by red (called with the chunk and a quad index and its cluster sum).
func (cs *clusterSum) flush(quads [][4]ptx.Reg, ch ptx.Reg, red func(ch ptx.Reg, q int, sum [4]ptx.Reg)) {
	k := cs.k
	pending := k.Setp("ne", ptx.U32, cs.phase, ptx.Imm(0))
	early := planted.clusterEarly == cs.what
	if !early {
		k.If(pending, func() { k.ClusterWait(true) })
	}
	for q, v := range quads {
		k.St(ptx.Shared, ptx.F32, ptx.At(cs.at(cs.phase, q), 0), v[:])
	}
	k.If(pending, func() {
		cs.sum(red)
		if early {
			k.ClusterWait(true)
		}
	})
	k.ClusterArrive(true)
	k.MovTo(cs.prevCh, ch)
	k.MovTo(cs.phase, k.Add(ptx.U32, cs.phase, ptx.Imm(1)))
}

// finish sums the last chunk and meets the cluster before the CTA exits.
func (cs *clusterSum) finish(red func(ch ptx.Reg, q int, sum [4]ptx.Reg)) {
	k := cs.k
	k.ClusterWait(true)
	cs.sum(red)
	k.ClusterArrive(true)
	k.ClusterWait(true)
}

// sum adds the pending phase's owned quads over the cluster, rank 0
// first, and hands each sum to red.
func (cs *clusterSum) sum(red func(ch ptx.Reg, q int, sum [4]ptx.Reg)) {
	k := cs.k
	p := k.Sub(ptx.U32, cs.phase, ptx.Imm(1))
	for q := range cs.nq {
		unit := k.Add(ptx.U32, cs.warp, ptx.Imm(q*cs.warps))
		owner := k.And(ptx.U32, unit, ptx.Imm(cs.c-1))
		k.If(k.Setp("eq", ptx.U32, owner, cs.rank), func() {
			addr := cs.at(p, q)
			var s [4]ptx.Reg
			n := cs.c
			if planted.clusterDrop == cs.what {
				n--
			}
			for r := range n {
				v := k.Ld(ptx.SharedCluster, ptx.F32, 4, ptx.At(k.Mapa(addr, ptx.Imm(int64(r))), 0))
				if r == 0 {
					copy(s[:], v)
					continue
				}
				for j := range s {
					s[j] = k.Add(ptx.F32, s[j], v[j])
				}
			}
			red(cs.prevCh, q, s)
		})
	}
}
