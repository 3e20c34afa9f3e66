// Command trainer shows how a trainer uses gradtune's tuned config tables:
// it looks a kernel up in the committed tables (package configs, standard
// library only) at the shape it needs, loads the winner's PTX and launches
// it through package launch — the code the tuner's own worker launches
// programs with — on the CUDA driver alone (runner/cuda, through purego: no
// cgo, no CUDA toolkit).
//
// Usage:
//
//	go run ./examples/trainer --kernel rmsnorm_bwd --dtype bf16 --shape m=3000,n=1536
//	go run ./examples/trainer --all
//
// A lookup answers with an entry whose PTX computes the asked shape: the
// tuned shape, or the entry tuned nearest whose runtime dims (the token
// count) cover it. The example builds the launch plan from the table's
// launch contract (grids, buffers and tensor maps as expressions of the
// shape), fills the inputs with the family's deterministic data, runs the
// launches once on NaN-poisoned outputs and checks every output against
// the family's float64 reference within its tolerance, checks that state
// buffers are left zero, and times the launches with the table's protocol
// through the tuner's own sampling code (runner.Sampler and runner.Measure
// with runner.DefaultMeasure, which the table's protocol states) after
// --warm-ms (1000) of the same work (the tuner's GPU has been busy; one
// left idle while the host made inputs times kernels of a few µs slower:
// docs/architecture.md), printing the
// ratio to the table's figure at the tuned shape. --sustained-ms also
// times each plan 200 runs back to back after that long of continuous
// work, as a training step runs its kernels; --trace writes every sample.
//
// --all walks every committed entry at its tuned shape and, for entries
// with a runtime dim, at two other values of it (--tokens, default v/2+1
// and 2v for a tuned v: one odd, so not a multiple of any tile), or the
// entries of the kernels --only names (--tuned-only: at the tuned shape
// alone); it exits 1 if any launch fails or any output is wrong. Without
// a GPU it prints the plans and exits 0.
//
// --configs reads tables from files instead of the committed ones, e.g.
// those tune export --ptx writes from a tune bench run on this machine:
// a table's figures are one machine's, and another machine of the same
// model differs by a few percent, most on kernels of a few µs.
//
// The example builds with CGO_ENABLED=0.
package main
