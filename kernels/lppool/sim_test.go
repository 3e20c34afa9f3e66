package lppool_test

import (
	"testing"

	"github.com/gradtune/gradtune/kernels/lppool"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// lpSimShapes are small LP-pooling shapes whose rows divide no unit, with
// clipped last windows (ceil mode), overlap, gaps, a window longer than
// the row, p = 1, 2, 2.5, 3, 4, 1.5 and 0.5, and rows that start the
// all-zero window of the inputs.
var lpSimShapes = []string{
	"n=3,c=5,l=1001,window=4,stride=2,p=2,ceil=1",
	"n=2,c=4,l=256,window=4,stride=2,p=2",
	"n=1,c=7,l=37,window=5,stride=3,p=1.5,ceil=1",
	"n=2,c=3,l=29,window=2,stride=3,p=3",
	"n=1,c=1,l=3,window=4,stride=2,p=0.5,ceil=1",
	"n=2,c=2,l=64,window=3,stride=1,p=1",
	"n=2,c=3,l=40,window=4,stride=4,p=4,ceil=1",
	"n=1,c=2,l=24,window=6,stride=2,p=2.5",
}

// TestOnInterpreter validates every variant of lp_pool1d_bwd (but the
// register caps, which leave the PTX's meaning unchanged) at the small
// shapes, in every dtype, on the CPU interpreter through runner.Session as
// tune does: outputs poisoned with NaN beforehand, every element within the
// tolerance of the float64 reference, no access out of bounds or
// misaligned, no register read before it is written. -short runs every
// fourth variant.
func TestOnInterpreter(t *testing.T) {
	f := lppool.Families()[0]
	be := sim.New(sim.Options{Workers: 2})
	ss := runner.NewSession(be)
	defer ss.Release()
	runs, bad := 0, 0
	for _, dt := range f.DTypes() {
		for _, spec := range lpSimShapes {
			sp, err := variants.ParseSpecs(spec)
			if err != nil {
				t.Fatal(err)
			}
			s, err := f.Shape(sp[0], dt)
			if err != nil {
				continue // f64 with a fractional p
			}
			if err := ss.Prepare(f, s, 1); err != nil {
				t.Fatal(err)
			}
			for i, p := range f.Space(s).Enumerate() {
				pv, err := variants.Decode[lppool.Params](p)
				if err != nil {
					t.Fatalf("%s %s: %v", s.Key(), p, err)
				}
				if pv.MaxNReg != 0 || testing.Short() && i%4 != 0 {
					continue
				}
				prog, err := f.Emit(s, p)
				if err != nil {
					t.Fatalf("%s %s: %v", s.Key(), p, err)
				}
				l, err := ss.Load(prog)
				if err != nil {
					t.Fatalf("%s %s: load: %v", s.Key(), p, err)
				}
				c, err := ss.Validate(l)
				runs++
				if err != nil || !c.OK {
					if bad++; bad <= 20 {
						t.Errorf("%s %s: %v %s (max abs error %g, rel %g)", s.Key(), p, err, c.Message, c.MaxAbs, c.MaxRel)
					}
				}
			}
		}
	}
	if bad > 20 {
		t.Errorf("... %d failures in all", bad)
	}
	t.Logf("%d variant runs", runs)
}
