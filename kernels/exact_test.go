package kernels_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/smallshapes"
	"github.com/gradtune/gradtune/variants"
)

// exactFamilies must have exact inputs (kernels.Exacter).
var exactFamilies = []string{"gemm_bwd", "nf4_gemm_bwd"}

// TestExactInputs: every family with exact inputs gives, at each of its
// small shapes in each dtype, data for every input buffer and no other:
// as many values as the buffer holds, each a value of its dtype;
// deterministic and seeded; with a finite reference. An undecodable shape
// has none.
func TestExactInputs(t *testing.T) {
	var have []string
	for _, f := range catalog.All() {
		ex, ok := f.(kernels.Exacter)
		if !ok {
			continue
		}
		have = append(have, f.Name())
		if _, ok := ex.ExactInputs(variants.Shape{}, 1); ok {
			t.Errorf("%s: exact inputs at an empty shape", f.Name())
		}
		for _, dt := range f.DTypes() {
			for _, s := range smallshapes.Of(f, dt) {
				in, ok := ex.ExactInputs(s, 1)
				if !ok {
					t.Errorf("%s %s: no exact inputs", f.Name(), s.Key())
					continue
				}
				again, _ := ex.ExactInputs(s, 1)
				other, _ := ex.ExactInputs(s, 2)
				inputs, same, elems := 0, true, 0
				for _, b := range f.Buffers(s) {
					v, ok := in[b.Name]
					if b.Role != kernels.Input {
						if ok {
							t.Errorf("%s %s: exact data for the %s buffer %s", f.Name(), s.Key(), b.Role, b.Name)
						}
						continue
					}
					inputs++
					if len(v) != kernels.Elems(b, s) {
						t.Fatalf("%s %s: %s has %d exact values, want %d", f.Name(), s.Key(), b.Name, len(v), kernels.Elems(b, s))
					}
					for _, x := range v {
						if b.DType.Round(x) != x {
							t.Fatalf("%s %s: %s holds %g, not a %v", f.Name(), s.Key(), b.Name, x, b.DType)
						}
					}
					if !slices.Equal(v, again[b.Name]) {
						t.Errorf("%s %s: %s not deterministic", f.Name(), s.Key(), b.Name)
					}
					same = same && slices.Equal(v, other[b.Name])
					elems += len(v)
				}
				if inputs != len(in) {
					t.Errorf("%s %s: exact data for %d buffers, %d inputs", f.Name(), s.Key(), len(in), inputs)
				}
				if same && elems >= 16 {
					t.Errorf("%s %s: the exact inputs ignore the seed", f.Name(), s.Key())
				}
				for name, ref := range f.Reference(s, in) {
					for i, r := range ref {
						if math.IsNaN(r) || math.IsInf(r, 0) {
							t.Fatalf("%s %s: reference %s[%d] = %g on the exact inputs", f.Name(), s.Key(), name, i, r)
						}
					}
				}
			}
		}
	}
	for _, name := range exactFamilies {
		if !slices.Contains(have, name) {
			t.Errorf("%s has no exact inputs (families with them: %v)", name, have)
		}
	}
	t.Logf("families with exact inputs: %v", have)
}

// tiny is the least Def: n elements, no params; tinyExact adds exact
// inputs, tinyBoth baselines too.
type (
	tinyShape struct {
		N     int `dim:"n"`
		DType dtype.DType
	}
	tiny      struct{}
	tinyExact struct{ tiny }
	tinyBoth  struct{ tinyExact }
)

func (tiny) Name() string                                                   { return "tiny" }
func (tiny) Doc() string                                                    { return "tiny" }
func (tiny) DTypes() []dtype.DType                                          { return []dtype.DType{dtype.F32} }
func (tiny) Shapes(variants.Preset, dtype.DType) []tinyShape                { return nil }
func (tiny) CheckShape(tinyShape) error                                     { return nil }
func (tiny) Space(tinyShape) variants.Typed[struct{}]                       { return variants.Typed[struct{}]{} }
func (tiny) Emit(tinyShape, struct{}) (kernels.Program, error)              { return kernels.Program{}, nil }
func (tiny) Buffers(tinyShape) []kernels.Buffer                             { return nil }
func (tiny) Inputs(tinyShape, uint64) map[string][]float64                  { return nil }
func (tiny) Cost(tinyShape) kernels.Cost                                    { return kernels.Cost{} }
func (tiny) Tolerance(tinyShape, string) kernels.Tolerance                  { return kernels.Tolerance{} }
func (tiny) Reference(tinyShape, map[string][]float64) map[string][]float64 { return nil }
func (tinyExact) ExactInputs(s tinyShape, seed uint64) (map[string][]float64, bool) {
	return map[string][]float64{"x": {float64(s.N), float64(seed)}}, s.N > 1
}
func (tinyBoth) Baselines(tinyShape) []kernels.Baseline { return []kernels.Baseline{{Name: "b"}} }

// TestDefineExacter: Define makes a Def with ExactInputs an Exacter, with
// or without baselines, decoding the shape for it; the families stay
// comparable.
func TestDefineExacter(t *testing.T) {
	s := variants.Shape{Dims: []variants.Dim{{Name: "n", Value: 3}}, DType: dtype.F32}
	for _, c := range []struct {
		f               kernels.Family
		exact, baseline bool
	}{
		{kernels.Define[tinyShape, struct{}](tiny{}), false, false},
		{kernels.Define[tinyShape, struct{}](tinyExact{}), true, false},
		{kernels.Define[tinyShape, struct{}](tinyBoth{}), true, true},
	} {
		ex, isExact := c.f.(kernels.Exacter)
		bl, isBaseline := c.f.(kernels.Baseliner)
		if isExact != c.exact || isBaseline != c.baseline {
			t.Errorf("%T: Exacter %v, Baseliner %v; want %v, %v", c.f, isExact, isBaseline, c.exact, c.baseline)
		}
		if isExact {
			in, ok := ex.ExactInputs(s, 7)
			if !ok || !slices.Equal(in["x"], []float64{3, 7}) {
				t.Errorf("%T: ExactInputs = %v, %v", c.f, in, ok)
			}
			if _, ok := ex.ExactInputs(variants.Shape{Dims: []variants.Dim{{Name: "n", Value: 1}}, DType: dtype.F32}, 7); ok {
				t.Errorf("%T: exact inputs where the Def has none", c.f)
			}
		}
		if isBaseline && len(bl.Baselines(s)) != 1 {
			t.Errorf("%T: Baselines = %v", c.f, bl.Baselines(s))
		}
		if m := map[kernels.Family]bool{c.f: true}; !m[c.f] {
			t.Errorf("%T: not comparable", c.f)
		}
	}
}
