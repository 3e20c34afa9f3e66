package xent_test

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/xent"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// aliased emits the variant params at vs with the gradient written
// over the logits (xent.EmitAliased).
func aliased(t *testing.T, vs variants.Shape, params string, late bool) kernels.Program {
	t.Helper()
	p, err := variants.ParseParams(params)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := xent.EmitAliased(vs, p, late)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// validateTwice validates prog at vs on the interpreter with workers
// goroutines, twice on one loaded program: the second validation passes
// only if the runner put the logits back after the first overwrote them.
func validateTwice(vs variants.Shape, prog kernels.Program, workers int) (runner.Check, error) {
	ss := runner.NewSession(sim.New(sim.Options{Workers: workers}))
	defer ss.Release()
	if err := ss.Prepare(fam, vs, 1); err != nil {
		return runner.Check{}, err
	}
	l, err := ss.Load(prog)
	if err != nil {
		return runner.Check{}, err
	}
	defer l.Unload()
	var c runner.Check
	for range 2 {
		if c, err = ss.Validate(l); err != nil || !c.OK {
			return c, err
		}
	}
	return c, nil
}

// TestInPlace validates inplace=1, the gradient written over the logits
// (an inout buffer), through the runner: split=4 at v=1000 puts most
// labels in a part other than 0, and reverse=1 runs the gradient
// kernel's parts of a row last to first. It plants reading z[label] in
// the gradient kernel (for the loss, by the part-0 CTA): with one worker
// the interpreter runs CTAs in index order, each to its end, so with
// reverse=1 every row's parts 3, 2 and 1 have written their gradient
// before part 0 reads, and the loss of each row whose label is not in
// part 0 is wrong: caught deterministically. The unplanted program
// passes with one worker and two, either order, validated twice; so do
// the one-pass kernels (the threads' loads, and bulk copies in and out),
// whose clusters read z[label] before any CTA of the row writes.
func TestInPlace(t *testing.T) {
	for _, spec := range []string{"t=9,v=1000,inplace=1", "t=9,v=1000,smooth=0.1,labels=i64,zloss=1,inplace=1"} {
		vs := simtest.Shape(t, fam, spec, dtype.BF16)
		var roles []string
		for _, b := range fam.Buffers(vs) {
			roles = append(roles, b.Name+":"+string(b.Role))
		}
		if got := strings.Join(roles, " "); !strings.HasPrefix(got, "logits:inout ") || strings.Contains(got, "dlogits") {
			t.Errorf("%s: buffers %s, want the logits inout and no dlogits", spec, got)
		}
		for _, params := range []string{"vec=8,block=128,vpt=1,split=4,reverse=1,pass=two,copy=ld,regs=free", "vec=4,block=128,vpt=2,split=4,reverse=0,pass=two,copy=ld,regs=free", "vec=8,block=128,vpt=1,split=4,reverse=0,pass=one,copy=ld,regs=free", "vec=8,block=128,vpt=2,split=2,reverse=0,pass=one,copy=inout,regs=free"} {
			p, err := variants.ParseParams(params)
			if err != nil {
				t.Fatal(err)
			}
			prog, err := fam.Emit(vs, p)
			if err != nil {
				t.Fatal(err)
			}
			// The gradient kernel reads the logits it writes without .nc:
			// its .nc loads are the label, dloss, n_valid and zloss_scale.
			grad := prog.PTX[strings.LastIndex(prog.PTX, ".entry"):]
			if n, want := strings.Count(grad, "ld.global.nc"), 3+strings.Count(spec, "zloss=1"); n != want {
				t.Errorf("%s %s: %d .nc loads in the gradient kernel, want %d", spec, params, n, want)
			}
			for _, w := range []int{1, 2} {
				if c, err := validateTwice(vs, prog, w); err != nil || !c.OK {
					t.Errorf("%s %s workers=%d: %v %s", spec, params, w, err, c.Message)
				}
			}
		}
		bad := aliased(t, vs, "vec=8,block=128,vpt=1,split=4,reverse=1,pass=two,copy=ld,regs=free", true)
		if c, err := validateTwice(vs, bad, 1); err != nil || c.OK || !strings.Contains(c.Message, "loss[") {
			t.Errorf("%s: z[label] read after other parts wrote: %v %q, want a loss failure", spec, err, c.Message)
		}
	}
}
