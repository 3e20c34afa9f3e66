package reports

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/step"
	"github.com/gradtune/gradtune/variants"
)

// TestStepWeighsWinners: the step's rmsnorm_bwd row takes the recorded
// winner's median and the torch row's, each times its 57 launches; a
// peer row that names an error is counted, not read as a time; kernels
// without a time say why; the chart draws and the Markdown has the
// table.
func TestStepWeighsWinners(t *testing.T) {
	set := load(t, "h200-rows.db")
	lines := `{"kernel": "rmsnorm_bwd", "shape": "m=2048,n=1536", "dtype": "bf16", "peer": "torch eager", "median_us": 100, "gbps": 1}
{"kernel": "swiglu_bwd", "shape": "m=2048,n=8960", "dtype": "bf16", "peer": "liger", "median_us": null, "error": "no triton"}
{"kernel": "rope_bwd", "shape": "t=2048,hq=12,hk=2,d=128", "dtype": "bf16", "peer": "liger", "median_us": 40, "gbps": 1}`
	peers, err := ReadPeers(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	if peers.Failed != 1 || strings.Join(peers.Names(), ",") != "liger,torch eager" {
		t.Fatalf("failed %d, names %v", peers.Failed, peers.Names())
	}
	p, err := variants.LookupPreset("qwen1.5b", 2048)
	if err != nil {
		t.Fatal(err)
	}
	st := BuildStep("qwen1.5b", step.Resolve(step.Backward(p), dtype.BF16), set, peers)
	winner := winnerUS(set, "rmsnorm_bwd", "m=2048,n=1536,dtype=bf16")
	if winner <= 0 {
		t.Fatal("h200-rows.db has no bf16 rmsnorm_bwd winner at 2048×1536")
	}
	kernels, ours, byPeer := st.Totals()
	if len(kernels) != 8 || ours["rmsnorm_bwd"] != 57*winner/1000 || byPeer["torch eager"]["rmsnorm_bwd"] != 5.7 ||
		byPeer["liger"]["rope_bwd"] != 28*40.0/1000 || byPeer["liger"]["swiglu_bwd"] != 0 {
		t.Errorf("totals: kernels %v, ours %v, peers %v", kernels, ours, byPeer)
	}
	rows := strings.Join(func() (out []string) {
		for _, r := range st.rows() {
			out = append(out, strings.Join(r, "|"))
		}
		return
	}(), "\n")
	for _, want := range []string{"rmsnorm_bwd|m=2048,n=1536|input, post-attention and final norms|57|", "|5.700", "swiglu_bwd|m=2048,n=8960|gated MLP|28|—|not tuned|—|—"} {
		if !strings.Contains(rows, want) {
			t.Errorf("step rows lack %q:\n%s", want, rows)
		}
	}
	if _, err := StepChart(st); err != nil {
		t.Fatal(err)
	}
	r, err := Build(set, peers)
	if err != nil {
		t.Fatal(err)
	}
	r.Step = st
	md, err := r.Markdown(false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md, "## The backward step") || !strings.Contains(md, "torch eager: 5.700 ms where both have a time") {
		t.Errorf("report.md lacks the step section:\n%s", md)
	}
}
