package store

import (
	"testing"

	"github.com/gradtune/gradtune/eval"
)

// TestBaselineRoundTrip: a vendor baseline is stored as an evaluation of a
// pseudo-variant (params "baseline=cublas") that Done finds on the same
// GPU, driver and mode only, and the winner carries its name and median.
func TestBaselineRoundTrip(t *testing.T) {
	db, _ := openTemp(t)
	run := mustBeginRun(t, db)
	win := baseKey
	win.Kernel, win.ShapeKey = "gemm_bwd", "m=2048,n=1536,k=8960,dtype=bf16"
	base := win
	base.Params, base.PTXSHA256 = eval.BaselineParams("cublas"), "c0ffee"
	mustRecord(t, db, run, okEval(win, 40))
	mustRecord(t, db, run, okEval(base, 44))

	got, ok, err := db.Done(base)
	if err != nil || !ok || got.MedianUS != 44 || got.Key.Params != "baseline=cublas" {
		t.Fatalf("Done(baseline) = %+v, %v, %v", got, ok, err)
	}
	for _, other := range []func(k *Key){
		func(k *Key) { k.Driver = "575.0" },
		func(k *Key) { k.GPUUUID = "GPU-b" },
		func(k *Key) { k.Mode = eval.Hot },
		func(k *Key) { k.PTXSHA256 = "another call" },
	} {
		k := base
		other(&k)
		if _, ok, err := db.Done(k); ok || err != nil {
			t.Errorf("Done(%v) found the baseline of %v (%v)", k, base, err)
		}
	}

	id, err := db.VariantID(win.variant())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetWinner(Winner{RunID: run, Kernel: win.Kernel, ShapeKey: win.ShapeKey, VariantID: id, MedianUS: 40,
		BaselineName: "cublas", BaselineMedianUS: 44}); err != nil {
		t.Fatal(err)
	}
	ws, err := db.Winners(run)
	if err != nil || len(ws) != 1 {
		t.Fatalf("Winners = %+v, %v", ws, err)
	}
	if w := ws[0]; w.Params != win.Params || w.BaselineName != "cublas" || w.BaselineMedianUS != 44 {
		t.Errorf("winner %+v", w)
	}
	evs, err := db.Evaluations(Filter{RunID: run, Kernel: win.Kernel})
	if err != nil || len(evs) != 2 || evs[1].Key != base {
		t.Errorf("Evaluations = %+v, %v", evs, err)
	}
}
