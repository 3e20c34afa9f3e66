package runner

import (
	"context"
	"errors"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// Variant names one evaluation for a Timer.
type Variant struct {
	Kernel, ShapeKey, Params string
	Program                  kernels.Program
}

// Timer gives the samples (µs) of a validated variant, for a backend that
// cannot time (the interpreter).
type Timer func(v Variant) ([]float64, error)

// NewLocalWorker returns a constructor of in-process workers over the
// backend that newBackend makes: the same stages as the GPU worker
// (compile, resources, prescreen, validation), with samples from timer.
// On the interpreter (runner/sim) a kernel that never ends stops at the
// interpreter's step limit and is recorded as a timeout; a kernel that
// hangs the backend itself is stopped only by a process worker's watchdog.
func NewLocalWorker(newBackend func() Backend, fams Families, timer Timer) func() (Worker, error) {
	return func() (Worker, error) {
		be := newBackend()
		return &localWorker{be: be, ss: NewSession(be), fams: fams, timer: timer}, nil
	}
}

type localWorker struct {
	be    Backend
	ss    *Session
	fams  Families
	timer Timer
}

func (w *localWorker) Hello() (DeviceInfo, error) {
	info := w.be.Device()
	if info.Telemetry == "" {
		info.Telemetry = "no telemetry: the " + w.be.Name() + " backend has no GPU"
	}
	return info, nil
}

func (w *localWorker) CopyBandwidth() (float64, error) {
	return 0, errors.New("the " + w.be.Name() + " backend cannot time a copy")
}

func (w *localWorker) Prepare(ctx context.Context, r *evalRequest) (*evalResponse, error) {
	return prepare(w.ss, w.fams, r), nil
}

func (w *localWorker) Eval(ctx context.Context, r *evalRequest, m MeasureOpts) (*evalResponse, error) {
	return evaluate(w.ss, w.fams, r, m, func(l *Loaded, _ MeasureOpts) (Measured, error) {
		key := variants.Shape{Dims: r.Dims, DType: w.ss.shape.DType}.Key()
		xs, err := w.timer(Variant{Kernel: r.Kernel, ShapeKey: key, Params: r.Params, Program: r.Program})
		return Measured{Samples: xs}, err
	}), nil
}

func (w *localWorker) Close() error {
	w.ss.Release()
	return nil
}
