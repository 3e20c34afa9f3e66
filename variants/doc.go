// Package variants describes what can be tuned: parameter spaces of named
// axes with constraints, the Params that pick one point in a space (and
// print and parse as "block=256,vec=4"), problem shapes ("m=2048,n=8960"),
// and model presets, built in such as qwen1.5b or read from a Hugging Face
// config.json (ReadConfig), from which kernel families derive the shapes a
// fine-tuning run needs.
//
// It knows nothing of PTX or GPUs. Strategies that pick points are built on
// Space.Enumerate, which lists the allowed points in axis order (the last
// axis varies fastest). A space a Typed value describes enumerates on one
// typed params value, walked depth first over the axes, each value decoded
// once, so a combination its rules reject costs only their calls; a rule
// that lists the axes it reads (Rule.Axes) is checked as soon as they are
// set and prunes every combination below a refusal, so a family whose
// early axes decide most refusals enumerates in a fraction of its
// product; an untyped Space builds Params for every combination.
//
// A rule marked Search states a measured fact rather than a limit of the
// code (a path that never came near the winner on recorded runs): the
// space keeps the points it refuses, so the interpreter's sweeps, Check
// and recorded points see them, and only the tuner's search
// (Space.Search) leaves them out, unless the user fixes an axis the rule
// reads. Where a search rule leaves out the space's first point, the
// family's default variant, the tuner times it all the same
// (runner.Runner.Tune): it is the "vs default" reference.
package variants
