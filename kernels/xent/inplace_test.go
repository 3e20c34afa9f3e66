package xent_test

import (
	"fmt"
	"math"
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

// runAliased runs prog once on the interpreter with workers goroutines,
// on fresh inputs, and compares the logits (now the gradient), lse and
// loss with the reference under the family's tolerances.
func runAliased(vs variants.Shape, prog kernels.Program, workers int) error {
	be := sim.New(sim.Options{Workers: workers})
	ss := runner.NewSession(be)
	defer ss.Release()
	if err := ss.Prepare(fam, vs, 1); err != nil {
		return err
	}
	l, err := ss.Load(prog)
	if err != nil {
		return err
	}
	defer l.Unload()
	if err := ss.Run(l); err != nil {
		return err
	}
	if err := be.Sync(); err != nil {
		return err
	}
	ref := fam.Reference(vs, fam.Inputs(vs, 1))
	for _, b := range [][2]string{{"logits", "dlogits"}, {"lse", "lse"}, {"loss", "loss"}} {
		got, err := ss.Output(b[0])
		if err != nil {
			return err
		}
		tol := fam.Tolerance(vs, b[1])
		for i, want := range ref[b[1]] {
			if d := math.Abs(got[i] - want); !(d <= tol.Atol+tol.Rtol*math.Abs(want)) {
				return fmt.Errorf("%s[%d] = %v, want %v", b[0], i, got[i], want)
			}
		}
	}
	return nil
}

// TestInPlace validates the gradient written over the logits: split=4
// at v=1000 puts most labels in a part other than 0, and reverse=1 runs
// the gradient kernel's parts of a row last to first. It plants reading
// z[label] in the gradient kernel (for the loss, by the part-0 CTA): with
// one worker the interpreter runs CTAs in index order, each to its end,
// so with reverse=1 every row's parts 3, 2 and 1 have written their
// gradient before part 0 reads, and the loss of each row whose label is
// not in part 0 is wrong: caught deterministically. The unplanted
// program passes with one worker and two, either order.
func TestInPlace(t *testing.T) {
	for _, spec := range []string{"t=9,v=1000", "t=9,v=1000,smooth=0.1,labels=i64,zloss=1"} {
		vs := simtest.Shape(t, fam, spec, dtype.BF16)
		for _, params := range []string{"vec=8,block=128,vpt=1,split=4,reverse=1", "vec=4,block=128,vpt=2,split=4,reverse=0"} {
			prog := aliased(t, vs, params, false)
			// The gradient kernel reads the logits it writes without .nc:
			// its .nc loads are the label, dloss, n_valid and zloss_scale.
			grad := prog.PTX[strings.LastIndex(prog.PTX, ".entry"):]
			if n, want := strings.Count(grad, "ld.global.nc"), 3+strings.Count(spec, "zloss=1"); n != want {
				t.Errorf("%s %s: %d .nc loads in the gradient kernel, want %d", spec, params, n, want)
			}
			for _, w := range []int{1, 2} {
				if err := runAliased(vs, prog, w); err != nil {
					t.Errorf("%s %s workers=%d: %v", spec, params, w, err)
				}
			}
		}
		bad := aliased(t, vs, "vec=8,block=128,vpt=1,split=4,reverse=1", true)
		if err := runAliased(vs, bad, 1); err == nil || !strings.HasPrefix(err.Error(), "loss[") {
			t.Errorf("%s: z[label] read after other parts wrote: %v, want a loss failure", spec, err)
		}
	}
}
