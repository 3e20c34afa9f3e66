package runner_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/faults"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

type recorder struct {
	mu      sync.Mutex
	results []runner.Result
	winners []runner.Winner
}

func (r *recorder) Done(runner.Key) (runner.Result, bool, error) { return runner.Result{}, false, nil }
func (r *recorder) Record(res runner.Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
	return nil
}
func (r *recorder) Winner(w runner.Winner) error { r.winners = append(r.winners, w); return nil }

// TestPlantedFaultsOnTheInterpreter: the planted-fault family on the
// interpreter backend, through the runner as a GPU run goes: the kernel
// that never ends is stopped and recorded as a timeout, the out-of-bounds
// store, the trap and the illegal instruction as launch errors, the one
// right only on its first run as invalid by its validation after timing,
// and the working variant is validated, timed and wins.
func TestPlantedFaultsOnTheInterpreter(t *testing.T) {
	f := faults.Family()
	specs, err := variants.ParseSpecs("n=1000")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Shape(specs[0], dtype.F32)
	if err != nil {
		t.Fatal(err)
	}
	timer := func(v runner.Variant) ([]float64, error) {
		return []float64{3, 3.1, 2.9, 3, 3, 3.05, 2.95, 3, 3, 3}, nil
	}
	r, err := runner.New(runner.Options{EvalTimeout: time.Minute,
		NewWorker: runner.NewLocalWorker(func() runner.Backend { return sim.New(sim.Options{MaxSteps: 20000, Workers: 1}) },
			runner.Families{f}, timer)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := &recorder{}
	sums, err := r.Tune(context.Background(), []runner.Job{{Family: f, Shapes: []variants.Shape{s}}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"fault=none": "ok", "fault=hang": "timeout", "fault=oob": "launch_error",
		"fault=trap": "launch_error", "fault=illegal": "launch_error", "fault=drift": "invalid"}
	msg := map[string]string{"fault=hang": "instruction limit", "fault=oob": "out-of-bounds",
		"fault=trap": "trap", "fault=illegal": "illegal instruction", "fault=drift": "after timing: dx[0]"}
	if len(rec.results) != len(want) {
		t.Fatalf("%d results, want %d", len(rec.results), len(want))
	}
	for _, res := range rec.results {
		p := res.Key.Params
		if string(res.Status) != want[p] || !strings.Contains(res.Message, msg[p]) {
			t.Errorf("%s: %s %q, want %s (%s)", p, res.Status, res.Message, want[p], msg[p])
		}
	}
	if b := sums[0].Best; b == nil || b.Key.Params != "fault=none" || b.Stats.Median != 3 || sums[0].Failed != 5 {
		t.Errorf("summary %+v", sums[0])
	}
}
