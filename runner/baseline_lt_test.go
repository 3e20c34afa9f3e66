package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// fakeAlgo is one algorithm of ltBackend's stand-in for cuBLASLt.
type fakeAlgo struct {
	config string
	us     float64 // its time
	wrong  bool    // C[0] off by one
	// wrongAfter, when positive, is the number of runs after which C[0]
	// goes wrong: a race that validation before timing does not see.
	wrongAfter int
}

// ltBackend is a memBackend whose vendor library ranks algos (none: the
// library is absent); each computes the GEMM as cuBLAS would.
type ltBackend struct {
	*memBackend
	algos []fakeAlgo
	runs  map[string]int
	last  string // the configuration that ran last
}

func newLtBackend(algos ...fakeAlgo) *ltBackend {
	mb := newMemBackend()
	mb.gemm = true
	return &ltBackend{memBackend: mb, algos: algos, runs: map[string]int{}}
}

func (b *ltBackend) GEMMAlgorithms(call kernels.GEMMCall, a, bp, c Ptr, n int) ([]GEMMAlgorithm, error) {
	if b.algos == nil {
		return nil, fmt.Errorf("fake: no libcublasLt: %w", ErrNoBaselineLibrary)
	}
	var out []GEMMAlgorithm
	for _, al := range b.algos[:min(n, len(b.algos))] {
		out = append(out, GEMMAlgorithm{Config: al.config, Run: func() error {
			b.runs[al.config]++
			b.last = al.config
			b.wrong = al.wrong || (al.wrongAfter > 0 && b.runs[al.config] > al.wrongAfter)
			return b.memBackend.GEMM(call, a, bp, c)
		}})
	}
	return out, nil
}

// us is the time of the algorithm that ran last.
func (b *ltBackend) us() float64 {
	for _, al := range b.algos {
		if al.config == b.last {
			return al.us
		}
	}
	return 0
}

// evalLt evaluates f's cublaslt-best baseline on be with pin, timing each
// algorithm by three runs and its fake time.
func evalLt(t *testing.T, be *ltBackend, f gemmFamily, pin string) *evalResponse {
	t.Helper()
	ss := NewSession(be)
	b := f.ltBest()
	req := &evalRequest{Kernel: f.Name(), Dims: toyShape.Dims, DType: toyShape.DType.String(), Baseline: &b, Algorithm: pin, Seed: 1}
	measure := func(l *Loaded, _ MeasureOpts) (Measured, error) {
		for range 3 {
			if err := ss.Run(l); err != nil {
				return Measured{}, err
			}
		}
		return Measured{Samples: samples(be.us())}, nil
	}
	return evaluate(ss, Families{f}, req, DefaultMeasure, measure)
}

// TestBestOfBaseline: every algorithm is validated before and after it is
// timed; the fastest valid one is the outcome, and the message says which
// rank it has and how the others did.
func TestBestOfBaseline(t *testing.T) {
	f := gemmFamily{m: 5, n: 7, k: 9, out: dtype.F32}
	be := newLtBackend(
		fakeAlgo{config: "algo 1", us: 12},
		fakeAlgo{config: "algo 2", us: 5, wrong: true},   // fastest, but wrong
		fakeAlgo{config: "algo 3", us: 10},               // the best valid
		fakeAlgo{config: "algo 4", us: 6, wrongAfter: 3}, // goes wrong while timed
		fakeAlgo{config: "algo 5", us: 11},
		fakeAlgo{config: "algo 6", us: 13},
		fakeAlgo{config: "algo 7", us: 14},
		fakeAlgo{config: "algo 8", us: 15},
		fakeAlgo{config: "algo 9", us: 1}, // past the top LtCandidates: never run
	)
	res := evalLt(t, be, f, "")
	if res.Status != eval.OK || res.Algorithm != "algo 3" {
		t.Fatalf("outcome %s %q: %s", res.Status, res.Algorithm, res.Message)
	}
	if st := Summarize(res.Samples); st.Median < 10 || st.Median > 10.02 {
		t.Errorf("samples %v: not algo 3's", res.Samples)
	}
	want := "cuBLASLt heuristic rank 3: algo 3; medians by rank: 1 12.01 µs, 2 invalid, 3 10.01 µs, 4 invalid, 5 11.01 µs, 6 13.01 µs, 7 14.01 µs, 8 15.01 µs"
	if res.Message != want {
		t.Errorf("message %q\nwant    %q", res.Message, want)
	}
	if be.runs["algo 9"] != 0 || be.runs["algo 4"] != 5 {
		t.Errorf("runs %v: want algo 4 validated, timed (3) and validated again, algo 9 never", be.runs)
	}

	// Pinned, only that algorithm runs, wherever the heuristic ranks it.
	be = newLtBackend(fakeAlgo{config: "algo 1", us: 12}, fakeAlgo{config: "algo 3", us: 10})
	res = evalLt(t, be, f, "algo 3")
	if res.Status != eval.OK || res.Algorithm != "algo 3" || be.runs["algo 1"] != 0 || !strings.HasPrefix(res.Message, "cuBLASLt heuristic rank 2: algo 3;") {
		t.Errorf("pinned: %s %q %q, runs %v", res.Status, res.Algorithm, res.Message, be.runs)
	}
	res = evalLt(t, be, f, "algo 77")
	if res.Status != eval.CompileError || !strings.Contains(res.Message, "no longer has the algorithm chosen before (algo 77)") {
		t.Errorf("a pin the heuristic no longer offers: %s %q", res.Status, res.Message)
	}
}

func TestBestOfBaselineNoneValid(t *testing.T) {
	f := gemmFamily{m: 5, n: 7, k: 9, out: dtype.BF16}
	be := newLtBackend(fakeAlgo{config: "algo 1", us: 5, wrong: true}, fakeAlgo{config: "algo 2", us: 6, wrongAfter: 1})
	res := evalLt(t, be, f, "")
	if res.Status != eval.Invalid || !strings.HasPrefix(res.Message, "no valid algorithm among cuBLASLt's heuristic top 2 (by rank: 1 invalid, 2 invalid); rank 1: c[0] = ") {
		t.Errorf("%s: %q", res.Status, res.Message)
	}
}

// TestBestOfBaselineUnavailable: an absent library, or a backend that
// ranks no algorithms, makes the baseline unavailable, not failed.
func TestBestOfBaselineUnavailable(t *testing.T) {
	f := gemmFamily{m: 2, n: 2, k: 2, out: dtype.F32}
	if res := evalLt(t, newLtBackend(), f, ""); !res.Unavailable || !strings.Contains(res.Message, "fake: no libcublasLt") {
		t.Errorf("without the library: %+v", res.Outcome)
	}
	ss := NewSession(newMemBackend()) // GEMMs, but no ranked algorithms
	b := f.ltBest()
	req := &evalRequest{Kernel: f.Name(), Dims: toyShape.Dims, DType: toyShape.DType.String(), Baseline: &b, Seed: 1}
	res := evaluate(ss, Families{f}, req, DefaultMeasure, nil)
	if !res.Unavailable || !strings.Contains(res.Message, "the fake backend ranks no vendor GEMM algorithms") {
		t.Errorf("on a backend without GEMMSearcher: %+v", res.Outcome)
	}
	if _, err := ss.LoadBaseline(b); err == nil || !strings.Contains(err.Error(), `baseline "cublaslt-best": LoadBaseline binds cublas`) {
		t.Errorf("LoadBaseline of a best-of baseline: %v", err)
	}
	if (&evalRequest{Baseline: &b}).evaluations() != LtCandidates || (&evalRequest{Baseline: &b, Algorithm: "x"}).evaluations() != 1 {
		t.Error("a best-of request is not allowed a deadline per algorithm, or a pinned one more than one")
	}
}

// ltWorker answers like fakeWorker and keeps, for each baseline request,
// its name and pinned algorithm; a cublaslt-best answer says it chose
// chosen, and takes delay.
type ltWorker struct {
	fakeWorker
	mu     *sync.Mutex
	asked  *[]string
	chosen string
	delay  time.Duration
}

func (w *ltWorker) Eval(ctx context.Context, r *evalRequest, m MeasureOpts) (*evalResponse, error) {
	resp, err := w.fakeWorker.Eval(ctx, r, m)
	if r.Baseline == nil || r.Baseline.Name != BaselineLtBest || err != nil {
		return resp, err
	}
	w.mu.Lock()
	*w.asked = append(*w.asked, "pin="+r.Algorithm)
	w.mu.Unlock()
	select {
	case <-time.After(w.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	resp.Algorithm = w.chosen
	if r.Algorithm != "" {
		resp.Algorithm = r.Algorithm
	}
	resp.Message = "cuBLASLt heuristic rank 1: " + resp.Algorithm
	return resp, nil
}

// forgetful is a memRecorder that, like the store, keeps no
// Outcome.Algorithm.
type forgetful struct{ *memRecorder }

func (f forgetful) Done(k Key) (Result, bool, error) {
	r, ok, err := f.memRecorder.Done(k)
	r.Algorithm = ""
	return r, ok, err
}

// TestTuneAgainstStrongestBaseline: both GEMM baselines are measured and
// recorded; the winner is compared with the faster, and the final round
// times the algorithm cublaslt-best chose.
func TestTuneAgainstStrongestBaseline(t *testing.T) {
	for _, tt := range []struct {
		cublas, lt float64
		want       string
	}{{11, 10.5, "cublaslt-best"}, {10, 10.5, "cublas"}} {
		answer := func(p string) (*evalResponse, error) {
			switch p {
			case "v=1":
				return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(9)}}, nil
			case "v=2":
				return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(12)}}, nil
			case "baseline=cublas":
				return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(tt.cublas)}}, nil
			case "baseline=cublaslt-best":
				return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(tt.lt)}}, nil
			}
			return nil, fmt.Errorf("unexpected request %q", p)
		}
		var asked []string
		var evals int
		r, err := New(Options{Measure: DefaultMeasure, EvalTimeout: time.Second, FinalRounds: 2, NewWorker: func() (Worker, error) {
			return &ltWorker{fakeWorker: fakeWorker{evals: &evals, answer: answer}, mu: &sync.Mutex{}, asked: &asked, chosen: "algo 3"}, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		var progress strings.Builder
		r.opt.Progress = &progress
		rec := forgetful{newMem()}
		f := gemmFamily{m: 4, n: 8, k: 16, out: dtype.F32, withLt: true}
		jobs := []Job{{Family: f, Shapes: []variants.Shape{toyShape}}}
		sums, err := r.Tune(context.Background(), jobs, rec)
		if err != nil {
			t.Fatal(err)
		}
		if sums[0].BaselineName != tt.want || rec.choices[0].BaselineName != tt.want {
			t.Errorf("cublas %v µs, cublaslt-best %v µs: compared with %q (recorded %q), want %q",
				tt.cublas, tt.lt, sums[0].BaselineName, rec.choices[0].BaselineName, tt.want)
		}
		var measured []string
		for _, res := range rec.records {
			if name, ok := eval.BaselineName(res.Key.Params); ok {
				measured = append(measured, name)
			}
		}
		want := "cublas cublaslt-best"
		if tt.want == "cublaslt-best" {
			want += " cublaslt-best" // and its final round
		} else {
			want += " cublas"
		}
		if got := strings.Join(measured, " "); got != want {
			t.Errorf("baseline results recorded: %s, want %s", got, want)
		}
		if tt.want == "cublaslt-best" {
			if got := strings.Join(asked, " "); got != "pin= pin=algo 3 pin=algo 3" {
				t.Errorf("cublaslt-best requests: %s, want the choice, then the final round pinned to it", got)
			}
			if !strings.Contains(progress.String(), "baseline cublaslt-best: 10.51 µs, cuBLASLt heuristic rank 1: algo 3") {
				t.Errorf("progress does not name the chosen algorithm:\n%s", progress.String())
			}
		}

		// A re-run reuses the stored choice, which carries no algorithm:
		// its final round chooses again once, then pins.
		asked = nil
		if _, err := r.Tune(context.Background(), jobs, rec); err != nil {
			t.Fatal(err)
		}
		if tt.want == "cublaslt-best" {
			if got := strings.Join(asked, " "); got != "pin= pin=algo 3" {
				t.Errorf("re-run: cublaslt-best requests %s, want a new choice in the final round, then its pin", got)
			}
		}
		r.Close()
	}
}

// TestBestOfDeadline: the watchdog gives a best-of baseline a deadline
// per algorithm, and a pinned one a single deadline.
func TestBestOfDeadline(t *testing.T) {
	answer := func(p string) (*evalResponse, error) {
		return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(10)}}, nil
	}
	var asked []string
	var evals int
	r, err := New(Options{Measure: DefaultMeasure, EvalTimeout: 40 * time.Millisecond, NewWorker: func() (Worker, error) {
		return &ltWorker{fakeWorker: fakeWorker{evals: &evals, answer: answer}, mu: &sync.Mutex{}, asked: &asked,
			chosen: "algo 1", delay: 100 * time.Millisecond}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f := gemmFamily{m: 4, n: 8, k: 16, out: dtype.F32}
	if res := r.evalBaseline(context.Background(), f, toyShape, f.ltBest(), "", kernels.Cost{}, newMem(), true); res.Status != eval.OK {
		t.Errorf("a best-of baseline taking 2.5 deadlines: %s %s", res.Status, res.Message)
	}
	res := r.evalBaseline(context.Background(), f, toyShape, f.ltBest(), "algo 1", kernels.Cost{}, newMem(), true)
	if res.Status != eval.Timeout || !strings.Contains(res.Message, "no answer within 40ms") {
		t.Errorf("a pinned best-of baseline taking 2.5 deadlines: %s %s", res.Status, res.Message)
	}
}
