package runner

import (
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// DeviceInfo describes the GPU a worker owns.
type DeviceInfo struct {
	Name     string
	UUID     string
	CC       string // "9.0"
	Driver   string // driver API version, e.g. "13000"
	SMs      int
	L2Bytes  int
	MemBytes uint64
	// Telemetry is the GPU's state when the worker started ("SM 1980 MHz,
	// ..."), or why it has none ("NVML unavailable: ..."); empty from a
	// worker that does not read telemetry.
	Telemetry string
	// HasTelemetry is set when evaluations carry GPU readings.
	HasTelemetry bool
}

// MeasureOpts sets the sampling protocol.
type MeasureOpts struct {
	Mode       eval.Mode // flush L2 before every sample (cold) or not (hot)
	Warmup     int       // untimed runs before sampling
	MinSamples int       // at least this many samples
	MaxSamples int       // at most this many samples
	TargetCI   float64   // stop when the 95% CI half-width is within this fraction of the median
	MaxTimeMS  float64   // stop sampling after this much wall time
	MaxLocal   int       // prescreen: local (spill) bytes per thread above which a variant is skipped
	// AbandonAbove, when positive, is the early-abandon bar in µs (see
	// Abandon): the runner sets it from the best variant so far.
	AbandonAbove float64 `json:",omitempty"`
	// AbandonAfter is the number of samples after which the abandon rule
	// is first checked (the first batch); at least minKept.
	AbandonAfter int `json:",omitempty"`
	// WarmMS, when positive, is the wall time for which the sampling
	// loop's own work (flush and run) repeats, untimed, before the
	// warm-up runs: a GPU the host left idle (computing references,
	// compiling) starts at lower clocks (tune bench --warm-ms).
	WarmMS float64 `json:",omitempty"`
	// IdleMS is the least time the GPU is left idle after each batch of
	// samples (the worker reads its telemetry in it): what a table's time
	// means depends on it (docs/architecture.md, "What a table's time
	// means").
	IdleMS float64 `json:",omitempty"`
}

// DefaultMeasure is the protocol the design fixes; the tables state it
// (export).
var DefaultMeasure = MeasureOpts{Mode: eval.Cold, Warmup: 3, MinSamples: 10, MaxSamples: 200,
	TargetCI: 0.005, MaxTimeMS: 500, MaxLocal: 256, IdleMS: 2}

// Batch is the samples of a batch of Measure (the first of an abandon
// rule's aside): MinSamples, at least 10.
func (mo MeasureOpts) Batch() int { return max(mo.MinSamples, 10) }

// request is one line the parent sends to a worker.
type request struct {
	Op      string // "hello", "copybw", "prepare", "eval"
	Eval    *evalRequest
	Measure MeasureOpts
}

// evalRequest asks for one variant; "prepare" uses only the shape and
// seed, and makes the worker compute the inputs and the reference before
// the timed part of an evaluation begins.
type evalRequest struct {
	Kernel  string
	Params  string
	Dims    []variants.Dim
	DType   string
	Program kernels.Program
	// Baseline, when set, is evaluated instead of Program.
	Baseline *kernels.Baseline `json:",omitempty"`
	// Algorithm, for a best-of baseline (BaselineLtBest), is the one
	// algorithm to evaluate (an earlier Outcome.Algorithm); empty: every
	// algorithm of the heuristic's top LtCandidates, the fastest valid
	// one kept.
	Algorithm string `json:",omitempty"`
	Seed      uint64
	// Cubin, when set, is Program's PTX compiled by a compile helper; the
	// worker loads it instead of compiling.
	Cubin []byte `json:",omitempty"`
}

// response is one line a worker sends back.
type response struct {
	Err      string // the request could not be served at all
	Info     *DeviceInfo
	CopyGBps float64
	Eval     *evalResponse
}

type evalResponse struct {
	Outcome
	Fatal bool // the worker's context is unusable; it exits after this reply
}
