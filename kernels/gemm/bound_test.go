package gemm_test

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/variants"
)

// TestSplitKBound: a split-K program whose rows are the tokens (dX) serves
// token counts up to where the split-K rules stop admitting it, so that a
// table entry tuned at 512 tokens is not launched at 64k with a workspace
// of gigabytes; dW, whose workspace does not grow with the tokens, keeps
// the family's bound.
func TestSplitKBound(t *testing.T) {
	f := gemm.Families()[0]
	for _, grad := range []string{"dx", "dw"} {
		bounded, unbounded := simtest.PresetBounds(t, f, "qwen1.5b", 512, 2, func(s variants.Shape, p variants.Params) bool {
			return p["splitk"] != "1" && p["reduce"] == "launch" && strings.Contains(s.Key(), "grad="+grad)
		})
		t.Logf("%s: %d split-K variants bounded, %d not", grad, bounded, unbounded)
		switch {
		case grad == "dx" && (bounded == 0 || unbounded > 0):
			t.Errorf("dX split-K programs: %d bounded, %d not; want all", bounded, unbounded)
		case grad == "dw" && bounded > 0:
			t.Errorf("dW split-K programs: %d bounded; want none", bounded)
		}
	}
}
