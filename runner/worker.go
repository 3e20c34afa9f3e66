package runner

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/gradtune/gradtune/eval"
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
	sampler *Sampler
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
	if w.sampler, err = NewSampler(be.ctx, be.stream, be.info.L2Bytes); err != nil {
		return err
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
	if w.sampler != nil {
		w.sampler.Close()
	}
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
	samples, err := w.sampler.Sample(10, func() error { return ctx.CopyDtoDAsync(dst, src, n, w.be.stream) }, eval.Hot)
	if err != nil {
		return 0, err
	}
	st := Summarize(samples)
	return 2 * n / (st.Median * 1e-6) / 1e9, nil
}

// measure is the timed stage of an evaluation on the GPU: Measure with
// the worker's telemetry.
func (w *gpuWorker) measure(l *Loaded, mo MeasureOpts) (Measured, error) {
	return Measure(w.sampler, func() error { return w.ss.Run(l) }, mo, w.tel)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
