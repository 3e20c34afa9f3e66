package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// tuneBaselines evaluates the baselines of family f at shape s (when f is
// a kernels.Baseliner) with the variants' protocol, records each one
// measured now (a reused one is already stored), and returns the
// strongest: the valid one of the lowest median (with BaselineLtBest
// measured, the best of cuBLASLt's top algorithms, unless cublasGemmEx's
// own pick beat it), and its baseline. A baseline whose library the
// worker lacks is said once on Progress and not asked for again.
func (r *Runner) tuneBaselines(ctx context.Context, f kernels.Family, s variants.Shape, cost kernels.Cost, rec Recorder) (*Result, *kernels.Baseline, error) {
	bl, ok := f.(kernels.Baseliner)
	if !ok {
		return nil, nil, nil
	}
	var best *Result
	var bestB *kernels.Baseline
	for _, b := range bl.Baselines(s) {
		if r.unavailable[b.Name] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return best, bestB, err
		}
		res := r.evalBaseline(ctx, f, s, b, "", cost, rec, false)
		if res.Unavailable {
			r.unavailable[b.Name] = true
			r.say("%s baseline: not measured (%s)\n", b.Name, res.Message)
			continue
		}
		if !res.Reused {
			if err := rec.Record(*res); err != nil {
				return best, bestB, fmt.Errorf("recording %s %s baseline %s: %w", f.Name(), s.Key(), b.Name, err)
			}
		}
		switch {
		case res.Status != eval.OK:
			r.say("%s %s baseline %s: %s: %s\n", f.Name(), s.Key(), b.Name, res.Status, res.Message)
			continue
		case res.Algorithm != "":
			r.say("%s %s baseline %s: %.2f µs, %s\n", f.Name(), s.Key(), b.Name, res.Stats.Median, res.Message)
		}
		if best == nil || res.Stats.Median < best.Stats.Median {
			best, bestB = res, &b
		}
	}
	return best, bestB, nil
}

// say prints a progress line, if there is a Progress writer.
func (r *Runner) say(format string, args ...any) {
	if r.opt.Progress != nil {
		fmt.Fprintf(r.opt.Progress, format, args...)
	}
}

// evalBaseline evaluates baseline b of f at s; for a best-of baseline,
// algorithm (an Outcome.Algorithm) pins the one algorithm to time, empty
// for the choice among all. Its key is a pseudo-variant
// (eval.BaselineParams) whose PTX hash is that of the baseline's
// description, so a re-run on the same GPU, driver and mode reuses it.
func (r *Runner) evalBaseline(ctx context.Context, f kernels.Family, s variants.Shape, b kernels.Baseline, algorithm string,
	cost kernels.Cost, rec Recorder, again bool) *Result {
	res := r.newResult(f, s, eval.BaselineParams(b.Name))
	res.Key.PTXSHA256 = BaselineHash(b)
	req := &evalRequest{Kernel: f.Name(), Dims: s.Dims, DType: s.DType.String(), Baseline: &b, Algorithm: algorithm, Seed: r.opt.Seed}
	return r.evaluate(ctx, res, req, cost, rec, r.opt.Measure, again)
}

// baselineAlgorithm is the algorithm a final round pins for its
// baseline: the one its first run timed (round, nil before it), else the
// one the tuning chose (tuned). A result reused from an earlier run
// carries none: the round's first run then chooses again.
func baselineAlgorithm(tuned, round *Result) string {
	if round != nil {
		return round.Algorithm
	}
	return tuned.Algorithm
}

// BaselineHash is the stable content hash stored as a baseline's
// ptx_sha256: the sha256 of "gradtune baseline v1\n" and the baseline's
// JSON (its name and call, fields in declaration order).
func BaselineHash(b kernels.Baseline) string {
	desc, err := json.Marshal(b)
	if err != nil {
		panic(fmt.Sprintf("runner: baseline %s does not encode: %v", b.Name, err)) // plain data always does
	}
	return sha256Hex(append([]byte("gradtune baseline v1\n"), desc...))
}
