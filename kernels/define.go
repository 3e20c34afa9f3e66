package kernels

import (
	"fmt"
	"slices"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/variants"
)

// Def is a family written against its own shape struct S and params
// struct P (see variants.Typed and variants.ShapeOf for their tags).
// Define turns it into a Family; every method receives values that have
// already been decoded and checked: a shape that Shape accepted, params
// that are a point of the shape's space.
type Def[S, P any] interface {
	Name() string
	Doc() string
	DTypes() []dtype.DType
	// Shapes returns the shapes a preset needs in dtype dt (one of
	// DTypes), in the order listings show them.
	Shapes(p variants.Preset, dt dtype.DType) []S
	// CheckShape says why a decoded shape is out of the family's reach
	// (too large, too long a row), or returns nil.
	CheckShape(s S) error
	Space(s S) variants.Typed[P]
	Emit(s S, p P) (Program, error)
	Buffers(s S) []Buffer
	Inputs(s S, seed uint64) map[string][]float64
	Reference(s S, in map[string][]float64) map[string][]float64
	Cost(s S) Cost
	Tolerance(s S, buffer string) Tolerance
}

// Baseliner is a family with baselines (Baseline) for some shapes; a Def
// that has a method Baselines(S) []Baseline gets one through Define.
type Baseliner interface {
	Baselines(s variants.Shape) []Baseline
}

// Exacter is a family with a second input set, validated beside the
// random one: inputs on which every variant's arithmetic is exact (for a
// GEMM, integers whose partial sums are exact in f32 in any order), so
// that its outputs, rounded once to their buffers' dtypes, equal the
// Reference on these inputs rounded the same way: the runner holds them
// to zero tolerance. A bug that moves an output by less than the random
// set's Tolerance (one reduction index dropped, one element wrong) still
// fails there. A Def that has a method ExactInputs(S, uint64) gets one
// through Define.
type Exacter interface {
	// ExactInputs returns deterministic data for the Input buffers of s,
	// as Inputs does, and false where s admits no exact set.
	ExactInputs(s variants.Shape, seed uint64) (map[string][]float64, bool)
}

// Define returns the untyped Family of d: a Baseliner when d has a method
// Baselines(S) []Baseline, an Exacter when it has ExactInputs(S, uint64)
// (map[string][]float64, bool).
func Define[S, P any](d Def[S, P]) Family {
	t := typed[S, P]{d}
	b, hasB := d.(baselinesOf[S])
	e, hasE := d.(exactOf[S])
	switch {
	case hasB && hasE:
		return baselinedExact[S, P]{t, b, e}
	case hasB:
		return baselined[S, P]{t, b}
	case hasE:
		return withExact[S, P]{t, e}
	}
	return t
}

// baselinesOf and exactOf are the typed methods of a Def that Baseliner
// and Exacter need.
type (
	baselinesOf[S any] interface{ Baselines(S) []Baseline }
	exactOf[S any]     interface {
		ExactInputs(S, uint64) (map[string][]float64, bool)
	}
)

// baselined is a typed family with baselines, withExact one with exact
// inputs, baselinedExact one with both. They hold the Def's method sets,
// not method values, so that families stay comparable (catalog lookups
// compare them).
type (
	baselined[S, P any] struct {
		typed[S, P]
		b baselinesOf[S]
	}
	withExact[S, P any] struct {
		typed[S, P]
		e exactOf[S]
	}
	baselinedExact[S, P any] struct {
		typed[S, P]
		b baselinesOf[S]
		e exactOf[S]
	}
)

func (b baselined[S, P]) Baselines(s variants.Shape) []Baseline { return b.baselines(b.b, s) }

func (w withExact[S, P]) ExactInputs(s variants.Shape, seed uint64) (map[string][]float64, bool) {
	return w.exactInputs(w.e, s, seed)
}

func (b baselinedExact[S, P]) Baselines(s variants.Shape) []Baseline { return b.baselines(b.b, s) }

func (b baselinedExact[S, P]) ExactInputs(s variants.Shape, seed uint64) (map[string][]float64, bool) {
	return b.exactInputs(b.e, s, seed)
}

func (t typed[S, P]) baselines(b baselinesOf[S], s variants.Shape) []Baseline {
	v, err := t.shape(s)
	if err != nil {
		return nil
	}
	return b.Baselines(v)
}

func (t typed[S, P]) exactInputs(e exactOf[S], s variants.Shape, seed uint64) (map[string][]float64, bool) {
	v, err := t.shape(s)
	if err != nil {
		return nil, false
	}
	return e.ExactInputs(v, seed)
}

// typed adapts a Def to Family: it decodes shapes and params on the way in
// and encodes them on the way out.
type typed[S, P any] struct{ d Def[S, P] }

func (t typed[S, P]) Name() string          { return t.d.Name() }
func (t typed[S, P]) Doc() string           { return t.d.Doc() }
func (t typed[S, P]) DTypes() []dtype.DType { return t.d.DTypes() }
func (t typed[S, P]) Dims() []string        { return variants.DimNamesOf[S]() }

func (t typed[S, P]) Shapes(p variants.Preset, dts []dtype.DType) []variants.Shape {
	var out []variants.Shape
	seen := map[string]bool{}
	for _, dt := range dts {
		if !slices.Contains(t.d.DTypes(), dt) {
			continue
		}
		for _, s := range t.d.Shapes(p, dt) {
			vs := variants.ShapeOf(s)
			if !seen[vs.Key()] {
				seen[vs.Key()] = true
				out = append(out, vs)
			}
		}
	}
	return out
}

func (t typed[S, P]) Shape(sp variants.Spec, dt dtype.DType) (variants.Shape, error) {
	if !slices.Contains(t.d.DTypes(), dt) {
		return variants.Shape{}, fmt.Errorf("%s does not support dtype %v (dtypes: %v)", t.Name(), dt, t.d.DTypes())
	}
	s, err := variants.DecodeShape[S](sp.Dims, dt)
	if err != nil {
		return variants.Shape{}, fmt.Errorf("%s %w", t.Name(), err)
	}
	if err := t.d.CheckShape(s); err != nil {
		return variants.Shape{}, fmt.Errorf("%s: %w", t.Name(), err)
	}
	return variants.ShapeOf(s), nil
}

// DecodeVariant decodes a shape and a params of a family written against S
// and P, for tests that emit with planted bugs through a family's own
// emitter.
func DecodeVariant[S, P any](s variants.Shape, p variants.Params) (S, P, error) {
	var pv P
	sv, err := variants.DecodeShape[S](s.Dims, s.DType)
	if err != nil {
		return sv, pv, err
	}
	pv, err = variants.Decode[P](p)
	return sv, pv, err
}

// shape decodes a shape the family gave out. Shapes reach the other
// methods only through Shape and Shapes, so an error here is a caller's
// bug, reported where the method can report one.
func (t typed[S, P]) shape(s variants.Shape) (S, error) {
	v, err := variants.DecodeShape[S](s.Dims, s.DType)
	if err != nil {
		return v, fmt.Errorf("%s: shape %s: %w", t.Name(), s.Key(), err)
	}
	return v, nil
}

func (t typed[S, P]) Space(s variants.Shape) variants.Space {
	v, err := t.shape(s)
	if err != nil {
		return variants.Typed[P]{Rules: []variants.Rule[P]{{Name: "a shape of the family", Check: func(P) error { return err }}}}.Space()
	}
	return t.d.Space(v).Space()
}

func (t typed[S, P]) Emit(s variants.Shape, p variants.Params) (Program, error) {
	v, err := t.shape(s)
	if err != nil {
		return Program{}, err
	}
	if err := t.d.Space(v).Space().Check(p); err != nil {
		return Program{}, fmt.Errorf("%s: %w", t.Name(), err)
	}
	pv, err := variants.Decode[P](p)
	if err != nil {
		return Program{}, fmt.Errorf("%s: %w", t.Name(), err)
	}
	prog, err := t.d.Emit(v, pv)
	if err != nil {
		return Program{}, fmt.Errorf("%s %s: %w", t.Name(), p, err)
	}
	return prog, nil
}

func (t typed[S, P]) Buffers(s variants.Shape) []Buffer {
	v, err := t.shape(s)
	if err != nil {
		return nil
	}
	return t.d.Buffers(v)
}

func (t typed[S, P]) Inputs(s variants.Shape, seed uint64) map[string][]float64 {
	v, err := t.shape(s)
	if err != nil {
		return nil
	}
	return t.d.Inputs(v, seed)
}

func (t typed[S, P]) Reference(s variants.Shape, in map[string][]float64) map[string][]float64 {
	v, err := t.shape(s)
	if err != nil {
		return nil
	}
	return t.d.Reference(v, in)
}

func (t typed[S, P]) Cost(s variants.Shape) Cost {
	v, err := t.shape(s)
	if err != nil {
		return Cost{}
	}
	return t.d.Cost(v)
}

func (t typed[S, P]) Tolerance(s variants.Shape, buffer string) Tolerance {
	v, err := t.shape(s)
	if err != nil {
		return Tolerance{}
	}
	return t.d.Tolerance(v, buffer)
}
