package catalog_test

import (
	"slices"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// productWalk is the reference enumeration, what a Space means: every
// combination of the axis values in enumeration order (the last axis
// varies fastest), one Params each, kept when every constraint allows it.
func productWalk(sp variants.Space) []string {
	var out []string
	idx := make([]int, len(sp.Axes))
	p := variants.Params{}
	for _, a := range sp.Axes {
		p[a.Name] = a.Values[0]
	}
	for {
		if allowed(sp, p) {
			out = append(out, p.String())
		}
		// An odometer step: the axes from i on change, the others keep
		// their values in p.
		i := len(idx) - 1
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < len(sp.Axes[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return out
		}
		for j := i; j < len(idx); j++ {
			p[sp.Axes[j].Name] = sp.Axes[j].Values[idx[j]]
		}
	}
}

func allowed(sp variants.Space, p variants.Params) bool {
	for _, c := range sp.Constraints {
		if c.OK(p) != nil {
			return false
		}
	}
	return true
}

// enumerated prints Space.Enumerate's points.
func enumerated(sp variants.Space) []string {
	var out []string
	for _, p := range sp.Enumerate() {
		out = append(out, p.String())
	}
	return out
}

// TestEnumerateIsTheProductWalk: Space.Enumerate (the typed walk) lists
// exactly the points, in the order, of the walk over the whole product
// that keeps what Check accepts, and First is its first point, on the
// preset's spaces of every family in every dtype; the two GEMM spaces,
// whose products are the largest, with GRADTUNE_SWEEP=ci or full
// (gemm_bwd on the shapes gemmShapes picks, nf4_gemm_bwd on its first
// shape but with the full sweep), and lora_bwd on its last shape by
// default, all with ci or full.
func TestEnumerateIsTheProductWalk(t *testing.T) {
	pr, err := variants.LookupPreset("qwen1.5b", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range catalog.All() {
		shapes := f.Shapes(pr, f.DTypes())
		switch f.Name() {
		case "gemm_bwd":
			if sweep.Current() == sweep.Sample {
				continue
			}
			shapes = gemmShapes(t, f, shapes)
		case "lora_bwd":
			if sweep.Current() == sweep.Sample { // 381k points in its last shape's product (three dbsplit values): that shape alone
				shapes = shapes[len(shapes)-1:]
			}
		case "linear_cross_entropy_bwd":
			if sweep.Current() == sweep.Sample { // a walk of 15 s a shape since zctas, walked at ci
				continue
			}
		case "nf4_gemm_bwd":
			if sweep.Current() == sweep.Sample {
				continue
			}
			if !sweep.Full() { // the reference walk visits its whole product, shape by shape
				shapes = shapes[:1]
			}
		}
		for _, s := range shapes {
			sp := f.Space(s)
			want, got := productWalk(sp), enumerated(sp)
			if len(want) == 0 {
				t.Errorf("%s %s: no point", f.Name(), s.Key())
				continue
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: Enumerate gives %d points, the product walk %d; first difference at %d",
					f.Name(), s.Key(), len(got), len(want), firstDifference(got, want))
			}
			if first, ok := sp.First(); !ok || first.String() != want[0] {
				t.Errorf("%s %s: First = %v, %v; want %s", f.Name(), s.Key(), first, ok, want[0])
			}
		}
	}
}

// gemmShapes are the gemm_bwd shapes TestEnumerateIsTheProductWalk
// walks, each a product of 3.1 M points (about 7 s of the reference
// walk): the preset's skinny dW (the most points) by default; with the
// full sweep all of the preset's and an interpreter shape with tails.
func gemmShapes(t *testing.T, f kernels.Family, preset []variants.Shape) []variants.Shape {
	if sweep.Full() {
		tails, err := variants.ParseSpecs("m=100,n=72,k=136,grad=dx")
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.Shape(tails[0], dtype.BF16)
		if err != nil {
			t.Fatal(err)
		}
		return append(preset, s)
	}
	for _, p := range preset {
		if p.Key() == "m=2048,n=256,k=1536,grad=dw,dtype=f16" {
			return []variants.Shape{p}
		}
	}
	t.Fatal("gemm_bwd: the preset has no m=2048,n=256,k=1536,grad=dw,dtype=f16")
	return nil
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
