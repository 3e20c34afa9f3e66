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
// measured now (a reused one is already stored), and returns the first
// valid one and its baseline. A baseline whose library the worker lacks
// is said once on Progress and not asked for again.
func (r *Runner) tuneBaselines(ctx context.Context, f kernels.Family, s variants.Shape, cost kernels.Cost, rec Recorder) (*Result, *kernels.Baseline, error) {
	bl, ok := f.(kernels.Baseliner)
	if !ok {
		return nil, nil, nil
	}
	var first *Result
	var firstB *kernels.Baseline
	for _, b := range bl.Baselines(s) {
		if r.unavailable[b.Name] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return first, firstB, err
		}
		res := r.evalBaseline(ctx, f, s, b, cost, rec, false)
		if res.Unavailable {
			r.unavailable[b.Name] = true
			if r.opt.Progress != nil {
				fmt.Fprintf(r.opt.Progress, "%s baseline: not measured (%s)\n", b.Name, res.Message)
			}
			continue
		}
		if !res.Reused {
			if err := rec.Record(*res); err != nil {
				return first, firstB, fmt.Errorf("recording %s %s baseline %s: %w", f.Name(), s.Key(), b.Name, err)
			}
		}
		if res.Status == eval.OK && first == nil {
			first, firstB = res, &b
		}
		if res.Status != eval.OK && r.opt.Progress != nil {
			fmt.Fprintf(r.opt.Progress, "%s %s baseline %s: %s: %s\n", f.Name(), s.Key(), b.Name, res.Status, res.Message)
		}
	}
	return first, firstB, nil
}

// evalBaseline evaluates baseline b of f at s. Its key is a pseudo-variant
// (eval.BaselineParams) whose PTX hash is that of the baseline's
// description, so a re-run on the same GPU, driver and mode reuses it.
func (r *Runner) evalBaseline(ctx context.Context, f kernels.Family, s variants.Shape, b kernels.Baseline, cost kernels.Cost, rec Recorder, again bool) *Result {
	res := r.newResult(f, s, eval.BaselineParams(b.Name))
	res.Key.PTXSHA256 = BaselineHash(b)
	req := &evalRequest{Kernel: f.Name(), Dims: s.Dims, DType: s.DType.String(), Baseline: &b, Seed: r.opt.Seed}
	return r.evaluate(ctx, res, req, cost, rec, r.opt.Measure, again)
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
