package tuning

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/store"
)

// simGPU is an interpreter worker posing as GPU uuid, with a copy
// bandwidth, so that a run of several devices can be tested without one.
type simGPU struct {
	runner.Worker
	uuid string
}

func (w simGPU) Hello() (runner.DeviceInfo, error) {
	info, err := w.Worker.Hello()
	info.Name, info.UUID = "sim H200", w.uuid
	return info, err
}

func (simGPU) CopyBandwidth() (float64, error) { return 4000, nil }

// paramTimer times a variant by a hash of its key: the same samples on
// every device, different across variants.
func paramTimer(v runner.Variant) ([]float64, error) {
	h := fnv.New32a()
	fmt.Fprint(h, v.Kernel, v.ShapeKey, v.Params)
	base := 10 + float64(h.Sum32()%1000)/100
	return []float64{base, base * 1.001, base * 0.999, base, base, base * 1.002, base * 0.998, base, base, base}, nil
}

// TestTuneOnTwoDevices: two interpreter workers pulling from one queue
// tune every (family, shape) item exactly once between them, each into
// its own run under its own GPU UUID, the summaries in selection order;
// the winners cross-check clean against the twin's, and a planted
// disagreement is reported.
func TestTuneOnTwoDevices(t *testing.T) {
	sel, err := Resolve(Request{Kernels: "relu_bwd,silu_bwd", Shapes: "m=2,n=8;m=3,n=24;m=5,n=40", DTypes: "f32",
		Params: "block=128,ept=1,maxnreg=0,cache=default"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(t.TempDir(), "two.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run := func() ([]runner.Summary, []Device) {
		var devs []Device
		for i, uuid := range []string{"GPU-a", "GPU-b"} {
			r, err := runner.New(runner.Options{EvalTimeout: time.Minute, Fix: sel.Fix,
				NewWorker: func() (runner.Worker, error) {
					w, err := runner.NewLocalWorker(func() runner.Backend { return sim.New(sim.Options{Workers: 1}) }, catalog.All(), paramTimer)()
					return simGPU{w, uuid}, err
				}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			id, err := db.BeginRun(store.Run{Started: time.Now(), GPUName: "sim H200", GPUUUID: uuid})
			if err != nil {
				t.Fatal(err)
			}
			devs = append(devs, Device{Ordinal: i, Runner: r, RunID: id})
		}
		sums, on, err := TuneOnDevices(context.Background(), db, devs, sel, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if len(on) != len(sums) {
			t.Fatalf("%d devices for %d summaries", len(on), len(sums))
		}
		return sums, devs
	}
	sums, devs := run()
	if len(sums) == 0 {
		t.Fatal("no summaries")
	}
	want := sel.Shapes()
	if len(sums) != len(want) {
		t.Fatalf("%d summaries for %d items", len(sums), len(want))
	}
	perRun := map[int64]int{}
	for i, s := range sums {
		if s.Kernel != want[i].F.Name() || s.Shape.Key() != want[i].S.Key() || s.Best == nil {
			t.Errorf("summary %d: %s %s (best %v), want %s %s", i, s.Kernel, s.Shape.Key(), s.Best != nil, want[i].F.Name(), want[i].S.Key())
		}
	}
	for _, d := range devs {
		ws, err := db.Winners(d.RunID)
		if err != nil {
			t.Fatal(err)
		}
		perRun[d.RunID] = len(ws)
	}
	if perRun[devs[0].RunID]+perRun[devs[1].RunID] != len(want) || perRun[devs[0].RunID] == 0 || perRun[devs[1].RunID] == 0 {
		t.Errorf("winners per run %v for %d items: want every item once, both devices used", perRun, len(want))
	}
	warn, err := CrossCheck(db, runner.DeviceInfo{Name: "sim H200", UUID: "GPU-a"}, eval.Cold, sums)
	if err != nil || len(warn) != 0 {
		t.Errorf("cross-check of identical timers: %v, %v", warn, err)
	}
	// A third GPU of the same name whose winner of the first shape lies
	// far outside the fastest of the twin that tuned it: one warning.
	planted := sums[0]
	best := *planted.Best
	best.Key.Params, best.Stats.Median, best.Stats.Lo, best.Stats.Hi = "block=256", 1, 0.9, 1.1
	planted.Best = &best
	warn, err = CrossCheck(db, runner.DeviceInfo{Name: "sim H200", UUID: "GPU-c"}, eval.Cold, []runner.Summary{planted})
	if err != nil || len(warn) != 1 { // one device of the two tuned the shape
		t.Errorf("cross-check of a planted disagreement with GPU-a and GPU-b: %q, %v", warn, err)
	}
}
