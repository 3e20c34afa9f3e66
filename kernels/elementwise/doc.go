// Package elementwise is the activation backward families relu_bwd,
// gelu_bwd (tanh approximation, as PyTorch's approximate="tanh") and
// silu_bwd: dx[i] from dy[i] and x[i] alone, over a flat tensor (n=N) or
// an [m × n] one, in f32, f16 and bf16 with f32 math.
//
// Rules:
//   - Runtime dim: a program computes any token count. The token dim is m
//     for an [m × n] tensor (m·n elements) and n for a flat one; it is the
//     kernel's last parameter (u32), and the element and unit counts and
//     every bound are computed from it, so the PTX is the same at every
//     value of it. Grids and buffer sizes are expressions of it.
//   - Every thread handles ept vector units of vec elements (16 bytes at
//     most), all loads issued before any math; unit u covers elements
//     [u·vec, u·vec+vec). A thread whose ept units are all in range does
//     them unguarded; the one iteration that holds the last units guards
//     each unit past its first. The elements past the last whole unit
//     (fewer than vec) are done by thread 0 of CTA 0, each guarded; the
//     code exists where they can: always for a flat tensor with vec > 1,
//     for [m × n] only when vec does not divide n.
//   - grid=once launches one unit of work per thread; grid=stride launches
//     one full-occupancy wave (2048 threads per SM), never more CTAs
//     than there is work for, and walks the units.
//   - Loads take the read-only path; cache=stream adds .cs (evict first)
//     to loads and stores.
//   - Tolerance: f32 within 1e-5 (plus 1e-6 for the families built on
//     ex2.approx); f16 and bf16 within one unit in the last place.
//   - Element indices are u32: shapes of more than 2³¹−1 elements are
//     refused, and a program must not be launched at a token count beyond
//     that either.
package elementwise
