package kernels_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// forward holds the forward function of each activation, in float64.
var forward = map[string]func(x float64) float64{
	"relu_bwd": func(x float64) float64 {
		if x > 0 {
			return x
		}
		return 0
	},
	// GELU, tanh approximation (PyTorch approximate="tanh").
	"gelu_bwd": func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	},
	"silu_bwd": func(x float64) float64 { return x / (1 + math.Exp(-x)) },
}

// reference runs family f's Reference on the given dy and x in a flat f32
// shape.
func reference(t *testing.T, f kernels.Family, dt dtype.DType, dy, x []float64) []float64 {
	t.Helper()
	s, err := f.Shape(variants.Spec{Dims: []variants.Dim{{Name: "n", Value: len(x)}}}, dt)
	if err != nil {
		t.Fatal(err)
	}
	out := f.Reference(s, map[string][]float64{"dy": dy, "x": x})
	if len(out["dx"]) != len(x) {
		t.Fatalf("%s: Reference gave %d values for %d inputs", f.Name(), len(out["dx"]), len(x))
	}
	return out["dx"]
}

// points returns the x at which the references are checked: a dense grid
// over [-10, 10], points near 0, and large magnitudes.
func points() []float64 {
	var xs []float64
	for i := -2000; i <= 2000; i++ {
		xs = append(xs, float64(i)/200+0.0013) // off the grid of kinks
	}
	for _, x := range []float64{1e-3, -1e-3, 3e-2, -3e-2, 15, -15, 30, -30, 80, -80} {
		xs = append(xs, x)
	}
	return xs
}

// TestReferenceMatchesFiniteDifferences checks each family's Reference
// against central finite differences of its forward function: dx must be
// dy · f'(x).
func TestReferenceMatchesFiniteDifferences(t *testing.T) {
	for _, name := range seedFamilies {
		fwd := forward[name]
		if fwd == nil {
			t.Fatalf("no forward function for %s", name)
		}
		f, _ := catalog.Lookup(name)
		xs := points()
		dy := kernels.Uniform(dtype.F64, len(xs), -2, 2, 3, name)
		dy[0] = 1
		for _, dt := range f.DTypes() {
			got := reference(t, f, dt, dy, xs)
			worst := 0.0
			for i, x := range xs {
				h := 1e-5 * max(1, math.Abs(x))
				fd := (fwd(x+h) - fwd(x-h)) / (2 * h)
				want := dy[i] * fd
				// Truncation error h²/6·|f'''| and rounding error
				// ε·|f|/h are both far below 1e-8 here.
				err := math.Abs(got[i] - want)
				worst = max(worst, err)
				if err > 1e-8*(1+math.Abs(want)) || math.IsNaN(got[i]) {
					t.Errorf("%s %v: dy=%g x=%g: Reference %.12g, finite differences %.12g", name, dt, dy[i], x, got[i], want)
				}
			}
			t.Logf("%s %v: worst difference from finite differences %.2g", name, dt, worst)
		}
	}
}

func TestReferenceEdges(t *testing.T) {
	relu, _ := catalog.Lookup("relu_bwd")
	// At the kink PyTorch's threshold_backward gives 0 (x <= 0).
	got := reference(t, relu, dtype.F32, []float64{3, 3, 3, 3}, []float64{0, math.Copysign(0, -1), 1e-30, -1e-30})
	if got[0] != 0 || got[1] != 0 || got[2] != 3 || got[3] != 0 {
		t.Errorf("relu_bwd at 0, -0, ±1e-30 = %v, want [0 0 3 0]", got)
	}
	// Large |x|: the derivatives tend to 1 (x → ∞) and 0 (x → -∞)
	// without NaN.
	for _, name := range seedFamilies {
		f, _ := catalog.Lookup(name)
		got := reference(t, f, dtype.F32, []float64{1, 1, 2, 0}, []float64{1000, -1000, 50, 3})
		if math.Abs(got[0]-1) > 1e-12 || math.Abs(got[1]) > 1e-12 || math.Abs(got[2]-2) > 1e-12 || got[3] != 0 {
			t.Errorf("%s: dx at x=±1000, 50 (dy=2), dy=0 = %v, want [1 0 2 0]", name, got)
		}
	}
}

// f32 operations of the kernels, each rounded once as the GPU rounds it.
// float64 holds the exact product of two float32s, and its 53 bits make
// double rounding of +, -, ×, ÷ harmless (53 ≥ 2·24+2).
func mul32(a, b float32) float32    { return float32(float64(a) * float64(b)) }
func add32(a, b float32) float32    { return float32(float64(a) + float64(b)) }
func sub32(a, b float32) float32    { return float32(float64(a) - float64(b)) }
func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }
func rcp32(a float32) float32       { return float32(1 / float64(a)) }

// ex2Err is the relative error allowed to ex2.approx.f32 in this model: 2
// ulp, looser than the 2^-22.5 of the PTX ISA's description.
const ex2Err = 0x1p-22

// models are f32 models of the kernels' arithmetic (see activations.go):
// the same operations in the same order, with ex2.approx given the
// relative error e. They check that the tolerances admit what an f32
// implementation of each formula produces.
var models = map[string]func(dy, x float32, e float64) float32{
	"relu_bwd": func(dy, x float32, _ float64) float32 {
		if x <= 0 {
			return 0
		}
		return dy
	},
	"gelu_bwd": func(dy, x float32, e float64) float32 {
		const beta, kappa = 0.7978845608028654, 0.044715
		x2 := mul32(x, x)
		x3 := mul32(x2, x)
		inner := fma32(kappa, x3, x)
		ex := float32(math.Exp2(float64(mul32(inner, float32(2*beta*math.Log2E)))) * (1 + e))
		r := rcp32(add32(ex, 1))
		th := fma32(-2, r, 1)
		left := fma32(0.5, th, 0.5)
		omt2 := fma32(-th, th, 1)
		right := mul32(mul32(x, 0.5), omt2)
		innerD := fma32(float32(3*kappa*beta), x2, beta)
		return mul32(dy, fma32(right, innerD, left))
	},
	"silu_bwd": func(dy, x float32, e float64) float32 {
		ex := float32(math.Exp2(float64(mul32(x, -float32(math.Log2E)))) * (1 + e))
		s := rcp32(add32(ex, 1))
		in := fma32(x, sub32(1, s), 1)
		return mul32(dy, mul32(s, in))
	},
}

// dtypeInputs lists the x values of a dtype to check: every value of
// f16 and bf16 in [-8, 8], and 0 and 40001 other f32 values there.
func dtypeInputs(dt dtype.DType) []float64 {
	xs := []float64{0}
	switch dt {
	case dtype.F16:
		for h := range 0x10000 {
			if v := dtype.F16ToFloat(uint16(h)); math.Abs(v) <= 8 {
				xs = append(xs, v)
			}
		}
	case dtype.BF16:
		for h := range 0x10000 {
			if v := dtype.BF16ToFloat(uint16(h)); math.Abs(v) <= 8 {
				xs = append(xs, v)
			}
		}
	default:
		for i := -20000; i <= 20000; i++ {
			xs = append(xs, dt.Round(float64(i)/2500+1e-5))
		}
	}
	return xs
}

// TestToleranceAdmitsKernelArithmetic checks that each family's tolerance
// accepts the output of the f32 model of its kernel, rounded to the
// output dtype, for every input value of the dtype in [-8, 8] and with
// ex2.approx off by its error bound either way.
func TestToleranceAdmitsKernelArithmetic(t *testing.T) {
	for _, name := range seedFamilies {
		f, _ := catalog.Lookup(name)
		model := models[name]
		for _, dt := range f.DTypes() {
			xs := dtypeInputs(dt)
			dy := kernels.Uniform(dt, len(xs), -1, 1, 5, name)
			for i := 0; i < len(dy); i += 97 {
				dy[i] = dt.Round(1) // the largest |dy| Inputs gives
			}
			ref := reference(t, f, dt, dy, xs)
			s, _ := f.Shape(variants.Spec{Dims: []variants.Dim{{Name: "n", Value: len(xs)}}}, dt)
			tol := f.Tolerance(s, "dx")
			for _, e := range []float64{-ex2Err, 0, ex2Err} {
				got := make([]float64, len(xs))
				for i := range xs {
					got[i] = dt.Round(float64(model(float32(dy[i]), float32(xs[i]), e)))
				}
				maxAbs, maxRel, bad := tol.Check(got, ref)
				if bad >= 0 {
					t.Errorf("%s %v (ex2 error %+.2g): tolerance %+v rejects the f32 model at dy=%g x=%g: got %g, reference %g",
						name, dt, e, tol, dy[bad], xs[bad], got[bad], ref[bad])
				} else if e == 0 {
					t.Logf("%s %v: tolerance %+v, model within %.2g abs, %.2g rel", name, dt, tol, maxAbs, maxRel)
				}
			}
		}
	}
}

// TestToleranceRejectsWrongResults checks that the tolerances are tight
// enough to catch plausible mistakes: the derivative of another formula,
// and outputs a few units in the last place off.
func TestToleranceRejectsWrongResults(t *testing.T) {
	erfGELU := func(dy, x float64) float64 { // the exact (erf) GELU
		return dy * (0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi))
	}
	wrong := map[string][]struct {
		what string
		dx   func(dy, x float64) float64
	}{
		"relu_bwd": {
			{"dy where x >= 0", func(dy, x float64) float64 { return map[bool]float64{true: dy, false: 0}[x >= 0] }},
			{"dy·x", func(dy, x float64) float64 { return map[bool]float64{true: dy * x, false: 0}[x > 0] }},
		},
		"gelu_bwd": {
			{"derivative of the erf GELU", erfGELU},
			{"without the x·φ term", func(dy, x float64) float64 {
				return dy * 0.5 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
			}},
		},
		"silu_bwd": {
			{"dy·σ(x)", func(dy, x float64) float64 { return dy / (1 + math.Exp(-x)) }},
			{"1 + x·σ(x) for 1 + x(1 − σ(x))", func(dy, x float64) float64 {
				s := 1 / (1 + math.Exp(-x))
				return dy * s * (1 + x*s)
			}},
		},
	}
	for _, name := range seedFamilies {
		f, _ := catalog.Lookup(name)
		for _, dt := range f.DTypes() {
			xs := dtypeInputs(dt)
			dy := kernels.Uniform(dt, len(xs), -1, 1, 5, name)
			ref := reference(t, f, dt, dy, xs)
			s, _ := f.Shape(variants.Spec{Dims: []variants.Dim{{Name: "n", Value: len(xs)}}}, dt)
			tol := f.Tolerance(s, "dx")
			for _, w := range wrong[name] {
				got := make([]float64, len(xs))
				for i := range xs {
					got[i] = dt.Round(w.dx(dy[i], xs[i]))
				}
				if _, _, bad := tol.Check(got, ref); bad < 0 {
					t.Errorf("%s %v: tolerance %+v accepts %s", name, dt, tol, w.what)
				}
			}
			// Elements of at least 0.5 (where Atol is negligible) off by
			// four units in the last place of f16 or bf16, or for f32 by
			// 2^-11 relative (the error of tanh.approx.f32, which the
			// kernels avoid for that reason).
			checked := 0
			for i := len(xs) / 3; i < len(xs) && checked < 20; i += 37 {
				if math.Abs(ref[i]) < 0.5 {
					continue
				}
				checked++
				got := make([]float64, len(xs))
				copy(got, ref)
				_, frexp := math.Frexp(ref[i])
				off := 4 * math.Ldexp(2*dt.Epsilon(), frexp-1)
				if dt == dtype.F32 {
					off = 0x1p-11 * math.Abs(ref[i])
				}
				got[i] = ref[i] + off
				if _, _, bad := tol.Check(got, ref); bad != i {
					t.Errorf("%s %v: tolerance %+v accepts %g for %g", name, dt, tol, got[i], ref[i])
				}
			}
			if checked == 0 {
				t.Errorf("%s %v: no element to perturb", name, dt)
			}
		}
	}
}

func ExampleTolerance_Check() {
	tol := kernels.Tolerance{Atol: 1e-5, Rtol: 1e-3}
	maxAbs, maxRel, bad := tol.Check([]float64{1.0005, 2, math.NaN()}, []float64{1, 2, 3})
	fmt.Printf("max abs %g, max rel %g, first bad index %d\n", maxAbs, maxRel, bad)
	// Output: max abs +Inf, max rel +Inf, first bad index 2
}
