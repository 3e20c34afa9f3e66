package tuning

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// Device is one GPU of a run on several: its ordinal, its runner and its
// own run in the database (keyed by its GPU UUID, as every run is).
type Device struct {
	Ordinal int
	Runner  *runner.Runner
	RunID   int64
}

// item is one work item of a multi-device run: a shape of a family, and
// its place in the selection.
type item struct {
	job runner.Job // one shape
	at  int
}

// queue hands out work items in selection order to any device that asks.
type queue struct {
	mu    sync.Mutex
	items []item
}

func (q *queue) pop() (item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return item{}, false
	}
	it := q.items[0]
	q.items = q.items[1:]
	return it, true
}

// putBack returns an item a failed device held, for another device.
func (q *queue) putBack(it item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items = append([]item{it}, q.items...)
}

// TuneOnDevices tunes sel on every device at once: each measures its copy
// bandwidth, then takes (family, shape) items from one queue in the
// selection's order until none is left, recording into its own run,
// which it finishes as TuneOnGPU does. A device that fails stops, its
// item goes back to the queue for the others, and its error is returned
// with the others' once all have stopped; an item no device could finish
// has no summary. Summaries come back in the selection's order, with
// the index in devs of the device that tuned each.
func TuneOnDevices(ctx context.Context, db *store.DB, devs []Device, sel Selection, progress io.Writer) (sums []runner.Summary, on []int, err error) {
	q := &queue{}
	for _, j := range sel.Jobs {
		for _, s := range j.Shapes {
			q.items = append(q.items, item{runner.Job{Family: j.Family, Shapes: []variants.Shape{s}}, len(q.items)})
		}
	}
	done := make([]*tuned, len(q.items))
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for i, d := range devs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = tuneDevice(ctx, db, d, i, q, done, progress)
		}()
	}
	wg.Wait()
	for _, t := range done {
		if t != nil {
			sums, on = append(sums, t.sum), append(on, t.dev)
		}
	}
	return sums, on, errors.Join(errs...)
}

// tuned is an item's summary and the index of the device that tuned it.
type tuned struct {
	sum runner.Summary
	dev int
}

// tuneDevice is one device's share of a multi-device run.
func tuneDevice(ctx context.Context, db *store.DB, d Device, di int, q *queue, done []*tuned, progress io.Writer) error {
	g := GPURun{Runner: d.Runner, DB: db, RunID: d.RunID, Progress: progress}
	copyGBps, err := d.Runner.CopyBandwidth()
	if err != nil {
		db.FinishRun(d.RunID, store.RunFailed, 0)
		return fmt.Errorf("device %d: measuring copy bandwidth: %w", d.Ordinal, err)
	}
	fmt.Fprintf(progress, "device %d: device-to-device copy: %.0f GB/s\n", d.Ordinal, copyGBps)
	for ctx.Err() == nil {
		it, ok := q.pop()
		if !ok {
			break
		}
		s, err := d.Runner.Tune(ctx, []runner.Job{it.job}, &Recorder{DB: db, Run: d.RunID})
		if err != nil {
			if ctx.Err() == nil {
				q.putBack(it)
			}
			return fmt.Errorf("device %d: %w", d.Ordinal, g.finish(ctx, copyGBps, err))
		}
		if len(s) == 1 {
			done[it.at] = &tuned{s[0], di}
		}
	}
	return g.finish(ctx, copyGBps, nil)
}

// CrossCheck compares each winner of sums, tuned on the GPU gpu in mode,
// with the fastest variant of the same shape that the database holds from
// every other GPU of the same name (another UUID): the same params, or
// 95% intervals that overlap, agree; anything else is a warning, one line
// per disagreement.
func CrossCheck(db *store.DB, gpu runner.DeviceInfo, mode eval.Mode, sums []runner.Summary) ([]string, error) {
	runs, err := db.Runs()
	if err != nil {
		return nil, err
	}
	twins := map[string]bool{}
	for _, r := range runs {
		if r.GPUName == gpu.Name && r.GPUUUID != gpu.UUID && r.GPUUUID != "" {
			twins[r.GPUUUID] = true
		}
	}
	var warn []string
	for _, s := range sums {
		if s.Best == nil {
			continue
		}
		for uuid := range twins {
			o, ok, err := db.Best(s.Kernel, s.Shape.Key(), uuid, mode)
			if err != nil {
				return nil, err
			}
			b := s.Best
			if ok && o.Key.Params != b.Key.Params && (o.CIHiUS < b.Stats.Lo || b.Stats.Hi < o.CILoUS) {
				warn = append(warn, fmt.Sprintf("%s %s: the winner on %s is %s (%.2f µs, CI %.2f–%.2f); on %s, %s (%.2f µs, CI %.2f–%.2f): the intervals do not overlap",
					s.Kernel, s.Shape.Key(), gpu.UUID, b.Key.Params, b.Stats.Median, b.Stats.Lo, b.Stats.Hi, uuid, o.Key.Params, o.MedianUS, o.CILoUS, o.CIHiUS))
			}
		}
	}
	return warn, nil
}
