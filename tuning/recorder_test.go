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
	if err != nil || len(ws) != 1 || ws[0].MedianUS != 3 || ws[0].BaselineName != "" {
		t.Errorf("winners %+v %v", ws, err)
	}
}

// TestRecorderBaseline: a baseline is recorded as a pseudo-variant that
// Done finds again, and the winner carries its name and median.
func TestRecorderBaseline(t *testing.T) {
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
	k := runner.Key{Kernel: "gemm_bwd", ShapeKey: "m=64,n=64,k=64,dtype=bf16", Params: "bm=64", PTXSHA256: "ab", GPUUUID: "GPU-1", Driver: "13000", Mode: eval.Cold}
	best := runner.Result{Key: k, Outcome: runner.Outcome{Status: eval.OK, Samples: []float64{9, 10, 11}}}
	best.Stats = runner.Summarize(best.Samples)
	bk := k
	bk.Params, bk.PTXSHA256 = eval.BaselineParams("cublas"), "cd"
	base := runner.Result{Key: bk, Outcome: runner.Outcome{Status: eval.OK, Samples: []float64{12, 12.5, 13}}, TFLOPs: 0.5}
	base.Stats = runner.Summarize(base.Samples)
	for _, r := range []runner.Result{best, base} {
		if err := rec.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Winner(runner.Winner{Result: best, Baseline: &base}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := rec.Done(bk)
	if err != nil || !ok || got.Stats.Median != 12.5 || got.TFLOPs != 0.5 {
		t.Errorf("Done(baseline) = %+v %v %v", got, ok, err)
	}
	other := bk
	other.Driver = "12080"
	if _, ok, err := rec.Done(other); ok || err != nil {
		t.Errorf("a baseline of another driver is done: %v %v", ok, err)
	}
	ws, err := db.Winners(run)
	if err != nil || len(ws) != 1 || ws[0].Params != "bm=64" || ws[0].BaselineName != "cublas" || ws[0].BaselineMedianUS != 12.5 {
		t.Errorf("winners %+v %v", ws, err)
	}
	bad := base
	bad.Key.Params = "bm=128"
	if err := rec.Winner(runner.Winner{Result: best, Baseline: &bad}); err == nil {
		t.Error("a baseline whose params name no baseline was accepted")
	}
}
