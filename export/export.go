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
	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// ErrPTXChanged is returned (wrapped) when a re-emitted winner's PTX is
// not the PTX that was timed.
var ErrPTXChanged = errors.New("re-emitted PTX differs from the recorded hash")

// ErrMixedGPUs is returned (wrapped) when the results come from more than
// one GPU model.
var ErrMixedGPUs = errors.New("results from more than one GPU model")

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
				Source: filepath.Base(set.Path)}, PTX: map[string]string{}}
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
	prog, bufs, err := Emit(sh.Kernel, sh.Key, w.Key.Params)
	if err != nil {
		return configs.Entry{}, "", err
	}
	sum := sha256.Sum256([]byte(prog.PTX))
	var note string
	if got := hex.EncodeToString(sum[:]); got != w.Key.PTXSHA256 {
		note = fmt.Sprintf("stale: this gradtune emits PTX %.12s for these params, run %d timed %.12s; the launches are the current generator's", got, sh.Run.ID, w.Key.PTXSHA256)
	}
	lo, hi := w.CI()
	e := configs.Entry{
		Kernel: sh.Kernel, DType: sh.DType, Shape: sh.Dims, Params: w.Key.Params,
		Launches: launches(prog.Launches), Buffers: buffers(bufs),
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

// Emit re-emits the variant of kernel with params at the shape key, and
// returns its program and buffers.
func Emit(kernel, shapeKey, params string) (kernels.Program, []kernels.Buffer, error) {
	fail := func(err error) (kernels.Program, []kernels.Buffer, error) {
		return kernels.Program{}, nil, fmt.Errorf("re-emit %s %s [%s]: %w", kernel, shapeKey, params, err)
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
	return prog, append(f.Buffers(s), prog.Buffers...), nil
}

func launches(ls []kernels.Launch) []configs.Launch {
	out := make([]configs.Launch, len(ls))
	for i, l := range ls {
		c := configs.Launch{Entry: l.Entry, Grid: l.Grid, GridPerSM: l.GridPerSM, Block: l.Block,
			SharedBytes: l.SharedBytes, Dependent: l.Dependent}
		for _, a := range l.Args {
			c.Args = append(c.Args, configs.Arg{Buffer: a.Buffer, Scalar: a.Scalar})
		}
		out[i] = c
	}
	return out
}

func buffers(bs []kernels.Buffer) []configs.Buffer {
	out := make([]configs.Buffer, len(bs))
	for i, b := range bs {
		out[i] = configs.Buffer{Name: b.Name, DType: b.DType.String(), Elems: b.Elems, Role: b.Role.String()}
	}
	return out
}

// ptxName is "kernel-2048x8960-f32-<sha8>.ptx".
func ptxName(sh *results.Shape, sha string) string {
	size := strings.NewReplacer("×", "x", ".", "p").Replace(sh.Size)
	return fmt.Sprintf("%s-%s-%s-%.8s.ptx", sh.Kernel, size, sh.DType, sha)
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
