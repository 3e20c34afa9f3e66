package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/launch"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/variants"
)

// device is device 0 with a context and a stream.
type device struct {
	ctx      *cuda.Context
	stream   *cuda.Stream
	name, cc string
	sms, l2  int
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
	s, err := ctx.NewStream()
	if err != nil {
		ctx.Close()
		return nil, err
	}
	return &device{ctx: ctx, stream: s, name: info.Name, cc: fmt.Sprintf("%d.%d", info.Major, info.Minor), sms: info.SMs, l2: info.L2Bytes}, nil
}

func (d *device) close() {
	d.stream.Destroy()
	d.ctx.Close()
}

// result is what exercising a case found.
type result struct {
	maxAbs, maxRel float64
	medianUS       float64
	hostUS         float64 // the host's time to enqueue one sample
	l2             string
}

// timing is how the trainer times a launch plan: the table's protocol,
// samples runs, after warm of GPU work; flushBytes, when not 0, is the
// write before each sample (the table's: twice the L2, at least 128 MiB).
type timing struct {
	samples    int
	warm       time.Duration
	flushBytes int
	// batch, when not 0, synchronizes the stream after every batch
	// samples, as the tuner's worker does between its batches, and then
	// leaves the GPU idle for gap (the worker's telemetry reading and
	// statistics).
	batch int
	gap   time.Duration
	// trace, when not nil, receives each plan's samples in µs, in order.
	trace func(us []float64)
}

func (r result) print(w io.Writer, c Case) {
	fmt.Fprintf(w, "  ok: outputs within tolerance (max abs err %.3g, max rel err %.3g); median of the launches %.2f µs (L2 %s; host %.1f µs a sample)",
		r.maxAbs, r.maxRel, r.medianUS, r.l2, r.hostUS)
	if c.Match.Rule == configs.Exact {
		fmt.Fprintf(w, ", %.3f× the table's %.2f µs", r.medianUS/c.Match.Entry.MedianUS, c.Match.Entry.MedianUS)
	}
	fmt.Fprintln(w)
}

// memory is a plan's buffers on the device.
type memory struct {
	ptrs  map[string]cuda.DevicePtr
	specs []configs.BufferSpec
}

func (m memory) Buffer(name string) (uint64, int, bool) {
	for _, b := range m.specs {
		if b.Name == name {
			return uint64(m.ptrs[name]), max(b.Bytes(), 16), true
		}
	}
	return 0, 0, false
}

// exercise loads c's PTX, fills its inputs with the family's data, runs
// the launches once and checks the outputs, then times them with the
// table's protocol.
func (d *device) exercise(c Case, tm timing) (result, error) {
	f, err := catalog.Lookup(c.Kernel)
	if err != nil {
		return result{}, err
	}
	s, err := familyShape(f, c)
	if err != nil {
		return result{}, err
	}
	plan, err := c.Match.Plan(d.sms)
	if err != nil {
		return result{}, err
	}
	mod, _, err := d.ctx.LoadPTX(string(c.PTX), cuda.JITOptions{OptLevel: -1})
	if err != nil {
		return result{}, err
	}
	defer mod.Unload()
	funcs, err := launch.Functions(mod, plan)
	if err != nil {
		return result{}, err
	}
	mem := memory{ptrs: map[string]cuda.DevicePtr{}, specs: plan.Buffers}
	defer func() {
		for _, p := range mem.ptrs {
			d.ctx.Free(p)
		}
	}()
	in := f.Inputs(s, 1)
	for _, b := range plan.Buffers {
		p, err := d.ctx.Alloc(max(b.Bytes(), 16))
		if err != nil {
			return result{}, fmt.Errorf("buffer %s (%d bytes): %w", b.Name, b.Bytes(), err)
		}
		mem.ptrs[b.Name] = p
		fill := make([]byte, max(b.Bytes(), 16))
		switch b.Role {
		case configs.Input, configs.InOut:
			copy(fill, b.DType.Encode(in[b.Name]))
		case configs.Output:
			for i := range fill {
				fill[i] = 0xff // NaN: an element the launches never write fails
			}
		}
		if err := d.ctx.CopyHtoD(p, fill); err != nil {
			return result{}, err
		}
	}
	dev := launch.CUDA{Ctx: d.ctx, Stream: d.stream}
	bound, err := launch.Bind(dev, plan, funcs, mem)
	if err != nil {
		return result{}, err
	}
	run := func() error {
		for _, b := range plan.Buffers {
			if b.Role == configs.Accumulate {
				if err := d.ctx.MemsetD8Async(mem.ptrs[b.Name], 0, b.Bytes(), d.stream); err != nil {
					return err
				}
			}
		}
		return bound.Run(dev)
	}
	if err := run(); err != nil {
		return result{}, err
	}
	if err := d.stream.Synchronize(); err != nil {
		return result{}, err
	}
	r, err := d.check(f, s, plan, mem)
	if err != nil {
		return r, err
	}
	r.l2 = c.Match.Table.Protocol.L2
	r.medianUS, r.hostUS, err = d.time(run, tm, r.l2 == "flushed", c.Match.Table.Protocol.Warmup)
	return r, err
}

// familyShape is the case's shape as its family types it.
func familyShape(f kernels.Family, c Case) (variants.Shape, error) {
	specs, err := variants.ParseSpecs(c.Match.Shape.String())
	if err != nil {
		return variants.Shape{}, err
	}
	dt, err := dtype.Parse(c.DType)
	if err != nil {
		return variants.Shape{}, err
	}
	return f.Shape(specs[0], dt)
}

// check compares every output and accumulate buffer with the family's
// reference and checks that the state buffers are zero.
func (d *device) check(f kernels.Family, s variants.Shape, plan configs.Plan, mem memory) (result, error) {
	var r result
	ref := f.Reference(s, f.Inputs(s, 1))
	for _, b := range plan.Buffers {
		raw := make([]byte, b.Bytes())
		if b.Role == configs.Input || b.Role == configs.Scratch || len(raw) == 0 {
			continue
		}
		if err := d.ctx.CopyDtoH(raw, mem.ptrs[b.Name]); err != nil {
			return r, err
		}
		if b.Role == configs.State {
			for i, v := range raw {
				if v != 0 {
					return r, fmt.Errorf("state buffer %s not left zero (byte %d is %#x)", b.Name, i, v)
				}
			}
			continue
		}
		tol := f.Tolerance(s, b.Name)
		got := b.DType.Decode(raw)
		a, rel, bad := tol.Check(got, ref[b.Name])
		r.maxAbs, r.maxRel = math.Max(r.maxAbs, a), math.Max(r.maxRel, rel)
		if bad >= 0 {
			return r, fmt.Errorf("%s[%d] = %g, want %g (atol %g, rtol %g)", b.Name, bad, got[bad], ref[b.Name][bad], tol.Atol, tol.Rtol)
		}
	}
	return r, nil
}

// time is the table's protocol: warmup runs, then tm.samples runs
// enqueued back to back, each between two events and, when flush is set,
// after a write of twice the L2 (or tm.flushBytes); the median in µs,
// and the host's time to enqueue one sample (were it longer than the
// GPU's flush, the GPU would wait for the launch inside the events).
// Before the warm-up runs the loop's own work (flush and run) keeps the
// GPU busy for at least tm.warm: the tuner measures on a GPU that has
// been running variants, and a GPU that has sat idle while the host
// computed references starts a short burst at lower clocks.
func (d *device) time(run func() error, tm timing, flush bool, warmup int) (medianUS, hostUS float64, err error) {
	n := max(2*d.l2, 128<<20)
	if tm.flushBytes > 0 {
		n = tm.flushBytes
	}
	buf, err := d.ctx.Alloc(n)
	if err != nil {
		return 0, 0, err
	}
	defer d.ctx.Free(buf)
	flushL2 := func(i int) error {
		if !flush {
			return nil
		}
		return d.ctx.MemsetD32Async(buf, uint32(i+1), n/4, d.stream)
	}
	for start := time.Now(); time.Since(start) < tm.warm; {
		for i := range 16 {
			if err := flushL2(i); err != nil {
				return 0, 0, err
			}
			if err := run(); err != nil {
				return 0, 0, err
			}
		}
		if err := d.stream.Synchronize(); err != nil {
			return 0, 0, err
		}
	}
	for range warmup {
		if err := run(); err != nil {
			return 0, 0, err
		}
	}
	samples := tm.samples
	evs := make([]*cuda.Event, 2*samples)
	for i := range evs {
		if evs[i], err = d.ctx.NewEvent(); err != nil {
			return 0, 0, err
		}
		defer evs[i].Destroy()
	}
	enqueue := time.Now()
	for i := range samples {
		if err := flushL2(i); err != nil {
			return 0, 0, err
		}
		if err := evs[2*i].Record(d.stream); err != nil {
			return 0, 0, err
		}
		if err := run(); err != nil {
			return 0, 0, err
		}
		if err := evs[2*i+1].Record(d.stream); err != nil {
			return 0, 0, err
		}
		if tm.batch > 0 && (i+1)%tm.batch == 0 {
			if err := evs[2*i+1].Synchronize(); err != nil {
				return 0, 0, err
			}
			time.Sleep(tm.gap)
		}
	}
	hostUS = float64(time.Since(enqueue).Nanoseconds()) / 1e3 / float64(samples)
	if err := evs[len(evs)-1].Synchronize(); err != nil {
		return 0, 0, err
	}
	us := make([]float64, samples)
	for i := range us {
		ms, err := cuda.Elapsed(evs[2*i], evs[2*i+1])
		if err != nil {
			return 0, 0, err
		}
		us[i] = float64(ms) * 1e3
	}
	if tm.trace != nil {
		tm.trace(slices.Clone(us))
	}
	sort.Float64s(us)
	return us[len(us)/2], hostUS, nil
}
