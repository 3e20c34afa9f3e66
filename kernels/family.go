package kernels

import (
	"fmt"
	"math"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/variants"
)

// Family is one tunable kernel, seen untyped: shapes in their canonical
// form and params as k=v strings, as commands, runners and the store see
// them. Families are written against their own typed shape and params
// and become a Family through Define.
type Family interface {
	// Name is the family's identifier, e.g. "relu_bwd".
	Name() string
	// Doc is a one-line description.
	Doc() string
	// Dims names the shape extents the family takes, e.g. ["m", "n"].
	Dims() []string
	// DTypes lists the element types the family supports.
	DTypes() []dtype.DType
	// Shapes returns the deduplicated shapes a model preset needs in the
	// given dtypes.
	Shapes(p variants.Preset, dts []dtype.DType) []variants.Shape
	// Shape turns a user's spec into a shape, or explains what it accepts.
	Shape(sp variants.Spec, dt dtype.DType) (variants.Shape, error)
	// Space is the tunable parameter space for a shape.
	Space(s variants.Shape) variants.Space
	// Emit generates the program of one variant.
	Emit(s variants.Shape, p variants.Params) (Program, error)
	// Buffers lists the shape's data: the Input buffers Inputs fills and
	// the Output and Accumulate buffers Reference computes. A program's
	// own state and scratch are in Program.Buffers.
	Buffers(s variants.Shape) []Buffer
	// Inputs returns deterministic input data for the Input buffers.
	Inputs(s variants.Shape, seed uint64) map[string][]float64
	// Reference computes the Output and Accumulate buffers in float64.
	Reference(s variants.Shape, in map[string][]float64) map[string][]float64
	// Cost is the work of one program run.
	Cost(s variants.Shape) Cost
	// Tolerance is the accepted error of the output buffer against the
	// reference.
	Tolerance(s variants.Shape, buffer string) Tolerance
}

// The launch description of a program is the launch contract (defined in
// package configs), the same types the tuned tables carry to trainers:
// buffers, launches and arguments whose sizes are expressions of the
// shape's dims.
type (
	Role      = configs.Role
	Buffer    = configs.Buffer
	Arg       = configs.Arg
	TensorMap = configs.TensorMap
	Launch    = configs.Launch
)

// Buffer roles (configs.Role).
const (
	Input      = configs.Input
	Output     = configs.Output
	Accumulate = configs.Accumulate
	Scratch    = configs.Scratch
	State      = configs.State
	InOut      = configs.InOut
)

// Env is the environment a shape's expressions are evaluated in: its
// numeric dims by name (the integer part of a fractional one; choices
// have no value).
func Env(s variants.Shape) configs.Env {
	env := configs.Env{}
	for _, d := range s.Dims {
		if d.Text == "" {
			env[d.Name] = int64(d.Value)
		}
	}
	return env
}

// WithDim is shape s of family f with dim name at v, as f.Shape takes it
// (its limits checked).
func WithDim(f Family, s variants.Shape, name string, v int) (variants.Shape, error) {
	sp := variants.Spec{DType: s.DType}
	for _, d := range s.Dims {
		if d.Name == name {
			d.Value = v
		}
		sp.Dims = append(sp.Dims, d)
	}
	return f.Shape(sp, s.DType)
}

// PlanAt resolves program p of family f at shape s on a device of sms
// multiprocessors: its launches, and the family's buffers then the
// program's own.
func PlanAt(f Family, s variants.Shape, p Program, sms int) (configs.Plan, error) {
	env := Env(s)
	env["sms"] = int64(sms)
	return configs.Resolve(p.Launches, append(f.Buffers(s), p.Buffers...), env)
}

// Bytes is buffer b's size at shape s.
func Bytes(b Buffer, s variants.Shape) int { return Elems(b, s) * b.DType.Size() }

// Elems is buffer b's element count at shape s.
func Elems(b Buffer, s variants.Shape) int {
	n, err := b.Elems.EvalInt(Env(s))
	if err != nil {
		panic(fmt.Sprintf("buffer %s at %s: %v", b.Name, s.Key(), err))
	}
	return n
}

// Program is everything one variant runs: one PTX module, the launches
// made from it, in order, and the buffers of its own (State and Scratch)
// that it needs beside the shape's data. Launches name either.
type Program struct {
	PTX      string
	Launches []Launch
	Buffers  []Buffer
	// RuntimeDims are the dims whose value the PTX takes as a launch
	// argument rather than as immediates: the same PTX, with the launches
	// and buffers evaluated at other values of these dims, computes those
	// shapes. Empty: the program computes its shape only.
	RuntimeDims []string `json:",omitempty"`
	// RuntimeMax bounds a runtime dim below the family's own limit where
	// the program is not meant to run past a value: a split-K program
	// whose workspace grows with the dim serves it only while its split
	// is one the family's rules admit (gemm.SplitRowsMax). Absent: the
	// family's limit.
	RuntimeMax map[string]int `json:",omitempty"`
}

// Baseline is a vendor library's implementation of the same problem,
// timed beside the variants with the same protocol and validated against
// the same reference. GEMM is the one kind so far.
type Baseline struct {
	Name string // "cublas"
	GEMM *GEMMCall
	// Before, when set, is a program of the family's own that runs ahead
	// of the library call, inside the baseline's timed run: what a user
	// does before calling the library (nf4_gemm_bwd's dequantization
	// into a bf16 weight, bitsandbytes' backward). Its Scratch buffers
	// are the call's to read.
	Before *Program `json:",omitempty"`
	// Library is the library call the baseline makes, a baseline name
	// the runner knows ("cublas", "cublaslt-best"); empty: Name.
	Library string `json:",omitempty"`
}

// Lib is the library call the baseline makes: Library, else Name.
func (b Baseline) Lib() string {
	if b.Library != "" {
		return b.Library
	}
	return b.Name
}

// GEMMCall is C = op(A)·op(B) on the family's buffers, row-major: C is
// [M×N] with rows LDC elements apart; op(A) is [M×K]: A itself ([M×K],
// rows LDA apart) or, with TransA, the transpose of A ([K×M]); likewise
// op(B) is [K×N]: B or, with TransB, the transpose of B ([N×K]).
// Inputs are In (f16 or bf16), accumulation f32, C is Out (f32 or In).
type GEMMCall struct {
	A, B, C        string
	M, N, K        int
	TransA, TransB bool
	LDA, LDB, LDC  int
	In, Out        dtype.DType
}

// Cost is the work of one program run, for throughput figures.
type Cost struct {
	Bytes int64 // fewest bytes moved through device memory (reads + writes)
	Flops int64
}

// Labels returns n class labels uniform in [0, classes) from the stream
// as Uniform draws it, with label ignore on every every-th row (row r
// where (r + seed) mod every = every − 1), and the count of the others.
func Labels(n, classes, ignore, every int, seed uint64, stream string) ([]float64, int) {
	labels := Uniform(dtype.F64, n, 0, float64(classes), seed, stream)
	valid := 0
	for r := range labels {
		labels[r] = math.Floor(labels[r])
		if (uint64(r)+seed)%uint64(every) == uint64(every-1) {
			labels[r] = float64(ignore)
		} else {
			valid++
		}
	}
	return labels, valid
}
