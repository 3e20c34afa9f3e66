package runner

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/variants"
)

// TestGPUExactInputs: gemm_bwd variants at the qwen1.5b shapes (2048
// tokens) through the worker's own stages on the GPU, outputs compared on
// the device: every one is valid on the random inputs and, with zero
// tolerance, on the exact ones, before and after timing (the tensor
// cores add the integer products exactly, as the package doc argues);
// the cuBLAS baselines, validated on the random inputs only, stay valid.
// Per shape the variants are the first two of each path and feature
// (sync, wgmma, split-K by launch and by DSMEM, stream-K, clusters,
// persistent grids, the TMA store). It skips without an NVIDIA driver: go
// test ./runner -run TestGPUExactInputs -v on the GPU host.
func TestGPUExactInputs(t *testing.T) {
	if _, err := cuda.Open(); errors.Is(err, cuda.ErrNoDriver) {
		t.Skipf("no GPU: %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := &gpuWorker{ordinal: 0}
	if err := w.open(); err != nil {
		t.Fatal(err)
	}
	defer w.close()
	f, err := catalog.Lookup("gemm_bwd")
	if err != nil {
		t.Fatal(err)
	}
	preset, err := variants.LookupPreset("qwen1.5b", 2048)
	if err != nil {
		t.Fatal(err)
	}
	shapes := f.Shapes(preset, []dtype.DType{dtype.BF16})
	if s, err := f.Shape(variants.Spec{Dims: []variants.Dim{{Name: "m", Value: 2048}, {Name: "n", Value: 256}, {Name: "k", Value: 1536},
		{Name: "grad", Text: "dw"}, {Name: "out", Text: "f32"}}}, dtype.BF16); err == nil {
		shapes = append(shapes, s)
	} else {
		t.Fatal(err)
	}
	mo := MeasureOpts{Mode: eval.Cold, Warmup: 1, MinSamples: 3, MaxSamples: 5, TargetCI: 0.5, MaxTimeMS: 20, MaxLocal: 1 << 20}
	features := []func(p variants.Params) bool{
		func(p variants.Params) bool { return p["mma"] == "sync" },
		func(p variants.Params) bool { return p["mma"] == "wgmma" && p["splitk"] == "1" },
		func(p variants.Params) bool { return p["splitk"] != "1" && p["reduce"] == "launch" },
		func(p variants.Params) bool { return p["reduce"] == "dsmem" },
		func(p variants.Params) bool { return p["order"] == "streamk" },
		func(p variants.Params) bool { return p["cluster"] == "2" },
		func(p variants.Params) bool { return p["persistent"] == "1" && p["order"] != "streamk" },
		func(p variants.Params) bool { return p["epilogue"] == "tma" && p["order"] != "streamk" },
	}
	total := 0
	for _, s := range shapes {
		t0 := time.Now()
		w.ss.Release()
		if err := w.ss.Prepare(f, s, 1); err != nil {
			t.Fatal(err)
		}
		if !w.ss.Exact() {
			t.Fatalf("%s: no exact inputs", s.Key())
		}
		prep := time.Since(t0)
		var pts []variants.Params
		seen := map[string]bool{}
		all := f.Space(s).Enumerate()
		for _, feat := range features {
			n := 0
			for _, p := range all {
				if n < 2 && feat(p) && !seen[p.String()] {
					seen[p.String()] = true
					pts = append(pts, p)
					n++
				}
			}
		}
		for _, p := range pts {
			prog, err := f.Emit(s, p)
			if err != nil {
				t.Fatal(err)
			}
			req := &evalRequest{Kernel: f.Name(), Dims: s.Dims, DType: s.DType.String(), Program: prog, Seed: 1}
			res := evaluate(w.ss, Families{f}, req, mo, w.measure)
			if res.Status != eval.OK {
				t.Errorf("%s %s: %s: %s", s.Key(), p, res.Status, res.Message)
			}
			total++
		}
		for _, b := range f.(kernels.Baseliner).Baselines(s) {
			req := &evalRequest{Kernel: f.Name(), Dims: s.Dims, DType: s.DType.String(), Baseline: &b, Seed: 1}
			res := evaluate(w.ss, Families{f}, req, mo, w.measure)
			if res.Status != eval.OK {
				t.Errorf("%s %s: %s: %s", s.Key(), b.Name, res.Status, res.Message)
			}
		}
		t.Logf("%s: %d variants valid on both input sets (random inputs within atol %.3g, exact ones exactly); prepared in %v, all in %v",
			s.Key(), len(pts), f.Tolerance(s, "").Atol, prep.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	}
	if total == 0 {
		t.Fatal("no variant ran")
	}
}
