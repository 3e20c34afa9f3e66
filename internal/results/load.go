package results

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// groupKey names one kernel and shape.
type groupKey struct{ kernel, shape string }

// group is what one run recorded for one kernel and shape.
type group struct {
	run     int64
	evals   []store.Evaluation
	winner  *store.Winner
	firstID int64
}

// Load reads the results that opt selects from db. It returns an error
// wrapping ErrNoResults or store.ErrNoRun when the selection is empty.
func Load(db *store.DB, opt Options) (*Set, error) {
	runs, err := db.Runs()
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w: the database has no runs", ErrNoResults)
	}
	if opt.RunID != 0 {
		if _, err := db.Run(opt.RunID); err != nil {
			return nil, fmt.Errorf("--run %d: %w (runs: %s)", opt.RunID, err, runIDs(runs))
		}
	}
	evals, err := db.Evaluations(store.Filter{RunID: opt.RunID})
	if err != nil {
		return nil, err
	}
	winners, err := db.Winners(opt.RunID)
	if err != nil {
		return nil, err
	}
	groups := newest(evals, winners)
	if len(groups) == 0 {
		return nil, fmt.Errorf("%w: %s recorded no evaluations", ErrNoResults, opt.describe())
	}
	if err := opt.check(db.Path(), groups); err != nil {
		return nil, err
	}
	set := &Set{Path: db.Path()}
	byID := map[int64]store.Run{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	used := map[int64]bool{}
	for _, k := range orderedKeys(groups) {
		if !opt.keep(k) {
			continue
		}
		g := groups[k]
		sh, err := buildShape(db, k, g, byID[g.run])
		if err != nil {
			return nil, err
		}
		set.Shapes = append(set.Shapes, sh)
		used[g.run] = true
	}
	if len(set.Shapes) == 0 {
		return nil, fmt.Errorf("%w: nothing recorded matches %s", ErrNoResults, opt.describe())
	}
	for _, r := range runs {
		if used[r.ID] {
			set.Runs = append(set.Runs, r)
		}
	}
	return set, nil
}

// newest groups evaluations and winners by kernel and shape, keeping each
// one's newest run.
func newest(evals []store.Evaluation, winners []store.Winner) map[groupKey]*group {
	groups := map[groupKey]*group{}
	at := func(k groupKey, run, id int64) *group {
		g := groups[k]
		if g == nil || run > g.run {
			g = &group{run: run, firstID: id}
			groups[k] = g
		}
		if run < g.run {
			return nil
		}
		return g
	}
	for _, e := range evals {
		if g := at(groupKey{e.Key.Kernel, e.Key.ShapeKey}, e.RunID, e.ID); g != nil {
			g.evals = append(g.evals, e)
		}
	}
	for i, w := range winners {
		if g := at(groupKey{w.Kernel, w.ShapeKey}, w.RunID, 1<<62); g != nil {
			g.winner = &winners[i]
		}
	}
	return groups
}

// orderedKeys sorts the groups by run, then by first evaluation.
func orderedKeys(groups map[groupKey]*group) []groupKey {
	keys := make([]groupKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := groups[keys[i]], groups[keys[j]]
		if a.run != b.run {
			return a.run < b.run
		}
		if a.firstID != b.firstID {
			return a.firstID < b.firstID
		}
		return keys[i].kernel+keys[i].shape < keys[j].kernel+keys[j].shape
	})
	return keys
}

// check rejects filters that name a kernel the selection does not hold:
// one this gradtune does not know is unknown, listing the known ones; a
// known one has no results in the database, listing the recorded ones.
func (o Options) check(path string, groups map[groupKey]*group) error {
	have := map[string]bool{}
	for k := range groups {
		have[k.kernel] = true
	}
	var names []string
	for k := range have {
		names = append(names, k)
	}
	sort.Strings(names)
	where := path
	if o.RunID != 0 {
		where = fmt.Sprintf("run %d of %s", o.RunID, path)
	}
	for _, k := range o.Kernels {
		if have[k] {
			continue
		}
		if _, err := catalog.Lookup(k); err != nil {
			return fmt.Errorf("%w: %w", ErrNoResults, err)
		}
		return fmt.Errorf("%w for %s in %s (kernels recorded there: %s)", ErrNoResults, k, where, strings.Join(names, ", "))
	}
	return nil
}

func (o Options) keep(k groupKey) bool {
	if len(o.Kernels) > 0 && !slices.Contains(o.Kernels, k.kernel) {
		return false
	}
	if len(o.Shapes) == 0 {
		return true
	}
	for _, sp := range o.Shapes {
		if Matches(k.kernel, k.shape, sp) {
			return true
		}
	}
	return false
}

// buildShape assembles one shape from its group.
func buildShape(db *store.DB, k groupKey, g *group, run store.Run) (*Shape, error) {
	dims, dt := splitKey(k.shape)
	sh := &Shape{Kernel: k.kernel, Key: k.shape, Dims: dims, DType: dt, Size: size(dims), Run: run}
	others := map[string]float64{}
	var names []string
	for _, e := range g.evals {
		if name, ok := eval.BaselineName(e.Key.Params); ok {
			// a vendor baseline: the strongest reaches the shape through
			// the winner; each one's latest valid median is in Others
			if valid(e) {
				if _, seen := others[name]; !seen {
					names = append(names, name)
				}
				others[name] = e.MedianUS
			}
			continue
		}
		v := &Variant{Evaluation: e}
		sh.Order = append(sh.Order, v)
		if valid(e) {
			sh.Valid = append(sh.Valid, v)
		} else {
			sh.Failed = append(sh.Failed, v)
		}
	}
	if g.winner != nil {
		w, err := findWinner(db, sh, *g.winner)
		if err != nil {
			return nil, err
		}
		sh.Winner = w
		sh.Rule = g.winner.Rule
	}
	sh.rank()
	sh.Baseline = baseline(sh, g.winner)
	for _, name := range names {
		if sh.Baseline == nil || !eval.OneComparison(name, sh.Baseline.Name) {
			sh.Others = append(sh.Others, Baseline{Name: name, MedianUS: others[name]})
		}
	}
	if f, s, ok := familyShape(k.kernel, k.shape); ok {
		c := f.Cost(s)
		sh.Bytes, sh.Flops = c.Bytes, c.Flops
	}
	return sh, nil
}

// extraBytes is the device memory the program of the recorded point
// params allocates at s beside the shape's operands (State and Scratch
// buffers), or -1 when this build cannot emit it.
func extraBytes(f kernels.Family, s variants.Shape, params string) int64 {
	p, err := f.Space(s).ParseRecorded(params)
	if err != nil {
		return -1
	}
	prog, err := f.Emit(s, p)
	if err != nil {
		return -1
	}
	var n int64
	for _, b := range prog.Buffers {
		if b.Role == kernels.State || b.Role == kernels.Scratch {
			n += int64(kernels.Elems(b, s)) * int64(b.DType.Size())
		}
	}
	return n
}

// findWinner returns the evaluation of the winning variant in the shape's
// run that the winner's median comes from (the final round's, when the
// run had one), else the fastest of its evaluations in the run (databases
// whose winner records no evaluation's median), or the latest valid one of
// an earlier run when the run reused it.
func findWinner(db *store.DB, sh *Shape, w store.Winner) (*Variant, error) {
	var best *Variant
	for _, v := range sh.Valid {
		if v.VariantID != w.VariantID {
			continue
		}
		if v.MedianUS == w.MedianUS {
			best = v
			break
		}
		if best == nil || v.MedianUS < best.MedianUS {
			best = v
		}
	}
	if best != nil {
		return best, nil
	}
	all, err := db.Evaluations(store.Filter{Kernel: w.Kernel, ShapeKey: w.ShapeKey})
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		e := all[i]
		if e.VariantID == w.VariantID && e.RunID <= w.RunID && valid(e) {
			v := &Variant{Evaluation: e, Reused: e.RunID != w.RunID}
			sh.Valid = append(sh.Valid, v)
			return v, nil
		}
	}
	return nil, fmt.Errorf("winner of %s %s in run %d: variant %d [%s] has no valid evaluation", w.Kernel, w.ShapeKey, w.RunID, w.VariantID, w.Params)
}

// baseline is the winner's recorded baseline, else the family's default
// variant when the run timed it.
func baseline(sh *Shape, w *store.Winner) *Baseline {
	if w != nil && w.BaselineName != "" && w.BaselineMedianUS > 0 {
		return &Baseline{Name: w.BaselineName, MedianUS: w.BaselineMedianUS}
	}
	sp, def, ok := defaultPoint(sh.Kernel, sh.Key)
	if !ok {
		return nil
	}
	for _, v := range sh.Valid {
		// A record from before an axis was added names the default
		// point without it: compared as today's point, kept as recorded.
		if p, err := sp.ParseRecorded(v.Key.Params); err == nil && p.String() == def {
			return &Baseline{Name: "default", Params: v.Key.Params, MedianUS: v.MedianUS}
		}
	}
	return nil
}

// familyShape resolves a kernel and shape key through the catalog.
func familyShape(kernel, key string) (kernels.Family, variants.Shape, bool) {
	f, err := catalog.Lookup(kernel)
	if err != nil {
		return nil, variants.Shape{}, false
	}
	dims, dt := splitKey(key)
	specs, err := variants.ParseSpecs(dims + ",dtype=" + dt)
	if err != nil || len(specs) != 1 {
		return nil, variants.Shape{}, false
	}
	s, err := f.Shape(specs[0], specs[0].DType)
	if err != nil {
		return nil, variants.Shape{}, false
	}
	return f, s, true
}

// defaultPoint is the family's space at the shape and the canonical
// parameter string of its untuned variant: the first valid point
// (variants.Space.First).
func defaultPoint(kernel, key string) (variants.Space, string, bool) {
	f, s, ok := familyShape(kernel, key)
	if !ok {
		return variants.Space{}, "", false
	}
	sp := f.Space(s)
	p, ok := sp.First()
	return sp, p.String(), ok
}

func runIDs(runs []store.Run) string {
	var ids []string
	for _, r := range runs {
		ids = append(ids, fmt.Sprint(r.ID))
	}
	return strings.Join(ids, ", ")
}
