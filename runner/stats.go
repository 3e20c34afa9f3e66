package runner

import (
	"golang.org/x/perf/benchmath"
)

// Stats summarises samples: the median with its 95% order-statistic
// confidence interval (as benchstat computes it) and the minimum.
type Stats struct {
	N                   int
	Median, Lo, Hi, Min float64
	Warnings            []string
}

// Summarize computes Stats of the samples (µs). It does not modify xs.
func Summarize(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	v := append([]float64(nil), xs...)
	s := benchmath.NewSample(v, &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(s, 0.95)
	st := Stats{N: len(v), Median: sum.Center, Lo: sum.Lo, Hi: sum.Hi, Min: v[0]}
	for _, w := range sum.Warnings {
		st.Warnings = append(st.Warnings, w.Error())
	}
	return st
}

// converged reports whether sampling may stop under o.
func converged(xs []float64, o MeasureOpts) bool {
	if len(xs) < o.MinSamples {
		return false
	}
	if len(xs) >= o.MaxSamples {
		return true
	}
	st := Summarize(xs)
	if st.Median <= 0 {
		return false
	}
	half := (st.Hi - st.Lo) / 2
	return half <= o.TargetCI*st.Median
}
