// Package hopper is the pipeline library of the GEMM-shaped kernels
// (gemm_bwd, nf4_gemm_bwd, linear_cross_entropy_bwd through gemm.Custom,
// and attention backward next): the pieces of a Hopper (sm_90a) wgmma
// kernel and of its sm80 mma.sync fallback that do not depend on a
// family's problem, on top of the PTX builder. It emits instructions and
// decides nothing: the families choose tiles, stages and roles and check
// them against these rules. Moved out of kernels/gemm without changing a
// byte of any program (issue 28).
//
// # The TMA ring (ring.go)
//
// A Ring is N slots in dynamic shared memory at offsets from a base
// rounded up to 1024 bytes (AlignedBase; the launch's SharedBytes adds
// 1024 bytes of slack): slot s's data at Data + s·Stride, its full
// mbarrier at Bars + 8s, its empty one at Bars + 8(N + s) (BarsBytes: 16
// per slot). Rules:
//
//   - Slot data that TMA writes in the 128B swizzle starts on 1024 bytes:
//     Stride and Data are multiples of 1024 (the families round them).
//   - One thread initializes every barrier (InitBarriers: mbarrier.init,
//     then fence.mbarrier_init) and the CTA, or the cluster, syncs before
//     any thread uses one. The full barrier counts the arrivals of the
//     roles that fill the slot (1 for a TMA producer, which announces the
//     slot's bytes with arrive.expect_tx, plus each thread that writes
//     data itself); the empty barrier counts the consumers' releases (one
//     per consumer warp, times the cluster's CTAs when producers
//     multicast into every CTA's slots).
//   - Parity: every role keeps its own Cursor (slot, phase) and moves it
//     once per k-tile in the same order, so all agree on the slot and the
//     lap. A consumer waits on full with parity Phase; a producer waits on
//     empty with parity Phase^1, which passes at once on the first lap
//     (the phase before phase 0 counts as complete). Next flips Phase when
//     the ring wraps. A persistent CTA's cursors carry over between tiles.
//   - A consumer releases a slot only when its wgmma no longer reads it:
//     after wgmma.wait_group 1 the previous k-tile's slot, after the loop
//     (wait_group 0) the last one (Releaser; one lane per warp arrives; in
//     a cluster on the barrier at the same offset of every CTA, Release);
//     a consumer that waits for each slot's group releases it at once
//     (Cursor.Release).
//
// # Warpgroups and register budgets (regs.go)
//
// An sm_90 SM's register file, threads and shared memory are constants
// here (RegsPerSM, ThreadsPerSM, SharedPerSM less CTASharedReserved a
// CTA); RegsFor is the most registers per thread that let n CTAs share
// the file, CTAsByShared how many CTAs of a size shared memory holds.
//
// Warpgroup 0 is the producer (Roles), then the consumers, then any
// fill warpgroups (a written B's). Under the register split (Split) the
// kernel declares .maxnreg Held() = min(255, 65536/(threads·CTAs)
// rounded down to 8): what each of CTAs CTAs an SM (one unless the
// Split says more) holds per thread at launch.
// The producer and fill warpgroups lower themselves to Producer registers
// (setmaxnreg.dec; ProducerRegs = 40 for a TMA producer) and the
// consumers raise themselves to Split.ConsumerRegs: what the others leave,
// divided among the consumers, rounded down to 8, at most 240. setmaxnreg
// only moves registers between the CTA's warpgroups; an inc past what the
// CTA holds waits forever (the interpreter reports a deadlock). A
// family's accumulators plus its overhead must fit the consumers' budget.
//
// # The TMA-store epilogue (stager.go)
//
// Staging: each consumer warpgroup rounds its rows to the output dtype
// into its own swizzled staging tile after the ring, fences the async
// proxy, meets at its named barrier (WarpgroupBarrier: bar.sync 1 + cw,
// 128; named barrier 0 is the CTA's, ids 1..3 the consumers', so at most
// 3 consumers) and one thread stores 128- or 64-byte-wide boxes by TMA,
// clipped at C's edges by the tensor map. The staging tile is waited for
// (wait_group.read 0) only before it is written again and before the CTA
// exits (Drain).
//
// # Tile schedulers (sched.go)
//
// ForTiles gives a CTA its linear tile index, or walks ctaid, ctaid +
// nctaid, ... in a persistent grid (launched with GridPerSM the CTAs an
// SM holds, one but for a gemm.Tiling's PerSM, and a grid of the tile
// count, so no CTA is idle); DownRows, AlongCols and Grouped
// map the index to a tile row and column. Stream-K and split-K stay in
// kernels/gemm: they depend on its problem and workspaces.
//
// # sm80 MMA helpers (sm80.go)
//
// A Warp is a warp's TM×TN part of a CTA tile of mma.sync m16n8k16 from
// a cp.async ring (CpAsyncLoop: stages−1 k-tiles in flight, a CTA barrier
// per k-tile before the slot stages−1 ahead is overwritten, one commit
// group per iteration). Slots hold A ([BM][BK] K-major or [BK][BM]
// MN-major) then B ([BK][BN]) in gen.SwizzledTileOffset's XOR swizzle;
// FragOffsets gives each lane's ldmatrix addresses, ZeroAcc the zeroed
// [m16][n8][4] accumulators, Compute the k16 steps of a slot, Store the
// guarded pair stores of the accumulators.
package hopper
