package runner

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/variants"
)

// slowWorker is a fakeWorker whose shape takes prepare to prepare.
type slowWorker struct {
	*fakeWorker
	prepare time.Duration
}

func (w slowWorker) Prepare(ctx context.Context, r *evalRequest) (*evalResponse, error) {
	time.Sleep(w.prepare)
	return w.fakeWorker.Prepare(ctx, r)
}

// The progress line says where a shape's wall time went: a final round's
// fresh worker prepares the shape again and costs a start, and each is
// counted where it happened.
func TestWallsSplitAShapesTime(t *testing.T) {
	const prep, start = 40 * time.Millisecond, 30 * time.Millisecond
	answer := func(string) (*evalResponse, error) {
		return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(5)}}, nil
	}
	var evals, starts int
	var progress bytes.Buffer
	r, err := New(Options{Measure: DefaultMeasure, EvalTimeout: time.Second, FinalRounds: 1, Progress: &progress,
		NewWorker: func() (Worker, error) {
			starts++
			time.Sleep(start)
			return slowWorker{&fakeWorker{evals: &evals, answer: answer}, prep}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	sums, err := r.Tune(context.Background(), []Job{{Family: toyFamily{}, Shapes: []variants.Shape{toyShape}}}, newMem())
	if err != nil {
		t.Fatal(err)
	}
	w := sums[0].Wall
	sec := func(d time.Duration) float64 { return d.Seconds() }
	if starts != 2 || w.Prepare < sec(2*prep) || w.Starts < sec(start) || w.Starts > sec(2*start)+0.5 {
		t.Errorf("%d starts, walls %+v: want two preparations of %v and one start of %v counted", starts, w, prep, start)
	}
	if w.Search < sec(prep) || w.Final < sec(prep+start) || w.Final > w.Search+sec(prep+start)+0.5 {
		t.Errorf("walls %+v: the search holds the first preparation, the final round the second and its worker's start", w)
	}
	if line := progress.String(); !strings.Contains(line, "final round 0.") || !strings.Contains(line, "preparing inputs 0.") {
		t.Errorf("progress line does not split the time: %q", line)
	}
}
