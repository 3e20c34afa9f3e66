// Package regress is gradtune's regression gate: it compares the winners
// of two runs, case by case (kernel, dtype, shape), and says which got
// slower, which got faster and which did not change, with the statistics
// behind each verdict.
//
// # The test
//
// For each case present in both runs, the samples of the baseline run's
// winner and of the new run's winner (without those taken while the GPU
// throttled) are compared with a Mann–Whitney U test
// (golang.org/x/perf/benchmath.AssumeNothing.Compare, as benchstat does).
// The change is the ratio of the medians less one; its confidence
// interval is the Hodges–Lehmann interval of the shift between the two
// samples (the distribution-free interval that goes with the U test: order
// statistics of the pairwise differences), relative to the baseline
// median. A case
//
//   - regressed when p < α, the change exceeds +threshold and the
//     interval lies above zero;
//   - improved when p < α, the change is below −threshold and the
//     interval lies below zero;
//   - is unchanged otherwise;
//   - failed when the new run measured it without a valid result (no
//     winner), whatever the baseline had, including a case that has no
//     valid result in either run: a failure of the gate, listed with each
//     run's error (results.Shape.Why);
//   - is missing when the baseline run has it and the new run did not
//     measure it: a failure too;
//   - is new when only the new run has it, or has a valid result for it.
//
// Both sides being one run (the same file and run, or a copy of the
// file) is refused (ErrSameRun): such a gate could not fail.
//
// Defaults: threshold 2%, α = 0.05, 95% intervals. The threshold keeps
// differences that are significant but too small to matter (a few
// nanoseconds on a 9 µs kernel with hundreds of samples) from failing a
// night; α keeps noise from doing so.
//
// # Output
//
// WriteMarkdown writes the table for a pull request or a job summary;
// WriteBenchfmt writes both runs' samples in the Go benchmark format, the
// runs told apart by the configuration key "run", so that
// `benchstat -col run FILE` reads it.
package regress
