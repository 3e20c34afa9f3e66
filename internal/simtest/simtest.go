// Package simtest holds what the kernel families' interpreter tests
// share: one variant emitted, loaded, validated against the family's
// reference and unloaded on a runner.Session.
package simtest

import (
	"fmt"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

// Validate emits variant p of family f at shape s, runs it once on ss
// (whose shape must be s) and returns an error unless every output is
// within tolerance.
func Validate(ss *runner.Session, f kernels.Family, s variants.Shape, p variants.Params) error {
	prog, err := f.Emit(s, p)
	if err != nil {
		return err
	}
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
