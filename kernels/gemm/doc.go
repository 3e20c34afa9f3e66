// Package gemm is gemm_bwd: the two backward GEMMs of nn.Linear,
// y = x·Wᵀ with x of [M×K] and W of [N×K] (out×in), in f16 or bf16 with
// f32 accumulation. docs/kernels/gemm.md has the design, the reasoning
// behind the rules and the H200 measurements.
//
// # Shapes
//
// m, n, k and grad (dx|dw) are required (lora=r optional, below): grad=dx is dX[M×K] = dY[M×N]·W,
// grad=dw is dW[N×K] = dYᵀ·X. out=f32 (dw only) writes dW in f32, for an
// f32 main-grad; without it every output has the inputs' dtype, as
// PyTorch's bf16 and f16 backward does. The output dtype is a shape choice,
// not an axis, because it changes the buffers. n and k are multiples of 8
// (rows of 16 bytes, which cp.async and TMA need); m is any size. A
// preset or a model's config.json gives its distinct projections
// (variants.Preset.Projections; qwen1.5b's four: q·o 1536×1536, k·v
// 256×1536, gate·up 8960×1536, down 1536×8960, W as [N×K]; Phi-3's fused
// qkv_proj and gate_up_proj as they are) at --tokens rows, each for dx
// then dw.
//
// # The GEMM and its layouts
//
// Both grads are C[r×c] = A[r×l]·B[l×c], a reduction over l, with every
// buffer row-major:
//
//	grad  r  c  l  A                          B
//	dx    M  K  N  dy [M×N]: K-major (ld N)   w [N×K]: MN-major (ld K)
//	dw    N  K  M  dyᵀ: dy [M×N] MN-major     x [M×K]: MN-major (ld K)
//
// K-major: the reduction index is contiguous; MN-major: the row (A) or
// column (B) index is. B is MN-major in both grads; A is K-major for dx
// and MN-major for dw. For wgmma that is imm-trans-b = 1 always and
// imm-trans-a = 1 for dw (both operands from shared memory, transposed
// descriptors: 128B swizzle, SBO 1024 between 8-row groups of k, LBO
// between 64-element atoms of m or n, a k16 step 2048 bytes).
//
// # The sync path (mma=sync, sm_80 and later)
//
// A CTA of 4 warps (2×2) or 8 (2×4 or 4×2 on 128×128 tiles) computes a
// BM×BN tile of C; warps hold m16n8 accumulator blocks. A ring of `stages`
// slots in dynamic shared memory holds [BM][BK] (K-major A) or [BK][BM]
// (MN-major A) and [BK][BN] tiles, each row of 16-byte chunks XOR-swizzled
// by row bits (gen.SwizzledTileOffset) so ldmatrix phases and cp.async stores spread
// over the banks. cp.async.cg copies 16-byte chunks, zero-filling those
// outside the matrix (source size 0); `stages`−1 k-tiles are in flight.
// Fragments come by ldmatrix.x4: non-transposed for a K-major A,
// transposed for an MN-major A and for B. The epilogue stores pairs from
// the accumulators (rounded to the output dtype), guarded at the edges.
//
// # The wgmma path (mma=wgmma, sm_90a)
//
// A producer warpgroup (warpgroup 0; setmaxnreg.dec under regsplit) whose
// thread 0 issues, per k-tile of 64, the TMA loads of A and B into a ring
// of `stages` slots with full/empty mbarriers (128B swizzle; A K-major as
// one box {64 k, BM rows}, MN-major A and B as boxes {64 mn, 64 k} of
// 8 KB), and 1 + c consumer warpgroups (setmaxnreg.inc) each owning BM/c
// rows: one or two m64nBNk16 per k16 step from descriptors (K-major: SBO
// 1024, k16 = 32 bytes; MN-major with imm-trans: LBO 8 KB between 64-wide
// atoms, SBO 1024, k16 = 2048 bytes), scale-d 0 on the split's first
// k16, commit + wait_group 0, then lane 0 of each warp arrives on the
// slot's empty barrier (count 4·consumers). TMA zero-fills the tails.
// epilogue=direct stores pairs from the accumulator layout, masked at the
// edges (f32 into the workspace with split-K); epilogue=tma writes each
// consumer's rows, rounded to the output dtype, into its own staging tile
// after the ring (128B swizzle, conflict-free st.shared), fences the
// async proxy, meets its warpgroup at named barrier 1 + consumer
// (bar.sync id, 128), and one thread issues TMA stores of 128-byte-wide
// boxes that the tensor map clips at C's edges; the staging tile is
// waited for (wait_group.read 0) only before it is written again, so the
// store drains under the next tile's k-loop in a persistent grid.
// cluster=2 multicast=1 pairs the CTAs of consecutive tile rows of one
// tile column (.reqnctapercluster 2): each loads its A and the half of
// every B atom's 64 k-rows that matches its rank (box {64, 32}), with
// .multicast::cluster into both CTAs' slots; the full barrier expects
// the whole stage, the empty barriers count both CTAs' consumer warps
// (each arrives on both through mapa), and barrier.cluster at the start
// (barriers initialized) and the end (no arrival on an exited CTA).
// wgmma.go has the layouts.
//
// # What it takes from kernels/hopper
//
// The pipeline pieces that do not depend on the problem are the
// library's (kernels/hopper, whose doc states their rules): the TMA ring
// (hopper.Ring: the slots at the 1024-aligned base, full then empty
// barriers after them, a BSource's raw barriers and raw ring after those;
// hopper.Cursor for every role, hopper.Releaser for the consumers'
// one-late release, across the cluster with multicast), the register
// split (hopper.Split with the producer's 40, a BSource's 96 or a
// producing B's 80 registers; hopper.ConsumerBudget in the space's
// rules), the TMA-store epilogue (hopper.Staging and its Stager,
// hopper.WarpgroupBarrier, also stream-K's), the persistent loop and the
// m, n and grouped orders (hopper.ForTiles, DownRows, AlongCols,
// Grouped), and on the sync path the warp's fragment offsets,
// accumulators, k16 steps and stores and the cp.async ring (hopper.Warp,
// hopper.CpAsyncLoop). gemm keeps its problem: the operands' layouts and
// tensor maps, the loaders, split-K, reduce=dsmem, stream-K, a BSource's
// fillers and a produced B, and the space's rules.
//
// # Split-K
//
// splitk=S cuts the reduction into S ranges of whole k-tiles (split s:
// k-tiles ⌊s·T/S⌋ to ⌊(s+1)·T/S⌋, empty where T < S; T is runtime for
// dw); each CTA stores its f32 partial tile
// into its slice of a workspace the program declares as Scratch
// ([S][r][c] f32), and a second launch sums the slices in split order
// (deterministic) and rounds once to the output. With reduce=dsmem
// (wgmma) a tile's S splits are one cluster instead: each stores its
// partial over its ring, the cluster meets, each rank sums its share of
// the tile from all S partials in rank order through ld.shared::cluster
// and stores it; no workspace, no second launch (dsmem.go).
//
// # Stream-K
//
// order=streamk (wgmma path) runs a persistent grid of min(132, n) CTAs
// over the n = tiles·k-tiles iterations of C (tiles in order m, k-tiles
// within a tile consecutive; n depends on M, and so does the grid, so
// that every CTA has an iteration). The CTA at position q = nctaid−1−ctaid
// (nctaid read from %nctaid: a GPU with fewer SMs runs fewer CTAs) takes
// iterations ⌊q·n/nctaid⌋ to ⌊(q+1)·n/nctaid⌋, one segment per tile it
// touches. A tile's owner is the position that runs its first k-tile, in
// the last segment of its range; the positions after it that run the
// rest (contributors, in the first segment of theirs) store their f32
// accumulators into their slot of a Scratch workspace ([nctaid][BM·BN])
// and raise a flag per consumer warpgroup in a State buffer
// (red.release.gpu after the warpgroup's named barrier). The owner's
// warpgroups take the contributors in position order (thread 0 spins on
// atom.acquire.gpu.exch 0 until it reads non-zero, which also leaves the
// flag zero for the next run), add their partials and store the tile
// with the variant's epilogue: one launch, a summation order fixed by the
// grid. The spin-wait needs every CTA resident at once: a stream-K grid
// is never larger than the GPU's SMs (GridPerSM 1: the runner launches
// min(SMs, Grid[0]) CTAs) and every CTA fits an SM; an owner waits only for
// contributors, and a contributor publishes before it waits for
// anything. streamk.go has the layouts.
//
// # A written B
//
// WrittenB and BSource let another family use the wgmma kernel for a
// dX-shaped GEMM whose B it writes into shared memory itself instead of
// loading it by TMA (nf4_gemm_bwd: a 4-bit weight). The producer
// warpgroup's thread 0 loads A and the source's raw data (Issue, on a raw
// barrier per slot; a source may have none); the fillers (the producer
// warpgroup's warps 1..3, and with FillWarpgroups a warpgroup of their
// own after the consumers, which then keep fewer registers) load what
// they need a k-tile ahead (Load), wait for the raw data or the free
// slot, write the B tile in the MN-major swizzled layout (Fill),
// fence.proxy.async and arrive on the full barrier, which then counts 1 +
// fillers arrivals. With RawRing the raw data has a ring of its own,
// issued that many k-tiles ahead. In a cluster of 2 or 4 (multicast=1)
// the CTAs share B: each writes its share of the k-rows and copies it
// into the others' slots (cp.async.bulk.shared::cluster); filler 0 then
// arrives once for all. No split or stream-K. The program takes M at run
// time like the family's own (below); a BSource sees no M (bsource.go).
//
// # An adapter's dX (lora=r)
//
// lora=r (grad=dx, r a multiple of 8 up to 64) adds a LoRA adapter's
// share of dX in the same GEMM, dX = dY·W + dh·A with dh = s·dY·B [M×r]
// (lora_bwd's output) and A [r×K]: the reduction goes on past N through
// ⌈r/64⌉ more k-tiles, which the producer loads from two more tensor
// maps (parameters lora_h and lora_a after B's): dh as A (K-major, box
// {64 k, BM rows}) and A as B (MN-major atoms), both zero-filled past r,
// at k coordinates less the base reduction's whole k-tiles. The consumers
// and the epilogue do not change; split-K and reduce=dsmem split the
// longer reduction as any other. wgmma path only, no cluster, no
// stream-K. Its baselines are cuBLAS's base GEMM alone (cublas-base,
// cublaslt-best-base): less than the unfused path, which also runs dh·A
// and adds it. DXGemm.LoRA and WrittenB.LoRA give nf4_gemm_bwd's paths
// the same; on a written B the producer thread loads the adapter's
// k-tile, both operands, and the fillers arrive without writing
// (BSource).
//
// # Another family's GEMM (Custom)
//
// Custom and AddCustom let another family emit wgmma-path GEMMs into its
// own module (linear_cross_entropy_bwd: the LM head's logits and gradient
// per vocabulary chunk): C[t×c] = A[t×l]·B[l×c] with t the caller's
// runtime dim, A K-major, B K-major (a weight [c×l] read as its
// transpose: one TMA box {64 k, BN rows} per k-tile, the K-major
// descriptor, imm-trans-b 0) or MN-major. Each operand may start at a
// byte offset in its buffer (the tensor map's Offset) and B may hold
// fewer rows than the problem's extent, the rest read as zeros by TMA,
// so a chunk of a weight is the same kernel at every offset, launched
// with other maps. Scale makes the direct epilogue accumulate into an
// f32 C, C = scale[row]·C + A·B: each row's factor and the old pair are
// loaded under the store's guards; Reduce adds A·B into an f32 C by
// red.global.add.v2.f32 under the same guards, loading nothing.
// Custom.Params picks the ring, the
// consumers and the order from the tiling alone, so the kernel does not
// depend on t. A Tiling of PerSM = 2 is built for two CTAs an SM: the
// ring within half the shared memory, .maxnreg half the register file
// (hopper.Split's CTAs), one consumer warpgroup per 128 tile rows; so
// that one CTA's epilogue overlaps the other's k-loop. Its launch says so
// (configs.Launch.CTAsPerSM), and launchers ask for the largest
// shared-memory carveout, which two such CTAs may need.
//
// # M at run time
//
// M, the token count, is a runtime dim (Program.RuntimeDims): every
// kernel takes it as its last parameter, a u32 named m, and the PTX is
// the same at every M; grids, buffers and tensor-map dims are
// expressions of m. In the GEMM below M is r for dx and l for dw, so the
// kernel derives from m the tile rows, the tile order's mappings, a
// persistent grid's tiles and C's row bounds (dx), or the k-tiles, the
// split-K ranges and stream-K's iterations (dw); everything else stays
// an immediate (runtime.go). The space's rules are tuning choices at the
// shape's M; the program is correct at every M from 1 to the shape's
// limit: a split may get no k-tile (its partial is zero), the ring may
// be deeper than the loop, a cluster's tile rows are rounded up to whole
// clusters (the extra row's CTAs run the k-loop for their partner and
// store nothing), a stream-K grid never has more CTAs than iterations.
// A dx program that splits K serves M only up to where the split-K rules
// still admit it (Program.RuntimeMax, SplitRowsMax): its workspace is
// M×K×splits f32, and past that M an unsplit program is the one to run.
//
// # Rules
//
//   - sync path: cluster=1, multicast=0, persistent=0, epilogue=direct,
//     regsplit=0 (sm_80 has none of these).
//   - tile shape: sync tiles at most 128×128 with bk=32 and bn a multiple
//     of 64; wgmma bk=64, 64 or 128 rows per consumer, bn a multiple of 64
//     (a 128-byte swizzled TMA box of the MN-major B is 64 elements wide)
//     or the two tiles 192×96 and 128×160 (B in 64B-swizzled atoms of 32
//     columns; for wave quantization, no cluster); wgmma tiles under
//     128×128 (64×64, 64×128, 64×192, 128×64) only where 128×128 tiles do
//     not fill a wave or the reduction is at most 8 k-tiles (latency-bound
//     skinny shapes, k·v), and with split-K within one wave of CTAs.
//   - warp layout: wgmma takes regsplit=1 and consumers=2, or consumers=1
//     on 64-row tiles, 3 on 192-row tiles; sync takes 8 warps only on
//     128×128 tiles.
//   - multicast exactly with cluster=2; the cluster divides the tile rows.
//   - accumulators + 48 registers fit the per-thread cap (what
//     setmaxnreg.inc gives a consumer under the register split: 152 with
//     three consumers, 232 with two, 240 with one; else 65536/threads, at
//     most 255). The split moves registers between warpgroups only: after
//     it they hold at most what the CTA got at launch, .maxnreg per thread
//     (hopper.Split.ConsumerRegs); an inc past that waits forever, which
//     the interpreter reports as a deadlock. A Custom's tiling of PerSM = 2
//     (not gemm_bwd's) halves the CTA's share: 216 for its one consumer
//     per 128 rows, ≤ 113 KB of shared memory.
//   - shared memory: stages·(BM+BN)·BK·2 (+ the TMA-store tile, barriers
//     and 1 KB of alignment slack for wgmma) ≤ 227 KB (sync: 163 KB, for
//     sm_80).
//   - stages: the deepest that fits (sync: at most 4; wgmma: of 2, 3, 4,
//     5, 6, 8, 12), but no more than the k-tiles of a split.
//   - split-K only with fewer tiles than the H200's 132 SMs, at least two
//     k-tiles per split, at most two waves of CTAs; the workspace within
//     u32 indexing; split partials stored directly; reduce=dsmem only with
//     splits, on wgmma without a B cluster or persistence, at most 8
//     splits, one wave, at most 64 accumulators per thread, the partial
//     within the ring (splitk=1 takes reduce=launch).
//   - tile order and persistence only past one wave (within one, every
//     order is the same run; stream-K aside): order=m persistent=0 there;
//     past it, persistent=1 takes order=grouped, and order=grouped without
//     persistence is wgmma only (L2 reuse of a wave's square of tiles).
//     A persistent grid launches min(132, tiles·splitk) CTAs.
//   - wgmma clusters (cluster=2 multicast=1) only on reductions past 8
//     k-tiles (short loops are latency-bound), order m or grouped (a cluster takes two consecutive tile indices,
//     which share a tile column there), splitk=1 and epilogue=tma.
//   - stream-K: wgmma, persistent=1, splitk=1, cluster=1; fewer tiles
//     than two waves of 132 that fill under 90% of their waves; at least
//     two k-tiles per SM; an owner adds at most 256 KB of partials
//     (⌈132/tiles⌉ of BM·BN f32), so at most 16 per tile.
//
// # Validation
//
// Every variant is validated on two input sets, at every shape, before it
// is timed and again after (the runner's Session; tune check and the
// interpreter tests alike), its outputs poisoned with NaN before each run
// so that unwritten tiles fail:
//
//   - Random inputs, uniform in [−1, 1) rounded to the dtype, so
//     Σ_k|a·b| ≤ L, held to |C − C_ref| ≤ γ·L with γ = (2·⌈L/16⌉ +
//     16)·2⁻²³: products are exact in f32, each k16 step may lose an ulp
//     of its block sum and one of its addition to the accumulator, and
//     the split-K reduce or a stream-K owner adds at most 16 partials;
//     widened by the output's rounding (kernels.StoreTol). At L = 8960
//     the bound is 1.2 against outputs near √L/3 ≈ 30: a bug that moves
//     an output by one product (|a·b| < 1) passes it.
//   - Exact inputs (ExactInputs, kernels.Exacter): nonzero integers
//     drawn from ±1..±3 while 9·L < 2²⁴ (L ≤ 1864135: every preset shape,
//     dW up to 1.8 million tokens), else ±1. Every partial sum of an
//     output, in whatever order (inside a k16 step of the tensor cores,
//     whose alignment to a largest magnitude below 2²⁴ drops no integer
//     bit; across k-tiles; the split-K partials and their f32 reduce,
//     stream-K's segments, reduce=dsmem's cluster sum), is an integer of
//     magnitude at most Σ_k|a·b| < 2²⁴, exact in f32. The result is
//     therefore exact, and its one rounding to the output dtype (bf16,
//     f16, or f32 for out=f32) equals the float64 reference rounded the
//     same way (the runner rounds it): zero tolerance. As no value is 0,
//     every reduction index has a nonzero product in every output: a
//     dropped, doubled or wrong index or element moves each output it
//     touches by a nonzero integer, hidden by the output's rounding only
//     where that is less than half its ulp (at L = 8960 outputs are near
//     4.7·√L ≈ 440, bf16 ulps of 2 and 4: most of the outputs it touches
//     show it). Beyond L = 2²⁴ − 1 even ±1 could sum past 2²⁴: an
//     ExactPattern splits the reduction indices into ⌈L/(2²⁴−1)⌉ classes
//     and zeroes A and B so that each output sums one class, every class
//     in some output; a shape with fewer outputs than classes (only a dX
//     with n ≥ 2²⁴ and m·k < 17: n·k < 2³¹) has no exact set.
//
// exact_test.go plants, in the wgmma kernel at qwen's down-projection
// reduction (dX, n = 8960), a dropped and a doubled reduction index and
// one B element read as zero: the random bound passes each, the exact
// inputs fail each.
package gemm
