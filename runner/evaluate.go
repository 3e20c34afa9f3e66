package runner

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/variants"
)

// Families are the families a worker serves, found by name (the tune
// binary's workers serve the catalog's, and with --faults the planted
// faults too).
type Families []kernels.Family

// Lookup returns the family called name.
func (fs Families) Lookup(name string) (kernels.Family, error) {
	var names []string
	for _, f := range fs {
		if f.Name() == name {
			return f, nil
		}
		names = append(names, f.Name())
	}
	return nil, fmt.Errorf("unknown kernel %q (this worker serves %s)", name, strings.Join(names, ", "))
}

// Measured is what the timed stage of an evaluation found.
type Measured struct {
	Samples   []float64 // µs
	Throttled []int     // indexes of samples taken while the GPU throttled
	GPU       Reading
	// Abandoned: sampling stopped early by the abandon rule (Abandon).
	Abandoned bool
}

// measureFunc times a loaded, validated program.
type measureFunc func(l *Loaded, mo MeasureOpts) (Measured, error)

// failure is the outcome of an error: timeout when the backend says the
// kernel ran too long (an error with a Timeout method that reports true,
// as the interpreter's step limit), else launch_error; fatal when the
// CUDA context is unusable after it. A baseline whose library the
// backend lacks is skipped and Unavailable.
func failure(status eval.Status, err error) *evalResponse {
	var t interface{ Timeout() bool }
	if status == eval.LaunchError && errors.As(err, &t) && t.Timeout() {
		status = eval.Timeout
	}
	res := &evalResponse{Outcome: Outcome{Status: status, Message: err.Error()}, Fatal: cuda.IsSticky(err)}
	if errors.Is(err, ErrNoBaselineLibrary) {
		res.Status, res.Unavailable = eval.Skipped, true
	}
	return res
}

// prepare makes ss hold the request's shape: inputs and reference, before
// any kernel of it runs.
func prepare(ss *Session, fams Families, r *evalRequest) *evalResponse {
	f, s, err := requestShape(fams, r)
	if err == nil {
		err = ss.Prepare(f, s, r.Seed)
	}
	if err != nil {
		return failure(eval.LaunchError, err)
	}
	return &evalResponse{Outcome: Outcome{Status: eval.OK}}
}

func requestShape(fams Families, r *evalRequest) (kernels.Family, variants.Shape, error) {
	f, err := fams.Lookup(r.Kernel)
	if err != nil {
		return nil, variants.Shape{}, err
	}
	dt, err := dtype.Parse(r.DType)
	if err != nil {
		return nil, variants.Shape{}, err
	}
	return f, variants.Shape{Dims: r.Dims, DType: dt}, nil
}

// evaluate runs the stages of one evaluation on ss: compile (or, for a
// baseline, bind the vendor call), read the resources, prescreen,
// validate, and only then measure. The backend does
// not matter to it: the GPU worker measures with CUDA events, a local
// worker as its timer says. A best-of baseline runs the stages once per
// algorithm (evaluateBest).
func evaluate(ss *Session, fams Families, r *evalRequest, mo MeasureOpts, measure measureFunc) (res *evalResponse) {
	if p := prepare(ss, fams, r); p.Status != eval.OK {
		return p
	}
	t0 := time.Now()
	defer func() { res.TotalMS = ms(time.Since(t0)) }()
	if r.Baseline != nil && r.Baseline.Lib() == BaselineLtBest {
		return evaluateBest(ss, *r.Baseline, r.Algorithm, mo, measure)
	}
	var l *Loaded
	var err error
	if r.Baseline != nil {
		l, err = ss.LoadBaseline(*r.Baseline)
	} else {
		l, err = ss.LoadCompiled(r.Program, r.Cubin)
	}
	compileMS := ms(time.Since(t0))
	if err != nil {
		res = failure(eval.CompileError, err)
		res.CompileMS = compileMS
		return res
	}
	defer l.Unload()
	return stages(ss, l, compileMS, mo, measure)
}

// stages are what follows loading (which took compileMS): the resources,
// the prescreen, validation, measurement, and validation again.
func stages(ss *Session, l *Loaded, compileMS float64, mo MeasureOpts, measure measureFunc) *evalResponse {
	t0 := time.Now()
	res := &evalResponse{}
	res.CompileMS = compileMS
	res.Registers, res.SpillBytes, res.SmemBytes, res.Occupancy = l.Res.Registers, l.Res.LocalBytes, l.Res.SharedBytes, l.Res.Occupancy
	keep := func(f *evalResponse) *evalResponse {
		f.Outcome.Registers, f.SpillBytes, f.SmemBytes, f.Occupancy = res.Registers, res.SpillBytes, res.SmemBytes, res.Occupancy
		f.CompileMS, f.MaxAbsErr, f.MaxRelErr = res.CompileMS, res.MaxAbsErr, res.MaxRelErr
		return f
	}
	if mo.MaxLocal > 0 && res.SpillBytes > mo.MaxLocal {
		res.Status, res.Message = eval.Skipped, fmt.Sprintf("prescreen: %d bytes of local memory per thread (limit %d)", res.SpillBytes, mo.MaxLocal)
		return res
	}
	c, err := ss.Validate(l)
	if err != nil {
		return keep(failure(eval.LaunchError, err))
	}
	res.MaxAbsErr, res.MaxRelErr = finiteErr(c.MaxAbs), finiteErr(c.MaxRel)
	if !c.OK {
		res.Status, res.Message = eval.Invalid, c.Message
		return res
	}
	res.ValidateMS = ms(time.Since(t0))
	m, err := measure(l, mo)
	if err != nil {
		return keep(failure(eval.LaunchError, err))
	}
	res.Samples, res.Throttled, res.GPU, res.Abandoned = m.Samples, m.Throttled, m.GPU, m.Abandoned
	// Validated again on freshly poisoned outputs: a program that passed
	// once and went wrong over the timed runs (a race, a flag or counter
	// left set) is invalid whatever its time.
	again, err := ss.Validate(l)
	if err != nil {
		return keep(failure(eval.LaunchError, fmt.Errorf("after timing: %w", err)))
	}
	if !again.OK {
		res.Status, res.Message = eval.Invalid, "after timing: "+again.Message
		return res
	}
	res.Status = eval.OK
	return res
}

// finiteErr is an error against the reference as a response carries it:
// an infinite or NaN error (an output of Inf, a reference of 0 with an
// output that is not) is the largest float64, which JSON can encode.
func finiteErr(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return math.MaxFloat64
	}
	return x
}
