package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/variants"
)

func TestAbandonRule(t *testing.T) {
	slow := []float64{11, 11.1, 11.2, 11.05, 11.15, 11.3}
	m := MeasureOpts{AbandonAbove: 10.5, AbandonAfter: 6}
	if !Abandon(slow, nil, m) {
		t.Error("six samples all above the bar: not abandoned")
	}
	if Abandon(slow[:5], nil, m) {
		t.Error("abandoned after five samples: the median's CI needs six")
	}
	if Abandon(append([]float64{10.4}, slow[1:]...), nil, m) {
		t.Error("abandoned although the fastest sample (the CI's lower end) is under the bar")
	}
	if Abandon(slow, nil, MeasureOpts{AbandonAfter: 6}) {
		t.Error("abandoned without a bar")
	}
	if Abandon(slow, []int{0}, m) {
		t.Error("abandoned with five unthrottled samples")
	}
}

// TestAbandonedVariantNeverWins replays three variants: v=2 is twice as
// slow as v=1 and is stopped after AbandonAfter samples, recorded as
// skipped with its samples and why; v=3, 2% slower than v=1, is a
// statistical near-tie that the rule must not abandon.
func TestAbandonedVariantNeverWins(t *testing.T) {
	k := toyShape.Key()
	rp := NewReplay([]Recorded{
		{Kernel: "toy", ShapeKey: k, Params: "v=1", Samples: samples(10)},
		{Kernel: "toy", ShapeKey: k, Params: "v=2", Samples: samples(20)},
		{Kernel: "toy", ShapeKey: k, Params: "v=3", Samples: samples(10.2)},
	}, 1, 0)
	r, err := New(Options{Abandon: 0.05, NewWorker: rp.Worker(DeviceInfo{Name: "replay"})})
	if err != nil {
		t.Fatal(err)
	}
	rec := newMem()
	sums, err := r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	byParams := map[string]Result{}
	for _, res := range rec.records {
		byParams[res.Key.Params] = res
	}
	v2 := byParams["v=2"]
	if v2.Status != eval.Skipped || len(v2.Samples) != AbandonAfter || !strings.HasPrefix(v2.Message, "abandoned after 6 samples") {
		t.Errorf("v=2: %s with %d samples (%q), want skipped after %d samples as abandoned", v2.Status, len(v2.Samples), v2.Message, AbandonAfter)
	}
	if v3 := byParams["v=3"]; v3.Status != eval.OK || len(v3.Samples) != 20 {
		t.Errorf("v=3: %s with %d samples, want ok with all 20", v3.Status, len(v3.Samples))
	}
	if s := sums[0]; s.Best == nil || s.Best.Key.Params == "v=2" || s.Abandoned != 1 {
		t.Errorf("summary: best %v, %d abandoned; want v=1 or v=3 and one abandoned", s.Best, s.Abandoned)
	}
}
