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
//   - regressed when p < α, the change exceeds +threshold, the shift
//     is at least the minimum shift and the interval lies above zero;
//   - improved when p < α, the change is below −threshold, the shift is
//     at least the minimum shift and the interval lies below zero;
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
// The run's drift. A GPU runs a little faster or slower from one night
// to the next (clocks, another machine of the same model), and every case
// moves with it. The gate estimates the drift as the median, over the
// cases compared, of the new median over the baseline's, and divides the
// new run's samples by it before the test (Report.Drift; not with fewer
// than minDriftCases cases, nor with Options.NoDrift): a case regresses
// against the other cases of its night, not with them.
//
// Defaults (DefaultOptions): a relative threshold and a minimum shift in
// µs, α = 0.05, 95% intervals, calibrated on recorded nights: the
// threshold and the minimum shift keep differences that are significant
// but within a night-to-night jitter from failing a night (a short kernel
// measured with hundreds of samples shifts significantly between nights;
// the README's "Nightly regression runs" gives the figures); α keeps
// noise from doing so. A slowdown below
// the minimum shift is not told from that jitter, whatever its share.
package regress
