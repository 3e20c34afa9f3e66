package gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// A BSource writes the B tile of each slot of the wgmma path in place of
// B's TMA loads: a dX-shaped GEMM whose B has no dense copy in global
// memory (nf4_gemm_bwd's 4-bit weight). The producer warpgroup splits:
//
//   - thread 0 waits for the slot (empty), announces A's bytes on the
//     slot's full barrier and loads A by TMA, then calls Issue, which
//     loads what the source needs into the slot's raw area and completes
//     those bytes on the slot's raw barrier (its own expect_tx);
//   - the fillers, warps 1..3 and, with WrittenB.FillWarpgroups, whole
//     warpgroups after the consumers (96 + 128·FillWarpgroups threads),
//     wait for the raw barrier (for a source without a raw area: for the
//     slot's empty barrier) and call Fill with what Load fetched from
//     global memory during the k-tile before. Fill writes their part of
//     B into the slot in the layout the consumers' descriptors read
//     (MN-major 64-column atoms of [64 k][64 n], element (k, n) at
//     (n/64)·8192 + k·128 + (n%64)·2 with 16-byte chunk q of a 128-byte
//     row at (q ^ k%8)·16); then fence.proxy.async and an arrival on the
//     full barrier, which counts 1 + fillers arrivals.
//
// The raw area is free again once the full barrier completed: the fillers
// read it before they arrive, and thread 0 rewrites it only after the
// consumers released the slot.
//
// An adapter's k-tiles (WrittenB.LoRA) follow each tile's base ones and
// are dense: thread 0 waits for the slot, announces the whole slot's A
// and B bytes on its full barrier and loads both by TMA (dh's box as A,
// the adapter's A as B in the atoms above, zero past the rank), and
// issues no raw data (with a raw area in the slot it arrives on the raw
// barrier without bytes, so that the barrier still completes a phase a
// lap; a raw ring skips the adapter's k-tiles on both sides). The
// fillers wait for the slot's empty barrier (so that their arrivals count
// in this lap's phase), write nothing and arrive on the full barrier as
// for any k-tile (in a cluster filler 0 alone, sending no share: each
// CTA loads the adapter's whole tile), so that its arrival count stays
// the one the barrier was initialized with. Their Load for the first
// adapter k-tile runs with more false, as past a tile's last k-tile.
//
// In a cluster of C CTAs on consecutive tile rows of one tile column
// (cluster=C, multicast=1) the CTAs share B: each writes its Share of the
// k-rows (64/C rows from rank·64/C; its Issue loads only those) and sends
// it to the others. Its fillers fence, meet at named barrier fillBar,
// and filler 0 copies the share into every other CTA's slot
// (cp.async.bulk.shared::cluster, one copy per B atom, completing its
// bytes on that CTA's full barrier) and arrives on its own full barrier
// for all of them: the full barrier counts two arrivals (thread 0's,
// whose expect_tx adds the other CTAs' shares, and filler 0's). The
// consumers release a slot in every CTA of the cluster (its empty barrier
// counts them all), so a CTA writes into another's slot only after that
// CTA's consumers are done with it.
//
// M at run time: the kernel's parameters are A's tensor map (M in its
// dims), the source's (Declare), C (M in its dims, or a pointer), then M
// itself, a u32 named m, last. The kernel derives the tile rows, the
// tile order and C's row bounds from m, so the program is the same PTX
// at every M, launched at M by evaluating its expressions there. A
// BSource sees no M: Issue, Load and Fill get a tile's columns and
// reduction rows, which do not depend on M, and nothing it emits may
// depend on M either (its parameters and Setup included). Where M
// leaves a cluster's last tile row past C (the grid's tile rows are
// whole clusters), that CTA runs the k-loop like any other: its source
// fills B for the tile's columns, A arrives zero-filled by TMA and
// nothing of its rows is stored.
type BSource interface {
	// Declare declares the kernel parameters the source reads (they
	// follow A's tensor map) and returns the launch arguments for them.
	Declare(k *ptx.Func) []kernels.Arg
	// Setup runs once on every thread of the CTA before the roles split
	// (tid: %tid.x; fillers: how many threads run Load and Fill; share:
	// the k-rows of each k-tile this CTA writes); it may write shared
	// memory and pass barrier 0.
	Setup(k *ptx.Func, tid ptx.Reg, fillers int, share Share)
	// RawBytes is the raw area of a slot (for the CTA's share), a
	// multiple of 1024 bytes; 0
	// for a source that takes everything from Load: then there is no
	// Issue, and the fillers wait for the slot's empty barrier themselves.
	RawBytes(p Params) int
	// Issue loads the raw data of the CTA's share of the k-tile whose
	// first reduction row is kc for the tile's columns col0 .. col0+BN
	// into raw (u32 shared), completing its bytes on bar; one thread
	// calls it.
	Issue(k *ptx.Func, raw ptx.Reg, bar ptx.Addr, col0, kc ptx.Reg)
	// Load is filler i's (u32, 0 .. fillers−1) global loads for the
	// k-tile whose first reduction row is kc (a scale per unit, say),
	// issued one k-tile ahead of Fill; when more is false there is no such
	// k-tile and Load must not read past its buffers.
	Load(k *ptx.Func, col0, kc, i, more ptx.Reg) []ptx.Reg
	// Fill writes filler i's part of the B tile at b from raw for the
	// k-tile, with what Load returned for it.
	Fill(k *ptx.Func, b, raw, col0, kc, i ptx.Reg, loaded []ptx.Reg)
}

// producerFillers is the fillers of the producer warpgroup (warps 1..3).
const producerFillers = 96

// fillBar is the fillers' named barrier in a cluster that shares B.
const fillBar = 6

// Share is the k-rows of each k-tile a CTA writes of a B it shares with
// its cluster: Rows rows (64/cluster) from First (u32, rank·Rows; the
// immediate 0 without a cluster).
type Share struct {
	First ptx.Operand
	Rows  int
}

// srcProducerR is the producer warpgroup's registers with a BSource
// under the register split: its fillers compute.
const srcProducerR = 96

// WrittenB is the GEMM a BSource feeds: C[M×K] = A[M×N]·B[N×K], A the
// buffer "dy" in DType (K-major: rows of N), C the buffer "dx" in DType.
// M is a runtime dim (see BSource): the program Emit writes takes it as
// its parameter m (Program.RuntimeDims is ["m"]) and is the same at
// every M; the M here is the shape's it is tuned at, for Check and
// Tiles.
type WrittenB struct {
	M, N, K int
	DType   dtype.DType
	Entry   string // the kernel's name
	// FillWarpgroups is the warpgroups that only fill B, beside the
	// producer warpgroup's three warps.
	FillWarpgroups int
	// RawRing, when not 0, gives the raw data a ring of that many slots
	// of its own (rawFull and rawEmpty barriers after the slots'): thread
	// 0 issues a k-tile's raw data RawRing−1 k-tiles ahead of its A, as
	// soon as the fillers are done with the raw slot, instead of after
	// the consumers released the B slot; the fillers wait for both.
	RawRing int
	// LoRA, when not 0, is the rank of a LoRA adapter whose dX, dh·A, the
	// GEMM adds (dh [M×LoRA] and A [LoRA×K] in the buffers LoRAH and
	// LoRAA): the reduction goes on past N through ⌈LoRA/64⌉ k-tiles that
	// the producer thread loads densely by TMA, both operands, while the
	// fillers write nothing for them (see BSource).
	LoRA int
}

// LoRAH and LoRAA are the buffers of an adapter's dh [M×r] and A [r×K]
// (WrittenB.LoRA, DXGemm.LoRA; gemm_bwd's lora=r).
const LoRAH, LoRAA = loraH, loraA

// Fillers is how many threads run the BSource's Load and Fill.
func (w WrittenB) Fillers() int { return producerFillers + 128*w.FillWarpgroups }

func (w WrittenB) problem() problem {
	return problem{r: w.M, c: w.K, l: w.N, mRows: true, a: operand{buf: "dy", kMajor: true, ld: w.N},
		out: "dx", in: w.DType, od: w.DType, lora: w.LoRA}
}

// Check says whether the wgmma path emits p for w with src: BK 64, one or
// two m64 blocks per consumer, whole B atoms, accumulators within the
// consumers' registers, the slots within shared memory, no deeper than
// the k-loop; no split or stream-K; a cluster of 2 or 4 CTAs sharing B
// (multicast=1) on consecutive tile rows (order m or grouped, and at M
// tile rows a multiple of the cluster, a tuning rule: at other M the
// grid rounds them up to whole clusters).
func (w WrittenB) Check(p Params, src BSource) error {
	g := w.problem()
	switch {
	case p.MMA != WGMMA || p.BK != 64 || !p.RegSplit:
		return fmt.Errorf("a written B takes mma=wgmma, bk=64 and the register split")
	case p.SplitK != 1 || p.Order == StreamK:
		return fmt.Errorf("a written B takes splitk=1 and no stream-K")
	case p.Cluster != 1 && (p.Cluster != 2 && p.Cluster != 4 || !p.Multicast || p.Order == OrderN || tilesR(g, p)%p.Cluster != 0):
		return fmt.Errorf("a written B in clusters takes cluster 2 or 4, multicast=1, order m or grouped and tile rows in whole clusters (%d)", tilesR(g, p))
	case p.BM%(64*p.Consumers) != 0 || p.BM/p.Consumers > 128:
		return fmt.Errorf("bm=%d over %d consumers: want one or two m64 blocks each", p.BM, p.Consumers)
	case p.BN%64 != 0 || p.BN > 256:
		return fmt.Errorf("bn=%d: want whole 64-column atoms, at most 256", p.BN)
	case w.FillWarpgroups < 0 || w.FillWarpgroups > 1:
		return fmt.Errorf("%d fill warpgroups: want 0 or 1", w.FillWarpgroups)
	case w.RawRing < 0 || w.RawRing == 1 || w.RawRing > 16 || w.RawRing > 0 && src.RawBytes(p) == 0:
		return fmt.Errorf("a raw ring of %d slots: want 0, or 2 to 16 for a source with raw data", w.RawRing)
	case accRegs(p)+regOverhead > hopper.ConsumerBudget(srcProducerR, w.FillWarpgroups, p.Consumers):
		return fmt.Errorf("%d accumulator registers per consumer thread, more than %d allow", accRegs(p), hopper.ConsumerBudget(srcProducerR, w.FillWarpgroups, p.Consumers))
	case w.Smem(p, src) > smemMax:
		return fmt.Errorf("%d bytes of shared memory, more than %d", w.Smem(p, src), smemMax)
	case p.Stages < 2 || p.Stages > max(kTiles(g, p), 2):
		return fmt.Errorf("stages=%d over %d k-tiles", p.Stages, kTiles(g, p))
	}
	return nil
}

// Smem is the dynamic shared memory of p for w with src.
func (w WrittenB) Smem(p Params, src BSource) int {
	return smemBytes(w.problem(), p, p.Stages) + srcSmem(p, src, w.RawRing)
}

// srcSmem is the shared memory a BSource adds: the raw areas and their
// barriers, in the slots or in a ring of rawRing.
func srcSmem(p Params, src BSource, rawRing int) int {
	if rawRing > 0 {
		return rawRing * (src.RawBytes(p) + 16)
	}
	return p.Stages * (src.RawBytes(p) + 8)
}

func (wk *wgKernel) srcSmem() int { return srcSmem(wk.p, wk.src, wk.rawRing) }

// Tiles is the CTAs of a non-persistent grid of p at M.
func (w WrittenB) Tiles(p Params) int { return tiles(w.problem(), p) }

// Emit writes the program of w with B from src (see Check).
func (w WrittenB) Emit(p Params, src BSource) (kernels.Program, error) {
	if err := w.Check(p, src); err != nil {
		return kernels.Program{}, err
	}
	return buildWgmma(wgBuild{entry: w.Entry, g: w.problem(), p: p, src: src, fillWGs: w.FillWarpgroups, rawRing: w.RawRing})
}

// fullArrivals is a full barrier's arrivals per phase: the producer's,
// and each filler's, or in a cluster filler 0's for all (BSource).
func (wk *wgKernel) fullArrivals() int {
	if wk.src != nil && wk.p.Cluster > 1 {
		return 2
	}
	return 1 + wk.fillers()
}

// fillers is the full barrier's arrivals beyond the producer's.
func (wk *wgKernel) fillers() int {
	if wk.src == nil {
		return 0
	}
	return producerFillers + 128*wk.fillWGs
}

// split is the kernel's warpgroups under the register split.
func (wk *wgKernel) split() hopper.Split {
	return hopper.Split{Producer: wk.producerRegs(), Fill: wk.fillWGs, Consumers: wk.p.Consumers, CTAs: wk.p.CTAs()}
}

// producerRegs is the producer warpgroup's setmaxnreg.dec budget.
func (wk *wgKernel) producerRegs() int {
	switch {
	case wk.src != nil:
		return srcProducerR
	case wk.prod != nil:
		return prodProducerR
	}
	return hopper.ProducerRegs
}

// rawBars is the offset of the barriers after the ring's: a BSource's
// raw barrier per slot, or the raw ring's full and empty barriers.
func (wk *wgKernel) rawBars() int { return wk.bars + 16*wk.p.Stages }

// rawRingLayout is the raw ring's layout: rawRing slots of the source's
// raw bytes at rawOff, its barriers after the ring's.
func (wk *wgKernel) rawRingLayout() hopper.Ring {
	return hopper.Ring{N: wk.rawRing, Stride: wk.src.RawBytes(wk.p), Data: wk.rawOff, Bars: wk.rawBars()}
}

// newRawRing is a cursor of the raw ring (nil without one).
func (wk *wgKernel) newRawRing() *hopper.Cursor {
	if wk.rawRing == 0 {
		return nil
	}
	return wk.rawRingLayout().Cursor(wk.k)
}

// issueCodes waits until the fillers are done with the raw slot and
// issues the raw data of the k-tile at kc into it.
func (wk *wgKernel) issueCodes(base ptx.Reg, t tile, kc ptx.Reg, rr *hopper.Cursor) {
	rr.WaitEmpty(base)
	wk.src.Issue(wk.k, rr.Data(base), rr.Full(base), t.col0, kc)
	rr.Next()
}

// issueAhead issues the raw data of tile t's first rawRing−1 k-tiles
// (fewer when the tile has fewer) and returns the reduction row of the
// next k-tile to issue; nil without a raw ring.
func (wk *wgKernel) issueAhead(base ptx.Reg, t tile, kc ptx.Reg, rr *hopper.Cursor) ptx.Reg {
	if rr == nil {
		return ptx.Reg{}
	}
	k := wk.k
	next := k.Mov(ptx.U32, kc)
	k.For(ptx.U32, ptx.Imm(0), k.Min(ptx.U32, t.nk, ptx.Imm(wk.rawRing-1)), ptx.Imm(1), func(ptx.Reg) {
		wk.issueCodes(base, t, next, rr)
		k.MovTo(next, k.Add(ptx.U32, next, ptx.Imm(wk.p.BK)))
	})
	return next
}

// issueNext, at k-tile it of tile t, issues k-tile it+rawRing−1's raw
// data when the tile has it.
func (wk *wgKernel) issueNext(base ptx.Reg, t tile, it, next ptx.Reg, rr *hopper.Cursor) {
	k := wk.k
	k.If(k.Setp("lt", ptx.U32, k.Add(ptx.U32, it, ptx.Imm(wk.rawRing-1)), t.nk), func() {
		wk.issueCodes(base, t, next, rr)
		k.MovTo(next, k.Add(ptx.U32, next, ptx.Imm(wk.p.BK)))
	})
}

// share is the CTA's part of each k-tile's B rows.
func (wk *wgKernel) share() Share {
	if wk.p.Cluster == 1 {
		return Share{First: ptx.Imm(0), Rows: 64}
	}
	rows := 64 / wk.p.Cluster
	return Share{First: wk.k.Mul(ptx.U32, wk.k.Mov(ptx.U32, ptx.ClusterCtaRank), ptx.Imm(rows)), Rows: rows}
}

// fill is filler i's loop (i: u32): per k-tile of every tile, issue the
// next k-tile's Load, wait for the raw data, write B, make the writes
// visible to the tensor cores' proxy and arrive on the full barrier (in
// a cluster: send the share, see BSource).
func (wk *wgKernel) fill(base, i ptx.Reg) {
	k, p := wk.k, wk.p
	r, rr := wk.newRing(), wk.newRawRing()
	var sh Share
	if p.Cluster > 1 {
		sh = wk.share()
	}
	wk.forTiles(func(t tile) {
		t = wk.baseTiles(t)
		kc := k.Mul(ptx.U32, t.kt0, ptx.Imm(p.BK))
		cur := wk.src.Load(k, t.col0, kc, i, k.Setp("ne", ptx.U32, t.nk, ptx.Imm(0)))
		k.For(ptx.U32, ptx.Imm(0), t.nk, ptx.Imm(1), func(it ptx.Reg) {
			more := k.Setp("lt", ptx.U32, k.Add(ptx.U32, it, ptx.Imm(1)), t.nk)
			next := wk.src.Load(k, t.col0, k.Add(ptx.U32, kc, ptx.Imm(p.BK)), i, more)
			var rawEmpty *ptx.Addr
			switch {
			case rr != nil:
				rr.WaitFull(base)
				r.WaitEmpty(base)
				e := rr.Empty(base)
				rawEmpty = &e
			case wk.src.RawBytes(p) == 0:
				r.WaitEmpty(base)
			default:
				k.MbarWait(r.Bar(base, wk.rawBars()), r.Phase)
			}
			b := k.Add(ptx.U32, r.Data(base), ptx.Imm(wk.aBytes))
			var raw ptx.Reg
			if rr != nil {
				raw = rr.Data(base)
			} else {
				raw = k.Add(ptx.U32, b, ptx.Imm(p.BN*128))
			}
			wk.src.Fill(k, b, raw, t.col0, kc, i, cur)
			k.FenceProxyAsync()
			if p.Cluster > 1 {
				wk.sendShare(b, r.Full(base), rawEmpty, i, sh)
			} else {
				k.MbarArriveDrop(r.Full(base))
				if rawEmpty != nil {
					k.MbarArriveDrop(*rawEmpty)
				}
			}
			if rr != nil {
				rr.Next()
			}
			for j := range cur {
				k.MovTo(cur[j], next[j])
			}
			k.MovTo(kc, k.Add(ptx.U32, kc, ptx.Imm(p.BK)))
			r.Next()
		})
		wk.fillLoRA(base, i, r)
	})
}

// srcLoRATiles is the adapter's k-tiles at the end of each tile's
// reduction that a BSource's producer thread loads densely (0 without an
// adapter or a BSource: gemm_bwd's producer loads them in its k-loop).
func (wk *wgKernel) srcLoRATiles() int {
	if wk.src == nil {
		return 0
	}
	return wk.g.loraTiles(wk.p.BK)
}

// baseTiles is tile t without the adapter's k-tiles (t itself where
// srcLoRATiles is 0).
func (wk *wgKernel) baseTiles(t tile) tile {
	if n := wk.srcLoRATiles(); n > 0 {
		t.nk = wk.k.Sub(ptx.U32, t.nk, ptx.Imm(n))
	}
	return t
}

// issueLoRA is thread 0's part of tile t's adapter k-tiles, after its
// base ones (see BSource): per k-tile, wait for the slot, announce the
// slot's A and B bytes, load dh's box and the adapter's A atoms at the
// adapter's reduction row 64·j, and arrive on the slot's raw barrier
// where it has one.
func (wk *wgKernel) issueLoRA(base ptx.Reg, t tile, r *hopper.Cursor) {
	k, p := wk.k, wk.p
	n := wk.srcLoRATiles()
	if n == 0 {
		return
	}
	k.Comment("the adapter's k-tiles: dh and A by TMA, no raw data")
	mh, ma := k.TensorMapAddr(wk.loraMaps[0]), k.TensorMapAddr(wk.loraMaps[1])
	for j := range n {
		r.WaitEmpty(base)
		full := r.Full(base)
		k.MbarArriveExpectTx(full, ptx.Imm(wk.aBytes+p.BN*128))
		wk.loadTile(r.Data(base), full, t, mh, ma, k.Mov(ptx.U32, ptx.Imm(j*p.BK)), false)
		if wk.rawRing == 0 && wk.src.RawBytes(p) > 0 {
			k.MbarArriveDrop(r.Bar(base, wk.rawBars()))
		}
		r.Next()
	}
}

// fillLoRA is filler i's part of a tile's adapter k-tiles (see BSource):
// per k-tile, wait for the slot's empty barrier and arrive on its full
// one (in a cluster filler 0 alone), writing nothing.
func (wk *wgKernel) fillLoRA(base, i ptx.Reg, r *hopper.Cursor) {
	k := wk.k
	for range wk.srcLoRATiles() {
		r.WaitEmpty(base)
		if wk.p.Cluster > 1 {
			k.If(k.Setp("eq", ptx.U32, i, ptx.Imm(0)), func() { k.MbarArriveDrop(r.Full(base)) })
		} else {
			k.MbarArriveDrop(r.Full(base))
		}
		r.Next()
	}
}

// sendShare: the fillers meet; filler 0 copies the CTA's share of the B
// tile at b (rows sh.First.. of every atom) into the other CTAs' slots,
// completing on their full barriers, and arrives on its own (and on the
// raw ring's empty barrier, for all fillers).
func (wk *wgKernel) sendShare(b ptx.Reg, full ptx.Addr, rawEmpty *ptx.Addr, i ptx.Reg, sh Share) {
	k, p := wk.k, wk.p
	k.Raw(90, 80, "bar.sync", ptx.Imm(fillBar), ptx.Imm(wk.fillers()))
	k.If(k.Setp("eq", ptx.U32, i, ptx.Imm(0)), func() {
		src := k.Mad(ptx.U32, sh.First, ptx.Imm(128), b)
		bar := k.Add(ptx.U32, full.Base.(ptx.Reg), ptx.Imm(full.Off))
		rank := k.Mov(ptx.U32, ptx.ClusterCtaRank)
		for q := range p.Cluster {
			k.If(k.Setp("ne", ptx.U32, rank, ptx.Imm(q)), func() {
				rb := k.Mapa(bar, ptx.Imm(q))
				for j := range p.BN / 64 {
					at := k.Add(ptx.U32, src, ptx.Imm(j*wgAtom))
					k.BulkCopyToCluster(ptx.At(k.Mapa(at, ptx.Imm(q)), 0), ptx.At(at, 0), sh.Rows*128, ptx.At(rb, 0))
				}
			})
		}
		k.MbarArriveDrop(full)
		if rawEmpty != nil {
			k.MbarArriveDrop(*rawEmpty)
		}
	})
}
