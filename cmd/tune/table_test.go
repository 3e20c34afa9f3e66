package main

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

func result(params string, median float64) *runner.Result {
	return &runner.Result{Key: runner.Key{Params: params}, Stats: runner.Stats{Median: median}}
}

// TestPrintTableBaseline: a "vs baseline" column appears only when a shape
// has a vendor baseline, as the baseline's median over the winner's.
func TestPrintTableBaseline(t *testing.T) {
	shape := variants.Shape{Dims: []variants.Dim{{Name: "m", Value: 2048}, {Name: "n", Value: 1536}}, DType: dtype.BF16}
	plain := runner.Summary{Kernel: "relu_bwd", Shape: shape, Best: result("vec=4", 10), Tried: 3, Valid: 3}
	var b strings.Builder
	printTable(&b, []runner.Summary{plain}, 4000)
	if strings.Contains(b.String(), "vs baseline") {
		t.Errorf("a run without baselines has the column:\n%s", b.String())
	}
	gemm := runner.Summary{Kernel: "gemm_bwd", Shape: shape, Best: result("bm=128", 40), Baseline: result("baseline=cublas", 46), Tried: 2, Valid: 2}
	b.Reset()
	printTable(&b, []runner.Summary{plain, gemm}, 4000)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "vs baseline") || !strings.Contains(lines[2], "1.15× cublas") || !strings.Contains(lines[1], " - ") {
		t.Errorf("table:\n%s", b.String())
	}
}
