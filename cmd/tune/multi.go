package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"

	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/tuning"
)

// tuneOnDevices tunes sel on every GPU of o.devices at once into the
// database, one run per GPU (tuning.TuneOnDevices), each GPU's progress
// lines prefixed with its ordinal; then cross-checks each GPU's winners
// with those of other GPUs of its name in the database.
func tuneOnDevices(fs *flagSet, gpu gpuOptions, o tuneOptions, sel tuning.Selection, stdout io.Writer) error {
	db, err := store.Open(gpu.db)
	if err != nil {
		return err
	}
	defer db.Close()
	var mu sync.Mutex
	var devs []tuning.Device
	for _, d := range o.devices {
		progress := &prefixed{mu: &mu, w: stdout, prefix: fmt.Sprintf("[gpu %d] ", d)}
		r, pool, err := openDevice(fs, gpu, o, d, sel.Fix, progress)
		if err != nil {
			return err
		}
		defer r.Close()
		if pool != nil {
			defer pool.Close()
			defer printPool(progress, pool, o.compile)
		}
		if err := tuning.CheckDevice(sel, r.Device()); err != nil {
			return usageError{err}
		}
		id, err := startRun(db, r, d, append([]string{"tune"}, fs.raw...), progress)
		if err != nil {
			return err
		}
		devs = append(devs, tuning.Device{Ordinal: d, Runner: r, RunID: id})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sums, on, err := tuning.TuneOnDevices(ctx, db, devs, sel, &prefixed{mu: &mu, w: stdout})
	printTable(stdout, sums, 0)
	if err != nil {
		return err
	}
	for i, d := range devs {
		var mine []runner.Summary
		for j, s := range sums {
			if on[j] == i {
				mine = append(mine, s)
			}
		}
		warn, err := tuning.CrossCheck(db, d.Runner.Device(), gpu.measure.Mode, mine)
		if err != nil {
			return err
		}
		for _, w := range warn {
			fmt.Fprintf(stdout, "warning: winners disagree: %s\n", w)
		}
	}
	return tuning.NoValid(sums)
}

// prefixed writes whole lines to w, each with prefix, under mu: the
// progress of several GPUs interleaves by lines, never within one.
type prefixed struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s", p.prefix, p.buf[:i+1]); err != nil {
			return 0, err
		}
		p.buf = p.buf[i+1:]
	}
}
