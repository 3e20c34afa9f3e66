// Package elementwise is the elementwise backward families, each one map
// from N inputs to M outputs whose every output element depends only on
// the inputs' elements at its own index (or, for rope_bwd, at its index
// and its rotary partner's), in f32, f16 and bf16 with f32 math:
//   - relu_bwd, gelu_bwd (tanh approximation, as PyTorch's
//     approximate="tanh") and silu_bwd: dx from dy and x, over a flat
//     tensor (n=N) or an [m × n] one;
//   - swiglu_bwd: dgate and dup from dy, gate and up, the backward of
//     the gated MLP's silu(gate)·up, over [m × n];
//   - rope_bwd: dq and dk from the gradients of the rotated q [t × hq × d]
//     and k [t × hk × d] and the cos and sin tables [t × d] (rotate-half
//     layout: column j < d/2 pairs with j + d/2), q and k in one launch.
//
// Rules:
//   - One map, one skeleton: a family gives its operands, the math of one
//     lane (f32 registers in, f32 registers out) and where a unit of work
//     places each operand; the work split, the loads and stores, the
//     guards and the grid are shared.
//   - Runtime dim: a program computes any token count. The token dim is m
//     for an [m × n] tensor, n for a flat one and t for rope_bwd; it is
//     the kernel's last parameter (u32), and the unit count and every
//     bound are computed from it, so the PTX is the same at every value
//     of it. Grids and buffer sizes are expressions of it.
//   - Units: a flat map's unit u is elements [u·vec, u·vec+vec) of every
//     operand. A rope_bwd unit is vec columns of the low half of `heads`
//     consecutive heads of one token, with the same columns of the high
//     half and of both halves of the tables, loaded once for those heads;
//     units are token-major, each token's query heads then its key heads
//     (a unit may hold both kinds), so q's and k's units share one
//     launch, vec divides d/2 and heads divides hq + hk.
//   - Every thread handles ept units, all loads issued before any math. A
//     thread whose ept units are all in range does them unguarded; the
//     one iteration that holds the last units guards each unit past its
//     first. For a flat map, the elements past the last whole unit (fewer
//     than vec) are done by thread 0 of CTA 0, each guarded; the code
//     exists where they can: always for a flat tensor with vec > 1, for
//     [m × n] only when vec does not divide n.
//   - grid=once launches one unit of work per thread; grid=stride launches
//     one full-occupancy wave (2048 threads per SM), never more CTAs
//     than there is work for, and walks the units.
//   - Loads take the read-only path; cache=stream adds .cs (evict first)
//     to loads and stores.
//   - Outputs go to their own buffers (no aliasing of inputs).
//   - rope_bwd reads both halves of the tables, so tables whose halves
//     differ are computed right; its exact inputs draw the halves apart to
//     prove it. Tables computed in the kernel from positions are not
//     offered.
//   - Tolerance: f32 within 1e-5 (plus 1e-6 for the families built on
//     ex2.approx, 4e-6 for swiglu_bwd, whose |dgate| reaches 2.2), rope_bwd
//     within 1e-6 + 1e-6·|ref|; f16 and bf16 within one unit in the last
//     place.
//   - Element indices are u32: shapes of more than 2³¹−1 elements are
//     refused, and a program must not be launched at a token count beyond
//     that either.
package elementwise
