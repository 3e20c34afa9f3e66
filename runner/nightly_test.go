package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/faults"
	"github.com/gradtune/gradtune/variants"
)

func res(params string, median, lo, hi float64, regs, smem int) *Result {
	return &Result{Key: Key{Params: params}, Outcome: Outcome{Status: "ok", Registers: regs, SmemBytes: smem},
		Stats: Stats{Median: median, Lo: lo, Hi: hi}}
}

// TestChooseStatesTheRule: without a tie the fastest wins; within a tie
// the fewest registers, then the least shared memory, then the median
// decide, and the rule says which.
func TestChooseStatesTheRule(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      []*Result
		want    string
		ties    int
		ruleHas string
		fastest string
	}{
		{"no tie", []*Result{res("a", 10, 9.9, 10.1, 64, 0), res("b", 11, 10.9, 11.1, 32, 0)}, "a", 0, "no tie", "a"},
		{"registers", []*Result{res("a", 10, 9.9, 10.2, 64, 0), res("b", 10.1, 10.0, 10.3, 32, 0), res("c", 12, 11.9, 12.1, 16, 0)},
			"b", 1, "fewest registers (32)", "a"},
		{"shared memory", []*Result{res("a", 10, 9.9, 10.2, 32, 4096), res("b", 10.1, 10.0, 10.3, 32, 0)}, "b", 1, "least shared memory", "a"},
		{"median", []*Result{res("a", 10, 9.9, 10.2, 32, 0), res("b", 10.1, 10.0, 10.3, 32, 0)}, "a", 1, "lowest median", "a"},
	} {
		ch := Choose(c.in)
		if ch.Best.Key.Params != c.want || ch.Ties != c.ties || !strings.Contains(ch.Rule, c.ruleHas) || ch.Fastest.Key.Params != c.fastest {
			t.Errorf("%s: best %s, ties %d, rule %q, fastest %s", c.name, ch.Best.Key.Params, ch.Ties, ch.Rule, ch.Fastest.Key.Params)
		}
	}
	if ch := Choose(nil); ch.Best != nil {
		t.Errorf("Choose(nil) = %+v", ch)
	}
}

// TestThrottledSamplesLeftOut: flagged samples leave the median and the
// count, and say so; too few unflagged ones keep everything, with a word.
func TestThrottledSamplesLeftOut(t *testing.T) {
	xs := []float64{10, 10, 10, 10, 10, 10, 10, 10, 30, 30}
	st := SummarizeKept(xs, []int{8, 9})
	if st.Median != 10 || st.N != 8 || len(st.Excluded) != 2 || !strings.Contains(strings.Join(st.Warnings, ";"), "2 of 10 samples left out") {
		t.Errorf("SummarizeKept = %+v", st)
	}
	st = SummarizeKept(xs[:7], []int{0, 1, 2})
	if st.N != 7 || st.Excluded != nil || !strings.Contains(strings.Join(st.Warnings, ";"), "too few unthrottled") {
		t.Errorf("with too few left: %+v", st)
	}
}

type fakeTelemetry struct{ readings []Reading }

func (f *fakeTelemetry) Read() (Reading, error) {
	if len(f.readings) == 0 {
		return Reading{}, errors.New("no more readings")
	}
	r := f.readings[0]
	f.readings = f.readings[1:]
	return r, nil
}
func (f *fakeTelemetry) Close() error { return nil }

// TestGaugeFlagsThrottledBatches: a batch is throttled when the reading on
// either side of it is; the summary takes median clocks and every reason.
func TestGaugeFlagsThrottledBatches(t *testing.T) {
	cool := Reading{SMClockMHz: 1980, MemClockMHz: 3201, TemperatureC: 40, PowerW: 300}
	hot := Reading{SMClockMHz: 1500, MemClockMHz: 3201, TemperatureC: 80, PowerW: 700, Reasons: eval.ReasonSWPowerCap}
	g := &gauge{t: &fakeTelemetry{readings: []Reading{cool, cool, hot, cool, cool}}}
	var flags []bool
	g.read()
	for range 4 {
		flags = append(flags, g.read())
	}
	if want := []bool{false, true, true, false}; !equalBools(flags, want) {
		t.Errorf("throttled batches %v, want %v", flags, want)
	}
	s := g.summary()
	if s.SMClockMHz != 1980 || s.TemperatureC != 80 || s.PowerW != 700 || s.Reasons != eval.ReasonSWPowerCap {
		t.Errorf("summary %+v", s)
	}
	if !strings.Contains(hot.String(), "sw power cap") || (&gauge{}).read() {
		t.Errorf("reading %s", hot)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBenchMeasuresTunedAndBaseline: Bench re-measures even what the
// recorder has, records both variants, plants the delay launch in the
// tuned one only, and records the tuned one as the winner with its
// baseline.
func TestBenchMeasuresTunedAndBaseline(t *testing.T) {
	var delays []uint64
	answer := func(p string) (*evalResponse, error) {
		return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(map[string]float64{"v=1": 10, "v=3": 7}[p])}}, nil
	}
	var starts, evals int
	r := newRunner(t, answer, &starts, &evals)
	r.w.(*fakeWorker).answer = answer
	inner := r.w.(*fakeWorker)
	r.w = &spyWorker{Worker: inner, seen: func(req *evalRequest) { delays = append(delays, faults.DelayNS(req.Program)) }}
	rec := newMem()
	c := Case{Family: toyFamily{}, Shape: toyShape, Params: variants.Params{"v": "3"}, Baseline: variants.Params{"v": "1"},
		BaselineName: "default", Plant: func(p kernels.Program) (kernels.Program, string, error) {
			q, err := faults.Delay(p, 350)
			return q, "planted slowdown: 350ns", err
		}}
	for range 2 {
		sums, err := r.Bench(context.Background(), []Case{c}, rec)
		if err != nil {
			t.Fatal(err)
		}
		if s := sums[0]; s.Best == nil || s.Best.Key.Params != "v=3" || s.Baseline == nil || s.Baseline.Key.Params != "v=1" || s.Valid != 2 {
			t.Fatalf("summary %+v", s)
		}
	}
	if evals != 4 || len(rec.records) != 4 {
		t.Errorf("%d evaluations, %d records: Bench must measure afresh every time", evals, len(rec.records))
	}
	if len(delays) != 4 || delays[0] != 350 || delays[1] != 0 {
		t.Errorf("delays seen by the worker %v, want 350 ns on the tuned variant only", delays)
	}
	w := rec.choices[0]
	if w.BaselineName != "default" || w.Baseline == nil || w.Rule != "from the config table" ||
		!strings.Contains(rec.records[0].Message, "planted slowdown") {
		t.Errorf("winner %+v, message %q", w, rec.records[0].Message)
	}
}

type spyWorker struct {
	Worker
	seen func(*evalRequest)
}

func (s *spyWorker) Eval(ctx context.Context, r *evalRequest, m MeasureOpts) (*evalResponse, error) {
	s.seen(r)
	return s.Worker.Eval(ctx, r, m)
}

// TestHelperWorker is not a test: run by TestWatchdogKillsAHungProcess as
// a worker process that hangs on v=2 and answers everything else.
func TestHelperWorker(t *testing.T) {
	if os.Getenv("GRADTUNE_HELPER_WORKER") == "" {
		t.Skip("helper process")
	}
	dec, enc := json.NewDecoder(bufio.NewReader(os.Stdin)), json.NewEncoder(os.Stdout)
	for {
		var req request
		if dec.Decode(&req) != nil {
			os.Exit(0)
		}
		switch {
		case req.Op == "hello":
			enc.Encode(&response{Info: &DeviceInfo{Name: "Helper GPU", UUID: "GPU-helper"}})
		case req.Op == "prepare":
			enc.Encode(&response{Eval: &evalResponse{Outcome: Outcome{Status: "ok"}}})
		case req.Eval != nil && req.Eval.Params == "v=2":
			select {} // a kernel that never ends
		default:
			enc.Encode(&response{Eval: &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(5)}}})
		}
	}
}

// TestWatchdogKillsAHungProcess: a worker process that never answers is
// killed at the deadline, its variant recorded as a timeout, a fresh
// worker started, and the run goes on.
func TestWatchdogKillsAHungProcess(t *testing.T) {
	t.Setenv("GRADTUNE_HELPER_WORKER", "1")
	starts := 0
	spawn := NewProcessWorker([]string{os.Args[0], "-test.run=^TestHelperWorker$"})
	r, err := New(Options{EvalTimeout: 500 * time.Millisecond, NewWorker: func() (Worker, error) { starts++; return spawn() }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := newMem()
	t0 := time.Now()
	if _, err := r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, rec); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rr := range rec.records {
		got = append(got, rr.Key.Params+":"+string(rr.Status))
	}
	if s := strings.Join(got, " "); s != "v=1:ok v=2:timeout v=3:ok v=4:invalid" || starts != 2 {
		t.Errorf("statuses %s, %d workers started (want 2)", s, starts)
	}
	if !strings.Contains(rec.records[1].Message, "watchdog") || time.Since(t0) > 10*time.Second {
		t.Errorf("timeout message %q after %v", rec.records[1].Message, time.Since(t0))
	}
}

// TestDeadlineFollowsTheProtocol: the watchdog allows the setup and four
// times the sampling limit.
func TestDeadlineFollowsTheProtocol(t *testing.T) {
	if d := Deadline(DefaultMeasure); d != setupAllowance+2*time.Second {
		t.Errorf("Deadline(DefaultMeasure) = %v", d)
	}
}
