package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// Case is one entry of a tuned config table to measure again: the tuned
// variant and the baseline it is compared with.
type Case struct {
	Family kernels.Family
	Shape  variants.Shape
	Params variants.Params
	// Baseline is the variant the tuned one is compared with (nil: none),
	// BaselineName what it is ("default").
	Baseline     variants.Params
	BaselineName string
	// Plant changes the tuned variant's program before it is evaluated
	// (tune bench --plant-slowdown adds a delay launch). Nil: none.
	Plant Plant
	// Program, when set, is the tuned variant's program as a config table
	// describes it (its PTX and launch contract), measured instead of the
	// program this gradtune emits for Params.
	Program *kernels.Program
}

// Bench measures every case's tuned variant and its baseline afresh (it
// never reuses earlier results: re-measuring is its point), records both,
// and records the tuned variant as the shape's winner with the rule "from
// the config table". It stops early only when ctx ends or the recorder
// fails.
func (r *Runner) Bench(ctx context.Context, cases []Case, rec Recorder) ([]Summary, error) {
	fresh := r.opt.Fresh
	r.opt.Fresh = true
	defer func() { r.opt.Fresh = fresh }()
	var out []Summary
	for _, c := range cases {
		sum, err := r.benchCase(ctx, c, rec)
		out = append(out, sum)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func (r *Runner) benchCase(ctx context.Context, c Case, rec Recorder) (Summary, error) {
	start := time.Now()
	r.wall = Walls{}
	sum := Summary{Kernel: c.Family.Name(), Shape: c.Shape, Rule: "from the config table"}
	cost := c.Family.Cost(c.Shape)
	var tuned, base *Result
	for _, v := range []struct {
		p     variants.Params
		plant Plant
		out   **Result
	}{{c.Params, c.Plant, &tuned}, {c.Baseline, nil, &base}} {
		if v.p == nil || (v.out == &base && v.p.String() == c.Params.String()) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		var res *Result
		if v.out == &tuned && c.Program != nil {
			res = r.evalProgram(ctx, c.Family, c.Shape, v.p, *c.Program, nil, cost, rec, v.plant, r.opt.Measure, false)
		} else {
			res = r.evalOne(ctx, c.Family, c.Shape, v.p, cost, rec, v.plant, r.opt.Measure, false)
		}
		sum.add(res)
		if err := rec.Record(*res); err != nil {
			return sum, fmt.Errorf("recording %s %s %s: %w", sum.Kernel, c.Shape.Key(), v.p, err)
		}
		switch {
		case res.Status == eval.OK:
			sum.Valid++
			*v.out = res
		case res.Status != eval.Skipped:
			sum.Failed++
		}
	}
	sum.Best, sum.Baseline = tuned, base
	if base != nil {
		sum.BaselineName = c.BaselineName
	}
	if tuned != nil {
		w := Winner{Result: *tuned, Rule: sum.Rule, Baseline: base}
		if base != nil {
			w.BaselineName = c.BaselineName
		}
		if err := rec.Winner(w); err != nil {
			return sum, fmt.Errorf("recording winner: %w", err)
		}
	}
	r.wall.Search = time.Since(start).Seconds() // the entry's two evaluations
	sum.Wall = r.wall
	r.progress(sum, time.Since(start))
	return sum, nil
}
