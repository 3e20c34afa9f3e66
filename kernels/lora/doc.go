// Package lora is the lora_bwd family: the backward of a LoRA adapter
// y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ with x [t×in], A [r×in], B [out×r] and scale s,
// given dY [t×out] and the saved h = x·Aᵀ [t×r]:
//
//	dh = s·dY·B     [t×r]    (reduction over out)
//	dB = s·dYᵀ·h    [out×r]  (over t)
//	dA = dhᵀ·x      [r×in]   (over t)
//	dX = dh·A       [t×in]   (over r; the adapter's part of dX only)
//
// or, with dx=base, all but dX, which the base layer's dX GEMM then adds
// in its own reduction (gemm_bwd lora=r): A is not read either.
//
// Rules:
//   - Shapes: t, in, out, r, dx (here, the default, or base) and the
//     dtype (bf16 or f16; every tensor in it, f32 accumulation). r is a multiple of 8 from 8 to 64, in and out
//     multiples of 8. From a preset: every projection [out×in]
//     (variants.Preset.Projections) at ranks 16 and 64, at its tokens,
//     with dx=here and dx=base.
//   - Buffers: dy, x, h, a, b (Input, the dtype), scale [1] f32 (Input: s
//     is read at run time, not baked, since a contract scalar is an
//     integer); dh, db, da, dx (Output, the dtype). A program's own: dh32
//     [t×r] f32 (Scratch, or State with osplit > 1), db32 [out×r] and
//     da32 [r×in] f32 (State: zero between runs, as the finalize leaves
//     them). With dx=base there is no a and no dx; the x kernel's ring
//     holds x tiles only and it computes dA alone.
//   - t is taken at run time: every GEMM kernel's last parameter is t
//     (u32); grids, buffers and the finalize's counts are expressions of
//     it. A program is correct at every t up to (2³¹−1)/max(in, out).
//   - Launches, in order: the dY kernel, over ⌈t/bt⌉·osplit CTAs; the x
//     kernel, over ⌈t/(rg·bt)⌉·isplit CTAs; the finalize (dB, dA, and
//     with osplit > 1 dh32's zeroing).
//     With pdl every launch after the first is a programmatic dependent
//     launch (sm_90): each kernel executes griddepcontrol.launch_dependents
//     first, and a dependent one griddepcontrol.wait before it reads or
//     writes global memory, except the x kernel, which issues its ring's
//     first x (and A) tiles, inputs no launch writes, before it waits and
//     then reads dh32. The interpreter runs launches in order, so
//     TestDependentLaunches checks that order in the PTX.
//   - The dY kernel: CTA c takes rows [bt·⌊c/osplit⌋, +bt) and share
//     c mod osplit of out's ⌈out/64⌉ chunks of 64 columns (⌈chunks/osplit⌉
//     each, none empty by the rules). A cp.async ring of stages slots
//     holds per chunk the dY tile [bt×64] and the B tile [64×r]; the h
//     tile [bt×r] is loaded once (and, where dB's fragments of it fit in
//     64 registers, held in registers from the first chunk on). Each chunk is read from shared memory
//     twice: warp w adds its 16 or 32 rows of dY·B into dh's
//     accumulators (ldmatrix, mma.sync m16n8k16), and warp w computes
//     m16 block w mod 4 of the chunk's 64 rows of dYᵀ·h over the CTA's
//     bt rows (ldmatrix.trans; even and odd k16 steps in separate
//     accumulators), n8 blocks of r split between w < 4 and
//     w ≥ 4 with eight warps, scales it by s and adds it into db32 by
//     red.global.add.v4.f32 (every partial into an f32 accumulator goes
//     so: lane pairs regroup a fragment's two rows by gen.QuadRows, each
//     lane adding four columns of one row). At the end dh's accumulators, scaled by s,
//     are stored to dh (rounded) and dh32 with osplit = 1, or added into
//     dh32 by red.add; the x kernel's CTAs of part 0 of each row group
//     then store dh rounded (the hi half they split), so no launch
//     rounds dh alone.
//   - With dyload=tma (sm_90a) the dY kernel is two warpgroups over the
//     same CTAs: thread 0 of the first brings the h tile once and, per
//     chunk, the dY tile [bt × 64] and the B tile [64 × 64] as TMA boxes
//     (128-byte swizzle; B's and h's columns past r read as zeros, the
//     rank padded to 64) into a ring of stages slots on mbarriers; the
//     second issues one wgmma group a chunk, dh += dY·B into bt/64
//     accumulators [64 × 64] held to the end and dB's chunk dYᵀ·h (the dY
//     tile read transposed), waits for it, releases the slot (an arrival a
//     warp) and adds s·dB's chunk into db32 by red.add; dh goes out as
//     above.
//   - With dbsplit = n > 0 (dyload=tma) the dY kernel's launch has
//     ⌈out/64⌉·n CTAs more, after the ⌈t/bt⌉·osplit of dh (counted at
//     run time): dB CTA j takes chunk ⌊j/n⌋ of out over part j mod n of
//     the row blocks (⌈⌈t/bt⌉/n⌉ each, so a part may be empty), each slot
//     of its ring holding a row block's dY tile of the chunk and h tile;
//     one wgmma group a slot adds dYᵀ·h into the chunk's accumulator, and
//     at the end s times it goes into db32 by red.add (n partials an
//     element). The dh CTAs' slots hold dY and B tiles only, no h tile,
//     and they compute dh alone. A slot is two [bt × 64] tiles.
//   - The x kernel: CTA c takes the rg row blocks [rg·bt·⌊c/isplit⌋,
//     +rg·bt) and share c mod isplit of in's chunks, each chunk over each
//     of its row blocks in turn; dA's accumulators sum a chunk over them
//     before one red.add. It reads its rows of dh32 once (a thread
//     issues the loads of 8 of its 16-byte chunks before it splits any)
//     and stores each value v as hi = round(v) and lo = round(v − hi) in the
//     dtype (v = hi + lo to 2⁻¹⁷ relative in bf16, 2⁻²² in f16; exact for
//     integers below 2¹⁶), so dA and dX use dh in f32, not dh as stored.
//     Per step (a chunk of one row block) the ring holds the x tile
//     [bt×64] and the A tile [r×64];
//     warp w stores its rows of dX = hi·A + lo·A, rounded, and adds its
//     block of hiᵀ·x + loᵀ·x (the two products in separate accumulators,
//     summed before the red.add) into da32 by red.add: the warps form mw
//     groups (4, 2 or 1, dividing the rank's m16 blocks and the warps; 1
//     where the rank ends in half a block), a group taking 1/mw of the
//     rank's m16 blocks and a warp of it 64·mw/warps columns, so that
//     each warp loads 1/mw of dh's fragments per step. With rg = 1, where
//     they fit in 64 registers, a warp loads its dh fragments once, after
//     splitting dh32, and holds them for every step. A rank
//     that ends in half a k16 step (r mod 16 = 8) zeroes the missing half
//     of the fragments.
//   - The wgmma x kernel (mma=wgmma, sm_90a; one warpgroup, whatever warps the dY kernel takes):
//     the same CTAs, ring and dh split, every tile in the 128-byte swizzle
//     from a 1024-aligned base, dh's hi and lo tiles 64 columns wide (rank
//     columns past r zeroed). Per step one wgmma group: dX's [64 × 64]
//     blocks (A dh's hi or lo rows, K-major; B the A tile, MN-major) and
//     dA's chunk [64 × 64] (A the hi or lo tile read transposed, the rank
//     as M; B the x tile, MN-major); each thread fences its copies and
//     stores for the async proxy before the ring's barrier, and the group
//     is waited for before the next step's copy overwrites the slot.
//     With tparts = n > 0 (rg = isplit = 1) CTA c takes chunk c mod
//     ⌈in/64⌉ over part ⌊c/⌈in/64⌉⌋ of the row blocks (⌈⌈t/bt⌉/n⌉ each,
//     counted at run time, so a part may be empty): its A tile loaded once,
//     each slot holding the block's x tile and dh32's rows, which each
//     thread splits into the hi and lo tiles from the copies it made; dA
//     meets n partials a column. With pdl it waits before its first copy.
//     With xload=tma (over row groups) the CTA is two warpgroups: thread 0
//     of the first brings each step's x tile (and A tile) as TMA boxes
//     (64 columns, 128-byte swizzle; A's rows past r read as zeros) on the
//     slot's full mbarrier, its first lap before pdl's wait; x's boxes
//     carry an L2 evict_first policy (x is read once; dh32 and da32 stay
//     in L2); all threads load every chunk of dh32 they split before
//     splitting any (one round trip); the second warpgroup runs the
//     steps and releases each slot (one arrival a warp on its empty
//     mbarrier) once its wgmma group is complete, so no step passes a CTA
//     barrier. Without fold the CTAs
//     of a row group split its ⌈in/64⌉·rg steps (a chunk of one row
//     block, chunk-major) evenly, part p taking [⌊p·S/isplit⌋,
//     ⌊(p+1)·S/isplit⌋), so that a CTA may begin or end inside a chunk and
//     add a partial sum of fewer than rg blocks. Every consumer waits for
//     its group before it releases the slot (a group kept in flight holds
//     one slot more: docs/kernels/lora.md).
//   - With fold=1 (xload=tma) there is no finalize launch: after its
//     wait each x-kernel CTA rounds a grid-strided share of db32 into dB
//     and zeroes it; at its end the consumer warpgroup makes its red.adds
//     visible (membar.gl) and draws a ticket per chunk it took (atom.inc
//     on a State word, wrapping at the row groups less one, so it is 0
//     again after the run) and, with osplit > 1, one for its row group's
//     dh32 (wrapping at isplit − 1); the CTA that draws a chunk's last
//     rounds da32's columns into dA and zeroes them, the row group's last
//     zeroes its rows of dh32.
//   - maxnreg = 128 caps both GEMM kernels' registers so that two CTAs of
//     8 warps share an SM (the rules ask shared memory for two); no
//     fragments are held then.
//   - Finalize: each thread rounds four f32 of an accumulator into its
//     output and zeroes them where the accumulator is State; regions are
//     laid end to end in one launch.
//   - Space: bt ∈ {64, 128, 256}, warps ∈ {4, 8} with 16 or 32 rows per
//     warp (eight warps only where 16 divides r); bt past 64 only where
//     t > bt/2; rg ∈ {1, 2, 4}, rg·bt ≤ 256 rows (512 with xload=tma,
//     whose two warpgroups split dh) and, past 1, at least
//     two row groups; osplit ∈ {1, 2, 4, 8, 12, 16, 24}, isplit the same
//     and 28 (140 = 28·5 chunks: in = 8960 at a full wave) and 33 (132
//     CTAs over four row groups), leaving no CTA without a chunk (a step,
//     split evenly) and past 1 only while half the split would give fewer
//     than two waves of 132 CTAs; stages ∈ {2, 3, 4}, past 2 only if the
//     longer kernel's CTAs have stages−1 steps; both kernels' shared
//     memory within 227 KB; mma ∈ {sync, wgmma},
//     tparts ∈ {0, 1, 2, 4, 6, 8} (past 0 with wgmma, rg = 1 and
//     isplit = 1), dyload ∈ {cp, tma} (tma without maxnreg), dbsplit 0
//     and, with dyload=tma, the n of 1, 2, 4, 8 that give ⌈out/64⌉·n dB
//     CTAs from half a wave to two waves of 132 (where none does, 8 under
//     half a wave, 1 past two waves), fold ∈ {0, 1} (1
//     with xload=tma), maxnreg ∈
//     {0, 128} (128 with 8 warps and room for two CTAs). The search leaves out x kernels of under half a wave of CTAs
//     where a split could fill one ("x fill"), parts past the row blocks,
//     pdl=0, the wgmma kernel over row groups with cp.async (never faster
//     than mma.sync's best on the 16 qwen1.5b shapes of an H100), dbsplit
//     parts left empty at the shape's t ("dB parts"), and what no H100
//     run picked: the TMA dY kernel with dbsplit = 0 or beside another x
//     kernel than the TMA one, and fold=1 (the TMA dY kernel with dbsplit
//     beside the TMA x kernel won every rank-64 dx=base shape there).
//   - Reference: float64, dh unrounded.
//   - Inputs: dY, x, h, A, B uniform in [−1, 1) rounded to the dtype; s
//     uniform in [0.5, 2).
//   - Tolerance (γ(L, c) = (c·⌈L/16⌉ + 18)·2⁻²³: c roundings per k16 step
//     of a sum of L products exact in f32, 18 for partials, scale and
//     finalize): dh Atol = e = γ(out, 2)·2·out; dB γ(t, 3)·2·t; dA
//     t·ε + γ(t, 5)·t·(H + ε) and dX r·ε + γ(r, 4)·r·(H + ε), with H =
//     2·min(out, the Bernstein bound on |Σ_o dY·B| at probability
//     10⁻¹⁵) and ε = e + δ·H (+2⁻²⁴ in f16) the error of dh as hi + lo;
//     each widened by the output's rounding (kernels.StoreTol).
//   - Exact inputs (kernels.Exacter): nonzero integers in ±1..±v, s a
//     power of two up to 8, (v, s) the pair with the largest s·out·v² that
//     keeps |dh| ≤ 2¹⁵ (hi + lo exact) and dB, dX and dA's partial sums
//     within f32's integers (bf16: 2²³, leaving room for the hi and lo
//     partials) or f16's 65504; x zero but where t ≡ i (mod D), the
//     fewest classes D that keep dA exact (at most in, so every t has a
//     nonzero). None where v = 1 does not fit (f16 at the model's shapes).
//
// docs/kernels/lora.md has the byte floor, the arithmetic intensity
// behind mma.sync and the work left.
package lora
