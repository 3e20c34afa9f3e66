package runner_test

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// TestDeviceCheckMatchesHost: the device check kernels give the host
// comparison's largest errors, first bad index and bad value, bit for
// bit, for every dtype they read, on buffers with NaNs, infinities,
// signed zeros, a zero reference, an overflowing difference and values
// on either side of the limit, and on clean ones; the buffers span
// several CTAs and a partial warp.
func TestDeviceCheckMatchesHost(t *testing.T) {
	be := sim.New(sim.Options{})
	inf, nan := math.Inf(1), math.NaN()
	tol := kernels.Tolerance{Atol: 1e-3, Rtol: 1e-2}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64, dtype.F16, dtype.BF16} {
		for _, tc := range []struct {
			name    string
			special map[int][2]float64 // index: got, ref
		}{
			{"clean", nil},
			{"same non-finite", map[int][2]float64{5: {nan, nan}, 6: {inf, inf}, 7: {-inf, -inf}}},
			{"within", map[int][2]float64{700: {1.005, 1}, 900: {0, 0}}},
			{"outside", map[int][2]float64{1500: {1.25, 1}, 1900: {3, 1}}},
			{"nan", map[int][2]float64{5: {nan, nan}, 6: {inf, inf}, 1200: {nan, 2}, 1300: {-inf, 1}}},
			{"zero ref", map[int][2]float64{11: {0.5, 0}, 12: {math.Copysign(0, -1), 0}}},
			{"inf ref", map[int][2]float64{100: {1, inf}}},
		} {
			n := 3000 + 17
			ref := make([]float64, n)
			got := make([]float64, n)
			for i := range ref {
				ref[i] = dtype.F16.Round(rng.Float64()*8 - 4)
				got[i] = ref[i] + (rng.Float64()-0.5)*2e-3
			}
			for i, v := range tc.special {
				got[i], ref[i] = v[0], v[1]
			}
			p, err := be.Alloc(n * dt.Size())
			if err != nil {
				t.Fatal(err)
			}
			if err := be.Upload(p, dt.Encode(got)); err != nil {
				t.Fatal(err)
			}
			dev, host, err := runner.CheckBoth(be, dt, p, ref, tol)
			if err != nil {
				t.Fatalf("%v %s: %v", dt, tc.name, err)
			}
			for i := range dev {
				if math.Float64bits(dev[i]) != math.Float64bits(host[i]) && !(math.IsNaN(dev[i]) && math.IsNaN(host[i])) {
					t.Errorf("%v %s: device (maxAbs, maxRel, bad, got) = %v, host %v", dt, tc.name, dev, host)
					break
				}
			}
			if want := tc.name != "clean" && tc.name != "within" && tc.name != "same non-finite"; (host[2] >= 0) != want {
				t.Errorf("%v %s: host bad index %v, want a failure %v", dt, tc.name, host[2], want)
			}
			be.Free(p)
		}
	}
}

// TestDeviceCheckAssembles: ptxas assembles the check kernels for sm_80
// and sm_90 without spills.
func TestDeviceCheckAssembles(t *testing.T) {
	path := ptxas.RequireOrSkip(t)
	for _, arch := range []string{"sm_80", "sm_90"} {
		reports, _, err := ptxas.Assemble(context.Background(), path, runner.DevCheckPTX(), arch)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		for _, r := range reports {
			if r.SpillStores > 0 || r.SpillLoads > 0 {
				t.Errorf("%s: %+v spills", arch, r)
			}
		}
	}
}

// TestValidateOnDeviceAgrees: a session that checks on the device
// validates like one that checks on the host: the same verdict, errors
// and message, for a correct softmax_bwd program and for the same program
// launched on half its grid (the rows it never writes keep the NaN the
// session poisons outputs with).
func TestValidateOnDeviceAgrees(t *testing.T) {
	f, err := catalog.Lookup("softmax_bwd")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := variants.ParseSpecs("m=64,n=200")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Shape(specs[0], dtype.BF16)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := f.Space(s).First()
	prog, err := f.Emit(s, first)
	if err != nil {
		t.Fatal(err)
	}
	half := prog
	half.Launches = slices.Clone(prog.Launches)
	half.Launches[0].Grid[0] = configs.Max(configs.Int(1), configs.Div(prog.Launches[0].Grid[0], configs.Int(2)))
	var checks [2][]runner.Check
	for i, onDevice := range []bool{false, true} {
		ss := runner.NewSession(sim.New(sim.Options{}))
		if onDevice {
			if err := ss.CheckOnDevice(); err != nil {
				t.Fatal(err)
			}
		}
		if err := ss.Prepare(f, s, 1); err != nil {
			t.Fatal(err)
		}
		for _, p := range []kernels.Program{prog, half} {
			l, err := ss.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			c, err := ss.Validate(l)
			if err != nil {
				t.Fatal(err)
			}
			l.Unload()
			checks[i] = append(checks[i], c)
		}
		ss.Release()
	}
	if !checks[0][0].OK || checks[0][1].OK {
		t.Fatalf("host checks %+v: want the whole grid valid, half of it not", checks[0])
	}
	if !reflect.DeepEqual(checks[0], checks[1]) {
		t.Errorf("device checks %+v, want the host's %+v", checks[1], checks[0])
	}
}
