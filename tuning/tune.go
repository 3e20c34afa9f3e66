package tuning

import (
	"context"
	"fmt"
	"io"

	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
)

// GPURun is a tune run on a GPU whose results go to a database.
type GPURun struct {
	Runner   *runner.Runner
	DB       *store.DB
	RunID    int64     // from DB.BeginRun
	Progress io.Writer // the copy bandwidth and a line per shape
}

// TuneOnGPU measures the device-to-device copy bandwidth, tunes every job
// of sel (results are committed one by one), and finishes the run as ok,
// failed or interrupted (ctx ended). The summaries it returns cover the
// shapes tuned before any error.
func TuneOnGPU(ctx context.Context, g GPURun, sel Selection) (copyGBps float64, sums []runner.Summary, err error) {
	copyGBps, err = g.Runner.CopyBandwidth()
	if err != nil {
		g.DB.FinishRun(g.RunID, store.RunFailed, 0)
		return 0, nil, fmt.Errorf("measuring copy bandwidth: %w", err)
	}
	fmt.Fprintf(g.Progress, "device-to-device copy: %.0f GB/s\n", copyGBps)
	sums, err = g.Runner.Tune(ctx, sel.Jobs, &Recorder{DB: g.DB, Run: g.RunID})
	return copyGBps, sums, g.finish(ctx, copyGBps, err)
}

// finish records how the run ended: interrupted (ctx done), failed (err)
// or ok, with its copy bandwidth. It returns err, or the store's error.
func (g GPURun) finish(ctx context.Context, copyGBps float64, err error) error {
	status := store.RunOK
	switch {
	case ctx.Err() != nil:
		status = store.RunInterrupted
	case err != nil:
		status = store.RunFailed
	}
	if ferr := g.DB.FinishRun(g.RunID, status, copyGBps); ferr != nil && err == nil {
		err = ferr
	}
	return err
}

// NoValid returns an error naming the first shape of sums without a valid
// variant, or nil.
func NoValid(sums []runner.Summary) error {
	for _, s := range sums {
		if s.Best == nil {
			return fmt.Errorf("%s %s: no valid variant (%d tried, %d failed)", s.Kernel, s.Shape.Key(), s.Tried, s.Failed)
		}
	}
	return nil
}
