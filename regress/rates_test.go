package regress

import (
	"path/filepath"
	"testing"

	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
)

// recorded loads the winners of every H200 run under testdata/: the 31
// committed configs and their samples.
func recorded(t *testing.T) []Case {
	t.Helper()
	var cases []Case
	for _, f := range []string{"h200-activations.db", "h200-rows.db", "h200-pool.db"} {
		db, err := store.OpenReadOnly(filepath.Join("..", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		runs, err := db.Runs()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			s, err := Load(db, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, s.Cases...)
		}
		db.Close()
	}
	return cases
}

// draw is one replayed run of cases; plant (an index, or -1) gets a delay
// of slowdown times its recorded median, or of floor µs if that is more,
// as faults.Delay adds on a GPU.
func draw(rp *runner.Replay, cases []Case, plant int, slowdown, floor float64) Side {
	s := Side{Label: "replay"}
	for i, c := range cases {
		extra := 0.0
		if i == plant {
			extra = max(slowdown*median(c.Samples), floor)
		}
		xs, _ := rp.Draw(c.Kernel, c.ShapeKey, c.Params, extra)
		n := c
		n.Samples, n.Warnings = xs, nil
		s.Cases = append(s.Cases, n)
	}
	return s
}

// TestDetectionAndFalseAlarmRates: replaying the recorded samples of the
// 31 committed configs (bootstrap resamples, and a drift of the whole GPU
// of ±0.3% per run), a planted slowdown of one case (each case in turn)
// of 5%, or of 1.25 times the minimum shift where 5% is less (a shorter
// slowdown is not told from the jitter between nights, TestRealNights), is
// caught in at least 95% of 200 trials, and A/A comparisons fail the gate
// in at most 1% of 200 trials.
func TestDetectionAndFalseAlarmRates(t *testing.T) {
	cases := recorded(t)
	if len(cases) != 31 {
		t.Fatalf("%d recorded cases, want 31", len(cases))
	}
	var recs []runner.Recorded
	for _, c := range cases {
		recs = append(recs, runner.Recorded{Kernel: c.Kernel, ShapeKey: c.ShapeKey, Params: c.Params, Samples: c.Samples})
	}
	const trials, drift = 200, 0.003
	floor := 1.25 * DefaultOptions.MinShift
	caught, otherFlags, falseAlarms := 0, 0, 0
	for i := range trials {
		seed := uint64(4 * i)
		plant := i % len(cases)
		rep, err := Compare(draw(runner.NewReplay(recs, seed, drift), cases, -1, 0, 0),
			draw(runner.NewReplay(recs, seed+1, drift), cases, plant, 0.05, floor), DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rep.Failed() {
			if row.Base.Kernel == cases[plant].Kernel && row.Base.ShapeKey == cases[plant].ShapeKey {
				caught++
			} else {
				otherFlags++
			}
		}
		aa, err := Compare(draw(runner.NewReplay(recs, seed+2, drift), cases, -1, 0, 0),
			draw(runner.NewReplay(recs, seed+3, drift), cases, -1, 0, 0), DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		if len(aa.Failed()) > 0 {
			falseAlarms++
		}
	}
	detect, alarm := float64(caught)/trials, float64(falseAlarms)/trials
	t.Logf("planted slowdown (5%%, at least %.2f µs) caught in %d of %d trials (%.1f%%); other cases flagged %d times", floor, caught, trials, 100*detect, otherFlags)
	t.Logf("A/A false alarms in %d of %d trials (%.1f%%)", falseAlarms, trials, 100*alarm)
	if detect < 0.95 {
		t.Errorf("detection rate %.3f, want >= 0.95", detect)
	}
	if alarm > 0.01 {
		t.Errorf("false alarm rate %.3f, want <= 0.01", alarm)
	}
}
