// Package kernels holds gradtune's kernel families. A family is data plus a
// generator: the shapes a model preset needs, the tunable parameter space
// for a shape, Emit (shape, params) → a Program of PTX launches, the
// buffers and their roles, a float64 CPU reference, a cost model (bytes
// and flops) and the tolerance a variant's output must meet.
//
// Families never launch anything; runners do. Every shape is baked into the
// PTX as immediates, so each variant is specialised for one shape.
//
// Decisions recorded here:
//   - Inputs are generated deterministically from the shape key and a seed,
//     already rounded to the buffer's dtype, so the reference sees exactly
//     what the kernel reads.
//   - A buffer with role Accumulate is zeroed by the runner inside the timed
//     region: a backward op that needs a zeroed output pays for zeroing.
//   - Tolerances compare |got − ref| ≤ Atol + Rtol·|ref| element-wise, with
//     ref computed in float64.
package kernels
