package kernels_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/smallshapes"
	"github.com/gradtune/gradtune/variants"
)

// noRuntimeDim are the families whose programs compute their tuned shape
// only: nf4_dequant's shape has no token dim; flash_attn_bwd's sequence
// length is baked into its programs (its loops and causal schedule).
var noRuntimeDim = []string{"nf4_dequant", "flash_attn_bwd"}

// TestRuntimeDimsOnInterpreter holds every family to its programs'
// RuntimeDims: the program emitted at a small shape s is the program
// emitted at s with a runtime dim changed (the same PTX, the same
// launches and buffers as expressions), and that PTX, launched as its
// contract says at the other value, computes the other shape: validated
// on the interpreter against the reference of the other shape. Every
// family with a token dim has one.
func TestRuntimeDimsOnInterpreter(t *testing.T) {
	for _, f := range catalog.All() {
		t.Run(f.Name(), func(t *testing.T) {
			t.Parallel()
			ss := runner.NewSession(sim.New(sim.Options{Workers: 1}))
			defer ss.Release()
			runs := 0
			for _, dt := range f.DTypes() {
				for _, s := range smallshapes.Of(f, dt) {
					for _, p := range variants.Spread(simtest.Enumerate(f, s), runtimeVariantsPerShape()) {
						runs += checkRuntime(t, ss, f, s, p)
					}
				}
			}
			if runs == 0 && !slices.Contains(noRuntimeDim, f.Name()) {
				t.Errorf("no program of %s takes a runtime dim", f.Name())
			}
			t.Logf("%d runs at other values of a runtime dim", runs)
		})
	}
}

// checkRuntime checks variant p of f emitted at s at other values of each
// of its runtime dims, and returns how many it validated.
func checkRuntime(t *testing.T, ss *runner.Session, f kernels.Family, s variants.Shape, p variants.Params) int {
	t.Helper()
	prog, err := f.Emit(s, p)
	if err != nil {
		t.Errorf("%s %s: %v", s.Key(), p, err)
		return 0
	}
	if len(prog.RuntimeDims) == 0 && !slices.Contains(noRuntimeDim, f.Name()) {
		t.Errorf("%s %s: the program has no runtime dim", s.Key(), p)
	}
	runs := 0
	for _, d := range prog.RuntimeDims {
		v := s.Get(d)
		if v == 0 {
			t.Errorf("%s %s: runtime dim %q is not a dim of the shape", s.Key(), p, d)
			continue
		}
		for _, other := range []int{1, max(1, v/2), v + 5} {
			o, ok := withDim(f, s, d, other)
			if hi, bounded := prog.RuntimeMax[d]; !ok || other == v || (bounded && other > hi) {
				continue
			}
			if f.Space(o).Check(p) == nil {
				again, err := f.Emit(o, p)
				if err != nil {
					t.Errorf("%s %s: %v", o.Key(), p, err)
				} else if again.PTX != prog.PTX || fmt.Sprint(again.Launches) != fmt.Sprint(prog.Launches) || fmt.Sprint(again.Buffers) != fmt.Sprint(prog.Buffers) {
					t.Errorf("%s %s: the program differs from the one emitted at %s=%d, though %s is a runtime dim", o.Key(), p, d, v, d)
					continue
				}
			}
			// The family's buffers are expressions of the runtime dim: at
			// o's value they are o's buffers.
			if got, want := resolvedBuffers(t, f.Buffers(s), kernels.Env(o)), resolvedBuffers(t, f.Buffers(o), kernels.Env(o)); got != want {
				t.Errorf("%s: the buffers at %s=%d, %s, are not the buffers of %s, %s", s.Key(), d, other, got, o.Key(), want)
			}
			if err := ss.Prepare(f, o, 1); err != nil {
				t.Fatalf("%s: %v", o.Key(), err)
			}
			l, err := ss.Load(prog)
			if err != nil {
				t.Errorf("%s %s emitted at %s=%d: load: %v", o.Key(), p, d, v, err)
				continue
			}
			c, err := ss.ValidateOn(l, simtest.SweepSets(runs)...)
			l.Unload()
			runs++
			switch {
			case err != nil:
				t.Errorf("%s %s emitted at %s=%d: %v", o.Key(), p, d, v, err)
			case !c.OK:
				t.Errorf("%s %s emitted at %s=%d: %s", o.Key(), p, d, v, c.Message)
			}
		}
	}
	return runs
}

// withDim is s with dim d at v, when the family accepts it and it stays
// small enough for the interpreter.
func withDim(f kernels.Family, s variants.Shape, d string, v int) (variants.Shape, bool) {
	o, err := kernels.WithDim(f, s, d, v)
	if err != nil {
		return variants.Shape{}, false
	}
	elems := 0
	for _, b := range f.Buffers(o) {
		elems += kernels.Elems(b, o)
	}
	return o, elems <= 2*smallshapes.MaxElems
}

// resolvedBuffers prints bufs evaluated in env.
func resolvedBuffers(t *testing.T, bufs []kernels.Buffer, env configs.Env) string {
	t.Helper()
	p, err := configs.Resolve(nil, bufs, env)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(p.Buffers)
}

// runtimeVariantsPerShape is how many variants of each small shape
// TestRuntimeDimsOnInterpreter runs at other values: 2 with
// GRADTUNE_SWEEP=ci or full, 1 by default (the README's command).
func runtimeVariantsPerShape() int { return sweep.ByDefault(1, 2) }
