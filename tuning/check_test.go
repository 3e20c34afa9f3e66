package tuning

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
)

func TestCheck(t *testing.T) {
	sel, err := Resolve(Request{Kernels: "relu_bwd,softmax_bwd", Shapes: "m=3,n=77", DTypes: "f32,bf16", Params: ""})
	if err != nil {
		t.Fatal(err)
	}
	rs := Check(sel, CheckOptions{Sample: 2, Seed: 1})
	if len(rs) != 8 {
		t.Fatalf("%d results, want 2 families × 2 dtypes × 2 samples", len(rs))
	}
	for _, r := range rs {
		if r.Status != eval.OK || r.Params == "" {
			t.Errorf("%s %s %s: %s %s", r.Kernel, r.Shape.Key(), r.Params, r.Status, r.Message)
		}
		if r.Bound == "" || r.MaxAbs > 0 && !strings.Contains(r.Bound, "·|ref|") {
			t.Errorf("%s %s: bound %q", r.Kernel, r.Shape.Key(), r.Bound)
		}
	}
}

// TestCheckExact: gemm_bwd is checked on its exact inputs too, and says
// so in its bound.
func TestCheckExact(t *testing.T) {
	sel, err := Resolve(Request{Kernels: "gemm_bwd", Shapes: "m=40,n=72,k=64,grad=dx", DTypes: "bf16"})
	if err != nil {
		t.Fatal(err)
	}
	rs := Check(sel, CheckOptions{Sample: 2, Seed: 1})
	if len(rs) != 2 {
		t.Fatalf("%d results, want 2", len(rs))
	}
	for _, r := range rs {
		if r.Status != eval.OK || !strings.HasSuffix(r.Bound, "·|ref|; exact inputs: 0") {
			t.Errorf("%s %s: %s %s, bound %q", r.Shape.Key(), r.Params, r.Status, r.Message, r.Bound)
		}
	}
}

// TestToleranceText: one bound when the outputs share a tolerance, one
// per buffer, named, when they do not; each is the family's.
func TestToleranceText(t *testing.T) {
	sel, err := Resolve(Request{Kernels: "relu_bwd,layernorm_bwd", Shapes: "m=3,n=77", DTypes: "bf16"})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range sel.Shapes() {
		got := ToleranceText(fs.F, fs.S)
		for _, b := range fs.F.Buffers(fs.S) {
			if b.Role != kernels.Output && b.Role != kernels.Accumulate {
				continue
			}
			tol := fs.F.Tolerance(fs.S, b.Name)
			want := fmt.Sprintf("%.3g + %.3g·|ref|", tol.Atol, tol.Rtol)
			if fs.F.Name() == "layernorm_bwd" {
				want = b.Name + ": " + want
			}
			if !strings.Contains(got, want) {
				t.Errorf("%s: %q lacks %q", fs, got, want)
			}
		}
		if perBuffer := strings.Contains(got, ": "); perBuffer != (fs.F.Name() == "layernorm_bwd") {
			t.Errorf("%s: %q (layernorm's dx, dgamma and dbeta differ; relu has one output)", fs, got)
		}
	}
}

// TestBudget: work that does not fit together waits; work that fits runs
// side by side; work larger than the total still runs, alone.
func TestBudget(t *testing.T) {
	b := newBudget(10)
	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for _, n := range []uint64{6, 6, 6, 20} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.acquire(n)
			cur := running.Add(1)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			running.Add(-1)
			b.release(n)
		}()
	}
	wg.Wait()
	if peak.Load() != 1 {
		t.Errorf("%d pieces of 6 of 10 ran at once", peak.Load())
	}
	b = newBudget(10)
	b.acquire(4)
	done := make(chan bool)
	go func() { b.acquire(5); done <- true }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("4 + 5 of 10 did not run together")
	}
}
