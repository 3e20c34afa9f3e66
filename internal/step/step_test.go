package step

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// counts sums an entry list's launches per kernel.
func counts(es []Entry) map[string]int {
	out := map[string]int{}
	for _, e := range es {
		out[e.Kernel] += e.Count
	}
	return out
}

// TestQwenStep: Qwen2.5-1.5B's step at 2048 tokens has the launches its
// architecture implies (28 layers of 7 projections, 2 norms, one MLP,
// one RoPE; the final norm, the head and the loss once), q and o merged
// into one shape of two launches, and every entry of a catalog family
// resolves to that family's shape key.
func TestQwenStep(t *testing.T) {
	p, err := variants.LookupPreset("qwen1.5b", 2048)
	if err != nil {
		t.Fatal(err)
	}
	es := Backward(p)
	want := map[string]int{"nf4_gemm_bwd": 7 * 28, "lora_bwd": 7 * 28, "rmsnorm_bwd": 57, "swiglu_bwd": 28,
		"rope_bwd": 28, "gemm_bwd": 1, "cross_entropy_bwd": 1, "flash_attn_bwd": 28}
	if got := counts(es); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("launches per kernel %v, want %v", got, want)
	}
	var nf4 []string
	for _, e := range es {
		if e.Kernel == "nf4_gemm_bwd" {
			nf4 = append(nf4, fmt.Sprintf("%s×%d %s", e.Spec, e.Count, e.What))
		}
	}
	if got := strings.Join(nf4, "; "); got != "m=2048,n=1536,k=1536×56 q·o base dX; m=2048,n=256,k=1536×56 k·v base dX; "+
		"m=2048,n=8960,k=1536×56 gate·up base dX; m=2048,n=1536,k=8960×28 down base dX" {
		t.Errorf("nf4 entries: %s", got)
	}
	for _, r := range Resolve(es, dtype.BF16) {
		_, err := catalog.Lookup(r.Kernel)
		switch {
		case err == nil && (r.Missing != "" || !strings.HasSuffix(r.Key, ",dtype=bf16")):
			t.Errorf("%s %s: key %q, missing %q", r.Kernel, r.Spec, r.Key, r.Missing)
		case err != nil && r.Missing != "not a family yet":
			t.Errorf("%s (no family): missing %q", r.Kernel, r.Missing)
		}
	}
}

// TestFusedProjections: Phi-3's fused qkv_proj and gate_up_proj are one
// launch each per layer, of their fused shapes.
func TestFusedProjections(t *testing.T) {
	p, err := variants.ReadConfig("../../testdata/models/phi-3-mini-4k-instruct.json")
	if err != nil {
		t.Fatal(err)
	}
	p.Tokens = 512
	var got []string
	for _, e := range Backward(p) {
		if e.Kernel == "nf4_gemm_bwd" {
			got = append(got, fmt.Sprintf("%s×%d", e.Spec, e.Count/p.Layers))
		}
	}
	q := p.Heads * p.HeadDim
	want := []string{
		fmt.Sprintf("m=512,n=%d,k=%d×1", q+2*p.KVHeads*p.HeadDim, p.Hidden),
		fmt.Sprintf("m=512,n=%d,k=%d×1", p.Hidden, q),
		fmt.Sprintf("m=512,n=%d,k=%d×1", 2*p.Intermediate, p.Hidden),
		fmt.Sprintf("m=512,n=%d,k=%d×1", p.Hidden, p.Intermediate),
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fused projections %v, want %v", got, want)
	}
}

// TestRefusedShapeIsMissing: a shape its family refuses is reported with
// the family's reason, not dropped.
func TestRefusedShapeIsMissing(t *testing.T) {
	rs := Resolve([]Entry{{Kernel: "rope_bwd", Spec: "t=8,hq=2,hk=1,d=7", Count: 1}}, dtype.BF16)
	if rs[0].Key != "" || !strings.Contains(rs[0].Missing, "even") {
		t.Errorf("odd head dim: %+v", rs[0])
	}
}
