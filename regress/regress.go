package regress

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"

	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/store"
)

// ErrNothingToCompare is returned (wrapped) when the two runs share no
// case: a wrong database or run, not a regression.
var ErrNothingToCompare = errors.New("nothing to compare")

// ErrSameRun is returned (wrapped) when both sides are the same run (the
// same file and run, or a copy of it): such a gate could not fail.
var ErrSameRun = errors.New("a run compared with itself")

// Options set the gate.
type Options struct {
	Threshold float64 // relative change that matters (a fraction)
	MinShift  float64 // µs: a shift below it is noise, whatever its share
	Alpha     float64 // significance level of the U test
	// NoDrift compares the new run's samples as they are, without first
	// taking out the run's drift (Report.Drift).
	NoDrift bool
}

// DefaultOptions are the gate calibrated on recorded H200 nights of two
// machines (testdata/issue21/night-*.db.gz, testdata/issue23/night-*.db.gz;
// the README's "Nightly regression runs" gives the figures): above every
// unplanted change of those nights compared both ways (a short kernel's
// jumps between nights are significant within each night), below the
// planted slowdown. TestRealNights holds them to it.
var DefaultOptions = Options{Threshold: 0.035, MinShift: 0.75, Alpha: 0.05}

// minDriftCases is the fewest cases compared whose ratios estimate a
// run's drift; with fewer, none is taken out.
const minDriftCases = 8

// Case is one kernel, dtype and shape of a run: its winner's samples, or
// why it has none.
type Case struct {
	Kernel, ShapeKey, Dims, DType, Params string
	Samples                               []float64 // µs, without excluded ones
	Excluded                              int       // samples left out (GPU throttled)
	Warnings                              []string
	// Err says why the run has no winner for the case (results.Shape.Why);
	// "" when it has one.
	Err string
}

// Side is one of the two runs compared.
type Side struct {
	Label string // "new.db run 3"
	Run   store.Run
	Cases []Case
}

// Verdict is what the gate says of one case.
type Verdict string

// Verdicts.
const (
	Regressed Verdict = "regressed"
	Improved  Verdict = "improved"
	Unchanged Verdict = "~"
	Missing   Verdict = "missing" // in the baseline, not in the new run
	Failed    Verdict = "failed"  // measured in the new run without a valid result
	Added     Verdict = "new"     // only in the new run, or valid there alone
)

// Fails reports whether v fails the gate.
func (v Verdict) Fails() bool { return v == Regressed || v == Missing || v == Failed }

// Row is the comparison of one case.
type Row struct {
	Base, New *Case
	// BaseMedian and NewMedian are in µs; Change is the Hodges–Lehmann
	// estimate of the shift relative to BaseMedian, and Lo and Hi bound
	// it (95%).
	BaseMedian, NewMedian float64
	Change, Lo, Hi        float64
	P                     float64
	Verdict               Verdict
	Warnings              []string
}

// Key names the row's case: "kernel dtype dims".
func (r Row) Key() string {
	c := r.Base
	if c == nil {
		c = r.New
	}
	return c.Kernel + " " + c.DType + " " + c.Dims
}

// Report is the gate's answer.
type Report struct {
	Base, New Side
	Options   Options
	Rows      []Row
	// Drift is the run's drift: the median over the cases compared of
	// the new median over the baseline's, less one. A GPU that runs a
	// little faster or slower one night (clocks, a different machine of
	// the same model) moves every case alike; the new run's samples are
	// divided by 1 + Drift before they are compared, so that a case
	// regresses against the others rather than with them. 0 with
	// Options.NoDrift or fewer than minDriftCases cases.
	Drift float64
}

// Failed lists the rows that fail the gate.
func (r *Report) Failed() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Verdict.Fails() {
			out = append(out, row)
		}
	}
	return out
}

// Count returns how many rows have verdict v.
func (r *Report) Count(v Verdict) int {
	n := 0
	for _, row := range r.Rows {
		if row.Verdict == v {
			n++
		}
	}
	return n
}

// Load reads the cases of one run of db (0: the newest run), labelled with
// the database's path.
func Load(db *store.DB, runID int64) (Side, error) {
	if runID == 0 {
		runs, err := db.Runs()
		if err != nil {
			return Side{}, err
		}
		if len(runs) == 0 {
			return Side{}, fmt.Errorf("%w: %s has no runs", results.ErrNoResults, db.Path())
		}
		runID = runs[len(runs)-1].ID
	}
	set, err := results.Load(db, results.Options{RunID: runID})
	if err != nil {
		return Side{}, err
	}
	side := Side{Label: fmt.Sprintf("%s run %d", db.Path(), runID)}
	for _, r := range set.Runs {
		if r.ID == runID {
			side.Run = r
		}
	}
	for _, sh := range set.Shapes {
		side.Cases = append(side.Cases, caseOf(sh))
	}
	return side, nil
}

// caseOf is the case of a shape: its winner's samples, or why it has
// none.
func caseOf(sh *results.Shape) Case {
	w := sh.Winner
	if w == nil {
		return Case{Kernel: sh.Kernel, ShapeKey: sh.Key, Dims: sh.Dims, DType: sh.DType, Err: sh.Why()}
	}
	drop := map[int]bool{}
	for _, i := range w.Excluded {
		drop[i] = true
	}
	c := Case{Kernel: sh.Kernel, ShapeKey: sh.Key, Dims: sh.Dims, DType: sh.DType, Params: w.Key.Params,
		Excluded: len(drop), Warnings: w.Warnings}
	for i, x := range w.Samples {
		if !drop[i] && !math.IsNaN(x) {
			c.Samples = append(c.Samples, x)
		}
	}
	return c
}

// Compare runs the gate on two sides. A case of both sides is compared
// when both have a winner; one that the new run measured without a valid
// result has failed, whatever the baseline had; one of the baseline that
// the new run lacks is missing; one only the new run has, or has valid
// alone, is new.
func Compare(base, cur Side, opt Options) (*Report, error) {
	if sameRun(base.Run, cur.Run) {
		return nil, fmt.Errorf("%w: %s and %s are run %d started %s on %s; compare two runs (see tune runs)",
			ErrSameRun, base.Label, cur.Label, base.Run.ID, base.Run.Started.UTC().Format("2006-01-02 15:04:05"), base.Run.Host)
	}
	rep := &Report{Base: base, New: cur, Options: opt}
	byKey := map[string]*Case{}
	for i := range cur.Cases {
		byKey[cur.Cases[i].Kernel+" "+cur.Cases[i].ShapeKey] = &cur.Cases[i]
	}
	common := 0
	for i := range base.Cases {
		b := &base.Cases[i]
		n := byKey[b.Kernel+" "+b.ShapeKey]
		delete(byKey, b.Kernel+" "+b.ShapeKey)
		switch {
		case n == nil:
			rep.Rows = append(rep.Rows, Row{Base: b, BaseMedian: median(b.Samples), Verdict: Missing})
			continue
		case n.Err != "":
			rep.Rows = append(rep.Rows, Row{Base: b, New: n, BaseMedian: median(b.Samples), Verdict: Failed})
		case b.Err != "":
			rep.Rows = append(rep.Rows, Row{Base: b, New: n, NewMedian: median(n.Samples), Verdict: Added})
		default:
			rep.Rows = append(rep.Rows, Row{Base: b, New: n})
		}
		common++
	}
	for i := range cur.Cases {
		n := &cur.Cases[i]
		if byKey[n.Kernel+" "+n.ShapeKey] == nil {
			continue
		}
		v := Added
		if n.Err != "" {
			v = Failed
		}
		rep.Rows = append(rep.Rows, Row{New: n, NewMedian: median(n.Samples), Verdict: v})
	}
	if common == 0 {
		return nil, fmt.Errorf("%w: %s and %s share no kernel and shape", ErrNothingToCompare, base.Label, cur.Label)
	}
	rep.Drift = drift(rep.Rows, opt)
	for i, r := range rep.Rows {
		if r.Verdict == "" {
			rep.Rows[i] = compareCase(r.Base, r.New, rep.Drift, opt)
		}
	}
	sort.SliceStable(rep.Rows, func(i, j int) bool { return rep.Rows[i].Key() < rep.Rows[j].Key() })
	return rep, nil
}

// sameRun reports whether a and b are one run: the same id, start, host,
// GPU and command line (a database file compared with itself or with a
// copy of itself). Runs without an id (not from a database) are none.
func sameRun(a, b store.Run) bool {
	return a.ID != 0 && a.ID == b.ID && a.Started.Equal(b.Started) && a.Host == b.Host && a.GPUUUID == b.GPUUUID && a.Args == b.Args
}

// drift is the run's drift (Report.Drift) over the rows to compare
// (those without a verdict yet).
func drift(rows []Row, opt Options) float64 {
	if opt.NoDrift {
		return 0
	}
	var ratios []float64
	for _, r := range rows {
		if r.Verdict == "" {
			if b, n := median(r.Base.Samples), median(r.New.Samples); b > 0 && n > 0 {
				ratios = append(ratios, n/b)
			}
		}
	}
	if len(ratios) < minDriftCases {
		return 0
	}
	return median(ratios) - 1
}

// compareCase is the test of one case, the new samples divided by
// 1 + drift. NewMedian stays the new run's own median.
func compareCase(b, n *Case, drift float64, opt Options) Row {
	row := Row{Base: b, New: n, BaseMedian: median(b.Samples), NewMedian: median(n.Samples), Verdict: Unchanged}
	ns := clone(n.Samples)
	for i := range ns {
		ns[i] /= 1 + drift
	}
	th := benchmath.Thresholds{CompareAlpha: opt.Alpha}
	c := benchmath.AssumeNothing.Compare(benchmath.NewSample(clone(b.Samples), &th), benchmath.NewSample(clone(ns), &th))
	row.P = c.P
	for _, w := range c.Warnings {
		row.Warnings = append(row.Warnings, w.Error())
	}
	row.Warnings = append(row.Warnings, b.Warnings...)
	row.Warnings = append(row.Warnings, n.Warnings...)
	if !(row.BaseMedian > 0) {
		row.Warnings = append(row.Warnings, "the baseline has no median")
		return row
	}
	shift, lo, hi, ok := hodgesLehmann(b.Samples, ns, 0.95)
	if !ok {
		row.Warnings = append(row.Warnings, "too few samples for a 95% interval of the change")
	}
	row.Change, row.Lo, row.Hi = shift/row.BaseMedian, lo/row.BaseMedian, hi/row.BaseMedian
	big := math.Abs(shift) >= opt.MinShift
	switch {
	case c.P < opt.Alpha && big && row.Change > opt.Threshold && row.Lo > 0:
		row.Verdict = Regressed
	case c.P < opt.Alpha && big && row.Change < -opt.Threshold && row.Hi < 0:
		row.Verdict = Improved
	}
	return row
}

// hodgesLehmann estimates the shift y - x as the median of the nm
// pairwise differences, and its confidence interval as their order
// statistics k and nm-k+1, with k from the normal approximation of the U
// statistic's distribution. ok is false when the samples are too few for
// the level (the interval is then the whole range of the differences).
// Unlike the difference of the medians, the estimate does not jump
// between the modes of a multimodal sample.
func hodgesLehmann(x, y []float64, level float64) (shift, lo, hi float64, ok bool) {
	n, m := len(x), len(y)
	if n == 0 || m == 0 {
		return 0, math.Inf(-1), math.Inf(1), false
	}
	d := pairDiffs{x: clone(x), y: clone(y)}
	sort.Float64s(d.x)
	sort.Float64s(d.y)
	nm := n * m
	z := stats.NormalDist{Mu: 0, Sigma: 1}.InvCDF(1 - (1-level)/2)
	k := int(math.Floor(float64(nm)/2 - z*math.Sqrt(float64(nm*(n+m+1))/12)))
	ok = k >= 1
	k = max(k, 1)
	return d.kth((nm + 1) / 2), d.kth(k), d.kth(nm - k + 1), ok
}

// pairDiffs are the differences y[j] - x[i] of two sorted samples, never
// built: kth finds an order statistic by bisection on the value, counting
// the differences at or below it in one pass over both samples.
type pairDiffs struct{ x, y []float64 }

// atMost counts the differences <= t.
func (d pairDiffs) atMost(t float64) int {
	// For x ascending the bound x[i]+t rises, so j moves forward only.
	c, j := 0, 0
	for _, xi := range d.x {
		for j < len(d.y) && d.y[j] <= xi+t {
			j++
		}
		c += j
	}
	return c
}

// kth is the k-th smallest difference (1-based).
func (d pairDiffs) kth(k int) float64 {
	lo := d.y[0] - d.x[len(d.x)-1]
	hi := d.y[len(d.y)-1] - d.x[0]
	if d.atMost(lo) >= k {
		return lo
	}
	eps := 1e-9 * max(math.Abs(lo), math.Abs(hi), 1)
	for hi-lo > eps {
		mid := lo + (hi-lo)/2
		if d.atMost(mid) >= k {
			hi = mid
		} else {
			lo = mid
		}
	}
	return d.below(hi)
}

// below is the largest difference <= t: bisection ends within a rounding
// error above the k-th difference, and this snaps to the difference itself.
func (d pairDiffs) below(t float64) float64 {
	best, j := math.Inf(-1), 0
	for _, xi := range d.x {
		for j < len(d.y) && d.y[j] <= xi+t {
			j++
		}
		if j > 0 {
			best = max(best, d.y[j-1]-xi)
		}
	}
	return best
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func clone(xs []float64) []float64 { return append([]float64(nil), xs...) }
