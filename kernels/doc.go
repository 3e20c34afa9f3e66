// Package kernels is the contract between gradtune's kernel families and
// the rest of the tool. A family is data plus a generator: the shapes a
// model preset needs, the tunable parameter space for a shape, Emit
// (shape, params) → a Program of PTX launches, the buffers and their
// roles, a float64 CPU reference, a cost model (bytes and flops) and the
// tolerance a variant's output must meet.
//
// Families live in packages of their own (kernels/elementwise, softmax,
// norm, lppool, …) over the shared generator libraries kernels/gen and
// kernels/rows, and are listed in kernels/catalog. Each is written against
// its own typed Shape and Params (Def) and becomes an untyped Family
// through Define, which decodes the canonical k=v strings once; commands,
// runners and the store see only the untyped Family.
//
// Rules:
//   - Families never launch anything; runners do. Every shape is baked
//     into the PTX as immediates, so each variant is specialised for one
//     shape.
//   - Inputs are generated deterministically from the shape key and a
//     seed, already rounded to the buffer's dtype, so the reference sees
//     exactly what the kernel reads.
//   - Family.Buffers lists the shape's data; a program declares its own
//     State and Scratch buffers (Program.Buffers), so a variant allocates
//     only what it uses.
//   - A buffer with role Accumulate is zeroed by the runner inside the
//     timed region: a backward op that needs a zeroed output pays for
//     zeroing. State is zeroed once at load, and validation checks that
//     every run leaves it zero. An InOut buffer is an input the launches
//     overwrite with their result: the runner copies its data back before
//     each validation and compares it after.
//   - Tolerances compare |got − ref| ≤ Atol + Rtol·|ref| element-wise, per
//     output buffer, with ref computed in float64.
//   - A family whose arithmetic allows it gives a second input set
//     (Exacter): inputs on which every variant computes its result exactly
//     (for a GEMM, integers whose partial sums are exact in f32 in any
//     order), validated beside the random ones with zero tolerance against
//     Reference rounded once to each output buffer's dtype. It catches what
//     a tolerance derived for random inputs cannot: an error of one term
//     of a long sum.
//   - Baselines (vendor libraries such as cuBLAS) are described, not
//     called, by a family (Baseliner); the runner times and validates them.
//
// docs/architecture.md shows how to add a family.
package kernels
