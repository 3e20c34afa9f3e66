package runner

import (
	"fmt"

	"golang.org/x/perf/benchmath"
)

// Stats summarises samples: the median with its 95% order-statistic
// confidence interval (as benchstat computes it), the minimum, and
// benchmath's warnings about the samples.
type Stats struct {
	N                   int
	Median, Lo, Hi, Min float64
	Warnings            []string
	// Excluded are the indexes of the samples left out (taken while the
	// GPU throttled); N counts the others.
	Excluded []int
}

// minKept is the fewest samples benchmath gives a 95% confidence interval
// of the median for: throttled samples are left out only when at least
// this many remain.
const minKept = 6

// Summarize computes Stats of the samples (µs). It does not modify xs.
func Summarize(xs []float64) Stats { return SummarizeKept(xs, nil) }

// SummarizeKept computes Stats of the samples that throttled does not
// list. When fewer than minKept samples would remain, it keeps them all
// and says so in a warning: a GPU that throttled throughout is then
// measured as it was, and the warning reaches the table.
func SummarizeKept(xs []float64, throttled []int) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	drop := map[int]bool{}
	for _, i := range throttled {
		if i >= 0 && i < len(xs) {
			drop[i] = true
		}
	}
	var warn []string
	if len(drop) > 0 && len(xs)-len(drop) < minKept {
		warn = append(warn, fmt.Sprintf("the GPU throttled during %d of %d samples; too few unthrottled samples to leave them out", len(drop), len(xs)))
		drop = map[int]bool{}
	}
	var v []float64
	var excluded []int
	for i, x := range xs {
		if drop[i] {
			excluded = append(excluded, i)
			continue
		}
		v = append(v, x)
	}
	s := benchmath.NewSample(v, &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, 0.95)
	st := Stats{N: len(v), Median: sum.Center, Lo: sum.Lo, Hi: sum.Hi, Min: v[0], Excluded: excluded, Warnings: warn}
	if len(excluded) > 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("%d of %d samples left out: taken while the GPU throttled", len(excluded), len(xs)))
	}
	for _, w := range sum.Warnings {
		st.Warnings = append(st.Warnings, w.Error())
	}
	return st
}

// converged reports whether sampling may stop under o, counting only the
// samples that throttled does not list.
func converged(xs []float64, throttled []int, o MeasureOpts) bool {
	if len(xs) >= o.MaxSamples {
		return true
	}
	if len(xs)-len(throttled) < o.MinSamples {
		return false
	}
	st := SummarizeKept(xs, throttled)
	if st.Median <= 0 {
		return false
	}
	half := (st.Hi - st.Lo) / 2
	return half <= o.TargetCI*st.Median
}

// Abandon is the early-abandon rule: once at least o.AbandonAfter
// unthrottled samples are in, a variant whose median's 95% CI lies
// entirely above o.AbandonAbove (its lower end is higher) is clearly
// slower than the best so far and sampling stops. The runner sets
// AbandonAbove to the best valid variant's CI upper end times 1 +
// Options.AbandonMargin (5% unless set), so a variant is abandoned only
// when even its optimistic time loses to the best's pessimistic one by
// that margin. With fewer than minKept samples the CI is not defined, and
// nothing is abandoned. An abandoned variant is recorded as skipped with
// the samples taken: it never wins.
func Abandon(xs []float64, throttled []int, o MeasureOpts) bool {
	if o.AbandonAbove <= 0 || len(xs)-len(throttled) < max(o.AbandonAfter, minKept) {
		return false
	}
	st := SummarizeKept(xs, throttled)
	return st.Lo > o.AbandonAbove
}
