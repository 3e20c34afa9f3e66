package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// fakeWorker answers evals from a function of the params string.
type fakeWorker struct {
	evals  *int
	answer func(params string) (*evalResponse, error)
	closed bool
}

func (f *fakeWorker) Hello() (DeviceInfo, error) {
	return DeviceInfo{Name: "Fake GPU", UUID: "GPU-fake", CC: "9.0", Driver: "13000", SMs: 132, L2Bytes: 60 << 20}, nil
}
func (f *fakeWorker) CopyBandwidth() (float64, error) { return 4000, nil }
func (f *fakeWorker) Eval(ctx context.Context, r *evalRequest, m MeasureOpts) (*evalResponse, error) {
	*f.evals++
	params := paramsOf(r.Program.PTX)
	if r.Baseline != nil {
		params = "baseline=" + r.Baseline.Name
	}
	return f.answer(params)
}
func (f *fakeWorker) Close() error { f.closed = true; return nil }
func (f *fakeWorker) Prepare(context.Context, *evalRequest) (*evalResponse, error) {
	return &evalResponse{Outcome: Outcome{Status: "ok"}}, nil
}

// paramsOf recovers which variant a program is: the test family writes its
// params into a PTX comment.
func paramsOf(ptx string) string {
	_, after, _ := strings.Cut(ptx, "// params ")
	line, _, _ := strings.Cut(after, "\n")
	return line
}

// memRecorder is an in-memory Recorder.
type memRecorder struct {
	mu      sync.Mutex
	done    map[Key]Result
	records []Result
	winners []Result
	choices []Winner
	bases   []*Result // the baseline given with each winner
}

func newMem() *memRecorder { return &memRecorder{done: map[Key]Result{}} }

func (m *memRecorder) Done(k Key) (Result, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.done[k]
	return r, ok && r.Status != "launch_error" && r.Status != "timeout", nil
}
func (m *memRecorder) Record(r Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append(m.records, r)
	m.done[r.Key] = r
	return nil
}
func (m *memRecorder) Winner(w Winner) error {
	m.winners = append(m.winners, w.Result)
	m.choices = append(m.choices, w)
	m.bases = append(m.bases, w.Baseline)
	return nil
}

// toyFamily has one axis "v" with values 1..4; its PTX names the params.
type toyFamily struct{ kernels.Family }

func (toyFamily) Name() string { return "toy" }
func (toyFamily) Space(variants.Shape) variants.Space {
	return variants.Space{Axes: []variants.Axis{variants.IntAxis("v", "", 1, 2, 3, 4)}}
}
func (toyFamily) Emit(s variants.Shape, p variants.Params) (kernels.Program, error) {
	if p["v"] == "4" {
		// A kernel with a barrier under thread-dependent control.
		m := ptx.NewModule()
		k := m.Func("bad")
		k.ReqNTid(64)
		k.If(k.Setp("lt", ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(7)), func() { k.BarSync(0) })
		if _, err := m.Build(); err != nil {
			return kernels.Program{}, fmt.Errorf("toy: %w", err)
		}
		return kernels.Program{}, errors.New("toy: the analyses passed a divergent barrier")
	}
	return kernels.Program{PTX: "// params " + p.String() + "\n", Launches: []kernels.Launch{{Entry: "toy"}}}, nil
}
func (toyFamily) Cost(variants.Shape) kernels.Cost { return kernels.Cost{Bytes: 1e6} }

var toyShape = variants.Shape{Dims: []variants.Dim{{Name: "n", Value: 1000}}, DType: dtype.F32}

func samples(center float64) []float64 {
	xs := make([]float64, 20)
	for i := range xs {
		xs[i] = center + float64(i%3)*0.01
	}
	return xs
}

func newRunner(t *testing.T, answer func(string) (*evalResponse, error), starts *int, evals *int) *Runner {
	t.Helper()
	r, err := New(Options{Measure: DefaultMeasure, EvalTimeout: time.Second, NewWorker: func() (Worker, error) {
		*starts++
		return &fakeWorker{evals: evals, answer: answer}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTunePicksFastestValidAndSkipsDone(t *testing.T) {
	answer := func(p string) (*evalResponse, error) {
		switch p {
		case "v=1":
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(10)}}, nil
		case "v=2":
			// Fastest, but wrong: must never win.
			return &evalResponse{Outcome: Outcome{Status: "invalid", Message: "dx[3] = 1, want 2"}}, nil
		case "v=3":
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(5)}}, nil
		}
		return nil, errors.New("v=4 must never reach the worker")
	}
	var starts, evals int
	r := newRunner(t, answer, &starts, &evals)
	rec := newMem()
	sums, err := r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	s := sums[0]
	if s.Best == nil || s.Best.Key.Params != "v=3" {
		t.Fatalf("best = %+v, want v=3", s.Best)
	}
	if s.Tried != 4 || s.Valid != 2 || s.Failed != 2 || evals != 3 || len(rec.records) != 4 {
		t.Fatalf("summary %+v, evals %d, records %d", s, evals, len(rec.records))
	}
	if got := s.Best.GBps; got < 199 || got > 201 { // 1e6 bytes in ~5 µs
		t.Errorf("GB/s = %v, want about 200", got)
	}
	if len(rec.winners) != 1 || rec.winners[0].Key.Params != "v=3" {
		t.Errorf("winners = %+v", rec.winners)
	}
	// The same run again evaluates nothing and finds the same winner.
	sums, err = r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if last := rec.records[3]; last.Status != "invalid" || !strings.Contains(last.Message, "bar.sync") {
		t.Errorf("unsafe variant recorded as %s: %s", last.Status, last.Message)
	}
	if evals != 3 || sums[0].Reused != 3 || sums[0].Best.Key.Params != "v=3" {
		t.Fatalf("re-run: evals %d, summary %+v", evals, sums[0])
	}
	// --fresh measures again.
	r.opt.Fresh = true
	if _, err := r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, rec); err != nil {
		t.Fatal(err)
	}
	if evals != 6 {
		t.Fatalf("fresh re-run evaluated %d, want 6", evals)
	}
}

func TestWorkerCrashIsRecordedAndRestarted(t *testing.T) {
	answer := func(p string) (*evalResponse, error) {
		switch p {
		case "v=2":
			return nil, errors.New("worker died (signal: segmentation fault)")
		case "v=3":
			return &evalResponse{Outcome: Outcome{Status: "launch_error", Message: "CUDA_ERROR_ILLEGAL_ADDRESS"}, Fatal: true}, nil
		}
		return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(7)}}, nil
	}
	var starts, evals int
	r := newRunner(t, answer, &starts, &evals)
	rec := newMem()
	sums, err := r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if starts != 3 {
		t.Errorf("worker started %d times, want 3 (first, after the crash, after the sticky error)", starts)
	}
	if sums[0].Valid != 1 || sums[0].Failed != 3 {
		t.Errorf("summary %+v", sums[0])
	}
	var statuses []string
	for _, rr := range rec.records {
		statuses = append(statuses, rr.Key.Params+":"+string(rr.Status))
	}
	if got := strings.Join(statuses, " "); got != "v=1:ok v=2:launch_error v=3:launch_error v=4:invalid" {
		t.Errorf("statuses = %s", got)
	}
	// launch errors are retried on the next run.
	before := evals
	r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, rec)
	if evals-before != 2 {
		t.Errorf("re-run evaluated %d variants, want the 2 launch errors", evals-before)
	}
}

type hangWorker struct{ fakeWorker }

func (h *hangWorker) Eval(ctx context.Context, r *evalRequest, m MeasureOpts) (*evalResponse, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("worker killed: %w", ctx.Err())
}

func TestHungVariantTimesOut(t *testing.T) {
	starts := 0
	r, err := New(Options{EvalTimeout: 20 * time.Millisecond, NewWorker: func() (Worker, error) {
		starts++
		return &hangWorker{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.opt.Budget = 1
	rec := newMem()
	if _, err := r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.records) != 1 || rec.records[0].Status != "timeout" || starts != 2 {
		t.Fatalf("records %+v, starts %d", rec.records, starts)
	}
}

func TestConverged(t *testing.T) {
	o := MeasureOpts{MinSamples: 10, MaxSamples: 50, TargetCI: 0.005}
	tight := samples(100)
	if !converged(tight, nil, o) {
		t.Error("tight samples did not converge")
	}
	if converged(tight[:5], nil, o) {
		t.Error("converged below MinSamples")
	}
	if converged(tight, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, o) {
		t.Error("converged with fewer than MinSamples unthrottled samples")
	}
	noisy := make([]float64, 20)
	for i := range noisy {
		noisy[i] = 100 + float64(i%7)*10
	}
	if converged(noisy, nil, o) {
		t.Error("noisy samples converged")
	}
	st := Summarize([]float64{3, 1, 2})
	if st.Median != 2 || st.Min != 1 || st.N != 3 {
		t.Errorf("Summarize = %+v", st)
	}
}

func TestCompareFindsFirstBadElement(t *testing.T) {
	ref := make([]float64, 200000)
	for i := range ref {
		ref[i] = dtype.F32.Round(float64(i%100) / 10)
	}
	raw := dtype.F32.Encode(ref)
	tol := kernels.Tolerance{Atol: 1e-6, Rtol: 1e-6}
	if m := compare(dtype.F32, raw, ref, tol); m.bad != -1 || m.maxAbs != 0 {
		t.Fatalf("identical buffers: %+v", m)
	}
	bad := append([]float64(nil), ref...)
	bad[150001] += 1
	bad[70000] += 0.5
	m := compare(dtype.F32, dtype.F32.Encode(bad), ref, tol)
	if m.bad != 70000 || m.maxAbs < 0.99 {
		t.Fatalf("got %+v, want first bad 70000 and max abs error 1", m)
	}
}

// TestRemeasurePools: the model strategy's confirmation asks for the
// fastest point again (budget 4 of the toy's 4 points, v=4 failing: three
// spread out, one confirms when the leader is not the fastest: v=1's
// first, noisy measurement ties with v=2 and v=3, which have fewer
// registers); the runner measures it afresh although the recorder has it, records both
// evaluations, and chooses the winner on the samples of both (the second,
// steady measurement breaks the tie). A seed whose design sees no tie
// spends the slot on the last point.
func TestRemeasurePools(t *testing.T) {
	confirmed := 0
	for seed := range uint64(8) {
		perParams := map[string]int{}
		evals := 0
		r, err := New(Options{Measure: DefaultMeasure, EvalTimeout: time.Second, Strategy: "model", Budget: 4, Seed: seed,
			NewWorker: func() (Worker, error) {
				return &fakeWorker{evals: &evals, answer: func(p string) (*evalResponse, error) {
					perParams[p]++
					xs := samples(map[string]float64{"v=1": 5, "v=2": 5.6, "v=3": 5.6}[p])
					if p == "v=1" && perParams[p] == 1 {
						for i := range xs {
							xs[i] = []float64{4.6, 5, 6}[i%3]
						}
					}
					regs := 64
					if p != "v=1" {
						regs = 32
					}
					return &evalResponse{Outcome: Outcome{Status: "ok", Samples: xs, Registers: regs}}, nil
				}}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		rec := newMem()
		sums, err := r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, rec)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if sums[0].Tried != 4 {
			t.Errorf("seed %d: %d evaluations, want the budget, 4", seed, sums[0].Tried)
		}
		if perParams["v=1"] < 2 {
			continue
		}
		confirmed++
		best := sums[0].Best
		if best == nil || best.Key.Params != "v=1" {
			t.Fatalf("seed %d: winner %v, want v=2 once measured again", seed, best)
		}
		for p, n := range perParams {
			if p != "v=1" && n != 1 {
				t.Errorf("seed %d: %s measured %d times; only the fastest is measured again", seed, p, n)
			}
		}
		if perParams["v=1"] != 2 || best.Stats.N != 40 || len(best.Samples) != 40 {
			t.Errorf("seed %d: winner measured %d times, over %d samples (%d kept); want 2 and 40", seed, perParams["v=1"], len(best.Samples), best.Stats.N)
		}
		n := 0
		for _, res := range rec.records {
			if res.Key.Params == "v=1" {
				n++
				if len(res.Samples) != 20 {
					t.Errorf("seed %d: a recorded evaluation of v=1 has %d samples, want its own 20", seed, len(res.Samples))
				}
			}
		}
		if n != 2 {
			t.Errorf("seed %d: v=1 recorded %d times, want 2", seed, n)
		}
	}
	if confirmed < 4 {
		t.Errorf("%d of 8 seeds measured v=1 again, want ≥ 4", confirmed)
	}
}

// toySearch is toyFamily with a search rule that leaves v=3, the fastest
// valid variant, out of the search (variants.Rule.Search).
type toySearch struct{ toyFamily }

type toySearchParams struct {
	V int `axis:"v" values:"1,2,3,4"`
}

func (toySearch) Space(variants.Shape) variants.Space {
	return variants.Typed[toySearchParams]{Rules: []variants.Rule[toySearchParams]{{Name: "search: v=3 measured slower", Axes: []string{"v"}, Search: true,
		Check: func(p toySearchParams) error {
			if p.V == 3 {
				return errors.New("left out")
			}
			return nil
		}}}}.Space()
}

// toyNoDefault is toyFamily with a search rule that leaves out v=1, the
// space's first point: its default variant.
type toyNoDefault struct{ toyFamily }

func (toyNoDefault) Space(variants.Shape) variants.Space {
	return variants.Typed[toySearchParams]{Rules: []variants.Rule[toySearchParams]{{Name: "search: v=1 never wins", Axes: []string{"v"}, Search: true,
		Check: func(p toySearchParams) error {
			if p.V == 1 {
				return errors.New("left out")
			}
			return nil
		}}}}.Space()
}

// TestTuneTimesTheDefault: a default variant that the search rules leave
// out is still timed, in full (the abandon rule does not stop it), so
// that the run has its "vs default"; with an axis fixed to another value
// it is not.
func TestTuneTimesTheDefault(t *testing.T) {
	answer := func(p string) (*evalResponse, error) {
		med := map[string]float64{"v=1": 50, "v=2": 8, "v=3": 5, "v=4": 9}[p]
		return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(med)}}, nil
	}
	var starts, evals int
	r := newRunner(t, answer, &starts, &evals)
	r.opt.Abandon = 0.1
	rec := newMem()
	sums, err := r.Tune(context.Background(), []Job{{Family: toyNoDefault{}, Shapes: []variants.Shape{toyShape}}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	var def Result
	ok := false
	for _, res := range rec.records {
		if res.Key.Params == "v=1" {
			def, ok = res, true
		}
	}
	if s := sums[0]; s.Tried != 4 || !ok || def.Status != "ok" || s.Best == nil || s.Best.Key.Params != "v=3" {
		t.Fatalf("tried %d, default %+v (recorded %v), best %+v: want all four tried, v=1 timed in full, v=3 best", s.Tried, def.Status, ok, s.Best)
	}
	r.opt.Fix = variants.Params{"v": "2"}
	rec = newMem()
	if _, err := r.Tune(context.Background(), []Job{{Family: toyNoDefault{}, Shapes: []variants.Shape{toyShape}}}, rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.done) != 1 {
		t.Errorf("with v=2 fixed: %d variants recorded, want 1", len(rec.done))
	}
}

// TestTuneSearchesTheSearchSpace: the tuner proposes the points of the
// space's search (its search rules applied), and a fixed axis that a
// search rule reads brings the region it leaves out back.
func TestTuneSearchesTheSearchSpace(t *testing.T) {
	answer := func(p string) (*evalResponse, error) {
		med := map[string]float64{"v=1": 10, "v=2": 8, "v=3": 5}[p]
		return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(med)}}, nil
	}
	var starts, evals int
	r := newRunner(t, answer, &starts, &evals)
	sums, err := r.Tune(context.Background(), []Job{{Family: toySearch{}, Shapes: []variants.Shape{toyShape}}}, newMem())
	if err != nil {
		t.Fatal(err)
	}
	if s := sums[0]; s.Tried != 3 || s.Best == nil || s.Best.Key.Params != "v=2" {
		t.Fatalf("searched %d points, best %+v: want v=1, 2 and 4, v=2 best", s.Tried, s.Best)
	}
	r.opt.Fix = variants.Params{"v": "3"}
	sums, err = r.Tune(context.Background(), []Job{{Family: toySearch{}, Shapes: []variants.Shape{toyShape}}}, newMem())
	if err != nil {
		t.Fatal(err)
	}
	if s := sums[0]; s.Tried != 1 || s.Best == nil || s.Best.Key.Params != "v=3" {
		t.Fatalf("with v=3 fixed: searched %d points, best %+v; want v=3", s.Tried, s.Best)
	}
}
