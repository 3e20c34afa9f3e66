package main

import (
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
)

// recorder adapts the store to runner.Recorder, so the runner never
// imports the store.
type recorder struct {
	db  *store.DB
	run int64
}

func storeKey(k runner.Key) store.Key {
	return store.Key{Kernel: k.Kernel, ShapeKey: k.ShapeKey, Params: k.Params, PTXSHA256: k.PTXSHA256,
		GPUUUID: k.GPUUUID, Driver: k.Driver, Mode: k.Mode}
}

func (r *recorder) Done(k runner.Key) (runner.Result, bool, error) {
	e, ok, err := r.db.Done(storeKey(k))
	if err != nil || !ok {
		return runner.Result{}, false, err
	}
	res := runner.Result{Key: k, Outcome: runner.Outcome{Status: e.Status, Message: e.Message, Registers: e.Registers,
		SpillBytes: e.SpillBytes, SmemBytes: e.SmemBytes, Occupancy: e.Occupancy, MaxAbsErr: e.MaxAbsErr,
		MaxRelErr: e.MaxRelErr, Samples: e.Samples}, GBps: e.ThroughputGBps, TFLOPs: e.TFLOPs}
	res.Stats = runner.Summarize(e.Samples)
	return res, true, nil
}

func (r *recorder) Record(res runner.Result) error {
	_, err := r.db.Record(r.run, store.Evaluation{Key: storeKey(res.Key), Status: res.Status, Message: res.Message,
		Registers: res.Registers, SpillBytes: res.SpillBytes, SmemBytes: res.SmemBytes, Occupancy: res.Occupancy,
		MaxAbsErr: res.MaxAbsErr, MaxRelErr: res.MaxRelErr, Samples: res.Samples, MedianUS: res.Stats.Median,
		CILoUS: res.Stats.Lo, CIHiUS: res.Stats.Hi, MinUS: res.Stats.Min, ThroughputGBps: res.GBps, TFLOPs: res.TFLOPs})
	return err
}

func (r *recorder) Winner(res runner.Result) error {
	id, err := r.db.VariantID(store.Variant{Kernel: res.Key.Kernel, ShapeKey: res.Key.ShapeKey,
		Params: res.Key.Params, PTXSHA256: res.Key.PTXSHA256})
	if err != nil {
		return err
	}
	return r.db.SetWinner(store.Winner{RunID: r.run, Kernel: res.Key.Kernel, ShapeKey: res.Key.ShapeKey,
		VariantID: id, MedianUS: res.Stats.Median})
}
