package crosscheck

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
)

// Verdict is how a case's two sides compare.
type Verdict string

// Verdicts of a case or probe.
const (
	Identical Verdict = "identical" // every output bit-identical
	Within    Verdict = "within"    // not identical, within tolerance, and the math is not exactly rounded
	Differs   Verdict = "differs"   // exactly rounded math, within tolerance but not bit-identical
	Disagree  Verdict = "disagree"  // one backend passes validation against the reference, the other fails
	Outside   Verdict = "outside"   // outputs differ beyond the family's tolerance
	Error     Verdict = "error"     // a backend failed to run the case
)

// Failed reports whether v fails the cross-check.
func (v Verdict) Failed() bool { return v != Identical && v != Within }

// BufferDiff compares one output buffer between the backends.
type BufferDiff struct {
	Name      string  `json:"name"`
	Elems     int     `json:"elems"`
	Identical int     `json:"identical"`
	MaxAbs    float64 `json:"max_abs_diff"`
	MaxRel    float64 `json:"max_rel_diff"`
	FirstDiff int     `json:"first_diff"`                  // -1 when identical
	GPU       string  `json:"gpu_at_first_diff,omitempty"` // %g: may be NaN
	Sim       string  `json:"sim_at_first_diff,omitempty"`
	OutsideAt int     `json:"outside_at"` // first element outside tolerance, -1 if none
}

func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
}

// Judge compares a case's two sides.
func Judge(c *Case) (Verdict, []BufferDiff) {
	if c.EmitErr != nil || c.GPU.Err != nil || c.Sim.Err != nil {
		return Error, nil
	}
	v := Identical
	var diffs []BufferDiff
	names := make([]string, 0, len(c.GPU.Outs))
	for n := range c.GPU.Outs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		d := diffBuffer(c, name)
		switch {
		case d.OutsideAt >= 0:
			v = Outside
		case d.Identical != d.Elems && v == Identical:
			v = Within
			if c.Inexact == "" {
				v = Differs
			}
		}
		diffs = append(diffs, d)
	}
	if v != Outside && c.GPU.Check.OK != c.Sim.Check.OK {
		v = Disagree
	}
	return v, diffs
}

// diffBuffer compares buffer name of c's two sides.
func diffBuffer(c *Case, name string) BufferDiff {
	g, s := c.GPU.Outs[name], c.Sim.Outs[name]
	d := BufferDiff{Name: name, Elems: len(g), FirstDiff: -1, OutsideAt: -1}
	for i := range g {
		if i < len(s) && sameBits(g[i], s[i]) {
			d.Identical++
		} else if d.FirstDiff < 0 {
			d.FirstDiff = i
			d.GPU = strconv.FormatFloat(g[i], 'g', -1, 64)
			if i < len(s) {
				d.Sim = strconv.FormatFloat(s[i], 'g', -1, 64)
			}
		}
	}
	d.MaxAbs, d.MaxRel, d.OutsideAt = c.F.Tolerance(c.S, name).Check(g, s)
	d.MaxAbs, d.MaxRel = finite(d.MaxAbs), finite(d.MaxRel) // JSON has no infinity
	return d
}

// ProbeResult is one probe on both backends.
type ProbeResult struct {
	Name     string
	Exact    bool
	Verdict  Verdict
	Detail   string
	GPU, Sim SideRecord
}

// runProbe runs p on gpu and on a fresh interpreter and compares them.
func runProbe(gpu runner.Backend, p sim.Probe) ProbeResult {
	r := ProbeResult{Name: p.Name, Exact: p.Exact, Verdict: Identical}
	t0 := time.Now()
	gout, gerr := p.Run(gpu)
	r.GPU.MS = float64(time.Since(t0).Microseconds()) / 1e3
	t0 = time.Now()
	sout, serr := p.Run(sim.New(sim.Options{}))
	r.Sim.MS = float64(time.Since(t0).Microseconds()) / 1e3
	if gerr != nil || serr != nil {
		r.Verdict = Error
		r.GPU.Error, r.Sim.Error = errString(gerr), errString(serr)
		r.Detail = strings.TrimSpace(r.GPU.Error + " " + r.Sim.Error)
		return r
	}
	gcheck, scheck := p.Check(gout), p.Check(sout)
	r.GPU.Valid, r.Sim.Valid = gcheck == nil, scheck == nil
	r.GPU.Message, r.Sim.Message = errString(gcheck), errString(scheck)
	same := true
	for name, g := range gout {
		if string(g) != string(sout[name]) {
			same = false
		}
	}
	switch {
	case gcheck != nil || scheck != nil:
		r.Verdict, r.Detail = Outside, strings.TrimSpace(r.GPU.Message+" | "+r.Sim.Message)
	case !same && p.Exact:
		r.Verdict = Differs
	case !same:
		r.Verdict = Within
	}
	return r
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func finite(x float64) float64 {
	if math.IsInf(x, 0) || x != x {
		return math.MaxFloat64
	}
	return x
}
