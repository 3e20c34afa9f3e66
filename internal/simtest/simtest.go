// Package simtest holds what the kernel families' interpreter tests
// share: one variant emitted, loaded, validated against the family's
// reference and unloaded on a runner.Session (Validate), and a shape's
// variants validated that way on the interpreter (Run, RunPoints), or a
// sample of several shapes' variants (Sample); and Main, the TestMain of
// the packages whose tests run the interpreter (a collector target for
// their allocation rate).
package simtest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// Case is a shape of an interpreter test: a spec and a dtype.
type Case struct {
	Spec  string
	DType dtype.DType
}

// spaces holds the points of each family's space at each shape, keyed by
// "family shape": a test binary enumerates a space once, since a family's
// space at a shape is fixed.
var spaces sync.Map

// Points returns f's shape for c and its space's points, in enumeration
// order (Enumerate).
func Points(t testing.TB, f kernels.Family, c Case) (variants.Shape, []variants.Params) {
	t.Helper()
	s := Shape(t, f, c.Spec, c.DType)
	return s, Enumerate(f, s)
}

// Enumerate returns the points of f's space at s, in enumeration order,
// enumerated once per test binary. Callers share the slice and must not
// change it or its points.
func Enumerate(f kernels.Family, s variants.Shape) []variants.Params {
	key := f.Name() + " " + s.Key()
	if pts, ok := spaces.Load(key); ok {
		return pts.([]variants.Params)
	}
	pts := f.Space(s).Enumerate()
	spaces.Store(key, pts)
	return pts
}

// Run validates the variants of f at shape spec in dtype dt that keep
// accepts (RunPoints), and returns how many ran.
func Run(t testing.TB, f kernels.Family, spec string, dt dtype.DType, keep func(variants.Params) bool) int {
	t.Helper()
	s, all := Points(t, f, Case{spec, dt})
	var pts []variants.Params
	for _, p := range all {
		if keep(p) {
			pts = append(pts, p)
		}
	}
	return RunPoints(t, f, s, pts)
}

// Sample validates a sweep of one in n (sweep.PickGroups) of the variants
// that keep accepts at cases, and fails a case at which none ran (the
// sample takes one of every case that has some: a case that has none
// fails). It logs how many ran at each case.
func Sample(t testing.TB, f kernels.Family, cases []Case, n int, keep func(variants.Params) bool) {
	t.Helper()
	shapes := make([]variants.Shape, len(cases))
	groups := make([][]variants.Params, len(cases))
	for i, c := range cases {
		var all []variants.Params
		shapes[i], all = Points(t, f, c)
		for _, p := range all {
			if keep(p) {
				groups[i] = append(groups[i], p)
			}
		}
	}
	for i, pts := range sweep.PickGroups(groups, n) {
		ran := RunPoints(t, f, shapes[i], pts)
		if ran == 0 {
			t.Errorf("%s: no variant ran (%d of its space's are the test's)", shapes[i].Key(), len(groups[i]))
		}
		t.Logf("%s: %d of %d variants (%s)", shapes[i].Key(), ran, len(groups[i]), sweep.Describe(n))
	}
}

// RunPoints validates the variants pts of f at shape s on the CPU
// interpreter through runner.Session, as tune does (outputs poisoned with
// NaN, every element within tolerance, no access out of bounds or
// misaligned, no shared-memory race), on the input sets SweepSets gives,
// reporting each failure on t, and returns how many ran.
func RunPoints(t testing.TB, f kernels.Family, s variants.Shape, pts []variants.Params) int {
	t.Helper()
	if len(pts) == 0 {
		return 0
	}
	ss := Session(t, f, s, 2)
	for i, p := range pts {
		prog, err := f.Emit(s, p)
		if err == nil {
			err = validateOn(ss, prog, SweepSets(i)...)
		}
		if err != nil {
			t.Errorf("%s %s: %v", s.Key(), p, err)
		}
	}
	return len(pts)
}

// SweepSets are the input sets a sweep validates its i-th variant on: at
// the default level the random and the exact inputs by turns (each
// variant runs once, both sets run across the sweep), both with
// GRADTUNE_SWEEP=ci or full.
func SweepSets(i int) []string {
	if sweep.Current() != sweep.Sample {
		return []string{runner.RandomInputs, runner.ExactInputs}
	}
	if i%2 == 1 {
		return []string{runner.ExactInputs}
	}
	return []string{runner.RandomInputs}
}

// Shape is f's shape of spec (m=..,n=..) in dtype dt.
func Shape(t testing.TB, f kernels.Family, spec string, dt dtype.DType) variants.Shape {
	t.Helper()
	sp, err := variants.ParseSpecs(spec)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Shape(sp[0], dt)
	if err != nil {
		t.Fatalf("%s %s: %v", f.Name(), spec, err)
	}
	return s
}

// Session is an interpreter session of workers workers prepared for
// family f at shape s (one input set each), released when the test ends.
func Session(t testing.TB, f kernels.Family, s variants.Shape, workers int) *runner.Session {
	t.Helper()
	ss := runner.NewSession(sim.New(sim.Options{Workers: workers}))
	t.Cleanup(ss.Release)
	if err := ss.Prepare(f, s, 1); err != nil {
		t.Fatal(err)
	}
	return ss
}

// Validate emits variant p of family f at shape s, runs it once on ss
// (whose shape must be s) and returns an error unless every output is
// within tolerance.
func Validate(ss *runner.Session, f kernels.Family, s variants.Shape, p variants.Params) error {
	prog, err := f.Emit(s, p)
	if err != nil {
		return err
	}
	return ValidateProgram(ss, prog)
}

// ValidateProgram is Validate of a program given as it is, at the
// session's shape.
func ValidateProgram(ss *runner.Session, prog kernels.Program) error {
	return validateOn(ss, prog, runner.RandomInputs, runner.ExactInputs)
}

// ValidateSweep validates prog as the i-th program of a sweep: on the
// input sets SweepSets gives (by turns at the default level, both with
// GRADTUNE_SWEEP=ci or full).
func ValidateSweep(ss *runner.Session, prog kernels.Program, i int) error {
	return validateOn(ss, prog, SweepSets(i)...)
}

// CheckBothSets loads prog, validates it on both input sets and unloads
// it, returning the check with each set's outcome; it fails t when the
// program does not load or run, or when it was not validated on two sets
// (a family without exact inputs there).
func CheckBothSets(t testing.TB, ss *runner.Session, prog kernels.Program) runner.Check {
	t.Helper()
	l, err := ss.Load(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unload()
	c, err := ss.Validate(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sets) != 2 {
		t.Fatalf("validated on %d input sets, want random and exact", len(c.Sets))
	}
	return c
}

// validateOn validates prog on the input sets named (runner.ValidateOn).
func validateOn(ss *runner.Session, prog kernels.Program, sets ...string) error {
	l, err := ss.Load(prog)
	if err != nil {
		return err
	}
	defer l.Unload()
	c, err := ss.ValidateOn(l, sets...)
	if err != nil {
		return err
	}
	if !c.OK {
		return fmt.Errorf("%s (max abs error %g, rel %g)", c.Message, c.MaxAbs, c.MaxRel)
	}
	return nil
}

// Point is a variant a test names: a case and its params.
type Point struct {
	Case   Case
	Params string
}

// RunNamed validates each named point of f (RunPoints), failing t when
// its params are not a point of its case's space; an axis the params do
// not name takes its default, as in an older record.
func RunNamed(t testing.TB, f kernels.Family, pts []Point) {
	t.Helper()
	for _, n := range pts {
		s := Shape(t, f, n.Case.Spec, n.Case.DType)
		p, err := f.Space(s).ParseRecorded(n.Params) // an axis added since takes its default
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Space(s).Check(p); err != nil {
			t.Fatalf("%s %s: %v", s.Key(), p, err)
		}
		RunPoints(t, f, s, []variants.Params{p})
	}
}

// RuntimeDim checks programs that take dim at run time: each of params,
// emitted at case c, is the program emitted with dim at each of values
// (PTX, launches and buffers), and validates at each on the interpreter.
func RuntimeDim(t testing.TB, f kernels.Family, c Case, dim string, values []int, params ...string) {
	t.Helper()
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	s := Shape(t, f, c.Spec, c.DType)
	for _, ps := range params {
		p, err := f.Space(s).ParseRecorded(ps) // an axis added since takes its default
		if err != nil {
			t.Fatal(err)
		}
		prog, err := f.Emit(s, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			o, err := kernels.WithDim(f, s, dim, v)
			if err != nil {
				t.Fatal(err)
			}
			again, err := f.Emit(o, p)
			if err != nil || again.PTX != prog.PTX || fmt.Sprint(again.Launches, again.Buffers) != fmt.Sprint(prog.Launches, prog.Buffers) {
				t.Errorf("%s %s: the program differs from the one emitted at %s (%v)", o.Key(), p, s.Key(), err)
			}
			if err := ss.Prepare(f, o, 1); err != nil {
				t.Fatal(err)
			}
			if err := ValidateProgram(ss, prog); err != nil {
				t.Errorf("%s %s emitted at %s: %v", o.Key(), p, s.Key(), err)
			}
		}
	}
}

// RuntimeBound checks the bounds program p of f at s puts on its runtime
// dims (Program.RuntimeMax): each is at least s's own value, and it is
// where f's space stops admitting p, so that a table entry serves the
// values the tuner would have tried it at and no further. It reports
// whether the program has a bound.
func RuntimeBound(t testing.TB, f kernels.Family, s variants.Shape, p variants.Params) bool {
	t.Helper()
	prog, err := f.Emit(s, p)
	if err != nil {
		t.Fatalf("%s %s: %v", s.Key(), p, err)
	}
	for d, hi := range prog.RuntimeMax {
		at, err := kernels.WithDim(f, s, d, hi)
		switch {
		case hi < s.Get(d):
			t.Errorf("%s %s: %s at most %d, below its own %d", s.Key(), p, d, hi, s.Get(d))
		case err != nil:
			t.Errorf("%s %s: %s=%d, its bound: %v", s.Key(), p, d, hi, err)
		case f.Space(at).Check(p) != nil:
			t.Errorf("%s %s: the space at its bound %s=%d refuses it: %v", s.Key(), p, d, hi, f.Space(at).Check(p))
		}
		if past, err := kernels.WithDim(f, s, d, hi+1); err == nil && f.Space(past).Check(p) == nil {
			t.Errorf("%s %s: the space past its bound %s=%d still admits it", s.Key(), p, d, hi)
		}
	}
	return len(prog.RuntimeMax) > 0
}

// PresetBounds runs RuntimeBound on up to n variants per shape that
// split selects, over f's bf16 shapes of preset at tokens, and returns
// how many had a bound and how many did not.
func PresetBounds(t testing.TB, f kernels.Family, preset string, tokens, n int, split func(variants.Shape, variants.Params) bool) (bounded, unbounded int) {
	t.Helper()
	pr, err := variants.LookupPreset(preset, tokens)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.Shapes(pr, []dtype.DType{dtype.BF16}) {
		taken := 0
		for _, p := range Enumerate(f, s) {
			if taken == n || !split(s, p) {
				continue
			}
			taken++
			if RuntimeBound(t, f, s, p) {
				bounded++
			} else {
				unbounded++
			}
		}
	}
	return bounded, unbounded
}
