// Package nf4gemm holds the NF4 kernel families of QLoRA's backward
// (format: package nf4; reasoning and measurements: docs/kernels/nf4.md).
//
// # nf4_dequant
//
// W [N×K] in NF4 to bf16/f16, shape n, k, block (64 if left out; 64, 128
// or 256), scales=dq for double-quantized scales. A thread converts 1, 2
// or 4 units (unroll) of 4, 8 or 16 packed bytes, one load each, every
// unit's loads issued before the first is converted, the units a grid's
// threads apart so that each warp instruction stays contiguous; the
// lookup axis picks a shared-memory codebook, prmt byte tables (CUTLASS's
// lookup_table_convert) or a selp tree. Every variant is bit-exact:
// fl32(Codebook[c]·absmax) rounded once.
//
// # nf4_gemm_bwd
//
// dX[M×K] = dY[M×N]·dequant(W[N×K]): any m; n and k multiples of the block
// size (refused otherwise; k by nf4.ErrLayout).
// The sync path (sm_80+) mirrors gemm_bwd's grad=dx: 4 warps, a cp.async
// ring of dY tiles, and a W tile per stage that the math warps dequantize
// themselves (dequant=consumer) into gemm_bwd's swizzled layout, read
// with ldmatrix.trans for mma.sync m16n8k16. The wgmma path (sm_90a) is
// gemm_bwd's wgmma kernel with its B tile written by the producer
// warpgroup (gemm.BSource, dequant=producer, gemmwg.go): the packed codes
// arrive by TMA (into each slot, or with codes=ring into a ring of their
// own issued 7 k-tiles ahead) or by each filler's loads (codes=ld), three
// warps (and with dequant=dedicated a warpgroup more) dequantize them into
// the swizzled tile; with cluster=2 or 4 the CTAs of consecutive tile rows
// share the dequantized tile, each writing its share of the rows and
// copying it into the others' shared memory. The register-A path
// (dequant=consumer on wgmma, gemmrs.go) computes dXᵀ = Wᵀ·dYᵀ instead:
// each consumer warpgroup owns 64 columns of dX (one NF4 block of each W
// row), dequantizes its own m64×k16 fragments from TMA-loaded codes and
// the scales warps 1..3 of the producer store, and issues wgmma with A
// in registers; dY's tile is B (bm 128, 192 or 256 is wgmma's N, bn 128
// or 192 its two or three consumers). Rules:
// each path's own features (sync: bk=32, tiles up to 128×128, direct
// stores; wgmma: bk=64, 128 or 256 rows by 128 or 192 columns, a table
// lookup; register-A: the shared-memory table, direct stores, no cluster;
// the deepest ring that fits, persistence only past one wave),
// tile columns within k, shared memory fits, pipeline no deeper than the
// k-loop.
//
// Two paths dequantize the weight once instead of per tile, into a
// scratch buffer w_deq [N×K] that gemm_bwd's dX kernel (gemm.DXGemm, the
// wgmma path) then reads by TMA (streamed.go): dequant=unfused runs
// nf4_dequant's kernel ahead of the GEMM, which follows as a dependent
// launch; dequant=streamed is one launch in which the GEMM CTAs' spare
// producer warps dequantize the weight in 64×64 chunks, in the order the
// k-loops need them, and the thread that loads B waits for the chunks'
// flags (gemm.BProducer). Their other axes are gemm_bwd's (bm, bn,
// stages, splitk, order, persistent, epilogue; consumers follow bm) at a
// point of gemm_bwd's space (DXGemm.Check), with the lookup of the
// unfused kernel (smem or prmt) or the chunks' shared-memory codebook;
// the per-tile paths keep order=m, bn up to 192 and up to 5 stages, and
// splitk=1 but for the register-A path, whose tiles, where they fill less
// than a wave, may split the reduction into at most two waves of work
// items: each stores its f32 partial sums into its slice of gemm_bwd's
// workspace, and gemm_bwd's reduce (gemm.SplitKReduce) adds them in split
// order into dX.
//
// Two search rules (variants.Rule.Search, gemmspace.go) leave the sync
// path and per-tile dequantization by producer or dedicated warps out of
// tune's search, each with the bound measured on the H200 that it cites;
// the space, and so the interpreter's sweeps, keeps them.
//
// # An adapter's dX (lora=r)
//
// lora=r (r a multiple of 8 up to 64; 0, left out, for none) adds a LoRA
// adapter's share of dX in the same GEMM, as gemm_bwd's lora=r does: dX =
// dY·dequant(W) + dh·A with dh = s·dY·B [M×r] (lora_bwd's output) and A
// [r×K], buffers dh and a. The reduction goes on past N through one more
// k-tile (⌈r/64⌉), loaded densely: on the shared-memory-B path
// (gemm.WrittenB.LoRA) the producer thread waits for the slot, announces
// the slot's A and B bytes on its full barrier and loads both by TMA,
// dh's box as A and A's rows as B in the atoms the fillers write
// (MN-major, element (k, n) at (n/64)·8192 + k·128 + (n%64)·2,
// swizzled), zero past r; it issues no codes for the k-tile (with
// codes=tma it arrives on the slot's raw barrier without bytes, keeping
// its phase a lap; codes=ring skips the k-tile in the codes' ring). The
// fillers' Load for it runs with more false (as past a tile's last
// k-tile: block 0's scale), they wait for the slot's empty barrier,
// dequantize nothing and arrive on the full barrier as on any
// k-tile (with a cluster filler 0 alone, and no share is copied: each
// CTA loads the adapter's whole tile), so its arrival count stays the
// one it was initialized with. The unfused and streamed paths run
// gemm_bwd's lora=r kernel (gemm.DXGemm.LoRA; its rules keep stream-K
// out; a streamed B's gate is for the base k-tiles only). Rule: neither
// the sync path (its math warps write every W tile between their MMAs:
// the adapter's tile would need loads and stores of its own there) nor
// the register-A path (its A operand, Wᵀ, is built in registers from
// codes: the adapter's Aᵀ would need fragment loads of its own) takes
// it. The baselines stay the dense cuBLAS GEMM and dequant+cublas, both
// without the adapter's GEMM: less work than the unfused path, which
// also runs dh·A and adds it.
//
// From kernels/hopper (the pipeline library; its doc has the rules) the
// sync path takes the warp's MMA helpers (hopper.Warp: ldmatrix
// offsets, accumulators, k16 steps, guarded stores) and the cp.async
// ring (hopper.CpAsyncLoop) and keeps its loaders; the register-A path
// takes the TMA ring (hopper.Ring, its Cursor and the consumers'
// Releaser), the register split (hopper.Split: the producer keeps
// rsProducerRegs for its scale loaders) and the persistent loop (order
// m, hopper.ForTiles and DownRows). The shared-memory-B path is
// gemm_bwd's kernel and takes the library through it.
//
// Token count at run time: the sync and register-A programs take m, the
// rows of dY and dX, as their last parameter (u32) and compute the tile
// rows, the persistent loop's bound and the row guards from it; their
// grids, dy's tensor map and the dy and dx buffers are expressions of m
// (Program.RuntimeDims), so the PTX emitted at one m is the same at every
// m and computes any of them (rows past m: cp.async's zero fill on the
// sync path, TMA's on the register-A path, and masked stores); so do the
// unfused and streamed programs, through gemm_bwd's. A split-K program
// serves m only while the split rule admits it (Program.RuntimeMax:
// its workspace grows with m). The shared-memory-B
// wgmma path (gemm.WrittenB) still bakes m in.
//
// Buffers (u8 buffers are padded to whole 32-bit words): dy, w4 (u8,
// packed, bitsandbytes' high-first order), absmax (f32) or absmax_q (u8),
// code2, absmax2, dq_offset (f32) with scales=dq, w_bf16/w_f16 (the
// weight dequantized exactly, read only by the cuBLAS baseline), dx,
// with lora=r dh [M×r] and a [r×K]; the
// unfused and streamed programs add w_deq (Scratch), the streamed ones
// also gemm_bwd's chunk flags (State, left zero), and split-K programs
// (unfused, streamed, register-A) gemm_bwd's f32 workspace.
//
// # Validation
//
// Inputs start from random codes and scales in [0.3, 0.95) (double-
// quantized with bitsandbytes' dynamic map for scales=dq), so the exact
// dequantized weight is known. The reference is a float64 GEMM on the
// weight dequantized from the NF4 buffers and rounded to the dtype. Every
// variant is validated on two inputs (kernels.Exacter): dY uniform in
// [−1, 1), within (2·⌈N/16⌉ + 16)·2⁻²³·N plus the output's rounding (16:
// the partial sums split-K or stream-K may add); and the same weight with
// dY of ±1 in gemm_bwd's exact pattern over the rows, few enough
// nonzeros a row (exactTerms, from the weight's largest value and the ulp
// of its smallest) that every partial
// sum is a multiple of that ulp below 2²⁴ of them, exact in f32, and the
// outputs must match bit for bit: at every shape with at least
// ⌈N/exactTerms⌉ rows, which every preset shape has. A wrong scale block,
// code or reduction row then fails, however long the reduction. With
// lora=r the random bound counts N + r, and the exact inputs add dh and
// A of ±1, dense, whose r products a row exactTerms leaves room for.
package nf4gemm
