package tuning

import (
	"slices"
	"testing"

	"github.com/gradtune/gradtune/configs"
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

// TestBenchBaselinesAreRecordedParams: a table's baseline params were
// recorded like its winners', possibly before an axis was added
// (nf4.json's before nf4_dequant's unroll), and bench measures them as
// points of today's space, not as params the emitter refuses.
func TestBenchBaselinesAreRecordedParams(t *testing.T) {
	set, err := configs.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	cases, _, err := BenchCases(set, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Baseline == nil {
			continue
		}
		if err := c.Family.Space(c.Shape).Check(c.Baseline); err != nil {
			t.Errorf("%s %s: baseline %s: %v", c.Family.Name(), c.Shape.Key(), c.Baseline, err)
		}
	}
}
