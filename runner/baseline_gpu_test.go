package runner

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner/cuda"
)

// TestHopperCublasLtBest: the cublaslt-best baseline through the worker's
// own stages, beside cublas, on the GEMM forms of TestHopperCublasBaseline:
// every one of cuBLASLt's top algorithms validated before and after it is
// timed with the full protocol, the fastest valid one kept and named. It
// skips without an NVIDIA driver: go test ./runner -run
// TestHopperCublasLtBest -v on the GPU host.
func TestHopperCublasLtBest(t *testing.T) {
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
	for _, f := range []gemmFamily{
		{m: 2048, n: 2048, k: 2048, out: dtype.F32},
		{m: 2048, n: 1536, k: 8960, out: dtype.BF16},
		{m: 2048, n: 8960, k: 1536, out: dtype.BF16, notB: true},
		{m: 1536, n: 1024, k: 2048, out: dtype.F32, transA: true, notB: true},
	} {
		what := fmt.Sprintf("%d×%d×%d transA=%v transB=%v bf16→%v", f.m, f.n, f.k, f.transA, !f.notB, f.out)
		medians := map[string]float64{}
		for _, b := range []kernels.Baseline{f.Baselines(toyShape)[0], f.ltBest()} {
			w.ss.Release() // the toy families share a name and shape: prepare each anew
			req := &evalRequest{Kernel: f.Name(), Dims: toyShape.Dims, DType: "bf16", Baseline: &b, Seed: 1}
			res := evaluate(w.ss, Families{f}, req, DefaultMeasure, w.measure)
			if res.Status != eval.OK {
				t.Fatalf("%s %s: %s: %s", b.Name, what, res.Status, res.Message)
			}
			medians[b.Name] = SummarizeKept(res.Samples, res.Throttled).Median
			if b.Name == BaselineLtBest && (res.Algorithm == "" || !strings.HasPrefix(res.Message, "cuBLASLt heuristic rank ")) {
				t.Errorf("%s: the choice is not named: algorithm %q, message %q", what, res.Algorithm, res.Message)
			}
			t.Logf("%s %s: %.2f µs; %s", b.Name, what, medians[b.Name], res.Message)
		}
		t.Logf("%s: cublas / cublaslt-best = %.3f (cuBLASLt %s, version %d)", what, medians[BaselineCuBLAS]/medians[BaselineLtBest],
			w.be.lt.Path(), w.be.lt.Version())
	}
}
