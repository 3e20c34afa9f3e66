package tuning

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/kernels/faults"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// Plant is a slowdown planted in one case of a bench: Key is the case's
// "kernel dtype shape" (configs.Entry.Key), Fraction the slowdown (0.05).
type Plant struct {
	Key      string
	Fraction float64
}

// ParsePlant reads "KERNEL DTYPE SHAPE=PCT%", e.g.
// "relu_bwd f32 m=2048,n=8960=5%".
func ParsePlant(s string) (Plant, error) {
	i := strings.LastIndex(s, "=")
	if i < 0 {
		return Plant{}, inputf("--plant-slowdown %q: want KERNEL DTYPE SHAPE=PCT%%, e.g. 'relu_bwd f32 m=2048,n=8960=5%%'", s)
	}
	pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s[i+1:]), "%"), 64)
	if err != nil || pct <= 0 || pct > 100 {
		return Plant{}, inputf("--plant-slowdown %q: the slowdown must be a percentage in (0, 100], e.g. 5%%", s)
	}
	return Plant{Key: strings.Join(strings.Fields(s[:i]), " "), Fraction: pct / 100}, nil
}

// BenchCases turns the entries of the tables that keep accepts into
// runner cases: each entry's program as the table describes it (its PTX
// file and launch contract, launched as a trainer launches it) and its
// baseline (the table's, else the family's default variant). An entry of
// a table exported without PTX files is measured as this gradtune emits
// its params, with a note; an entry this gradtune cannot decode, or whose
// data buffers are not its family's, is an error (the table and the
// binary disagree). The same entry in two tables, and a plant that names
// no selected case, are errors.
func BenchCases(set *configs.Set, keep func(configs.Entry) bool, plant *Plant) ([]runner.Case, []string, error) {
	var cases []runner.Case
	var notes []string
	planted := false
	from := map[string]string{}
	for _, t := range set.Tables {
		for _, e := range t.Entries {
			if keep != nil && !keep(e) {
				continue
			}
			if src, dup := from[e.Key()]; dup {
				return nil, nil, inputf("--configs: %s is in %s and in %s: give each entry once", e.Key(), src, t.Source)
			}
			from[e.Key()] = t.Source
			c, note, err := benchCase(set, t, e)
			if err != nil {
				return nil, nil, err
			}
			if note != "" {
				notes = append(notes, note)
			}
			if plant != nil && plant.Key == e.Key() {
				delay := time.Duration(math.Round(plant.Fraction * e.MedianUS * 1e3))
				c.Plant = delayLaunch(delay)
				planted = true
				notes = append(notes, fmt.Sprintf("%s: planted slowdown, a %v delay launch (%.1f%% of the table's %.2f µs) after the program",
					e.Key(), delay, 100*plant.Fraction, e.MedianUS))
			}
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		return nil, nil, inputf("no entry of the tables matches --kernel and --shapes")
	}
	if plant != nil && !planted {
		var keys []string
		for _, c := range cases {
			keys = append(keys, c.Family.Name()+" "+c.Shape.DType.String()+" "+dimsOf(c.Shape))
		}
		return nil, nil, inputf("--plant-slowdown: no selected case is %q (cases: %s)", plant.Key, strings.Join(keys, "; "))
	}
	return cases, notes, nil
}

func benchCase(set *configs.Set, t *configs.Table, e configs.Entry) (runner.Case, string, error) {
	bad := func(err error) (runner.Case, string, error) {
		return runner.Case{}, "", inputf("table entry %s: %v (re-export the table with this gradtune)", e.Key(), err)
	}
	f, err := catalog.Lookup(e.Kernel)
	if err != nil {
		return bad(err)
	}
	dt, err := dtype.Parse(e.DType)
	if err != nil {
		return bad(err)
	}
	specs, err := variants.ParseSpecs(e.Shape)
	if err != nil || len(specs) != 1 {
		return bad(fmt.Errorf("shape %q: %v", e.Shape, err))
	}
	s, err := f.Shape(specs[0], dt)
	if err != nil {
		return bad(err)
	}
	sp := f.Space(s)
	p, err := sp.ParseRecorded(e.Params)
	if err == nil {
		err = sp.Check(p)
	}
	if err != nil {
		return bad(err)
	}
	c := runner.Case{Family: f, Shape: s, Params: p, BaselineName: "default"}
	c.Baseline, _ = sp.First() // p is a point, so the space has one
	if e.Baseline.Params != "" {
		// recorded before an axis was added, like the entry's own params
		if c.Baseline, err = sp.ParseRecorded(e.Baseline.Params); err != nil {
			return bad(err)
		}
		c.BaselineName = e.Baseline.Name
	}
	ptx, err := set.EntryPTX(t, e)
	if errors.Is(err, configs.ErrNoPTX) {
		return c, fmt.Sprintf("%s: the table has no PTX file; measuring what this gradtune emits for its params", e.Key()), nil
	}
	if err != nil {
		return bad(err)
	}
	prog, err := tableProgram(f, s, e, ptx)
	if err != nil {
		return bad(err)
	}
	c.Program = &prog
	return c, "", nil
}

// tableProgram is the program entry e of a table describes: its PTX, its
// launches, its own (state and scratch) buffers and its runtime dims with
// their upper ends. Its other buffers must be the family's at s: the same
// names, dtypes, roles and sizes.
func tableProgram(f kernels.Family, s variants.Shape, e configs.Entry, ptx []byte) (kernels.Program, error) {
	prog := kernels.Program{PTX: string(ptx), Launches: e.Launches, RuntimeMax: map[string]int{}}
	for d, r := range e.Runtime {
		prog.RuntimeDims = append(prog.RuntimeDims, d)
		prog.RuntimeMax[d] = int(r.Max)
	}
	slices.Sort(prog.RuntimeDims)
	var data []kernels.Buffer
	for _, b := range e.Buffers {
		if b.Role == kernels.State || b.Role == kernels.Scratch {
			prog.Buffers = append(prog.Buffers, b)
		} else {
			data = append(data, b)
		}
	}
	env := kernels.Env(s)
	want, err := configs.Resolve(nil, f.Buffers(s), env)
	if err != nil {
		return kernels.Program{}, err
	}
	got, err := configs.Resolve(nil, data, env)
	if err != nil {
		return kernels.Program{}, err
	}
	if fmt.Sprint(got.Buffers) != fmt.Sprint(want.Buffers) {
		return kernels.Program{}, fmt.Errorf("the table's data buffers %v are not the family's %v", got.Buffers, want.Buffers)
	}
	return prog, nil
}

// dimsOf is the shape key without its dtype ("m=2048,n=8960").
func dimsOf(s variants.Shape) string {
	k := s.Key()
	if i := strings.LastIndex(k, ",dtype="); i >= 0 {
		return k[:i]
	}
	return k
}

// ReplayRecords reads every valid evaluation of db as a replay record
// (the newest one of each variant wins).
func ReplayRecords(db *store.DB) ([]runner.Recorded, error) {
	es, err := db.Evaluations(store.Filter{})
	if err != nil {
		return nil, err
	}
	var recs []runner.Recorded
	for _, e := range es {
		if e.Status != eval.OK || len(e.Samples) == 0 {
			continue
		}
		drop := map[int]bool{}
		for _, i := range e.Excluded {
			drop[i] = true
		}
		var xs []float64
		for i, x := range e.Samples {
			if !drop[i] && !math.IsNaN(x) {
				xs = append(xs, x)
			}
		}
		recs = append(recs, runner.Recorded{Kernel: e.Key.Kernel, ShapeKey: e.Key.ShapeKey, Params: e.Key.Params,
			Samples: xs, Registers: e.Registers, SmemBytes: e.SmemBytes})
	}
	return recs, nil
}

// BenchOnGPU measures the cases on g's runner into g's run, finishing it
// as ok, failed or interrupted. The copy bandwidth is measured first; a
// worker that cannot (a replay) says so and the run goes on without it.
func BenchOnGPU(ctx context.Context, g GPURun, cases []runner.Case) (copyGBps float64, sums []runner.Summary, err error) {
	if bw, berr := g.Runner.CopyBandwidth(); berr != nil {
		fmt.Fprintf(g.Progress, "device-to-device copy: not measured (%v)\n", berr)
	} else {
		copyGBps = bw
		fmt.Fprintf(g.Progress, "device-to-device copy: %.0f GB/s\n", copyGBps)
	}
	sums, err = g.Runner.Bench(ctx, cases, &Recorder{DB: g.DB, Run: g.RunID})
	return copyGBps, sums, g.finish(ctx, copyGBps, err)
}

// LoadTables reads config table files with their PTX files; a missing,
// malformed or repeated file is an *InputError.
func LoadTables(paths []string) (*configs.Set, error) {
	set, err := configs.LoadFiles(paths...)
	if err != nil {
		return nil, inputf("--configs: %w", err)
	}
	return set, nil
}

// delayLaunch plants a launch that spins d after the program
// (faults.Delay): a slowdown the regression gate must catch.
func delayLaunch(d time.Duration) runner.Plant {
	return func(p kernels.Program) (kernels.Program, string, error) {
		q, err := faults.Delay(p, uint64(d.Nanoseconds()))
		return q, fmt.Sprintf("planted slowdown: a %v delay launch after the program", d), err
	}
}
