// Package elementwise is the activation backward families relu_bwd,
// gelu_bwd (tanh approximation, as PyTorch's approximate="tanh") and
// silu_bwd: dx[i] from dy[i] and x[i] alone, over a flat tensor (n=N) or
// an [m × n] one, in f32, f16 and bf16 with f32 math.
//
// Rules:
//   - Every thread handles ept vector units of vec elements (16 bytes at
//     most), all loads issued before any math; unit u covers elements
//     [u·vec, u·vec+vec). The n mod vec leftover elements are done by
//     thread 0 of CTA 0.
//   - grid=once launches one unit of work per thread; grid=stride launches
//     one full-occupancy wave (2048 threads per SM) that walks the units,
//     never more CTAs than there is work for.
//   - Loads take the read-only path; cache=stream adds .cs (evict first)
//     to loads and stores.
//   - Tolerance: f32 within 1e-5 (plus 1e-6 for the families built on
//     ex2.approx); f16 and bf16 within one unit in the last place.
//   - Element indices are u32: shapes of more than 2³¹−1 elements are
//     refused.
package elementwise
