package tuning

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// ReplayShape is one recorded (kernel, shape) that strategies are judged
// on. Its space is today's space less the points the database did not
// record (a database of an older space, or of a run that fixed some
// axes, replays what it holds). The truth is each point's recorded
// median; the optimum is the lowest recorded median of a full (valid,
// not abandoned) evaluation, the fastest variant the database knows.
type ReplayShape struct {
	Family  kernels.Family
	Shape   variants.Shape
	Points  int                // points of the replayed space
	Truth   map[string]float64 // params → recorded median, µs
	Full    map[string]bool    // params with a full evaluation
	Optimum float64
}

// ReplayData is a recorded database ready to replay.
type ReplayData struct {
	Name    string
	Records []runner.Recorded
	Shapes  []ReplayShape
	Info    runner.DeviceInfo
}

// LoadReplay reads db (called name in tables) for replay: its valid and
// abandoned evaluations (an abandoned one is answered from the few
// samples it took) and, per recorded (kernel, shape) of a catalogued
// family, the replayed space, the truth and the optimum.
func LoadReplay(db *store.DB, name string) (*ReplayData, error) {
	full, err := ReplayRecords(db)
	if err != nil {
		return nil, err
	}
	summarized, err := summaryRecords(db)
	if err != nil {
		return nil, err
	}
	abandoned, recorded, err := abandonedRecords(db)
	if err != nil {
		return nil, err
	}
	up := upgrader{}
	for _, rs := range [][]runner.Recorded{full, summarized, abandoned} {
		for i := range rs {
			rs[i].Params = up.params(rs[i].Kernel, rs[i].ShapeKey, rs[i].Params)
		}
	}
	for k, ps := range recorded {
		kernel, shapeKey, _ := strings.Cut(k, " ")
		up2 := map[string]bool{}
		for p := range ps {
			up2[up.params(kernel, shapeKey, p)] = true
		}
		recorded[k] = up2
	}
	full = append(summarized, full...)
	runs, err := db.Runs()
	if err != nil || len(runs) == 0 {
		return nil, inputf("%s: no runs recorded (%v)", name, err)
	}
	last := runs[len(runs)-1]
	d := &ReplayData{Name: name, Records: append(abandoned, full...),
		Info: runner.DeviceInfo{Name: last.GPUName, UUID: last.GPUUUID, CC: last.CC, Driver: last.Driver}}
	byShape := map[string]*ReplayShape{}
	var order []string
	for _, r := range full {
		k := r.Kernel + " " + r.ShapeKey
		if _, ok := byShape[k]; ok {
			continue
		}
		rs, err := replayShape(r.Kernel, r.ShapeKey, recorded[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		byShape[k] = rs
		order = append(order, k)
	}
	sort.Strings(order)
	for _, k := range order {
		rs := byShape[k]
		f := rs.Family.(memoFamily)
		in := map[string]bool{}
		for _, p := range f.points {
			in[p.String()] = true
		}
		rs.Optimum = math.Inf(1)
		for _, r := range d.Records {
			if r.Kernel+" "+r.ShapeKey == k && in[r.Params] {
				rs.Truth[r.Params] = runner.Summarize(r.Samples).Median
			}
		}
		for _, r := range full {
			if r.Kernel+" "+r.ShapeKey == k && in[r.Params] {
				rs.Optimum = min(rs.Optimum, rs.Truth[r.Params])
				rs.Full[r.Params] = true
			}
		}
		if math.IsInf(rs.Optimum, 1) {
			return nil, inputf("%s: %s has no valid evaluation of a point of today's space", name, k)
		}
		rs.Points = len(f.points)
		d.Shapes = append(d.Shapes, *rs)
	}
	return d, nil
}

// upgrader maps recorded params to today's space: axes added since take
// their default (variants.Space.WithDefaults). Spaces are built once per
// kernel and shape; a record it cannot place keeps its params (and then
// names no point of today's space).
type upgrader map[string]variants.Space

func (u upgrader) params(kernel, shapeKey, params string) string {
	key := kernel + " " + shapeKey
	sp, ok := u[key]
	if !ok {
		if f, s, err := recordedShape(kernel, shapeKey); err == nil {
			sp = f.Space(s)
		}
		u[key] = sp
	}
	p, err := sp.ParseRecorded(params)
	if err != nil || len(sp.Axes) == 0 {
		return params
	}
	return p.String()
}

// recordedShape is the catalogued family and the shape a record's kernel
// and shape key name.
func recordedShape(kernel, shapeKey string) (kernels.Family, variants.Shape, error) {
	f, err := catalog.Lookup(kernel)
	if err != nil {
		return nil, variants.Shape{}, err
	}
	sps, err := variants.ParseSpecs(shapeKey)
	if err != nil || len(sps) != 1 {
		return nil, variants.Shape{}, fmt.Errorf("shape %q of %s: %v", shapeKey, kernel, err)
	}
	s, err := f.Shape(sps[0], sps[0].DType)
	if err != nil {
		return nil, variants.Shape{}, fmt.Errorf("shape %q of %s: %w", shapeKey, kernel, err)
	}
	return f, s, nil
}

// abandonedRecords are replay records of the evaluations the abandon
// rule stopped (skipped, with samples), and per "kernel shape" the
// params of every evaluation the database holds, whatever its status.
func abandonedRecords(db *store.DB) ([]runner.Recorded, map[string]map[string]bool, error) {
	es, err := db.Evaluations(store.Filter{})
	if err != nil {
		return nil, nil, err
	}
	var recs []runner.Recorded
	recorded := map[string]map[string]bool{}
	for _, e := range es {
		k := e.Key.Kernel + " " + e.Key.ShapeKey
		if recorded[k] == nil {
			recorded[k] = map[string]bool{}
		}
		recorded[k][e.Key.Params] = true
		if e.Status == eval.Skipped && len(e.Samples) > 0 {
			recs = append(recs, runner.Recorded{Kernel: e.Key.Kernel, ShapeKey: e.Key.ShapeKey, Params: e.Key.Params,
				Samples: e.Samples, Registers: e.Registers, SmemBytes: e.SmemBytes})
		}
	}
	return recs, recorded, nil
}

// summaryRecords are replay records of the valid evaluations stored
// without their samples (a database pruned to keep it small keeps only
// the median and its CI): summarySamples stand in for them.
func summaryRecords(db *store.DB) ([]runner.Recorded, error) {
	es, err := db.Evaluations(store.Filter{})
	if err != nil {
		return nil, err
	}
	var recs []runner.Recorded
	for _, e := range es {
		if e.Status == eval.OK && len(e.Samples) == 0 && e.MedianUS > 0 {
			recs = append(recs, runner.Recorded{Kernel: e.Key.Kernel, ShapeKey: e.Key.ShapeKey, Params: e.Key.Params,
				Samples: summarySamples(e.MedianUS, e.CILoUS, e.CIHiUS), Registers: e.Registers, SmemBytes: e.SmemBytes})
		}
	}
	return recs, nil
}

// summaryNormalSamples is how many samples summarySamples makes: what
// the protocol takes when the CI converges after two batches.
const summaryNormalSamples = 20

// summarySamples are samples consistent with a recorded median and 95% CI:
// the quantiles of a normal distribution centred on the median whose
// standard deviation gives a median CI of that half-width over
// summaryNormalSamples samples (half-width ≈ 1.96·1.2533·σ/√n).
func summarySamples(median, lo, hi float64) []float64 {
	n := summaryNormalSamples
	sd := 0.0
	if hi > lo {
		sd = (hi - lo) / 2 * math.Sqrt(float64(n)) / (1.96 * 1.2533)
	}
	out := make([]float64, n)
	for i := range out {
		q := (float64(i) + 0.5) / float64(n)
		out[i] = median + sd*math.Sqrt2*math.Erfinv(2*q-1)
	}
	return out
}

func replayShape(kernel, shapeKey string, recorded map[string]bool) (*ReplayShape, error) {
	f, s, err := recordedShape(kernel, shapeKey)
	if err != nil {
		return nil, err
	}
	today := f.Space(s)
	space := variants.Space{Axes: today.Axes, Constraints: []variants.Constraint{{Name: "recorded",
		OK: func(p variants.Params) error {
			if !recorded[p.String()] {
				return errors.New("not in the database")
			}
			return today.Check(p)
		}}}}
	m := memoFamily{Family: f, progs: &sync.Map{}, space: space, points: recordedPoints(today, recorded)}
	return &ReplayShape{Family: m, Shape: s, Truth: map[string]float64{}, Full: map[string]bool{}}, nil
}

// recordedPoints are the points of today that recorded holds (by
// Params.String), in today's enumeration order: the recorded params
// today admits (Space.Check), ordered as the walk lists them, by the
// position of each axis's value, first axis first. It takes a check per
// recorded point where enumerating today's space walks the product of
// its axes.
func recordedPoints(today variants.Space, recorded map[string]bool) []variants.Params {
	type ranked struct {
		p    variants.Params
		rank []int
	}
	var pts []ranked
	for text := range recorded {
		p, err := variants.ParseParams(text)
		if err != nil || p.String() != text || today.Check(p) != nil {
			continue
		}
		rank := make([]int, len(today.Axes))
		for i, a := range today.Axes {
			rank[i] = slices.Index(a.Values, p[a.Name])
		}
		pts = append(pts, ranked{p, rank})
	}
	slices.SortFunc(pts, func(a, b ranked) int { return slices.Compare(a.rank, b.rank) })
	var out []variants.Params
	for _, r := range pts {
		out = append(out, r.p)
	}
	return out
}

// memoFamily is a family as a database replays it: its space is the
// points the database recorded (enumerated once), and it remembers the
// programs it emitted: replay emits every proposal once per seed and
// strategy, and only its hash matters.
type memoFamily struct {
	kernels.Family
	progs  *sync.Map
	space  variants.Space
	points []variants.Params
}

// Space is the replayed space; s is the family's one shape.
func (m memoFamily) Space(variants.Shape) variants.Space { return m.space }

// Points are the replayed space's points (runner.PointLister).
func (m memoFamily) Points(variants.Shape) []variants.Params { return m.points }

func (m memoFamily) Emit(s variants.Shape, p variants.Params) (kernels.Program, error) {
	key := s.Key() + " " + p.String()
	if v, ok := m.progs.Load(key); ok {
		e := v.(memoEmit)
		return e.prog, e.err
	}
	prog, err := m.Family.Emit(s, p)
	m.progs.Store(key, memoEmit{prog, err})
	return prog, err
}

type memoEmit struct {
	prog kernels.Program
	err  error
}

// ReplayOutcome is one strategy's result on one shape over seeds: per
// seed, the distance of its winner's true median to the optimum (a
// fraction; +Inf without a winner), the evaluations it used (worker
// calls) and the samples they took.
type ReplayOutcome struct {
	Strategy string
	Dist     []float64
	Evals    []int
	Samples  []int
}

// ReplayOptions configure ReplayStrategies.
type ReplayOptions struct {
	Strategies     []string
	Seeds          int
	Budget         int
	BudgetFraction float64
	Abandon        float64 // the abandon margin (0: off)
	// Progress, when set, is told after each (strategy, seed) run how many
	// of all of them are done.
	Progress func(done, total int)
}

// MaxReplaySeeds bounds ReplayOptions.Seeds: a median over a thousand
// bootstrap replays moves by less than the noise the replay models.
const MaxReplaySeeds = 1000

// ReplayStrategies runs every strategy over every shape of d, once per
// seed 1..Seeds, on a replay of d's samples (bootstrap resamples drawn
// from the seed), and returns the outcomes per shape and strategy. The
// (strategy, seed) runs are independent and run on every CPU at once.
func ReplayStrategies(ctx context.Context, d *ReplayData, o ReplayOptions) ([][]ReplayOutcome, error) {
	if o.Seeds < 1 || o.Seeds > MaxReplaySeeds {
		return nil, inputf("%d seeds: want 1 to %d", o.Seeds, MaxReplaySeeds)
	}
	type job struct {
		si   int
		seed uint64
	}
	var jobs []job
	for si := range o.Strategies {
		for seed := uint64(1); seed <= uint64(o.Seeds); seed++ {
			jobs = append(jobs, job{si, seed})
		}
	}
	results := make([][]replaySummary, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				results[j], errs[j] = replayOnce(ctx, d, o, o.Strategies[jobs[j].si], jobs[j].seed)
				if o.Progress != nil {
					mu.Lock()
					done++
					o.Progress(done, len(jobs))
					mu.Unlock()
				}
			}
		}()
	}
	for j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([][]ReplayOutcome, len(d.Shapes))
	for i := range out {
		for _, s := range o.Strategies {
			out[i] = append(out[i], ReplayOutcome{Strategy: s})
		}
	}
	for j, sums := range results {
		for i, sum := range sums {
			oc := &out[i][jobs[j].si]
			oc.Dist = append(oc.Dist, distance(d.Shapes[i], sum.Best))
			oc.Evals = append(oc.Evals, sum.Tried)
			oc.Samples = append(oc.Samples, sum.samples)
		}
	}
	return out, nil
}

type replaySummary struct {
	runner.Summary
	samples int
}

// replayOnce tunes every shape of d with one strategy and seed.
func replayOnce(ctx context.Context, d *ReplayData, o ReplayOptions, strat string, seed uint64) ([]replaySummary, error) {
	rp := runner.NewReplay(d.Records, seed, 0)
	r, err := runner.New(runner.Options{Strategy: strat, Budget: o.Budget, BudgetFraction: o.BudgetFraction,
		Abandon: o.Abandon, Seed: seed, NewWorker: rp.Worker(d.Info)})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []replaySummary
	for _, s := range d.Shapes {
		rec := &countingRecorder{}
		sums, err := r.Tune(ctx, []runner.Job{{Family: s.Family, Shapes: []variants.Shape{s.Shape}}}, rec)
		if err != nil {
			return nil, fmt.Errorf("replaying %s %s with %s: %w", s.Family.Name(), s.Shape.Key(), strat, err)
		}
		out = append(out, replaySummary{sums[0], rec.samples})
	}
	return out, nil
}

// distance is how much slower best truly is than the optimum: its
// recorded median over the lowest, minus 1.
func distance(s ReplayShape, best *runner.Result) float64 {
	if best == nil {
		return math.Inf(1)
	}
	t, ok := s.Truth[best.Key.Params]
	if !ok {
		return math.Inf(1)
	}
	return t/s.Optimum - 1
}

// countingRecorder keeps nothing but the number of samples recorded.
type countingRecorder struct{ samples int }

func (c *countingRecorder) Done(runner.Key) (runner.Result, bool, error) {
	return runner.Result{}, false, nil
}
func (c *countingRecorder) Winner(runner.Winner) error { return nil }
func (c *countingRecorder) Record(r runner.Result) error {
	c.samples += len(r.Samples)
	return nil
}

// WriteReplayTable writes the outcomes as a Markdown table: per shape, each
// strategy's median distance over the seeds and its median evaluations
// (with their share of the space's points); then per strategy the worst
// shape's median distance and the largest share of evaluations.
func WriteReplayTable(w io.Writer, d *ReplayData, outs [][]ReplayOutcome, seeds int) {
	if len(outs) == 0 {
		return
	}
	fmt.Fprintf(w, "### %s (%d shapes, %d seeds)\n\n| kernel | shape | points |", d.Name, len(d.Shapes), seeds)
	for _, oc := range outs[0] {
		fmt.Fprintf(w, " %s: dist / evals / samples |", oc.Strategy)
	}
	fmt.Fprintf(w, "\n|---|---|---:|%s\n", repeat("---:|", len(outs[0])))
	worst := make([]float64, len(outs[0]))
	share := make([]float64, len(outs[0]))
	for i, row := range outs {
		s := d.Shapes[i]
		fmt.Fprintf(w, "| %s | %s | %d |", s.Family.Name(), s.Shape.Key(), s.Points)
		for j, oc := range row {
			dist, ev := median(oc.Dist), medianInt(oc.Evals)
			worst[j] = max(worst[j], dist)
			share[j] = max(share[j], float64(ev)/float64(s.Points))
			fmt.Fprintf(w, " %s / %d (%.0f%%) / %d |", pct(dist), ev, 100*float64(ev)/float64(s.Points), medianInt(oc.Samples))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| **worst shape** | | |")
	for j := range outs[0] {
		fmt.Fprintf(w, " %s / ≤ %.0f%% of the points |", pct(worst[j]), 100*share[j])
	}
	fmt.Fprint(w, "\n\n")
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func pct(f float64) string {
	if math.IsInf(f, 1) {
		return "no winner"
	}
	return fmt.Sprintf("%.2f%%", 100*f)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianInt(xs []int) int {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return int(math.Round(median(f)))
}

// Shapes is s's shape as a job's list.
func (s ReplayShape) Shapes() []variants.Shape { return []variants.Shape{s.Shape} }
