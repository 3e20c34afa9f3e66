package tuning

import (
	"path/filepath"
	"testing"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
)

// TestRecorderRoundTrip: what Record stores, Done returns; Winner marks it.
func TestRecorderRoundTrip(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "tune.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run, err := db.BeginRun(store.Run{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{DB: db, Run: run}
	k := runner.Key{Kernel: "relu_bwd", ShapeKey: "n=8,dtype=f32", Params: "vec=1", PTXSHA256: "ab", GPUUUID: "GPU-1", Driver: "1", Mode: eval.Cold}
	res := runner.Result{Key: k, Outcome: runner.Outcome{Status: eval.OK, Registers: 10, Samples: []float64{3, 2, 4}}, GBps: 100}
	res.Stats = runner.Summarize(res.Samples)
	if err := rec.Record(res); err != nil {
		t.Fatal(err)
	}
	got, ok, err := rec.Done(k)
	if err != nil || !ok || got.Status != eval.OK || got.Registers != 10 || got.Stats.Median != 3 || got.GBps != 100 {
		t.Fatalf("Done = %+v %v %v", got, ok, err)
	}
	if err := rec.Winner(runner.Winner{Result: res}); err != nil {
		t.Fatal(err)
	}
	ws, err := db.Winners(run)
	if err != nil || len(ws) != 1 || ws[0].MedianUS != 3 {
		t.Errorf("winners %+v %v", ws, err)
	}
}
