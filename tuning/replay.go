package tuning

import (
	"context"
	"fmt"
	"github.com/gradtune/gradtune/eval"
	"io"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// ReplayShape is one recorded (kernel, shape) that strategies are judged
// on: the truth is each variant's recorded median; the optimum is the
// recorded median of the database's winner, the variant the exhaustive
// run on the GPU chose (by the winner rule, so a variant up to a
// statistical tie faster may exist: distances can be negative).
type ReplayShape struct {
	Family  kernels.Family
	Shape   variants.Shape
	Points  int                // points of today's space
	Truth   map[string]float64 // params → recorded median, µs
	Optimum float64
}

// ReplayData is a recorded database ready to replay.
type ReplayData struct {
	Name    string
	Records []runner.Recorded
	Shapes  []ReplayShape
	Info    runner.DeviceInfo
}

// LoadReplay reads db (called name in tables) for replay: its valid
// evaluations and, per recorded (kernel, shape) of a catalogued family,
// the truth and the optimum.
func LoadReplay(db *store.DB, name string) (*ReplayData, error) {
	recs, err := ReplayRecords(db)
	if err != nil {
		return nil, err
	}
	summarized, err := summaryRecords(db)
	if err != nil {
		return nil, err
	}
	recs = append(summarized, recs...)
	runs, err := db.Runs()
	if err != nil || len(runs) == 0 {
		return nil, inputf("%s: no runs recorded (%v)", name, err)
	}
	last := runs[len(runs)-1]
	d := &ReplayData{Name: name, Records: recs,
		Info: runner.DeviceInfo{Name: last.GPUName, UUID: last.GPUUUID, CC: last.CC, Driver: last.Driver}}
	byShape := map[string]*ReplayShape{}
	var order []string
	for _, r := range recs {
		k := r.Kernel + " " + r.ShapeKey
		rs, ok := byShape[k]
		if !ok {
			if rs, err = replayShape(r.Kernel, r.ShapeKey); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			byShape[k] = rs
			order = append(order, k)
		}
		rs.Truth[r.Params] = runner.Summarize(r.Samples).Median
	}
	optimum := map[string]string{} // the newest run's winner of each shape
	for _, run := range runs {
		ws, err := db.Winners(run.ID)
		if err != nil {
			return nil, fmt.Errorf("%s: winners of run %d: %w", name, run.ID, err)
		}
		for _, w := range ws {
			optimum[w.Kernel+" "+w.ShapeKey] = w.Params
		}
	}
	sort.Strings(order)
	for _, k := range order {
		rs := byShape[k]
		t, ok := rs.Truth[optimum[k]]
		if !ok {
			return nil, inputf("%s: %s has no recorded winner among its valid evaluations", name, k)
		}
		rs.Optimum, rs.Points = t, len(rs.Family.Space(rs.Shape).Enumerate())
		d.Shapes = append(d.Shapes, *rs)
	}
	return d, nil
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

func replayShape(kernel, shapeKey string) (*ReplayShape, error) {
	f, err := catalog.Lookup(kernel)
	if err != nil {
		return nil, err
	}
	sps, err := variants.ParseSpecs(shapeKey)
	if err != nil || len(sps) != 1 {
		return nil, fmt.Errorf("shape %q of %s: %v", shapeKey, kernel, err)
	}
	s, err := f.Shape(sps[0], sps[0].DType)
	if err != nil {
		return nil, fmt.Errorf("shape %q of %s: %w", shapeKey, kernel, err)
	}
	return &ReplayShape{Family: memoFamily{Family: f, progs: &sync.Map{}}, Shape: s, Truth: map[string]float64{}}, nil
}

// memoFamily remembers the programs it emitted: replay emits every
// proposal once per seed and strategy, and only its hash matters.
type memoFamily struct {
	kernels.Family
	progs *sync.Map
}

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
}

// ReplayStrategies runs every strategy over every shape of d, once per
// seed 1..Seeds, on a replay of d's samples (bootstrap resamples drawn
// from the seed), and returns the outcomes per shape and strategy.
func ReplayStrategies(ctx context.Context, d *ReplayData, o ReplayOptions) ([][]ReplayOutcome, error) {
	out := make([][]ReplayOutcome, len(d.Shapes))
	for i := range out {
		for _, s := range o.Strategies {
			out[i] = append(out[i], ReplayOutcome{Strategy: s})
		}
	}
	for si, strat := range o.Strategies {
		for seed := uint64(1); seed <= uint64(o.Seeds); seed++ {
			sums, err := replayOnce(ctx, d, o, strat, seed)
			if err != nil {
				return nil, err
			}
			for i, sum := range sums {
				oc := &out[i][si]
				oc.Dist = append(oc.Dist, distance(d.Shapes[i], sum.Best))
				oc.Evals = append(oc.Evals, sum.Tried)
				oc.Samples = append(oc.Samples, sum.samples)
			}
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

// distance is how much slower best truly is than the optimum.
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
