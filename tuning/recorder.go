package tuning

import (
	"fmt"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
)

// Recorder adapts the store to runner.Recorder, so that the runner never
// imports the store: results of run Run go to DB.
type Recorder struct {
	DB  *store.DB
	Run int64
}

var _ runner.Recorder = (*Recorder)(nil)

func storeKey(k runner.Key) store.Key {
	return store.Key{Kernel: k.Kernel, ShapeKey: k.ShapeKey, Params: k.Params, PTXSHA256: k.PTXSHA256,
		GPUUUID: k.GPUUUID, Driver: k.Driver, Mode: k.Mode}
}

// Done returns the stored result with key k, if there is one.
func (r *Recorder) Done(k runner.Key) (runner.Result, bool, error) {
	e, ok, err := r.DB.Done(storeKey(k))
	if err != nil || !ok {
		return runner.Result{}, false, err
	}
	res := runner.Result{Key: k, Outcome: runner.Outcome{Status: e.Status, Message: e.Message, Registers: e.Registers,
		SpillBytes: e.SpillBytes, SmemBytes: e.SmemBytes, Occupancy: e.Occupancy, MaxAbsErr: e.MaxAbsErr,
		MaxRelErr: e.MaxRelErr, Samples: e.Samples, Throttled: e.Excluded,
		GPU: runner.Reading{SMClockMHz: e.SMClockMHz, MemClockMHz: e.MemClockMHz, TemperatureC: e.TemperatureC,
			PowerW: e.PowerW, Reasons: e.ThrottleReasons}}, GBps: e.ThroughputGBps, TFLOPs: e.TFLOPs}
	res.Stats = runner.SummarizeKept(e.Samples, e.Excluded)
	return res, true, nil
}

// Record stores res as an evaluation of the run.
func (r *Recorder) Record(res runner.Result) error {
	_, err := r.DB.Record(r.Run, store.Evaluation{Key: storeKey(res.Key), Status: res.Status, Message: res.Message,
		Registers: res.Registers, SpillBytes: res.SpillBytes, SmemBytes: res.SmemBytes, Occupancy: res.Occupancy,
		MaxAbsErr: res.MaxAbsErr, MaxRelErr: res.MaxRelErr, Samples: res.Samples, MedianUS: res.Stats.Median,
		CILoUS: res.Stats.Lo, CIHiUS: res.Stats.Hi, MinUS: res.Stats.Min, ThroughputGBps: res.GBps, TFLOPs: res.TFLOPs,
		SMClockMHz: res.GPU.SMClockMHz, MemClockMHz: res.GPU.MemClockMHz, TemperatureC: res.GPU.TemperatureC,
		PowerW: res.GPU.PowerW, ThrottleReasons: res.GPU.Reasons, Excluded: res.Stats.Excluded, Warnings: res.Stats.Warnings})
	return err
}

// Winner stores w as the run's winner of its kernel and shape, with how it
// was chosen, and the name and median of the baseline it is compared with
// (none when w.Baseline is nil) in the winner's baseline columns, where
// tune show and report find it. A vendor baseline's own evaluation is
// recorded like a variant's, under the pseudo-variant
// eval.BaselineParams(name).
func (r *Recorder) Winner(w runner.Winner) error {
	res := w.Result
	id, err := r.DB.VariantID(store.Variant{Kernel: res.Key.Kernel, ShapeKey: res.Key.ShapeKey,
		Params: res.Key.Params, PTXSHA256: res.Key.PTXSHA256})
	if err != nil {
		return err
	}
	sw := store.Winner{RunID: r.Run, Kernel: res.Key.Kernel, ShapeKey: res.Key.ShapeKey,
		VariantID: id, MedianUS: res.Stats.Median, Ties: w.Ties, Rule: w.Rule}
	if b := w.Baseline; b != nil && b.Stats.Median > 0 {
		name := w.BaselineName
		if name == "" {
			var ok bool
			if name, ok = eval.BaselineName(b.Key.Params); !ok {
				return fmt.Errorf("winner of %s %s: baseline params %q name no baseline", res.Key.Kernel, res.Key.ShapeKey, b.Key.Params)
			}
		}
		sw.BaselineName, sw.BaselineMedianUS = name, b.Stats.Median
	}
	return r.DB.SetWinner(sw)
}
