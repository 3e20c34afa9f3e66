// Package attn is the flash_attn_bwd family: attention's backward by the
// FlashAttention-2 algorithm (mma=sync) or FlashAttention-3's schedule
// (mma=wgmma). Given Q, K, V, the forward's output O, its
// gradient dO and the saved log-sum-exp of the scaled scores, it
// computes, per sequence and query head (scale = 1/√d, the KV head of
// query head h is h/G, G = hq/hk):
//
//	S  = Q·Kᵀ·scale,  P = exp(S − lse)  (0 where the causal mask hides a key)
//	dV = Σ_g Pᵀ·dO,   dP = dO·Vᵀ,  D = rowsum(dO ⊙ O),  dS = P ⊙ (dP − D)
//	dQ = dS·K·scale,  dK = Σ_g dSᵀ·Q·scale
//
// Rules:
//   - Shapes: b (optional, 1), s, hq, hk (hq a multiple of hk), d (64 or
//     128), causal (optional, 0; 1: key j is visible to query i iff
//     j ≤ i, queries and keys of one length), the dtype (bf16 or f16;
//     f32 accumulation). No runtime dim: s is baked into the programs.
//     From a preset: its heads at its tokens as one sequence, causal.
//   - Buffers, token-major as FlashAttention's: q, o, do [b·s, hq, d], k,
//     v [b·s, hk, d] (Input, the dtype), lse [b, hq, s] (Input, f32, the
//     natural log); dq [b·s, hq, d], dk, dv [b·s, hk, d] (Output). A
//     program's own (Scratch, written before they are read): lse2 and dd
//     [b·hq·sp] f32, sp = s rounded up to 128 (each head's row padded so
//     that a query block's values are whole 16-byte chunks), and dq32
//     [b·s·hq·d] f32.
//   - Launches, in order: the preprocess, one row (query, head) of the
//     padded scratch per d/8 threads: D = Σ dO·O (an fma chain of 8, a
//     butterfly over the row's threads) into dd, lse·log₂e into lse2,
//     and zeros into the row's dq32; padding rows (i ≥ s) get D = 0 and
//     lse2 = +∞, so that P = 0 there; where a KV head's query heads are
//     split over CTAs (heads > 0) also zeros into the dk32 and dv32 rows
//     of the same token and of heads below hk. The main kernel (sync:
//     one CTA per block of bn keys, KV head and sequence). dQ's
//     conversion: dq32 rounded into dq, 8 elements a thread; with
//     heads > 0 also dk32 into dk and dv32 into dv.
//   - The sync main kernel: the K and V tiles [bn × d] are loaded once (rows
//     past s zero-filled); a cp.async ring of stages slots
//     (hopper.CpAsyncLoop) walks the query blocks of bm rows of every
//     query head of the KV group, each slot holding Q and dO [bm × d] and
//     the block's lse2 and D [bm]. Causal: a key block starting at n0
//     skips the query blocks before ⌊n0/bm⌋, which lie wholly above the
//     diagonal. Warp w owns keys [16w, +16) of the block (bn = 16·warps)
//     and, per query block, computes Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ ([16 ×
//     bm], mma.sync m16n8k16 from ldmatrix fragments), P = 2^(S·scale·log₂e
//     − lse2) by ex2.approx, the mask, dS = P·(dP − D) in f32, then
//     dV += Pᵀ·dO and dK += dSᵀ·Q with P and dS rounded to the dtype as
//     A fragments straight from the accumulators (hopper.PackA); dK and
//     dV stay in registers to the end (dK scaled once, keys past s not
//     stored). dSᵀ, rounded, goes to a [bn × bm] shared tile; after a CTA
//     barrier the warps compute the CTA's dQ partial dS·K·scale [bm × d]
//     in pieces of 16 rows by 32 columns, each reduced over the bn keys
//     and added into dq32 by red.global.add.v2.f32 (rows past s left
//     out). The ring's barrier at the top of the next iteration orders
//     the dSᵀ tile's reads before its next writes.
//   - The wgmma main kernel (sm_90a, wgmma.go): warpgroup 0 is the
//     producer (thread 0 issues TMA), warpgroup 1 + c a consumer owning
//     keys [64c, +64) of the block (bn = 64·consumers ≤ d, warps =
//     4 + bn/16). Grid (hq/hpc, b, key blocks): CTA x takes query heads
//     [x·hpc, +hpc) of KV head x·hpc/G, hpc = heads or G, so the longest
//     causal key blocks start first. Shared memory from a 1024-aligned
//     base: K, V [bn × d] and two dS buffers [bm × bn], each in 64-column
//     chunks of 128-byte rows in the 128-byte swizzle; a ring of stages
//     slots, each Q, dO [bm × d] (the same chunks) then lse2, D [bm] f32;
//     a K/V barrier and the ring's full (1 arrival and TMA bytes) and
//     empty (one per consumer warp) barriers. Tensor maps: q, do
//     [b·s, hq, d] in boxes {64, 1, bm}, k, v [b·s, hk, d] in boxes {64,
//     1, bn}, lse2, dd [b·hq, sp] in boxes {bm, 1}. Per query block a
//     consumer waits for its slot; issues Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ
//     (m64n64k16, A and B K-major from shared memory) as two groups;
//     after the first completes takes P = 2^(S·scale·log₂e − lse2), 0
//     where the key is masked or past s (keys of the next sequence),
//     after the second dS = P·(dP − D); rounds both into register A
//     fragments; stores dSᵀ transposed (stmatrix.x4.trans) into chunk c
//     of the dS buffer of the block's parity; issues dV += Pᵀ·dO (RS,
//     m64n{d}k16, dO MN-major); fences the async proxy and meets the
//     other consumers at named barrier 1; issues dQ = dS·K for its
//     64-column chunks c, c + consumers, … (A the dS buffer K-major, B
//     K's chunk MN-major) and dK += dSᵀ·Q (RS, Q MN-major); adds each dQ
//     chunk times scale into dq32 as it completes, by red.add.v4 (lane
//     pairs swap a row pair; queries past s left out) or, with dq=tma,
//     staged in the consumer's [64 × 64] f32 tile (two 32-column halves
//     in the 128-byte swizzle) and added by its thread 0's two TMA
//     reductions (cp.reduce.async.bulk.tensor .add over a dq32 tensor
//     map, boxes {32, 1, bm}) after an async-proxy fence and the
//     consumers' barrier 2; the staging is rewritten only after the
//     thread's bulk wait (.read) and a barrier; waits for all and
//     releases the slot. Two dS
//     buffers make a consumer's next-but-one write come after every
//     consumer's dQ of this block, which each waited before the next
//     barrier. At the end dK (times scale) and dV are stored, or with
//     heads > 0 added into dk32 and dv32 by red.add.v2.
//   - Space: mma sync or wgmma; bm, bn ∈ {64, 128}; stages ∈ {2, 3}.
//     sync: warps = bn/16, heads = 0, a thread's accumulators (Sᵀ and
//     dPᵀ: bm/2 each; dK and dV: d/2 each) at most 192 registers, so
//     bm = 64 at d = 128; shared memory stages·(4·bm·d + 8·bm) + 4·bn·d +
//     2·bn·bm within 227 KB, dq = red. wgmma: bm = 64, bn ≤ d, warps =
//     4 + bn/16, heads 0 or a divisor of the group below it, dq red or
//     tma (its staging, 16 KB a consumer, counted), shared memory within
//     227 KB.
//   - Reference: float64 from the inputs as given (lse as rounded to f32,
//     D from the rounded o).
//   - Inputs: q, k, v, dO uniform in [−1, 1) rounded to the dtype; o and
//     lse from the forward in float64 (o rounded to the dtype, lse to
//     f32).
//   - Tolerance (tolerance.go): the outputs' rounding (kernels.StoreTol)
//     plus Atol = λ·u·√(Σ t²) + (⌈L/16⌉ + 8)·2⁻²³·Σ|t|: u the dtype's
//     unit roundoff, the error of rounding P (dV) or dS (dK, dQ) to the
//     dtype taken as independent per element (Hoeffding at 10⁻¹⁵, λ =
//     8.4), the terms' sizes those of the random inputs (P within e of
//     1/n_i for a query seeing n_i keys, Σ_i 1/n_i² = π²/6 causal or 1/s,
//     dP − D of mean square 4d/9, inputs of mean square 1/3), and f32's
//     accumulation one rounding per k16 step. A model of these inputs,
//     not a bound for any input; TestErrors logs the errors against it
//     (at most 0.16 of Atol on the tested shapes).
//
// docs/kernels/attn.md has the design, the FLOP count and the work left.
package attn
