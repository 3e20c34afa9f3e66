package main

import (
	"fmt"
	"runtime"
	"sort"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/runner/cuda"
)

// device is device 0 with a context.
type device struct {
	ctx      *cuda.Context
	name, cc string
	sms      int
}

// openDevice opens device 0 through the driver, or says why not. A CUDA
// context is current on one OS thread: the calling goroutine stays on its
// thread until the program ends (a trainer would dedicate one to the GPU).
func openDevice() (*device, error) {
	runtime.LockOSThread()
	d, err := cuda.Open()
	if err != nil {
		return nil, err
	}
	info, err := d.Device(0)
	if err != nil {
		return nil, err
	}
	ctx, err := d.Context(0)
	if err != nil {
		return nil, err
	}
	return &device{ctx: ctx, name: info.Name, cc: fmt.Sprintf("%d.%d", info.Major, info.Minor), sms: info.SMs}, nil
}

func (d *device) close() { d.ctx.Close() }

// launch loads the plan's PTX, allocates its buffers (zeroed), runs the
// launches 20 times and returns the time of each run in µs.
func (d *device) launch(p Plan) ([]float64, error) {
	e := p.Match.Entry
	mod, _, err := d.ctx.LoadPTX(string(p.PTX), cuda.JITOptions{OptLevel: -1})
	if err != nil {
		return nil, err
	}
	defer mod.Unload()
	bufs := map[string]cuda.DevicePtr{}
	for _, b := range e.Buffers {
		size := b.Elems * dtypeSize(b.DType)
		ptr, err := d.ctx.Alloc(max(size, 4))
		if err != nil {
			return nil, err
		}
		defer d.ctx.Free(ptr)
		if err := d.ctx.CopyHtoD(ptr, make([]byte, size)); err != nil {
			return nil, err
		}
		bufs[b.Name] = ptr
	}
	s, err := d.ctx.NewStream()
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	start, _ := d.ctx.NewEvent()
	end, _ := d.ctx.NewEvent()
	var us []float64
	for i := 0; i < 20; i++ {
		if err := start.Record(s); err != nil {
			return nil, err
		}
		if err := d.runOnce(mod, e, bufs, s); err != nil {
			return nil, err
		}
		if err := end.Record(s); err != nil {
			return nil, err
		}
		if err := end.Synchronize(); err != nil {
			return nil, err
		}
		ms, err := cuda.Elapsed(start, end)
		if err != nil {
			return nil, err
		}
		us = append(us, float64(ms)*1e3)
	}
	return us, nil
}

// runOnce makes the entry's launches in stream order (a dependent launch
// is correct in plain order too).
func (d *device) runOnce(mod *cuda.Module, e configs.Entry, bufs map[string]cuda.DevicePtr, s *cuda.Stream) error {
	for _, l := range e.Launches {
		f, err := mod.Function(l.Entry)
		if err != nil {
			return err
		}
		if l.SharedBytes > 48<<10 {
			if err := f.SetMaxDynamicShared(l.SharedBytes); err != nil {
				return err
			}
		}
		grid := l.Grid
		if l.GridPerSM > 0 {
			grid[0] = l.GridPerSM * d.sms
		}
		var args []any
		for _, a := range l.Args {
			if a.Buffer != "" {
				args = append(args, bufs[a.Buffer])
			} else {
				args = append(args, a.Scalar)
			}
		}
		if err := d.ctx.Launch(f, grid, l.Block, l.SharedBytes, s, args...); err != nil {
			return fmt.Errorf("launch %s: %w", l.Entry, err)
		}
	}
	return nil
}

func dtypeSize(dt string) int {
	switch dt {
	case "f16", "bf16":
		return 2
	case "f64":
		return 8
	}
	return 4
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
