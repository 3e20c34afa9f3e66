package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/search"
	"github.com/gradtune/gradtune/variants"
)

// Key identifies an evaluation by content: the same key means the same
// code measured the same way on the same GPU and driver.
type Key struct {
	Kernel, ShapeKey, Params, PTXSHA256, GPUUUID, Driver string
	Mode                                                 eval.Mode
}

// Outcome is what evaluating a variant found: its status, resources,
// errors against the reference and raw samples. The worker sends it back
// and Result carries it.
type Outcome struct {
	Status     eval.Status
	Message    string
	Registers  int
	SpillBytes int
	SmemBytes  int
	Occupancy  float64
	MaxAbsErr  float64
	MaxRelErr  float64
	Samples    []float64 // µs
	// Abandoned: the abandon rule stopped sampling (see Abandon).
	Abandoned bool `json:",omitempty"`
	// Throttled are the indexes of the samples taken while the GPU
	// throttled (see Reading.Throttled); GPU is the GPU's state during
	// sampling, zero without telemetry.
	Throttled []int
	GPU       Reading
	// Unavailable marks a baseline whose library the worker lacks: it
	// was not run, and is not recorded.
	Unavailable bool `json:",omitempty"`
	// Algorithm is the vendor algorithm a best-of baseline chose, as the
	// library describes its configuration; the final round times that
	// one. Not stored (the Message names it too).
	Algorithm string `json:",omitempty"`
	// Worker wall time of the stages, ms (not stored).
	CompileMS, ValidateMS, TotalMS float64
}

// Result is one evaluated variant.
type Result struct {
	Key Key
	Outcome
	Stats  Stats
	GBps   float64
	TFLOPs float64
	Reused bool // taken from an earlier run instead of measured now
}

// Recorder stores results as they finish. The command adapts the store to
// it; tests use memory.
type Recorder interface {
	// Done returns a finished result with that key, if one is stored.
	Done(k Key) (Result, bool, error)
	// Record stores a result at once.
	Record(r Result) error
	// Winner stores the chosen result of a (kernel, shape).
	Winner(w Winner) error
}

// Winner is the result chosen for a (kernel, shape), how it was chosen,
// and the baseline it is compared with (nil when none was measured).
type Winner struct {
	Result
	Ties     int
	Rule     string
	Baseline *Result
	// BaselineName says what the baseline is ("default": the family's
	// untuned variant).
	BaselineName string
}

// Worker is the GPU side as the parent sees it. NewProcessWorker starts the
// real one; tests substitute fakes.
type Worker interface {
	Hello() (DeviceInfo, error)
	CopyBandwidth() (float64, error)
	// Prepare makes the worker compute a shape's inputs and reference
	// (CPU work that may take long for large shapes) before the timed
	// part of the shape's first evaluation.
	Prepare(ctx context.Context, r *evalRequest) (*evalResponse, error)
	// Eval runs one variant; an error means the worker died or hung, and
	// the Runner restarts it.
	Eval(ctx context.Context, r *evalRequest, m MeasureOpts) (*evalResponse, error)
	Close() error
}

// Job is one family tuned over a list of shapes.
type Job struct {
	Family kernels.Family
	Shapes []variants.Shape
}

// Options configure a Runner.
type Options struct {
	Measure MeasureOpts
	Fresh   bool   // re-evaluate even what the Recorder has
	Seed    uint64 // input data seed
	// Strategy names the search strategy (package search; "" is
	// exhaustive); Budget is its number of full evaluations per shape (0:
	// the strategy's default, every point for exhaustive), or
	// BudgetFraction of the space when that is positive. Seed also seeds
	// the strategy.
	Strategy       string
	Budget         int
	BudgetFraction float64
	// Abandon, when positive, turns on the abandon rule with this margin
	// (0.05: a variant is stopped once its CI lies 5% above the best's;
	// see Abandon).
	Abandon float64
	// FinalRounds, when positive, re-times each shape's winner and its
	// baseline alternately this many times each in a fresh worker, and
	// reports that round (see finalRound).
	FinalRounds int
	Fix         variants.Params // only points with these axis values
	// EvalTimeout is the watchdog: an evaluation taking longer kills the
	// worker and is recorded as a timeout (0: Deadline of Measure).
	EvalTimeout time.Duration
	// PrepareTimeout bounds the preparation of a shape (0: 5 minutes).
	PrepareTimeout time.Duration
	Progress       io.Writer // progress lines; nil for none
	NewWorker      func() (Worker, error)
}

// PointLister is a family that has its space's points at hand (a
// replay's, which tunes the same shape many times): the runner takes them
// instead of enumerating the space for every tune.
type PointLister interface {
	Points(s variants.Shape) []variants.Params
}

// Summary of one (family, shape).
type Summary struct {
	Kernel string
	Shape  variants.Shape
	Best   *Result
	Tried  int // variants considered
	Valid  int // status ok
	Failed int // invalid, compile_error, launch_error, timeout
	Reused int // results taken from earlier runs
	// Abandoned counts the evaluations stopped early: by the abandon rule,
	// or short looks of successive halving (recorded as skipped).
	Abandoned int
	// Ties and Rule say how Best was chosen (see Choose); Baseline is the
	// baseline measured beside it (a vendor library's, or by Bench the
	// variant BaselineName names), nil when none.
	Ties         int
	Rule         string
	Baseline     *Result
	BaselineName string
	// Worker wall time spent compiling, validating and in all, seconds.
	CompileS, ValidateS, TotalS float64
	// Wall, the runner's own clock on the shape's phases.
	Wall Walls
}

// Walls is where a shape's wall time went, seconds: its three phases in
// order (the search, the baselines, the final round; a bench entry's two
// evaluations count as its search), and across them the time spent
// preparing inputs and references in the worker, replacing workers (the
// old one's exit and the new one's start), and waiting for the compile
// pool's cubins.
type Walls struct {
	Search, Baselines, Final   float64
	Prepare, Starts, CubinWait float64
}

// Runner tunes jobs on one worker at a time.
type Runner struct {
	opt      Options
	w        Worker
	info     DeviceInfo
	prepared string // the shape the worker holds
	// wall accumulates the shape in hand's Walls.
	wall Walls
	// pool, when set, compiles programs ahead of the worker (UseCompilePool).
	pool *CompilePool
	// emitted holds the programs prefetch emitted, by emitKey, until
	// evalOne takes them: each variant is emitted once.
	emitted sync.Map
	// unavailable names the baselines whose library the worker lacks:
	// said once, then no longer asked for.
	unavailable map[string]bool
}

// setupAllowance is the part of the watchdog's deadline for what precedes
// sampling: the JIT, the resource queries, validation and warm-up.
const setupAllowance = 20 * time.Second

// Deadline is the watchdog's time limit for one evaluation under m: the
// setup allowance plus four times the sampling time limit (the last batch
// may run past it). The shape's inputs and reference are prepared before,
// under their own limit, so a large shape does not eat into it.
func Deadline(m MeasureOpts) time.Duration {
	return setupAllowance + time.Duration(4*m.MaxTimeMS*float64(time.Millisecond))
}

// New starts a worker and asks it for its device. A machine without a
// driver fails here.
func New(opt Options) (*Runner, error) {
	if opt.Measure.MinSamples == 0 {
		opt.Measure = DefaultMeasure
	}
	if opt.EvalTimeout == 0 {
		opt.EvalTimeout = Deadline(opt.Measure)
	}
	if opt.PrepareTimeout == 0 {
		opt.PrepareTimeout = 5 * time.Minute
	}
	r := &Runner{opt: opt, unavailable: map[string]bool{}}
	if err := r.start(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Runner) start() error {
	w, err := r.opt.NewWorker()
	if err != nil {
		return err
	}
	info, err := w.Hello()
	if err != nil {
		w.Close()
		return err
	}
	r.w, r.info, r.prepared = w, info, ""
	return nil
}

// restart replaces a dead or hung worker with a fresh one; what went wrong
// is appended to res.
func (r *Runner) restart(res *Result) {
	t0 := time.Now()
	defer func() { r.wall.Starts += time.Since(t0).Seconds() }()
	r.w.Close()
	if err := r.start(); err != nil {
		res.Message += "; restarting the worker failed: " + err.Error()
	}
}

// UseCompilePool makes the runner compile programs in p's helpers,
// prefetching each batch of proposals, and send the worker cubins.
func (r *Runner) UseCompilePool(p *CompilePool) { r.pool = p }

// prefetch queues the programs of props that are not already done, in
// the order the runner evaluates them. It runs beside the evaluations, so
// rec.Done must be safe for concurrent use (the store's is).
func (r *Runner) prefetch(f kernels.Family, s variants.Shape, props []search.Proposal, rec Recorder) {
	for _, pr := range props {
		prog, err := f.Emit(s, pr.Params)
		if err != nil {
			continue
		}
		r.emitted.Store(emitKey(f, s, pr.Params), prog)
		if !r.opt.Fresh {
			k := r.newResult(f, s, pr.Params.String()).Key
			k.PTXSHA256 = sha256Hex([]byte(prog.PTX))
			if _, ok, err := rec.Done(k); err == nil && ok {
				continue
			}
		}
		r.pool.Prefetch(prog.PTX)
	}
}

// Device returns the worker's GPU.
func (r *Runner) Device() DeviceInfo { return r.info }

// CopyBandwidth measures the device-to-device copy rate in GB/s.
func (r *Runner) CopyBandwidth() (float64, error) { return r.w.CopyBandwidth() }

// Close stops the worker.
func (r *Runner) Close() error {
	if r.w == nil {
		return nil
	}
	return r.w.Close()
}

// Tune evaluates every variant of every job's shapes, records each result,
// and returns a summary per shape. It stops early only when ctx ends or
// the recorder fails.
func (r *Runner) Tune(ctx context.Context, jobs []Job, rec Recorder) ([]Summary, error) {
	var out []Summary
	for _, j := range jobs {
		for _, s := range j.Shapes {
			sum, err := r.tuneShape(ctx, j.Family, s, rec)
			out = append(out, sum)
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

func (r *Runner) tuneShape(ctx context.Context, f kernels.Family, s variants.Shape, rec Recorder) (Summary, error) {
	start := time.Now()
	r.wall = Walls{}
	sum := Summary{Kernel: f.Name(), Shape: s}
	cfg := search.Config{Name: r.opt.Strategy, Budget: r.opt.Budget, Fraction: r.opt.BudgetFraction, Seed: r.opt.Seed}
	if pl, ok := f.(PointLister); ok {
		cfg.Points = pl.Points(s)
	}
	searched := f.Space(s).Search(r.opt.Fix)
	strat, err := search.New(cfg, searched, r.opt.Fix)
	if err != nil {
		return sum, err
	}
	cost := f.Cost(s)
	r.emitted.Clear() // what the last shape's evalOne emitted first
	var valid []*Result
	seen := map[string]bool{}
	eval1 := func(pr search.Proposal, m MeasureOpts) (*Result, error) {
		seen[pr.Params.String()] = true
		res := r.evalOne(ctx, f, s, pr.Params, cost, rec, nil, m, pr.Again)
		sum.add(res)
		if res.Reused {
			sum.Reused++
		} else if err := rec.Record(*res); err != nil {
			return res, fmt.Errorf("recording %s %s %s: %w", f.Name(), s.Key(), pr.Params, err)
		}
		if res.Status == eval.OK {
			valid, res = pool(valid, res, cost)
		}
		switch {
		case res.Status == eval.OK:
			sum.Valid++
		case res.Status == eval.Skipped && len(res.Samples) > 0:
			sum.Abandoned++
		case res.Status.Failed():
			sum.Failed++
		}
		return res, nil
	}
	for props := strat.Next(); len(props) > 0; props = strat.Next() {
		if r.pool != nil {
			// Emitting a large batch takes seconds: the worker starts on
			// the first programs while the rest are emitted and queued.
			go r.prefetch(f, s, props, rec)
		}
		for _, pr := range props {
			if err := ctx.Err(); err != nil {
				return sum, err
			}
			res, err := eval1(pr, r.measureFor(pr, valid))
			if err != nil {
				return sum, err
			}
			strat.Tell(pr, observe(res, valid))
		}
	}
	// The family's default point is every run's "vs default" reference:
	// where a search rule leaves it out, it is timed in full (never
	// abandoned) all the same.
	if def, ok := f.Space(s).First(); ok && searched.Check(def) != nil && !seen[def.String()] && matches(def, r.opt.Fix) && ctx.Err() == nil {
		if _, err := eval1(search.Proposal{Params: def}, r.opt.Measure); err != nil {
			return sum, err
		}
	}
	c := Choose(valid)
	sum.Best, sum.Ties, sum.Rule = c.Best, c.Ties, c.Rule
	r.wall.Search = time.Since(start).Seconds()
	t0 := time.Now()
	base, bl, err := r.tuneBaselines(ctx, f, s, cost, rec)
	if err != nil {
		return sum, err
	}
	r.wall.Baselines = time.Since(t0).Seconds()
	t0 = time.Now()
	for tries := 0; c.Best != nil && r.opt.FinalRounds > 0; tries++ {
		w, b, err := r.finalRound(ctx, f, s, c.Best, base, bl, cost, rec)
		if err != nil {
			return sum, err
		}
		if w.Status == eval.OK {
			sum.Best, base = w, b
			break
		}
		// The winner failed its final round: the next one is tried, three
		// at most.
		if r.opt.Progress != nil {
			fmt.Fprintf(r.opt.Progress, "%s %s: the winner %s failed its final round (%s: %s)\n", f.Name(), s.Key(), c.Best.Key.Params, w.Status, w.Message)
		}
		valid = slices.DeleteFunc(valid, func(v *Result) bool { return v.Key.Params == c.Best.Key.Params })
		c = Choose(valid)
		sum.Best, sum.Ties, sum.Rule = c.Best, c.Ties, c.Rule
		if tries == 2 {
			sum.Best = nil
			break
		}
	}
	r.wall.Final = time.Since(t0).Seconds()
	sum.Wall = r.wall
	sum.Baseline = base
	if base != nil {
		sum.BaselineName, _ = eval.BaselineName(base.Key.Params)
	}
	if sum.Best != nil {
		w := Winner{Result: *sum.Best, Ties: c.Ties, Rule: c.Rule, Baseline: base, BaselineName: sum.BaselineName}
		if err := rec.Winner(w); err != nil {
			return sum, fmt.Errorf("recording winner: %w", err)
		}
	}
	r.progress(sum, time.Since(start))
	return sum, nil
}

// pool adds a valid result to valid: when valid holds an earlier
// evaluation of the same params (a re-measurement the strategy asked
// for), the two become one result over the samples of both, which
// replaces the earlier and is returned; otherwise res is appended.
func pool(valid []*Result, res *Result, cost kernels.Cost) ([]*Result, *Result) {
	for k, old := range valid {
		if old.Key.Params != res.Key.Params {
			continue
		}
		p := *old
		p.Reused = false
		p.Samples = append(append([]float64(nil), old.Samples...), res.Samples...)
		p.Throttled = append([]int(nil), old.Throttled...)
		for _, i := range res.Throttled {
			p.Throttled = append(p.Throttled, len(old.Samples)+i)
		}
		p.Stats = SummarizeKept(p.Samples, p.Throttled)
		if med := p.Stats.Median; med > 0 {
			p.GBps = float64(cost.Bytes) / (med * 1e-6) / 1e9
			p.TFLOPs = float64(cost.Flops) / (med * 1e-6) / 1e12
		}
		valid[k] = &p
		return valid, &p
	}
	return append(valid, res), res
}

// measureFor is the protocol of one proposal: a short look of pr.Samples
// samples, or the full protocol; with Options.Abandon, the abandon bar is
// set from the best of valid (see Abandon), except for a re-measurement
// (Again), which is of a contender.
func (r *Runner) measureFor(pr search.Proposal, valid []*Result) MeasureOpts {
	m := r.opt.Measure
	if pr.Samples > 0 {
		m.MaxSamples = pr.Samples
		m.MinSamples = min(m.MinSamples, pr.Samples)
	}
	if r.opt.Abandon > 0 && len(valid) > 0 && !pr.Again {
		bestHi := valid[0].Stats.Hi
		for _, v := range valid[1:] {
			bestHi = min(bestHi, v.Stats.Hi)
		}
		m.AbandonAbove = bestHi * (1 + r.opt.Abandon)
		m.AbandonAfter = max(m.AbandonAfter, AbandonAfter)
	}
	return m
}

// AbandonAfter is the number of samples after which the abandon rule is
// first applied.
const AbandonAfter = 6

// observe is what a strategy learns from a result: whether the variant is
// valid, its median and interval, also from a partial or abandoned
// measurement; and which of the valid results lead.
func observe(res *Result, valid []*Result) search.Observation {
	ok := res.Status == eval.OK || (res.Status == eval.Skipped && len(res.Samples) > 0)
	o := search.Observation{OK: ok && res.Stats.Median > 0, Median: res.Stats.Median, Lo: res.Stats.Lo, Hi: res.Stats.Hi,
		Partial: res.Status != eval.OK}
	if c := Choose(valid); c.Best != nil {
		o.Leader, o.Fastest = c.Best.Key.Params, c.Fastest.Key.Params
	}
	return o
}

// progress prints sum's line on Progress, if any: the winner, the
// baseline's time and where the worker's time went.
func (r *Runner) progress(sum Summary, took time.Duration) {
	if r.opt.Progress == nil {
		return
	}
	best := "no valid variant"
	if b := sum.Best; b != nil {
		best = fmt.Sprintf("best %.2f µs (%.0f GB/s) %s", b.Stats.Median, b.GBps, b.Key.Params)
		if sum.Ties > 0 {
			best += " [" + sum.Rule + "]"
		}
	}
	if b := sum.Baseline; b != nil {
		best += fmt.Sprintf("; %s %.2f µs", sum.BaselineName, b.Stats.Median)
	}
	w := sum.Wall
	fmt.Fprintf(r.opt.Progress, "%-14s %-26s %4d variants: %d valid, %d failed, %d reused; %s [%.1fs: search %.1fs, baselines %.1fs, final round %.1fs; preparing inputs %.1fs, starting workers %.1fs, waiting for cubins %.1fs; the worker's variants: compile %.1fs, validate %.1fs, measure %.1fs]\n",
		sum.Kernel, sum.Shape.Key(), sum.Tried, sum.Valid, sum.Failed, sum.Reused, best, took.Seconds(),
		w.Search, w.Baselines, w.Final, w.Prepare, w.Starts, w.CubinWait,
		sum.CompileS, sum.ValidateS, sum.TotalS-sum.CompileS-sum.ValidateS)
}

// add counts a result's worker time.
func (sum *Summary) add(res *Result) {
	sum.Tried++
	sum.CompileS += res.CompileMS / 1e3
	sum.ValidateS += res.ValidateMS / 1e3
	sum.TotalS += res.TotalMS / 1e3
}

// Plant changes a program before it is evaluated (a fault planted for
// the regression gate's tests) and says what it did, for the result's
// message.
type Plant func(kernels.Program) (kernels.Program, string, error)

// evalOne emits, looks up and evaluates one variant, changed by plant
// when that is not nil; again measures it even when the recorder has it.
func (r *Runner) evalOne(ctx context.Context, f kernels.Family, s variants.Shape, p variants.Params, cost kernels.Cost, rec Recorder, plant Plant, m MeasureOpts, again bool) *Result {
	prog, err := r.emit(f, s, p)
	return r.evalProgram(ctx, f, s, p, prog, err, cost, rec, plant, m, again)
}

// evalProgram evaluates prog, variant p of f at s (emitErr: why it could
// not be emitted).
func (r *Runner) evalProgram(ctx context.Context, f kernels.Family, s variants.Shape, p variants.Params, prog kernels.Program, err error,
	cost kernels.Cost, rec Recorder, plant Plant, m MeasureOpts, again bool) *Result {
	res := r.newResult(f, s, p.String())
	var planted string
	if err == nil && plant != nil {
		prog, planted, err = plant(prog)
	}
	if err != nil {
		// A variant the static analyses reject (a barrier under divergent
		// control, a shuffle mask that does not match its lanes, a shared
		// access out of bounds) is wrong code, not a compiler failure.
		res.Status, res.Message = eval.CompileError, "emit: "+err.Error()
		if errors.Is(err, ptx.ErrUnsafe) {
			res.Status = eval.Invalid
		}
		return res
	}
	res.Key.PTXSHA256 = sha256Hex([]byte(prog.PTX))
	req := &evalRequest{Kernel: f.Name(), Params: p.String(), Dims: s.Dims, DType: s.DType.String(), Program: prog, Seed: r.opt.Seed}
	res = r.evaluate(ctx, res, req, cost, rec, m, again)
	if planted != "" && res.Message == "" {
		res.Message = planted
	}
	return res
}

// emit is the program of f, s and p: the one prefetch emitted, or a new
// one.
func (r *Runner) emit(f kernels.Family, s variants.Shape, p variants.Params) (kernels.Program, error) {
	if prog, ok := r.emitted.LoadAndDelete(emitKey(f, s, p)); ok {
		return prog.(kernels.Program), nil
	}
	return f.Emit(s, p)
}

func emitKey(f kernels.Family, s variants.Shape, p variants.Params) string {
	return f.Name() + "/" + s.Key() + "/" + p.String()
}

// newResult is a result keyed by f, s and params on the worker's GPU.
func (r *Runner) newResult(f kernels.Family, s variants.Shape, params string) *Result {
	return &Result{Key: Key{Kernel: f.Name(), ShapeKey: s.Key(), Params: params,
		GPUUUID: r.info.UUID, Driver: r.info.Driver, Mode: r.opt.Measure.Mode}}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// evaluate fills res (keyed) with the recorded result of its key, unless
// Fresh or again, or with what the worker answers to req; a worker that
// died, hung or lost its context is restarted.
func (r *Runner) evaluate(ctx context.Context, res *Result, req *evalRequest, cost kernels.Cost, rec Recorder, m MeasureOpts, again bool) *Result {
	if !r.opt.Fresh && !again {
		// A stored partial or abandoned measurement (skipped, with
		// samples) is measured again: it never stands for a full one.
		if old, ok, err := rec.Done(res.Key); err == nil && ok && !(old.Status == eval.Skipped && len(old.Samples) > 0) {
			old.Reused = true
			old.Key = res.Key
			return &old
		}
	}
	if r.pool != nil && req.Baseline == nil {
		// A helper that could not compile leaves it to the worker, which
		// records the compiler's error as it always did.
		t0 := time.Now()
		req.Cubin, _ = r.pool.Cubin(req.Program.PTX)
		r.wall.CubinWait += time.Since(t0).Seconds()
	}
	if !r.prepare(ctx, req, res) {
		return res
	}
	r.run(ctx, req, res, cost, m)
	return res
}

// prepare has the worker prepare the request's shape unless it holds it;
// on failure it fills res and reports false.
func (r *Runner) prepare(ctx context.Context, req *evalRequest, res *Result) bool {
	key := res.Key.Kernel + "/" + res.Key.ShapeKey
	if key == r.prepared {
		return true
	}
	pctx, cancel := context.WithTimeout(ctx, r.opt.PrepareTimeout)
	t0 := time.Now()
	resp, err := r.w.Prepare(pctx, req)
	r.wall.Prepare += time.Since(t0).Seconds()
	cancel()
	if err == nil && resp.Status == eval.OK {
		r.prepared = key
		return true
	}
	if err != nil {
		res.Status, res.Message = eval.LaunchError, "preparing the shape: "+err.Error()
		if pctx.Err() == context.DeadlineExceeded {
			res.Status = eval.Timeout
		}
	} else {
		res.Outcome = resp.Outcome
		res.Message = "preparing the shape: " + res.Message
	}
	if err != nil || resp.Fatal {
		r.restart(res)
	}
	return false
}

// run evaluates req on the worker under the watchdog. A worker that dies
// or hangs is recorded (timeout when the watchdog killed it) and replaced.
func (r *Runner) run(ctx context.Context, req *evalRequest, res *Result, cost kernels.Cost, m MeasureOpts) {
	timeout := r.opt.EvalTimeout * time.Duration(req.evaluations())
	ectx, cancel := context.WithTimeout(ctx, timeout)
	resp, err := r.w.Eval(ectx, req, m)
	cancel()
	if err != nil {
		res.Status = eval.LaunchError
		if ectx.Err() == context.DeadlineExceeded {
			res.Status = eval.Timeout
			err = fmt.Errorf("watchdog: no answer within %v: %w", timeout, err)
		}
		res.Message = err.Error()
		r.restart(res)
		return
	}
	res.Outcome = resp.Outcome
	if resp.Fatal {
		r.restart(res)
	}
	if res.Status != eval.OK {
		return
	}
	res.Stats = SummarizeKept(res.Samples, res.Throttled)
	if med := res.Stats.Median; med > 0 {
		res.GBps = float64(cost.Bytes) / (med * 1e-6) / 1e9
		res.TFLOPs = float64(cost.Flops) / (med * 1e-6) / 1e12
	}
	switch {
	case res.Abandoned:
		res.Status = eval.Skipped
		res.Message = fmt.Sprintf("abandoned after %d samples: median CI [%.2f, %.2f] µs lies above %.2f µs (the best's CI upper end plus the margin)",
			len(res.Samples), res.Stats.Lo, res.Stats.Hi, m.AbandonAbove)
	case m.MaxSamples < r.opt.Measure.MaxSamples:
		res.Status = eval.Skipped
		res.Message = fmt.Sprintf("partial: a look of %d samples for the search (successive halving); never a winner", len(res.Samples))
	}
}

// finalRound re-times the winner best and the baseline base (the vendor
// baseline bl; nil when there is none) alternately, r.opt.FinalRounds
// times each, in a fresh worker (a new process and CUDA context, as a
// trainer has), every time with the full protocol and validated before
// and after. The winner was picked on the tuning medians of many
// candidates, which favour a lucky one; this round's medians do not, and
// they are what the run reports: each side's samples over the round
// pooled into one evaluation, recorded, and returned. The winner's result
// is a failure when it failed in the round; a baseline that failed
// leaves base as it was. The error is the recorder's.
func (r *Runner) finalRound(ctx context.Context, f kernels.Family, s variants.Shape, best, base *Result, bl *kernels.Baseline,
	cost kernels.Cost, rec Recorder) (w, b *Result, err error) {
	p, err := variants.ParseParams(best.Key.Params)
	if err != nil {
		return nil, nil, err
	}
	r.restart(&Result{})
	for range r.opt.FinalRounds {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		w = pooled(w, r.evalOne(ctx, f, s, p, cost, rec, nil, r.opt.Measure, true), cost)
		if bl != nil {
			b = pooled(b, r.evalBaseline(ctx, f, s, *bl, baselineAlgorithm(base, b), cost, rec, true), cost)
		}
		if w.Status != eval.OK || (b != nil && b.Status != eval.OK) {
			break
		}
	}
	note := fmt.Sprintf("final round: %d runs alternating with the baseline in a fresh worker", r.opt.FinalRounds)
	if bl == nil {
		note = fmt.Sprintf("final round: %d runs in a fresh worker", r.opt.FinalRounds)
	}
	for _, x := range []*Result{w, b} {
		if x == nil {
			continue
		}
		if x.Status == eval.OK {
			x.Message = strings.TrimPrefix(x.Message+"; "+note, "; ")
		}
		if err := rec.Record(*x); err != nil {
			return nil, nil, fmt.Errorf("recording the final round of %s %s: %w", f.Name(), s.Key(), err)
		}
	}
	if b == nil || b.Status != eval.OK {
		b = base
	}
	return w, b, nil
}

// pooled adds res's samples to acc (nil: the first of a round); a failed
// res ends the round with its outcome.
func pooled(acc, res *Result, cost kernels.Cost) *Result {
	if acc == nil || res.Status != eval.OK {
		return res
	}
	_, p := pool([]*Result{acc}, res, cost)
	return p
}

// matches reports whether p has every value fix gives.
func matches(p, fix variants.Params) bool {
	for k, v := range fix {
		if p[k] != v {
			return false
		}
	}
	return true
}
