// Package linxent is the linear_cross_entropy_bwd family: the LM head
// and the mean cross-entropy, forward and backward, without the logits
// in memory, as PyTorch's cross_entropy(x @ w.T, labels,
// ignore_index=-100, reduction="mean") with w frozen:
//
//	z = x·wᵀ per row, lse = log Σ_c e^z, p = e^(z − lse), F = 1 + 2λ·lse
//	G[r,c]  = dloss/n_valid · (F·p[r,c] − ε/v − (1−ε)·[c = label[r]])
//	dx[r]   = Σ_c G[r,c]·w[c]
//	loss[r] = lse[r] − (1−ε)·z[r,label[r]] − ε/v·Σ_c z[r,c] + λ·lse[r]²
//
// with dx and loss zero on a row whose label is ignore_index (−100), ε the
// label smoothing and λ the z-loss coefficient (both 0 unless the shape
// has them), as cross_entropy_bwd; and, with dw=1 or 2, the head's
// gradient (a trained head, or tied embeddings whose gradient it adds
// to):
//
//	dw[c] (+)= Σ_r G[r,c]·x[r]
//
// Rules:
//   - Buffers: x [t·h] and w [v·h] in the dtype (bf16, f16); labels [t]
//     i32, or i64 with labels=i64 (read by their low 32 bits, as
//     cross_entropy_bwd does); dloss [1] f32, the upstream gradient of the
//     mean loss; n_valid [1] f32, the labels that are not ignore_index
//     (the trainer counts them); dx [t·h] in the dtype; lse [t] f32 and
//     loss [t] f32 per row (loss not divided by n_valid). A label outside
//     [0, v) other than ignore_index is the caller's error: its row's
//     values are undefined, but no memory outside the buffers is touched.
//     With dw=1, dw [v·h] f32 is an output; with dw=2 an inout buffer the
//     head's gradient is added to (the runner restores it before each
//     validation; timed runs add to what the last left, the same work).
//   - Shapes: from a preset, the head [Vocab × Hidden] at its tokens; h a
//     multiple of 8; v any size; smooth (ε, below 1, baked into the PTX)
//     and zloss (1: λ read at run time from zloss_scale [1] f32) as
//     cross_entropy_bwd takes them.
//   - The vocabulary is cut into chunks of `chunk` rows of w, the last
//     shorter; a chunk's logits and probabilities are rows of ld = w
//     rounded up to 8 columns (16-byte rows; the pad reads as zeros and is
//     written as zero probabilities). Per chunk, three launches:
//     1. the logits GEMM (gemm.Custom, wgmma): z[t×ld] = x·w[c0:c0+w]ᵀ in
//     f32, B K-major through a tensor map at w's byte offset c0·h·size
//     whose rows past the chunk read as zeros;
//     2. the softmax kernel, one CTA of sblock threads per row, the row
//     held in registers (at most 16 float4 per thread): the chunk's
//     maximum merged into the row's running maximum mL (log₂ units, f32),
//     P = 2^(z·log₂e − mL) written in the dtype, α = 2^(mL_old − mL),
//     s = s_old·α + ΣP, and z[label] where the label is in the chunk
//     (statistics [t×4] f32: mL, s, z[label], a pad word); every 2^ is
//     ex2.approx.ftz (a value under 2⁻¹²⁶ is 0), as in cross_entropy_bwd;
//     3. the gradient GEMM (gemm.Custom): acc[t×h] = α[row]·acc + P·w[c0:c0+w]
//     in f32 (the first chunk stores P·w), B MN-major at the same offset.
//     Then the finishing kernel, one CTA per row: lse = (mL + log₂ s)·ln 2,
//     the loss, dx = g·F/s·acc − g·(1−ε)·w[label] − g·ε/v·Σ_c w_c in the
//     dtype. With label smoothing the softmax kernel also adds each
//     chunk's Σz to the row's (the fourth statistics word), and two
//     launches ahead of the chunks sum w's columns (wsum.go: 32 CTAs per
//     32 columns, then the partials in a fixed order). The
//     first chunk's softmax starts from nothing (α = 0). Kernels that
//     differ only in the chunk's offset are one entry launched with other
//     tensor maps: a program has at most two logits GEMMs, three gradient
//     GEMMs and three softmax kernels, whatever v is.
//   - softmax=epilogue (without dW): no f32 logits and no softmax kernel.
//     A probe launch (chunk 0's logits GEMM keeping only each row's
//     maximum; probe=2048: over chunk 0's first 2048 classes, a launch of
//     2048 columns' tiles) gives ref_0; then per chunk j two launches: the logits GEMM
//     whose epilogue (gemm.TileEpilogue, online.go) writes
//     P = 2^(z·log₂e − ref_j) in the dtype, where ref_j is the row's
//     maximum over the chunks before j (log₂ units), adds the tile's ΣP
//     into s_j (and Σz into zs_j), raises ref_{j+1} by an atomic max of
//     an order-preserving u32 image, stores z[label] from the thread
//     holding it, and in the first column's tiles α = 2^(ref_{j−1} −
//     ref_j); and the gradient GEMM as above. The finishing kernel takes
//     mL = ref_n, s = Σ_j s_j·2^(ref_j − mL) and scales acc by
//     2^(ref_{n−1} − mL). A logit more than 100 bits (f16: 15) over its reference
//     is clamped and its row flagged; the repair kernel (one CTA a row,
//     returning at once on unflagged rows) recomputes a flagged row's
//     maximum, sum and Σ p·w exactly from x and w, and the finishing
//     kernel takes those instead. The per-row words (refs, sums, z[label],
//     the flag: 3n+3 per row, State) are zeroed by the finishing kernel.
//     pdl=1 chains the GEMMs as programmatic dependent launches (each
//     CTA lets the next launch start as it begins; each GEMM's producer
//     waits for the previous launch before its first load); pdl=2 moves
//     the logits GEMMs' wait to their epilogue, since no launch of the
//     chain writes x or w, so that their main loop overlaps the previous
//     gradient GEMM's tail (the interpreter runs launches one after
//     another: it checks the values, not this ordering).
//     ref=fixed (bf16): every chunk's reference is ref_0, so the logits
//     GEMMs raise no ref_{j+1} and write no α, the gradient GEMMs past
//     the first add P·w into acc by red.global.add.v2.f32 (gemm.Custom
//     Reduce: nothing loaded, one add an element a launch, in the
//     launches' order), and s = Σ_j s_j. A logit more than 100 bits over
//     chunk 0's maximum is repaired as above.
//     zctas=2 builds the logits GEMMs (and the probe) for two CTAs an
//     SM (gemm.Tiling's PerSM): each within half the shared memory (three
//     32 KB stages of x's and w's 128×64 tiles, against six) and half the
//     register file, one consumer warpgroup over a 128-row tile, so that
//     one CTA's softmax epilogue (the exponentials and P's stores after
//     its k-loop) runs while the other's k-loop keeps the tensor cores
//     busy.
//     tblock > 0 (ref=fixed) runs the chunk loop in passes over blocks
//     of tblock rows (passes.go): maxPasses = 4 passes, pass k over rows
//     from k·tblock, the last taking every row past the third block, so
//     that the launches do not depend on t; each pass's launches are the
//     one-pass launches with the GEMMs' row count (the dim t) replaced by
//     the pass's rows, x, the rows' words, the labels and acc offset to
//     its first row, and made only where it has rows (configs.Launch's
//     When). The probe, the repair and the finishing kernel take every
//     row at once; p holds one pass's rows. A pass's probabilities
//     (tblock × chunk) and accumulator rows stay in L2 where those of
//     every row would not (at 8192 tokens and chunk 8192, 134 and 50 MB).
//   - dW (dw=1, 2): after the finishing kernel, a second pass over the
//     chunks, last to first: the logits GEMM again (not for the last
//     chunk, whose logits are still in z), the gradient kernel writing G
//     in the dtype over the chunk's probabilities (p = 2^(z·log₂e − lseL),
//     lseL = mL + log₂ s from the final statistics), and the dW GEMM dw[c0:c0+w] (+)= Gᵀ·x in f32, t its
//     reduction (gemm.Custom with M = w: A = G and B = x MN-major; its
//     ring as deep as fits, independent of t). Four GEMMs per chunk, one
//     more than the floor with dW.
//   - Scratch (the program's): z [t·ld] f32, p [t·ld] in the dtype, acc
//     [t·h] f32, alpha [t] f32 (not with ref=fixed), stats [t·4] f32 (mL, s, z[label], Σz),
//     with label smoothing wsum [33·h] f32: with chunk = 4096 at
//     t = 2048, h = 1536, 61 MB, a tenth of the bf16 logits (622 MB).
//   - The token count t is taken at run time (RuntimeDims): the GEMMs
//     read it as their parameter m, the other kernels' grids are t CTAs;
//     nothing else in the program depends on it.
//   - Space: chunk of 256 to 8192 rows, at most 64 chunks, none past the
//     vocabulary's next power of two; each GEMM's tile (zbm×zbn, dbm×dbn)
//     as the wgmma path's rules take it at t (registers, shared memory,
//     small tiles only where 128×128 ones leave SMs idle), a persistent
//     grid only past one wave of the first chunk's tiles; sblock threads
//     holding at most 16 vectors of a row, no more than a row needs; the
//     dW GEMM's tile wbm×wbn (128×128, a single point, without dW);
//     softmax=epilogue only without dW, with sblock 128 (it runs no
//     softmax kernel) and h at most 11776 (the repair kernel's row of f32
//     sums in static shared memory); pdl, ref, pstore, probe and zctas
//     past their defaults only with softmax=epilogue; tblock only with
//     ref=fixed and below t (zctas=2 where one
//     consumer's accumulators fit half the register file, at most 128
//     columns of 128 rows: at the LM head, where tiles under 128×128 are
//     out for its long reduction, 128×128 alone); ref=fixed and probe=2048
//     only in bf16 (f16's 15 bits of headroom over a reference from fewer
//     classes would send rows to the repair kernel); probe below chunk
//     0's classes; pstore=quad with zbn 64 or 128 (wider tiles spill
//     under ptxas 12.4).
//   - Inputs: x uniform in [−1, 1], w uniform in [−6/√h, 6/√h] (logits of
//     standard deviation 2 at every h), rounded to the dtype; labels
//     uniform in [0, v), every eighth row (offset by the seed)
//     ignore_index; dloss uniform in [0.5, 2); n_valid their count;
//     zloss_scale uniform in [0.01, 0.1).
//   - Tolerance (data.go): the logits' f32 error E_z (the GEMM's bound),
//     the rescales' and ex2/lg2 errors per chunk for lse and loss, and
//     for dx P's rounding to the dtype (Σ p·w moves by at most ε_P·max|w|)
//     plus E_z's effect on p; for dw G's rounding and p's errors times a
//     bound on Σ_r p[r,c] + the class's labels (dwTolerance). With dw=2
//     the initial dw is uniform in [−1, 1].
//
// docs/kernels/linxent.md has the floor and the design's reasoning.
package linxent
