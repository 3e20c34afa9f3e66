// Package variants describes what can be tuned: parameter spaces of named
// axes with constraints, the Params that pick one point in a space (and
// print and parse as "block=256,vec=4"), problem shapes ("m=2048,n=8960"),
// and model presets such as qwen1.5b from which kernel families derive the
// shapes a fine-tuning run needs.
//
// It knows nothing of PTX or GPUs. Strategies that pick points are built on
// Space.Enumerate; exhaustive enumeration is the only strategy so far.
package variants
