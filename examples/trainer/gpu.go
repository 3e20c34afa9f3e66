package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/launch"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/variants"
)

// device is device 0 with a context and a stream.
type device struct {
	ctx      *cuda.Context
	stream   *cuda.Stream
	sampler  *runner.Sampler // made at the first timing
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
	if d.sampler != nil {
		d.sampler.Close()
	}
	d.stream.Destroy()
	d.ctx.Close()
}

// result is what exercising a case found.
type result struct {
	maxAbs, maxRel float64
	medianUS       float64
	samples        int
	sustainedUS    float64   // 0: not timed sustained
	repeats        []float64 // the median of each timing (--repeat)
	l2             string
}

// timing is how the trainer times a launch plan: the table's protocol
// (runner.Measure over runner.Sampler, as the tuner's worker times) after
// warm of the loop's own work; sustained, when not 0, also times
// sustainedSamples runs back to back after that long of work without
// idle, as a training step's GEMMs run.
type timing struct {
	warm      time.Duration
	sustained time.Duration
	layout    layout
	repeat    int // times the plan is timed in a row (0: once)
	// trace, when not nil, receives each timed loop's samples in µs, in
	// order, with the loop's name ("protocol", "sustained").
	trace func(loop string, us []float64)
}

// sustainedSamples is the back-to-back samples of timing.sustained.
const sustainedSamples = 200

func (r result) print(w io.Writer, c Case) {
	fmt.Fprintf(w, "  ok: outputs within tolerance (max abs err %.3g, max rel err %.3g); median of the launches %.2f µs (L2 %s, %d samples)",
		r.maxAbs, r.maxRel, r.medianUS, r.l2, r.samples)
	if c.Match.Rule == configs.Exact {
		fmt.Fprintf(w, ", %.3f× the table's %.2f µs", r.medianUS/c.Match.Entry.MedianUS, c.Match.Entry.MedianUS)
	}
	if len(r.repeats) > 1 {
		fmt.Fprintf(w, "; timed %d times in a row: %s µs", len(r.repeats), fmtList(r.repeats))
	}
	if r.sustainedUS > 0 {
		fmt.Fprintf(w, "; sustained %.2f µs (%.3f×)", r.sustainedUS, r.sustainedUS/r.medianUS)
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
	mem, free, err := d.allocate(plan.Buffers, tm.layout)
	if err != nil {
		return result{}, err
	}
	defer free()
	in := f.Inputs(s, 1)
	// The float64 reference (seconds at a large GEMM's shape, on every
	// core) is computed while the inputs go up and the launches run; it
	// only reads in, and no return leaves it running.
	var ref map[string][]float64
	refDone := make(chan struct{})
	go func() { ref = f.Reference(s, in); close(refDone) }()
	defer func() { <-refDone }()
	for _, b := range plan.Buffers {
		p := mem.ptrs[b.Name]
		fill := make([]byte, max(b.Bytes(), 16))
		switch b.Role {
		case configs.Input, configs.InOut:
			kernels.EncodeInto(b.DType, fill, in[b.Name])
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
	<-refDone
	r, err := d.check(f, s, plan, mem, ref)
	if err != nil {
		return r, err
	}
	r.l2 = c.Match.Table.Protocol.L2
	for range max(tm.repeat, 1) {
		if err := d.time(&r, run, tm, c.Match.Table.Protocol); err != nil {
			return r, err
		}
		r.repeats = append(r.repeats, r.medianUS)
	}
	return r, nil
}

// layout is where a plan's buffers lie in device memory (--pad-bytes,
// --packed): a kernel of a few µs can time differently with the pages
// and L2 lines its buffers share.
type layout struct {
	padBytes int  // allocated before the buffers and held while they live
	packed   bool // every buffer in one allocation, 256-byte aligned
}

// allocate places buffers by l and returns them with the function that
// frees them.
func (d *device) allocate(bufs []configs.BufferSpec, l layout) (memory, func(), error) {
	mem := memory{ptrs: map[string]cuda.DevicePtr{}, specs: bufs}
	var held []cuda.DevicePtr
	free := func() {
		for _, p := range held {
			d.ctx.Free(p)
		}
	}
	hold := func(n int, what string) (cuda.DevicePtr, error) {
		p, err := d.ctx.Alloc(n)
		if err != nil {
			free()
			return 0, fmt.Errorf("%s (%d bytes): %w", what, n, err)
		}
		held = append(held, p)
		return p, nil
	}
	if l.padBytes > 0 {
		if _, err := hold(l.padBytes, "the padding before the buffers"); err != nil {
			return memory{}, nil, err
		}
	}
	if !l.packed {
		for _, b := range bufs {
			p, err := hold(max(b.Bytes(), 16), "buffer "+b.Name)
			if err != nil {
				return memory{}, nil, err
			}
			mem.ptrs[b.Name] = p
		}
		return mem, free, nil
	}
	offsets, total := make([]int, len(bufs)), 0
	for i, b := range bufs {
		offsets[i] = total
		total += (max(b.Bytes(), 16) + 255) &^ 255
	}
	base, err := hold(max(total, 16), "the packed buffers")
	if err != nil {
		return memory{}, nil, err
	}
	for i, b := range bufs {
		mem.ptrs[b.Name] = base + cuda.DevicePtr(offsets[i])
	}
	return mem, free, nil
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

// check compares every output and accumulate buffer with ref, the
// family's reference, and checks that the state buffers are zero.
func (d *device) check(f kernels.Family, s variants.Shape, plan configs.Plan, mem memory, ref map[string][]float64) (result, error) {
	var r result
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

// time times run by the table's protocol p into r, then sustained when
// tm asks.
func (d *device) time(r *result, run func() error, tm timing, p configs.Protocol) error {
	if d.sampler == nil {
		s, err := runner.NewSampler(d.ctx, d.stream, d.l2)
		if err != nil {
			return err
		}
		d.sampler = s
	}
	measure := func(loop string, mo runner.MeasureOpts) (float64, int, error) {
		m, err := runner.Measure(d.sampler, run, mo, nil)
		if err != nil {
			return 0, 0, err
		}
		if tm.trace != nil {
			tm.trace(loop, m.Samples)
		}
		return runner.Summarize(m.Samples).Median, len(m.Samples), nil
	}
	mo := runner.DefaultMeasure
	mo.Warmup, mo.WarmMS = p.Warmup, float64(tm.warm.Milliseconds())
	if p.L2 != "flushed" {
		mo.Mode = eval.Hot
	}
	var err error
	if r.medianUS, r.samples, err = measure("protocol", mo); err != nil || tm.sustained == 0 {
		return err
	}
	mo.WarmMS, mo.Warmup, mo.IdleMS = float64(tm.sustained.Milliseconds()), 0, 0
	mo.MinSamples, mo.MaxSamples, mo.TargetCI, mo.MaxTimeMS = sustainedSamples, sustainedSamples, 0, math.Inf(1)
	r.sustainedUS, _, err = measure("sustained", mo)
	return err
}

// fmtList is xs to two decimals, separated by spaces.
func fmtList(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(out, " ")
}
