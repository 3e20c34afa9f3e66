package nf4gemm_test

import (
	"testing"

	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/variants"
)

// TestSplitKBound: a register-A program that splits the reduction serves
// token counts up to where the split rule stops admitting it (its
// workspace grows with the tokens); the unsplit ones keep the family's
// bound.
func TestSplitKBound(t *testing.T) {
	f := nf4GEMM(t)
	for _, split := range []bool{true, false} {
		bounded, unbounded := simtest.PresetBounds(t, f, "qwen1.5b", 512, 1, func(_ variants.Shape, p variants.Params) bool {
			return p["mma"] == "wgmma" && p["dequant"] == "consumer" && (p["splitk"] != "1") == split
		})
		t.Logf("split-K %v: %d bounded, %d not", split, bounded, unbounded)
		switch {
		case split && (bounded == 0 || unbounded > 0):
			t.Errorf("split register-A programs: %d bounded, %d not; want all", bounded, unbounded)
		case !split && (bounded > 0 || unbounded == 0):
			t.Errorf("unsplit register-A programs: %d bounded, %d not; want none", bounded, unbounded)
		}
	}
}
