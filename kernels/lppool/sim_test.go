package lppool_test

import (
	"fmt"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
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

// TestOnInterpreter validates the variants of lp_pool1d_bwd (but the
// register caps, which leave the PTX's meaning unchanged) at the small
// shapes, in every dtype, on the CPU interpreter through runner.Session as
// tune does: outputs poisoned with NaN beforehand, every element within the
// tolerance of the float64 reference, no access out of bounds or
// misaligned, no register read before it is written. It takes a sweep of
// one in 2 (internal/sweep: every axis value at every shape and dtype, then
// a quarter by default; everything with GRADTUNE_SWEEP=ci).
func TestOnInterpreter(t *testing.T) {
	f := lppool.Families()[0]
	be := sim.New(sim.Options{Workers: 2})
	ss := runner.NewSession(be)
	defer ss.Release()
	var shapes []variants.Shape
	var groups [][]variants.Params
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
			var points []variants.Params
			for _, p := range f.Space(s).Enumerate() {
				pv, err := variants.Decode[lppool.Params](p)
				if err != nil {
					t.Fatalf("%s %s: %v", s.Key(), p, err)
				}
				if pv.MaxNReg == 0 {
					points = append(points, p)
				}
			}
			shapes, groups = append(shapes, s), append(groups, points)
		}
	}
	runs, bad := 0, 0
	for g, points := range sweep.PickGroups(groups, 2) {
		s := shapes[g]
		if err := ss.Prepare(f, s, 1); err != nil {
			t.Fatal(err)
		}
		for _, p := range points {
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
	if bad > 20 {
		t.Errorf("... %d failures in all", bad)
	}
	t.Logf("%d variant runs", runs)
}

// lpBatchShapes are the shapes of TestBatchAtRunTime, without n, and the
// values of n it runs them at: c·l no multiple of 4 (partial quads in the
// zeroing and converting launches) and units per batch element no
// multiple of a chunk (guarded main kernels), at n that leave the grid a
// partial chunk alone or whole chunks before it; the same with ceil
// mode's clipped last window; 128 units per batch element, one block's
// worth but no multiple of larger chunks; one unit per batch element,
// where n=1023 leaves the last chunk of every size one item short; and a
// shape whose every count per batch element is a multiple of every chunk
// and quad, whose kernels have no guard at all.
var lpBatchShapes = []struct {
	spec string
	ns   []int
}{
	{"c=3,l=29,window=2,stride=3,p=3", []int{1, 2, 5, 37}},
	{"c=5,l=37,window=5,stride=3,p=1.5,ceil=1", []int{1, 2, 5, 37}},
	{"c=4,l=64,window=2,stride=2,p=2", []int{1, 2, 5, 37}},
	{"c=1,l=2,window=2,stride=2,p=2", []int{1, 1023}},
	{"c=32,l=256,window=2,stride=2,p=2", []int{1, 2, 5}},
}

// TestBatchAtRunTime emits every variant (but the register caps) at n=3
// and runs that program on the interpreter at other values of n
// (lpBatchShapes), with every launch and buffer evaluated there: the same program as one emitted at
// that n, and correct. It runs each program twice before comparing, so
// that the second run starts from the f32 accumulator the first one left
// and a zeroing launch that misses any of it fails. It takes a sample of
// one variant in four per shape (one in sixteen with -short; all with
// GRADTUNE_SWEEP=full, internal/sweep).
func TestBatchAtRunTime(t *testing.T) {
	f := lppool.Families()[0]
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	runs, every := 0, 4
	if testing.Short() {
		every = 16
	}
	for _, dt := range f.DTypes() {
		for _, sh := range lpBatchShapes {
			s, err := lpShapeAt(f, sh.spec, 3, dt)
			if err != nil {
				continue // f64 with a fractional p
			}
			for i, p := range f.Space(s).Enumerate() {
				if p["maxnreg"] != "0" || !sweep.TakeKeyed(s.Key(), i, every) {
					continue
				}
				prog, err := f.Emit(s, p)
				if err != nil {
					t.Fatalf("%s %s: %v", s.Key(), p, err)
				}
				for _, n := range sh.ns {
					runs++
					if msg := lpRunAt(f, ss, prog, sh.spec, n, dt, p); msg != "" {
						t.Fatalf("%s %s emitted at n=3, run at n=%d: %s", sh.spec, p, n, msg)
					}
				}
			}
		}
	}
	t.Logf("%d runs: %s", runs, sweep.Describe(every))
}

// lpShapeAt is spec with batch n in dtype dt.
func lpShapeAt(f kernels.Family, spec string, n int, dt dtype.DType) (variants.Shape, error) {
	sp, err := variants.ParseSpecs(fmt.Sprintf("n=%d,%s", n, spec))
	if err != nil {
		return variants.Shape{}, err
	}
	return f.Shape(sp[0], dt)
}

// lpRunAt runs prog (of variant p) at batch n of spec twice and validates
// the second run; it returns what went wrong, or "".
func lpRunAt(f kernels.Family, ss *runner.Session, prog kernels.Program, spec string, n int, dt dtype.DType, p variants.Params) string {
	s, err := lpShapeAt(f, spec, n, dt)
	if err != nil {
		return err.Error()
	}
	again, err := f.Emit(s, p)
	switch {
	case err != nil:
		return err.Error()
	case again.PTX != prog.PTX || fmt.Sprint(again.Launches, again.Buffers) != fmt.Sprint(prog.Launches, prog.Buffers):
		return "the program differs from the one emitted at this n"
	}
	if err := ss.Prepare(f, s, 1); err != nil {
		return err.Error()
	}
	l, err := ss.Load(prog)
	if err != nil {
		return "load: " + err.Error()
	}
	defer l.Unload()
	if err := ss.Run(l); err != nil {
		return "first run: " + err.Error()
	}
	c, err := ss.Validate(l)
	switch {
	case err != nil:
		return err.Error()
	case !c.OK:
		return fmt.Sprintf("%s (max abs error %g, rel %g)", c.Message, c.MaxAbs, c.MaxRel)
	}
	return ""
}
