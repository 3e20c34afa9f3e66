// Package softmax is the softmax_bwd family: dx = y ⊙ (dy − Σ_row dy ⊙ y)
// over [m rows × n columns], for any n, as PyTorch's
// _softmax_backward_data over the last dimension.
//
// Rules:
//   - Shapes: from a preset, the attention probabilities of one layer,
//     [batch·heads·seq × seq] with seq = min(Seq, Tokens) and batch =
//     Tokens/seq; specs name m and n.
//   - The row count m is taken at run time (package rows): one program
//     computes every m; n is fixed.
//   - The work split, row storage and reduction are package rows' (row
//     groups of at least 4 threads, at most 512 threads per CTA, rows of
//     any length in tiles with store=reread or smem, and half the widest
//     vector width with store=regs).
//   - A row's dot product is accumulated in vec independent f32 fma
//     chains, added pairwise, then reduced over the row group; the output
//     pass computes y·(dy − dot).
//   - Inputs: y is the softmax of logits uniform in [−2, 2], computed in
//     float64 and rounded to the dtype; dy is uniform in [−1, 1].
//   - Tolerance: Atol = ymax·(1.01·K + 8)·u, K = n/1024 + 56, Rtol = 4u
//     (u = 2⁻²⁴), plus the rounding of the stored dx for f16 and bf16.
//
// The byte floor, the targets, the design and the tolerance's derivation
// are in docs/kernels/rows.md.
package softmax
