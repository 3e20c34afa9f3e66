// Package variants describes what can be tuned: parameter spaces of named
// axes with constraints, the Params that pick one point in a space (and
// print and parse as "block=256,vec=4"), problem shapes ("m=2048,n=8960"),
// and model presets such as qwen1.5b from which kernel families derive the
// shapes a fine-tuning run needs.
//
// It knows nothing of PTX or GPUs. Strategies that pick points are built on
// Space.Enumerate, which lists the allowed points in axis order (the last
// axis varies fastest). A space a Typed value describes enumerates on one
// typed params value that follows an odometer over the axes, each value
// decoded once, so a combination its rules reject costs only their calls
// (a rule's verdict depends on every field it reads, which the package
// cannot see, so every combination is still visited: gemm_bwd's 3.1 M take
// about 0.6 s); an untyped Space builds Params for every combination.
package variants
