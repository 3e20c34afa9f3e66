package tuning

import (
	"slices"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// TestAxesPerDType: relu_bwd's vec takes 8 in f16 and bf16 only, and the
// listing says so; axes without a difference have one group.
func TestAxesPerDType(t *testing.T) {
	f, _ := catalog.Lookup("relu_bwd")
	p, _ := variants.LookupPreset("qwen1.5b", 0)
	ls := Axes(f, p)
	for _, l := range ls {
		switch l.Name {
		case "vec":
			if len(l.Groups) != 2 || !slices.Equal(l.Groups[0].DTypes, []dtype.DType{dtype.F32}) ||
				!slices.Contains(l.Groups[1].Values, "8") || slices.Contains(l.Groups[0].Values, "8") {
				t.Errorf("vec: %+v", l.Groups)
			}
		case "block":
			if len(l.Groups) != 1 || len(l.Groups[0].DTypes) != 3 {
				t.Errorf("block: %+v", l.Groups)
			}
		}
	}
	if len(ls) != len(f.Space(f.Shapes(p, f.DTypes()[:1])[0]).Axes) {
		t.Errorf("%d axes listed", len(ls))
	}
}
