package kernels_test

import (
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/smallshapes"
	"github.com/gradtune/gradtune/variants"
)

// simVariantsPerShape is how many variants of each small shape the
// interpreter validates (spread evenly over the space, plus one chosen by
// a hash of the shape so that different shapes cover different points):
// 12 with GRADTUNE_SWEEP=ci or full, a third of that by default.
const simVariantsPerShape = 12

// TestVariantsOnInterpreter validates a deterministic sample of every
// registered family's variants on the CPU interpreter, over tiny shapes
// (one element, one row, one column) and shapes whose extents divide no
// tile (tails), through runner.Session as tune does: every output element
// must match the float64 reference within the family's tolerance, and no
// variant may touch memory out of bounds, race in shared memory, diverge
// at a barrier or read an uninitialized register.
func TestVariantsOnInterpreter(t *testing.T) {
	for _, f := range catalog.All() {
		t.Run(f.Name(), func(t *testing.T) {
			t.Parallel()
			be := sim.New(sim.Options{Workers: 1})
			ss := runner.NewSession(be)
			defer ss.Release()
			runs := 0
			for _, dt := range f.DTypes() {
				shapes := smallshapes.Of(f, dt)
				if len(shapes) == 0 {
					t.Errorf("%s %v: no small shape accepted (smallshapes.Of)", f.Name(), dt)
					continue
				}
				for _, s := range shapes {
					if err := ss.Prepare(f, s, 1); err != nil {
						t.Fatalf("%s: %v", s.Key(), err)
					}
					for _, p := range simSample(simtest.Enumerate(f, s), s.Key()) {
						prog, err := f.Emit(s, p)
						if err != nil {
							t.Errorf("%s %s: emit: %v", s.Key(), p, err)
							continue
						}
						l, err := ss.Load(prog)
						if err != nil {
							t.Errorf("%s %s: load: %v", s.Key(), p, err)
							continue
						}
						c, err := ss.ValidateOn(l, simtest.SweepSets(runs)...)
						runs++
						switch {
						case err != nil:
							t.Errorf("%s %s: %v", s.Key(), p, err)
						case !c.OK:
							t.Errorf("%s %s: %s", s.Key(), p, c.Message)
						}
					}
				}
			}
			t.Logf("%d variant runs", runs)
		})
	}
}

// simSample picks simVariantsPerShape points (half by default, 3 with
// -short) spread over all, and one more that depends on key.
func simSample(all []variants.Params, key string) []variants.Params {
	n := simVariantsPerShape
	switch {
	case testing.Short():
		n = 3
	case sweep.Current() == sweep.Sample:
		n /= 3
	}
	out := variants.Spread(all, n)
	if len(all) > len(out) {
		h := fnv.New32a()
		fmt.Fprint(h, key)
		out = append(out, all[int(h.Sum32())%len(all)])
	}
	return out
}
