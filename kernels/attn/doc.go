// Package attn is the flash_attn_bwd family: attention's backward by the
// FlashAttention-2 algorithm. Given Q, K, V, the forward's output O, its
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
//     lse2 = +∞, so that P = 0 there. The main kernel, one CTA per
//     (block of bn keys, KV head, sequence). dQ's conversion: dq32
//     rounded into dq, 8 elements a thread.
//   - The main kernel: the K and V tiles [bn × d] are loaded once (rows
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
//   - Space: bm, bn ∈ {64, 128}, warps = bn/16, stages ∈ {2, 3}; a
//     thread's accumulators (Sᵀ and dPᵀ: bm/2 each; dK and dV: d/2 each)
//     at most 192 registers, so bm = 64 at d = 128; shared memory
//     stages·(4·bm·d + 8·bm) + 4·bn·d + 2·bn·bm within 227 KB.
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
