package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/gradtune/gradtune/eval"
)

// batches is a BatchSampler that answers each batch from times in turn
// (the last one repeating) and records the batch sizes asked for.
type batches struct {
	times [][]float64
	sizes []int
	at    []time.Time // when each batch was asked for
}

func (b *batches) Sample(n int, run func() error, _ eval.Mode) ([]float64, error) {
	b.sizes = append(b.sizes, n)
	b.at = append(b.at, time.Now())
	xs := b.times[min(len(b.sizes), len(b.times))-1]
	out := make([]float64, n)
	for i := range out {
		if err := run(); err != nil {
			return nil, err
		}
		out[i] = xs[i%len(xs)]
	}
	return out, nil
}

// readings is a Telemetry that answers reasons in turn.
type readings struct{ reasons []uint64 }

func (r *readings) Read() (Reading, error) {
	x := r.reasons[0]
	if len(r.reasons) > 1 {
		r.reasons = r.reasons[1:]
	}
	return Reading{SMClockMHz: 1980, Reasons: x}, nil
}
func (r *readings) Close() error { return nil }

// Measure samples in batches of MinSamples (at least 10) until the
// median's interval converges, flags a batch with a throttle reason on
// either side and leaves it out of the statistics, and starts with
// AbandonAfter samples when the abandon rule is on.
func TestMeasureBatches(t *testing.T) {
	runs := 0
	run := func() error { runs++; return nil }
	mo := DefaultMeasure
	mo.Warmup = 3

	steady := &batches{times: [][]float64{{10}}}
	m, err := Measure(steady, run, mo, nil)
	if err != nil || !slices.Equal(steady.sizes, []int{10}) || len(m.Samples) != 10 || runs != 13 {
		t.Errorf("steady: batches %v, %d samples, %d runs, %v", steady.sizes, len(m.Samples), runs, err)
	}

	noisy := &batches{times: [][]float64{{10, 30, 12, 25, 11, 40}}}
	mo.MaxSamples = 45
	if m, err = Measure(noisy, run, mo, nil); err != nil || !slices.Equal(noisy.sizes, []int{10, 10, 10, 10, 5}) || len(m.Samples) != 45 {
		t.Errorf("noisy: batches %v, %d samples, %v", noisy.sizes, len(m.Samples), err)
	}

	// The GPU was capped after the second batch: that batch and the
	// third (a reading on either side) are flagged, and the median is
	// the other batches'.
	spread := []float64{10, 10.5, 9.5, 11, 9}
	capped := &batches{times: [][]float64{spread, {20}, {20}, spread}}
	tel := &readings{reasons: []uint64{0, 0, eval.ThrottleReasons, 0}}
	mo.MaxSamples = 40
	m, err = Measure(capped, run, mo, tel)
	if err != nil || len(m.Throttled) != 20 || m.Throttled[0] != 10 || m.Throttled[19] != 29 {
		t.Fatalf("capped: batches %v, throttled %v, %v", capped.sizes, m.Throttled, err)
	}
	if st := SummarizeKept(m.Samples, m.Throttled); st.Median >= 11 {
		t.Errorf("capped: median %g counts the throttled batch", st.Median)
	}

	first := &batches{times: [][]float64{{50}}}
	mo.AbandonAbove, mo.AbandonAfter = 20, 7
	if m, err = Measure(first, run, mo, nil); err != nil || !m.Abandoned || !slices.Equal(first.sizes, []int{7}) {
		t.Errorf("abandon: batches %v, abandoned %v, %v", first.sizes, m.Abandoned, err)
	}
}

// Between batches, warm ones included, the GPU is left idle for at least
// IdleMS (the worker reads its telemetry there; a trainer waits as long).
func TestMeasureIdlesBetweenBatches(t *testing.T) {
	mo := DefaultMeasure
	mo.IdleMS, mo.MaxSamples, mo.WarmMS = 30, 30, 40
	b := &batches{times: [][]float64{{10, 30, 12, 25, 11, 40}}}
	if _, err := Measure(b, func() error { return nil }, mo, nil); err != nil {
		t.Fatal(err)
	}
	// At least one warm batch (a second fits in the warm time unless the
	// sleep overshoots), then three timed ones.
	if len(b.at) < 4 || len(b.at) > 5 {
		t.Fatalf("%d batches, want 1 or 2 warm and 3 timed", len(b.at))
	}
	for i := 1; i < len(b.at); i++ {
		if gap := b.at[i].Sub(b.at[i-1]); gap < 30*time.Millisecond {
			t.Errorf("batch %d began %v after the one before, want at least 30 ms", i, gap)
		}
	}
}
