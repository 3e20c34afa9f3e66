package tuning

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gradtune/gradtune/eval"
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
