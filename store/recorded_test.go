package store

import (
	"path/filepath"
	"testing"
)

// TestRecordedH200Run opens each database of an H200 run kept under
// testdata/ read-only and checks that it reads with the
// current schema, holds the run's evaluations, and that every winner is
// the fastest valid evaluation of its shape.
func TestRecordedH200Run(t *testing.T) {
	for _, c := range []struct {
		file           string
		evals, winners int
	}{
		{"h200-activations.db", 3888, 18},
		{"h200-rows.db", 7611, 9},
		{"h200-pool.db", 1800, 4},
	} {
		t.Run(c.file, func(t *testing.T) { checkRecorded(t, c.file, c.evals, c.winners) })
	}
}

func checkRecorded(t *testing.T, file string, nEvals, nWinners int) {
	db, err := OpenReadOnly(filepath.Join("..", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs()
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	// One run, or one per family where a session's command could not take
	// them all (testdata/h200-rows.*).
	var evals int
	var winners []Winner
	for _, r := range runs {
		if r.GPUName != "NVIDIA H200" || r.Status != "ok" || r.CopyGBps < 4000 || r.GPUUUID != runs[0].GPUUUID {
			t.Fatalf("run %+v", r)
		}
		ev, err := db.Evaluations(Filter{RunID: r.ID})
		if err != nil {
			t.Fatal(err)
		}
		evals += len(ev)
		w, err := db.Winners(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		winners = append(winners, w...)
	}
	if evals != nEvals {
		t.Fatalf("%d evaluations, want %d", evals, nEvals)
	}
	if len(winners) != nWinners {
		t.Fatalf("%d winners, want %d", len(winners), nWinners)
	}
	for _, w := range winners {
		best, ok, err := db.Best(w.Kernel, w.ShapeKey, runs[0].GPUUUID, "cold")
		if err != nil || !ok {
			t.Fatalf("%s %s: Best: %v %v", w.Kernel, w.ShapeKey, ok, err)
		}
		if best.VariantID != w.VariantID || best.MedianUS != w.MedianUS {
			t.Errorf("%s %s: winner %s at %.2f µs, but the fastest valid evaluation is variant %d at %.2f µs",
				w.Kernel, w.ShapeKey, w.Params, w.MedianUS, best.VariantID, best.MedianUS)
		}
		if len(best.Samples) < 10 {
			t.Errorf("%s %s: winner has %d samples, want at least 10", w.Kernel, w.ShapeKey, len(best.Samples))
		}
	}
}
