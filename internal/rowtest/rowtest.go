package rowtest

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

// Families are the row families.
var Families = []string{"softmax_bwd", "rmsnorm_bwd", "layernorm_bwd"}

// ModelShape is each row family's qwen1.5b shape at 2048 tokens.
var ModelShape = map[string]string{
	"softmax_bwd":   "m=24576,n=512",
	"rmsnorm_bwd":   "m=2048,n=1536",
	"layernorm_bwd": "m=2048,n=1536",
}

// OddShapes are enumerated besides the model shape: no vector width
// divides 37, and one element.
var OddShapes = []string{"m=3,n=37", "m=1,n=1"}

// Family returns the family called name.
func Family(t testing.TB, name string) kernels.Family {
	t.Helper()
	f, err := catalog.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Spec builds a shape spec from name=value pairs.
func Spec(t testing.TB, s string) variants.Spec {
	t.Helper()
	sp, err := variants.ParseSpecs(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp[0]
}

// Shape is f's shape of spec s in dtype dt.
func Shape(t testing.TB, f kernels.Family, s string, dt dtype.DType) variants.Shape {
	t.Helper()
	sh, err := f.Shape(Spec(t, s), dt)
	if err != nil {
		t.Fatalf("%s.Shape(%s, %v): %v", f.Name(), s, dt, err)
	}
	return sh
}

// Variant is one emitted variant.
type Variant struct {
	Family string
	Shape  variants.Shape
	Params variants.Params
	Prog   kernels.Program
}

func (v Variant) String() string {
	return fmt.Sprintf("%s %s %s", v.Family, v.Shape.Key(), v.Params)
}

// emitted holds EmitAll's variants by the families' names, so that a test
// binary emits them once.
var emitted sync.Map

// EmitAll emits the variants of the named families at their model shape
// and the odd shapes, in every dtype, once per test binary: a third of
// each space by default (sweep.Pick: every axis value, then spread), all
// with GRADTUNE_SWEEP=ci or full. Callers share the slice and must not
// change it.
func EmitAll(t testing.TB, names ...string) []Variant {
	t.Helper()
	key := strings.Join(names, ",")
	if vs, ok := emitted.Load(key); ok {
		return vs.([]Variant)
	}
	var out []Variant
	for _, name := range names {
		f := Family(t, name)
		for _, dt := range f.DTypes() {
			for _, sp := range append([]string{ModelShape[name]}, OddShapes...) {
				s := Shape(t, f, sp, dt)
				for _, p := range sweep.Pick(simtest.Enumerate(f, s), 3) {
					prog, err := f.Emit(s, p)
					if err != nil {
						t.Errorf("%s %s %s: %v", name, s.Key(), p, err)
						continue
					}
					out = append(out, Variant{name, s, p, prog})
				}
			}
		}
	}
	if !t.Failed() {
		emitted.Store(key, out)
	}
	return out
}

// Golden is one program pinned in a golden file: params not named take
// their axis' first value.
type Golden struct{ Family, DType, Shape, Params string }

// File is the golden file's name: family_dtype_shape[_pdl][_async].golden.
func (g Golden) File() string {
	name := fmt.Sprintf("%s_%s_%s", g.Family, g.DType, strings.NewReplacer("=", "", ",", "_").Replace(g.Shape))
	if strings.Contains(g.Params, "pdl=1") {
		name += "_pdl"
	}
	if strings.Contains(g.Params, "store=async") {
		name += "_async"
	}
	return name + ".golden"
}

// Text emits the variant and prints it as its golden file holds it: the
// variant, its launches, its PTX. It fails t if the params are not a
// point of the space.
func (g Golden) Text(t testing.TB) string {
	t.Helper()
	f := Family(t, g.Family)
	dt, err := dtype.Parse(g.DType)
	if err != nil {
		t.Fatal(err)
	}
	s := Shape(t, f, g.Shape, dt)
	p, err := variants.ParseParams(g.Params)
	if err != nil {
		t.Fatal(err)
	}
	p = f.Space(s).Complete(p)
	if err := f.Space(s).Check(p); err != nil {
		t.Fatalf("%s: %v", g.Params, err)
	}
	prog, err := f.Emit(s, p)
	if err != nil {
		t.Fatalf("%s %s %s: %v", g.Family, s.Key(), p, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s %s %s\n", g.Family, s.Key(), p)
	for _, l := range prog.Launches {
		dep := ""
		if l.Dependent {
			dep = " dependent"
		}
		fmt.Fprintf(&b, "// launch %s grid=%v block=%v smem=%d args=%v%s\n", l.Entry, l.Grid, l.Block, l.SharedBytes, l.Args, dep)
	}
	b.WriteString(prog.PTX)
	return b.String()
}

// FMA32 is a fused multiply-add rounded to f32.
func FMA32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// PerturbULP returns v moved by k units in the last place of dt.
func PerturbULP(v float64, k int, dt dtype.DType) float64 {
	_, e := math.Frexp(v)
	return v + float64(k)*math.Ldexp(2*dt.Epsilon(), e-1)
}

// EqualFloats reports whether a and b hold the same values.
func EqualFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// RunOnSim validates one variant in session ss (which holds shape s of f)
// and checks each output against ref with its own tolerance; it returns
// what is wrong, or "".
func RunOnSim(ss *runner.Session, f kernels.Family, s variants.Shape, p variants.Params, ref map[string][]float64) string {
	prog, err := f.Emit(s, p)
	if err != nil {
		return "emit: " + err.Error()
	}
	return RunProgram(ss, f, s, prog, ref)
}

// RunProgram is RunOnSim for a given program.
func RunProgram(ss *runner.Session, f kernels.Family, s variants.Shape, prog kernels.Program, ref map[string][]float64) string {
	l, err := ss.Load(prog)
	if err != nil {
		return "load: " + err.Error()
	}
	defer l.Unload()
	c, err := ss.Validate(l)
	if err != nil {
		return err.Error()
	}
	if !c.OK {
		return c.Message
	}
	for _, b := range f.Buffers(s) {
		if b.Role != kernels.Output {
			continue
		}
		got, err := ss.Output(b.Name)
		if err != nil {
			return err.Error()
		}
		tol := f.Tolerance(s, b.Name)
		if _, _, bad := tol.Check(got, ref[b.Name]); bad >= 0 {
			return fmt.Sprintf("%s[%d] = %g, want %g (atol %g, rtol %g)", b.Name, bad, got[bad], ref[b.Name][bad], tol.Atol, tol.Rtol)
		}
	}
	return ""
}
