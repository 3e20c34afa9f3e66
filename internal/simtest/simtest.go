// Package simtest holds what the kernel families' interpreter tests
// share: one variant emitted, loaded, validated against the family's
// reference and unloaded on a runner.Session (Validate), and a shape's
// variants validated that way on the interpreter (Run).
package simtest

import (
	"fmt"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// Run validates the variants of f at shape spec in dtype dt that keep
// accepts on the CPU interpreter through runner.Session, as tune does
// (outputs poisoned with NaN, every element within tolerance, no access
// out of bounds or misaligned, no shared-memory race), reporting each
// failure on t, and returns how many ran.
func Run(t testing.TB, f kernels.Family, spec string, dt dtype.DType, keep func(variants.Params) bool) int {
	t.Helper()
	s := Shape(t, f, spec, dt)
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	if err := ss.Prepare(f, s, 1); err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, p := range f.Space(s).Enumerate() {
		if !keep(p) {
			continue
		}
		runs++
		if err := Validate(ss, f, s, p); err != nil {
			t.Errorf("%s %s: %v", s.Key(), p, err)
		}
	}
	return runs
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
	l, err := ss.Load(prog)
	if err != nil {
		return err
	}
	defer l.Unload()
	c, err := ss.Validate(l)
	if err != nil {
		return err
	}
	if !c.OK {
		return fmt.Errorf("%s (max abs error %g, rel %g)", c.Message, c.MaxAbs, c.MaxRel)
	}
	return nil
}
