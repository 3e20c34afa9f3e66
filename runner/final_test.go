package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/variants"
)

// TestFinalRound: with FinalRounds, the winner and the vendor baseline are
// re-timed alternately in a fresh worker; their pooled samples are the
// run's figures and are recorded, and the lucky tuning median of the
// winner does not survive.
func TestFinalRound(t *testing.T) {
	var order []string
	answer := func(p string) (*evalResponse, error) {
		order = append(order, p)
		n := 0
		for _, q := range order {
			if q == p {
				n++
			}
		}
		switch {
		case p == "v=1" && n == 1:
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(9)}}, nil // lucky
		case p == "v=1":
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(10)}}, nil
		case p == "v=2":
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(12)}}, nil
		case p == "baseline=cublas":
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(11)}}, nil
		}
		return nil, fmt.Errorf("unexpected request %q", p)
	}
	var starts, evals int
	r, err := New(Options{Measure: DefaultMeasure, EvalTimeout: time.Second, FinalRounds: 3, NewWorker: func() (Worker, error) {
		starts++
		return &fakeWorker{evals: &evals, answer: answer}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := newMem()
	f := gemmFamily{m: 4, n: 8, k: 16, out: dtype.F32}
	sums, err := r.Tune(context.Background(), []Job{{Family: f, Shapes: []variants.Shape{toyShape}}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "v=1 v=2 baseline=cublas v=1 baseline=cublas v=1 baseline=cublas v=1 baseline=cublas" {
		t.Errorf("evaluation order %s", got)
	}
	if starts != 2 {
		t.Errorf("%d workers started, want a fresh one for the final round", starts)
	}
	w, b := sums[0].Best, sums[0].Baseline
	if w == nil || w.Key.Params != "v=1" || len(w.Samples) != 60 || w.Stats.Median < 10 || w.Stats.Median > 10.02 {
		t.Fatalf("winner %+v", w)
	}
	if b == nil || len(b.Samples) != 60 || !strings.Contains(w.Message, "final round: 3 runs alternating") {
		t.Errorf("baseline %+v, winner message %q", b, w.Message)
	}
	last := rec.records[len(rec.records)-2:]
	if last[0].Key.Params != "v=1" || len(last[0].Samples) != 60 || len(last[1].Samples) != 60 {
		t.Errorf("the round's pooled results were not recorded last: %+v", last)
	}
	if len(rec.winners) != 1 || rec.winners[0].Stats.Median != w.Stats.Median || rec.bases[0].Stats.Median != b.Stats.Median {
		t.Errorf("winner recorded %+v with %+v", rec.winners, rec.bases)
	}
}

// TestFinalRoundFailure: a winner that fails its final round is replaced
// by the next one, which then gets its own round.
func TestFinalRoundFailure(t *testing.T) {
	seen := map[string]int{}
	answer := func(p string) (*evalResponse, error) {
		seen[p]++
		switch {
		case p == "v=3" && seen[p] == 1:
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(5)}}, nil
		case p == "v=3":
			return &evalResponse{Outcome: Outcome{Status: "invalid", Message: "after timing: dx[0] = 1, want 0"}}, nil
		case p == "v=1" || p == "v=2":
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(10)}}, nil
		}
		return nil, fmt.Errorf("unexpected request %q", p)
	}
	var starts, evals int
	r, err := New(Options{Measure: DefaultMeasure, EvalTimeout: time.Second, FinalRounds: 2, NewWorker: func() (Worker, error) {
		starts++
		return &fakeWorker{evals: &evals, answer: answer}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sums, err := r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, newMem())
	if err != nil {
		t.Fatal(err)
	}
	if b := sums[0].Best; b == nil || b.Key.Params != "v=1" || len(b.Samples) != 40 {
		t.Fatalf("winner after v=3 failed its round: %+v", b)
	}
}
