// Package lppool is lp_pool1d_bwd: the backward of PyTorch's
// torch.nn.functional.lp_pool1d over x of shape [N, C, L], pooling along L
// with padding 0 and dilation 1. docs/kernels/lppool.md derives the
// formulas from PyTorch's source, explains the design and records the
// H200 measurements.
//
// # What it computes
//
// The forward is the LP norm of each window, scaled for a window that ceil
// mode clips to c_w < k elements of the row:
//
//	y_w = ((k/c_w) · Σ_{i∈w} |x_i|^p)^(1/p)
//	Lout = floor((L − k + (ceil ? s−1 : 0)) / s) + 1, less one in ceil
//	       mode when the last window would start at or past L.
//
// The kernel reads x, dy and the saved y and writes
//
//	dx_i = Σ_{w ∋ i} dy_w · k/c_w · sgn(x_i) · (|x_i| / y_w)^(p−1)
//
// where a window with y_w = 0 contributes 0 and an element with x_i = 0
// gets 0, for every p.
//
// # Shapes
//
// n, c, l, window and p are required; stride defaults to window (the key
// always prints it); ceil=1 selects ceil_mode. window and stride are at
// most 64, 0.25 ≤ p ≤ 16 with up to three decimals, f64 takes only an
// integer p, n·c·l stays within u32 indexing, the shape has at least one
// output, and f16 only shapes whose y it can hold.
//
// # Kernels
//
//   - gather: a thread owns units of spt·stride consecutive elements of a
//     row; each element sums its windows. No atomics; x and dx move in
//     vectors of vec elements, dy and y in scalars.
//   - scatter: a thread owns spt consecutive windows and adds each covered
//     element's term into dx with red.global.add, after a first launch that
//     zeroes the target. 16-bit dtypes add into an f32 accumulator the
//     program declares as Scratch, and a third launch rounds it into dx.
//   - scatter_edges: scatter that stores the elements no other thread's
//     window covers with plain stores.
//
// pow=mul (integer p, only for p ≤ 4 in f32 math) computes the powers by
// multiplies and one reciprocal per window; pow=exp2 computes
// (|x_i|/y_w)^(p−1) with ex2.approx and lg2.approx. f64 always uses mul.
//
// # The batch at run time
//
// n is the programs' runtime dim (Program.RuntimeDims): the PTX emitted at
// one n computes every n the shape limits allow, and is the same text at
// every n. Every kernel (zeroing, main, converting) takes n as its last
// parameter, a u32 after the pointers, and derives from it the counts that
// depend on it; c, l, the window geometry and the plans stay immediates. A
// launch's grid is ⌈n·per / items per CTA⌉ for its per items per batch
// element; the shape's buffers and the f32 accumulator hold n times a batch
// element's elements. A guard is emitted where some n needs one, chosen
// from the baked dims alone. When a main kernel's units (or groups) per
// batch element are no multiple of block·ept, its body is emitted twice
// behind a branch uniform in the CTA: unguarded for the CTAs whose chunk is
// whole, and for the last, partial one with items guarded by comparing the
// items left, n·per − first, with immediates. The zeroing and converting
// kernels, four items per thread, guard the whole quads unless the quads
// per batch element are a multiple of the block; when the items per batch
// element (4-byte words to zero, elements to convert) are no multiple of 4,
// the thread past the last whole quad stores the partial one. Where no n
// needs a guard the kernel never reads n: the benchmark shape's gather
// kernels do not.
//
// Inputs keep |x| ≤ 2 (and |x| ≥ 0.25 or x = 0 when p < 1), put zeros at
// every 37th element and across the first window of the second row, and
// compute y from x in float64, rounded to the dtype.
package lppool
