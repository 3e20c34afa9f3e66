package results

import (
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/store"
)

// RunSummary is what one run recorded, counted: evaluations by status,
// telemetry coverage, throttled samples, warnings and winners.
type RunSummary struct {
	Run store.Run
	// Statuses counts evaluations by status; Evaluations is their sum.
	Statuses    map[eval.Status]int
	Evaluations int
	// Timed is the number of ok evaluations, WithTelemetry those of them
	// with clocks recorded.
	Timed, WithTelemetry int
	// SM and memory clock ranges (MHz), the highest temperature (°C) and
	// power (W), and every throttle reason, over the evaluations with
	// telemetry.
	SMMin, SMMax, MemMin, MemMax, MaxTempC int
	MaxPowerW                              float64
	Reasons                                uint64
	// ExcludedSamples were left out of the medians in ThrottledEvals
	// evaluations; WarnedEvals carry benchmath warnings.
	ExcludedSamples, ThrottledEvals, WarnedEvals int
	// Winners, and how many were chosen among ties.
	Winners, TiedWinners int
}

// Summaries counts what every run of db recorded, oldest first.
func Summaries(db *store.DB) ([]RunSummary, error) {
	runs, err := db.Runs()
	if err != nil {
		return nil, err
	}
	var out []RunSummary
	for _, r := range runs {
		s := RunSummary{Run: r, Statuses: map[eval.Status]int{}}
		es, err := db.Evaluations(store.Filter{RunID: r.ID})
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			s.add(e)
		}
		ws, err := db.Winners(r.ID)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			s.Winners++
			if w.Ties > 0 {
				s.TiedWinners++
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func (s *RunSummary) add(e store.Evaluation) {
	s.Evaluations++
	s.Statuses[e.Status]++
	if len(e.Warnings) > 0 {
		s.WarnedEvals++
	}
	if len(e.Excluded) > 0 {
		s.ThrottledEvals++
		s.ExcludedSamples += len(e.Excluded)
	}
	if e.Status != eval.OK {
		return
	}
	s.Timed++
	if e.SMClockMHz <= 0 {
		return
	}
	if s.WithTelemetry == 0 || e.SMClockMHz < s.SMMin {
		s.SMMin = e.SMClockMHz
	}
	if s.WithTelemetry == 0 || e.MemClockMHz < s.MemMin {
		s.MemMin = e.MemClockMHz
	}
	s.WithTelemetry++
	s.SMMax, s.MemMax = max(s.SMMax, e.SMClockMHz), max(s.MemMax, e.MemClockMHz)
	s.MaxTempC, s.MaxPowerW = max(s.MaxTempC, e.TemperatureC), max(s.MaxPowerW, e.PowerW)
	s.Reasons |= e.ThrottleReasons
}
