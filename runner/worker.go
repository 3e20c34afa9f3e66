package runner

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/runner/cuda"
)

// ServeOptions configure the worker side.
type ServeOptions struct {
	// Families are the families the worker serves (the catalog's, and
	// families kept out of it such as the planted faults of
	// kernels/faults).
	Families Families
	// Telemetry opens the GPU's telemetry; nil: none.
	Telemetry OpenTelemetry
	// References, when set, keeps the references across processes.
	References *RefCache
}

// Serve runs the worker side: it owns GPU ordinal dev, reads one JSON
// request per line from in and answers one JSON response per line on out.
// It returns when in is closed, or after answering a request that left the
// CUDA context unusable.
func Serve(in io.Reader, out io.Writer, dev int, opt ServeOptions) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := &gpuWorker{ordinal: dev, opt: opt}
	defer w.close()
	dec := json.NewDecoder(bufio.NewReaderSize(in, 1<<20))
	enc := json.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("worker: reading request: %w", err)
		}
		resp := w.serve(&req)
		if err := enc.Encode(resp); err != nil {
			return fmt.Errorf("worker: writing response: %w", err)
		}
		if resp.Eval != nil && resp.Eval.Fatal {
			return nil
		}
	}
}

type gpuWorker struct {
	ordinal int
	opt     ServeOptions
	be      *cudaBackend
	ss      *Session
	tel     Telemetry
	flush   cuda.DevicePtr
	flushN  int
	events  []*cuda.Event
}

func (w *gpuWorker) serve(req *request) *response {
	if err := w.open(); err != nil {
		return &response{Err: err.Error()}
	}
	switch req.Op {
	case "hello":
		info := w.be.info
		return &response{Info: &info}
	case "copybw":
		gbps, err := w.copyBandwidth()
		if err != nil {
			return &response{Err: err.Error()}
		}
		return &response{CopyGBps: gbps}
	case "prepare", "eval":
		if req.Eval == nil {
			return &response{Err: req.Op + " request without body"}
		}
		if req.Op == "prepare" {
			return &response{Eval: prepare(w.ss, w.opt.Families, req.Eval)}
		}
		return &response{Eval: evaluate(w.ss, w.opt.Families, req.Eval, req.Measure, w.measure)}
	}
	return &response{Err: fmt.Sprintf("unknown request %q", req.Op)}
}

func (w *gpuWorker) open() error {
	if w.be != nil {
		return nil
	}
	be, err := openCUDA(w.ordinal)
	if err != nil {
		return err
	}
	w.be = be
	w.ss = NewSession(be)
	w.ss.UseRefCache(w.opt.References)
	// Outputs of megabytes: compare them where they are.
	if err := w.ss.CheckOnDevice(); err != nil {
		return err
	}
	// The flush buffer: at least twice the L2, and never under 128 MiB.
	w.flushN = max(2*be.info.L2Bytes, 128<<20)
	if w.flush, err = be.ctx.Alloc(w.flushN); err != nil {
		return fmt.Errorf("allocating the %d-byte L2 flush buffer: %w", w.flushN, err)
	}
	w.openTelemetry()
	return nil
}

// openTelemetry opens the GPU's telemetry and describes it in the device
// info: the clocks now, or why there are none.
func (w *gpuWorker) openTelemetry() {
	info := &w.be.info
	if w.opt.Telemetry == nil {
		info.Telemetry = "no telemetry: this worker reads none"
		return
	}
	t, err := w.opt.Telemetry(info.UUID)
	if err == nil {
		var r Reading
		if r, err = t.Read(); err == nil {
			w.tel, info.Telemetry, info.HasTelemetry = t, r.String(), true
			return
		}
		t.Close()
	}
	info.Telemetry = fmt.Sprintf("no telemetry (%v): clock, temperature and power columns stay empty", err)
}

func (w *gpuWorker) close() {
	if w.be == nil {
		return
	}
	if w.tel != nil {
		w.tel.Close()
	}
	w.ss.Release()
	for _, e := range w.events {
		e.Destroy()
	}
	w.be.ctx.Free(w.flush)
	w.be.close()
}

// copyBandwidth measures a device-to-device copy of 1 GiB (bytes read plus
// bytes written over the median time of 10 copies).
func (w *gpuWorker) copyBandwidth() (float64, error) {
	const n = 1 << 30
	ctx := w.be.ctx
	src, err := ctx.Alloc(n)
	if err != nil {
		return 0, err
	}
	defer ctx.Free(src)
	dst, err := ctx.Alloc(n)
	if err != nil {
		return 0, err
	}
	defer ctx.Free(dst)
	if err := ctx.MemsetD8Async(src, 1, n, w.be.stream); err != nil {
		return 0, err
	}
	samples, err := w.sample(10, func() error { return ctx.CopyDtoDAsync(dst, src, n, w.be.stream) }, eval.Hot)
	if err != nil {
		return 0, err
	}
	st := Summarize(samples)
	return 2 * n / (st.Median * 1e-6) / 1e9, nil
}

// measure is the timed stage of an evaluation on the GPU: warm-up runs,
// then batches of samples until the protocol says stop, with a telemetry
// reading before the first batch and after each.
func (w *gpuWorker) measure(l *Loaded, mo MeasureOpts) (Measured, error) {
	for start := time.Now(); time.Since(start).Seconds()*1e3 < mo.WarmMS; {
		if _, err := w.sample(8, func() error { return w.ss.Run(l) }, mo.Mode); err != nil {
			return Measured{}, err
		}
	}
	for i := 0; i < mo.Warmup; i++ {
		if err := w.ss.Run(l); err != nil {
			return Measured{}, err
		}
	}
	g := &gauge{t: w.tel}
	g.read()
	start := time.Now()
	var m Measured
	for {
		n := min(max(mo.MinSamples, 10), mo.MaxSamples-len(m.Samples))
		if mo.AbandonAbove > 0 && len(m.Samples) == 0 {
			n = min(max(mo.AbandonAfter, minKept), mo.MaxSamples)
		}
		xs, err := w.sample(n, func() error { return w.ss.Run(l) }, mo.Mode)
		if err != nil {
			return Measured{}, err
		}
		if g.read() {
			for i := range xs {
				m.Throttled = append(m.Throttled, len(m.Samples)+i)
			}
		}
		m.Samples = append(m.Samples, xs...)
		if Abandon(m.Samples, m.Throttled, mo) {
			m.Abandoned = true
			m.GPU = g.summary()
			return m, nil
		}
		if converged(m.Samples, m.Throttled, mo) || time.Since(start).Seconds()*1e3 > mo.MaxTimeMS {
			m.GPU = g.summary()
			return m, nil
		}
	}
}

// flushL2 prepares the cache state of one sample: in cold mode a memset
// of a buffer at least twice the L2 size evicts the program's inputs and
// outputs (as triton.testing.do_bench does). The memset leaves up to an L2
// of dirty lines, whose write-back the timed program pays for, just as its
// own dirty outputs are written back after the timed region: a balanced
// steady state. (Measured on the H200: a flush that also cleaned L2 made
// a 3-stream kernel appear faster than a device-to-device copy, so gradtune
// does not do that.)
func (w *gpuWorker) flushL2(mode eval.Mode, i int) error {
	if mode == eval.Hot {
		return nil
	}
	return w.be.ctx.MemsetD32Async(w.flush, uint32(i+1), w.flushN/4, w.be.stream)
}

// sample times n runs with CUDA events, each preceded by the L2 flush of
// mode, and returns the times in µs. Events are pooled per worker.
func (w *gpuWorker) sample(n int, run func() error, mode eval.Mode) ([]float64, error) {
	for len(w.events) < 2*n {
		e, err := w.be.ctx.NewEvent()
		if err != nil {
			return nil, err
		}
		w.events = append(w.events, e)
	}
	evs := w.events
	for i := 0; i < n; i++ {
		if err := w.flushL2(mode, i); err != nil {
			return nil, err
		}
		if err := evs[2*i].Record(w.be.stream); err != nil {
			return nil, err
		}
		if err := run(); err != nil {
			return nil, err
		}
		if err := evs[2*i+1].Record(w.be.stream); err != nil {
			return nil, err
		}
	}
	if err := evs[2*n-1].Synchronize(); err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i := range out {
		ms, err := cuda.Elapsed(evs[2*i], evs[2*i+1])
		if err != nil {
			return nil, err
		}
		// Nanosecond resolution is finer than the events' own (about
		// 0.5 µs) and keeps stored samples short.
		out[i] = math.Round(float64(ms)*1e6) / 1e3
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
