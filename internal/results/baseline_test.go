package results

import (
	"path/filepath"
	"testing"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/store"
)

// TestLoadVendorBaseline: a cuBLAS baseline stored as a pseudo-variant is
// the shape's baseline, through the winner, and not one of its variants;
// the other GEMM library pick is not another comparison, a baseline of
// its own (dequant+cublas) is, at its latest valid median, and an
// invalid one is none.
func TestLoadVendorBaseline(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "tune.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run, err := db.BeginRun(store.Run{GPUName: "NVIDIA H200", GPUUUID: "GPU-a", Driver: "13000"})
	if err != nil {
		t.Fatal(err)
	}
	key := func(params, hash string) store.Key {
		return store.Key{Kernel: "gemm_toy", ShapeKey: "m=64,n=64,dtype=bf16", Params: params, PTXSHA256: hash,
			GPUUUID: "GPU-a", Driver: "13000", Mode: eval.Cold}
	}
	for _, e := range []store.Evaluation{
		{Key: key("bm=64", "a"), Status: eval.OK, MedianUS: 12, Samples: []float64{12}},
		{Key: key(eval.BaselineParams("cublas"), "b"), Status: eval.OK, MedianUS: 15, Samples: []float64{15}},
		{Key: key("bm=128", "c"), Status: eval.OK, MedianUS: 10, Samples: []float64{10}},
		{Key: key(eval.BaselineParams("cublaslt-best"), "d"), Status: eval.OK, MedianUS: 16, Samples: []float64{16}},
		{Key: key(eval.BaselineParams("dequant+cublas"), "e"), Status: eval.OK, MedianUS: 13, Samples: []float64{13}},
		{Key: key(eval.BaselineParams("dequant+cublas"), "e"), Status: eval.OK, MedianUS: 12.5, Samples: []float64{12.5}},
		{Key: key(eval.BaselineParams("broken"), "f"), Status: eval.Invalid, MedianUS: 1},
	} {
		if _, err := db.Record(run, e); err != nil {
			t.Fatal(err)
		}
	}
	id, err := db.VariantID(store.Variant{Kernel: "gemm_toy", ShapeKey: "m=64,n=64,dtype=bf16", Params: "bm=128", PTXSHA256: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetWinner(store.Winner{RunID: run, Kernel: "gemm_toy", ShapeKey: "m=64,n=64,dtype=bf16", VariantID: id,
		MedianUS: 10, BaselineName: "cublas", BaselineMedianUS: 15}); err != nil {
		t.Fatal(err)
	}
	set, err := Load(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sh := set.Shapes[0]
	if len(sh.Valid) != 2 || len(sh.Order) != 2 || len(sh.Failed) != 0 {
		t.Errorf("%d valid, %d in all, %d failed: want the two variants only", len(sh.Valid), len(sh.Order), len(sh.Failed))
	}
	for _, v := range sh.Order {
		if v.Key.Params == "baseline=cublas" {
			t.Error("the baseline is listed as a variant")
		}
	}
	if sh.Winner == nil || sh.Winner.Key.Params != "bm=128" {
		t.Fatalf("winner %+v", sh.Winner)
	}
	if b := sh.Baseline; b == nil || b.Name != "cublas" || b.MedianUS != 15 || sh.Speedup() != 1.5 {
		t.Errorf("baseline %+v, speedup %v: want cublas at 15 µs, 1.5×", b, sh.Speedup())
	}
	if len(sh.Others) != 1 || sh.Others[0].Name != "dequant+cublas" || sh.SpeedupOver(sh.Others[0]) != 1.25 {
		t.Errorf("other baselines %+v: want dequant+cublas at 12.5 µs, 1.25× the winner", sh.Others)
	}
}
