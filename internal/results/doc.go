// Package results reads a gradtune database into what `tune show`,
// `tune report` and `tune export` present: per kernel and shape, the run
// that tuned it, its winner, every valid variant ranked by median time,
// the failures, and the baseline the winner is compared with.
//
// Matches is the one test of a shape key against a --shapes spec: a dim
// the key leaves out matches the value the family gives it by default.
// Shape.Why says why a shape has no winner (its failed evaluations), which
// bench and the regression gate list; Shape.Skipped counts the variants
// not timed in full.
//
// # Which run
//
// With Options.RunID set, every shape that run evaluated or chose a winner
// for is loaded. Without it, each (kernel, shape) comes from the newest run
// that evaluated it or chose a winner for it, as bench/compare.py did: a
// later, narrower run of a shape (a re-measurement with --params) replaces
// the earlier one. A shape's variants are the evaluations recorded in its
// run; a winner that the run reused from an earlier run (a re-run skips
// recorded evaluations) is added from that run and marked Reused.
//
// # Derived figures
//
// A variant's bytes moved and arithmetic intensity come from the stored
// throughput (GB/s and TFLOP/s) and median; "% bound" compares the
// achieved throughput with the run's measured copy bandwidth when the
// kernel's intensity is below the ridge point of the GPU's compute peak
// (from a small table of data-sheet figures, Peaks: the dense tensor-core
// rate for bf16 and f16, the FP32 rate otherwise) and with that peak
// otherwise. Two variants tie when their 95% confidence intervals of the
// median overlap: the ranking between them is not established.
//
// # Baseline
//
// The winner is compared with the baseline recorded with it when there is
// one (a vendor library's time, "cublas", in the winner's baseline
// columns); otherwise with the family's default variant (the first valid
// point of its space, what a user gets without tuning) when the run
// evaluated it.
// A vendor baseline's own evaluation is stored as a pseudo-variant
// (eval.BaselineParams) and is left out of the variants, rankings and
// failures.
package results
