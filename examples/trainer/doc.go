// Command trainer shows how a trainer uses gradtune's tuned config tables:
// it looks a kernel up in the committed tables (package configs, standard
// library only), loads the winner's PTX, and, when an NVIDIA driver is
// present, JIT-loads it with the CUDA driver alone (runner/cuda, through
// purego: no cgo, no CUDA toolkit) and launches it with the table's
// geometry on buffers of the table's sizes, timing a few runs.
//
// Usage:
//
//	go run ./examples/trainer --kernel rmsnorm_bwd --dtype bf16 --shape m=2048,n=1536
//
// A winner's PTX is specialised for the shape it was tuned at (shapes are
// baked into the code as immediates). When the lookup answers with the
// nearest shape, the trainer learns which parameters to prefer, but the
// PTX it can launch is that of the tuned shape; the example says so and
// launches the tuned shape. Without a GPU it prints the plan and exits 0.
//
// The example builds with CGO_ENABLED=0; its test looks up every committed
// entry.
package main
