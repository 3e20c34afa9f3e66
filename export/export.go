package export

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

// ErrPTXChanged is returned (wrapped) when a re-emitted winner's PTX is
// not the PTX that was timed.
var ErrPTXChanged = errors.New("re-emitted PTX differs from the recorded hash")

// ErrMixedGPUs is returned (wrapped) when the results come from more than
// one GPU model; ErrMixedProtocols when they were timed with and without
// L2 flushes.
var (
	ErrMixedGPUs      = errors.New("results from more than one GPU model")
	ErrMixedProtocols = errors.New("results timed with different protocols")
)

// protocolOf is the table protocol of results timed in mode (the
// runner's measurement protocol, runner.DefaultMeasure).
func protocolOf(mode eval.Mode) configs.Protocol {
	mo := runner.DefaultMeasure
	p := configs.Protocol{L2: "flushed", Warmup: mo.Warmup,
		Timer: "CUDA events around one run of the launches (accumulate buffers zeroed first)",
		Statistic: fmt.Sprintf("median of at least %d samples, until its 95%% confidence interval is within %g%% (at most %d samples or %g s)",
			mo.MinSamples, mo.TargetCI*100, mo.MaxSamples, mo.MaxTimeMS/1000)}
	if mode == eval.Hot {
		p.L2 = "warm"
	} else {
		p.Timer += ", each run after a write of twice the L2 size"
	}
	p.Timer += fmt.Sprintf("; batches of %d runs enqueued back to back, the GPU idle at least %g ms between batches", mo.Batch(), mo.IdleMS)
	return p
}

// Table is the exported table with the winners' PTX texts by file name.
type Table struct {
	*configs.Table
	PTX map[string]string
	// Skipped says, per winner left out, why: this gradtune cannot emit it
	// any more (its kernel or its point of the parameter space is gone).
	Skipped []string
}

// Build makes a table of the winners in set. Shapes without a winner are
// left out, and so are winners this gradtune cannot emit (Skipped); a
// table with no entry is an error.
func Build(set *results.Set) (*Table, error) {
	var t *Table
	var skipped []string
	for _, sh := range set.Shapes {
		if sh.Winner == nil {
			continue
		}
		if t == nil {
			t = &Table{Table: &configs.Table{Schema: configs.SchemaVersion,
				GPU:    configs.GPU{Name: sh.Run.GPUName, CC: sh.Run.CC},
				Source: filepath.Base(set.Path), Protocol: protocolOf(sh.Winner.Key.Mode)}, PTX: map[string]string{}}
		}
		if p := protocolOf(sh.Winner.Key.Mode); p != t.Protocol {
			return nil, fmt.Errorf("%w: winners timed with L2 %s and %s; export one mode at a time with --run", ErrMixedProtocols, t.Protocol.L2, p.L2)
		}
		if sh.Run.GPUName != t.GPU.Name || sh.Run.CC != t.GPU.CC {
			return nil, fmt.Errorf("%w: %s (cc %s) and %s (cc %s) in run %d; export one run at a time with --run",
				ErrMixedGPUs, t.GPU.Name, t.GPU.CC, sh.Run.GPUName, sh.Run.CC, sh.Run.ID)
		}
		e, ptx, err := entry(sh)
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		t.Entries = append(t.Entries, e)
		if e.PTX != "" {
			t.PTX[e.PTX] = ptx
		}
		if d := formatTime(sh.Run.Started); d > t.Created {
			t.Created = d
		}
	}
	if t == nil {
		return nil, fmt.Errorf("%w: no shape has a winner", results.ErrNoResults)
	}
	t.Skipped = skipped
	if len(t.Entries) == 0 {
		return nil, fmt.Errorf("%w: no winner can be exported: %s", results.ErrNoResults, strings.Join(skipped, "; "))
	}
	t.Sort()
	return t, t.Check()
}

// entry is the table entry of a shape's winner and its PTX text.
func entry(sh *results.Shape) (configs.Entry, string, error) {
	w := sh.Winner
	v, err := Emit(sh.Kernel, sh.Key, w.Key.Params)
	if err != nil {
		return configs.Entry{}, "", err
	}
	prog := v.Program
	sum := sha256.Sum256([]byte(prog.PTX))
	var note string
	if got := hex.EncodeToString(sum[:]); got != w.Key.PTXSHA256 {
		note = fmt.Sprintf("stale: this gradtune emits PTX %.12s for these params, run %d timed %.12s; the launches are the current generator's", got, sh.Run.ID, w.Key.PTXSHA256)
	}
	lo, hi := w.CI()
	e := configs.Entry{
		Kernel: sh.Kernel, DType: sh.DType, Shape: sh.Dims, Params: w.Key.Params,
		Runtime:  v.Runtime(),
		Launches: prog.Launches, Buffers: v.Buffers(),
		Registers: w.Registers, SmemBytes: w.SmemBytes,
		MedianUS: w.MedianUS, CIUS: [2]float64{lo, hi},
		PTX:       ptxName(sh, w.Key.PTXSHA256),
		PTXSHA256: w.Key.PTXSHA256,
		Note:      note,
		Provenance: configs.Provenance{Run: w.RunID, Date: formatTime(sh.Run.Started), Driver: sh.Run.Driver,
			Tool: sh.Run.ToolVersion, Args: sh.Run.Args},
	}
	if note != "" {
		e.PTX = ""
	}
	if b := sh.Baseline; b != nil {
		e.Baseline = configs.Baseline{Name: b.Name, Params: b.Params, MedianUS: b.MedianUS}
	}
	return e, prog.PTX, nil
}

// Variant is one re-emitted variant: its family, shape and program.
type Variant struct {
	Family  kernels.Family
	Shape   variants.Shape
	Program kernels.Program
}

// Buffers is the family's buffers at the shape and the program's own.
func (v Variant) Buffers() []kernels.Buffer {
	return append(v.Family.Buffers(v.Shape), v.Program.Buffers...)
}

// Runtime is the range of each of the program's runtime dims: from 1 to
// the largest value the family accepts with the other dims as they are
// (Family.Shape, whose limits are monotone in each dim), or the
// program's own bound (Program.RuntimeMax) where that is lower.
func (v Variant) Runtime() map[string]configs.Range {
	if len(v.Program.RuntimeDims) == 0 {
		return nil
	}
	out := map[string]configs.Range{}
	for _, name := range v.Program.RuntimeDims {
		hi := maxDim(v.Family, v.Shape, name)
		if own, ok := v.Program.RuntimeMax[name]; ok {
			hi = min(hi, own)
		}
		out[name] = configs.Range{Min: 1, Max: int64(hi)}
	}
	return out
}

// maxDim is the largest value of dim name that f accepts at s (s's own
// value at least), found by doubling then bisecting.
func maxDim(f kernels.Family, s variants.Shape, name string) int {
	ok := func(v int) bool {
		_, err := kernels.WithDim(f, s, name, v)
		return err == nil
	}
	lo, hi := s.Get(name), 2*s.Get(name)
	for hi < 1<<40 && ok(hi) {
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// Emit re-emits the variant of kernel with params at the shape key.
func Emit(kernel, shapeKey, params string) (Variant, error) {
	fail := func(err error) (Variant, error) {
		return Variant{}, fmt.Errorf("re-emit %s %s [%s]: %w", kernel, shapeKey, params, err)
	}
	f, err := catalog.Lookup(kernel)
	if err != nil {
		return fail(err)
	}
	i := strings.LastIndex(shapeKey, ",dtype=")
	if i < 0 {
		return fail(errors.New("the shape key has no dtype"))
	}
	dt, err := dtype.Parse(shapeKey[i+len(",dtype="):])
	if err != nil {
		return fail(err)
	}
	specs, err := variants.ParseSpecs(shapeKey[:i])
	if err != nil {
		return fail(err)
	}
	s, err := f.Shape(specs[0], dt)
	if err != nil {
		return fail(err)
	}
	p, err := f.Space(s).ParseRecorded(params)
	if err != nil {
		return fail(err)
	}
	if err := f.Space(s).Check(p); err != nil {
		return fail(fmt.Errorf("not a point of the family's current space: %w", err))
	}
	prog, err := f.Emit(s, p)
	if err != nil {
		return fail(err)
	}
	return Variant{Family: f, Shape: s, Program: prog}, nil
}

// ptxName is "kernel-2048x8960-f32-<sha8>.ptx".
func ptxName(sh *results.Shape, sha string) string {
	size := strings.NewReplacer("×", "x", ".", "p").Replace(sh.Size)
	return fmt.Sprintf("%s-%s-%s-%.8s.ptx", sh.Kernel, size, sh.DType, sha)
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
