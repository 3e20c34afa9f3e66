package kernels

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"

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

// Role says how a buffer is used.
type Role int

// Buffer roles.
const (
	Input      Role = iota // filled with Inputs before the program
	Output                 // written by the program; poisoned before validation
	Accumulate             // zeroed inside the timed program, then accumulated into
	Scratch                // workspace; contents are not checked
	// State is zeroed once, when the program is loaded, and every run
	// must leave it zero again (counters that wrap, accumulators that the
	// last CTA clears); validation checks that it does.
	State
)

func (r Role) String() string {
	return [...]string{"input", "output", "accumulate", "scratch", "state"}[r]
}

// Buffer is a device buffer of a program.
type Buffer struct {
	Name  string
	DType dtype.DType
	Elems int
	Role  Role
}

// Bytes is the buffer's size.
func (b Buffer) Bytes() int { return b.Elems * b.DType.Size() }

// Arg is one kernel argument: the address of a named buffer, a TMA
// tensor map of one, or a scalar.
type Arg struct {
	Buffer string // non-empty: pass the buffer's device address
	// TensorMap, when set, passes a tensor map of buffer TensorMap.Buffer
	// by value (a 128-byte, 64-byte aligned .param, as
	// cuTensorMapEncodeTiled makes it); Buffer is then empty.
	TensorMap *TensorMap `json:",omitempty"`
	Scalar    uint64     // otherwise this 64-bit value (u64 parameter)
}

// String prints the argument as {buffer scalar}, or {tensormap(buffer) box}
// for a tensor map.
func (a Arg) String() string {
	if m := a.TensorMap; m != nil {
		return fmt.Sprintf("{tensormap(%s) box=%v swizzle=%d}", m.Buffer, m.Box, m.Swizzle)
	}
	return fmt.Sprintf("{%s %d}", a.Buffer, a.Scalar)
}

// TensorMap describes the tiled TMA tensor map of a buffer
// (cuTensorMapEncodeTiled): a tensor of Dims elements, innermost first,
// whose dimension i > 0 starts every Strides[i-1] bytes, copied in boxes
// of Box elements. Elements outside the tensor read as zero and are not
// written. Interleave is none and L2 promotion is 128 bytes.
type TensorMap struct {
	Buffer  string
	DType   dtype.DType
	Dims    []int // extents, innermost first (1 to 5)
	Strides []int // byte strides of Dims[1:], multiples of 16
	Box     []int // box extents, innermost first, each ≤ 256
	// Swizzle is 0 (none) or the span in bytes of the shared-memory
	// swizzle: 32, 64 or 128. With a swizzle, Box[0]·size ≤ Swizzle.
	Swizzle int
}

// Launch is one kernel launch of a program.
type Launch struct {
	Entry string // kernel name in the program's module
	// Grid is the CTA count; when GridPerSM > 0 the runner uses
	// GridPerSM × (multiprocessors of the device) for Grid[0] instead.
	Grid        [3]int
	GridPerSM   int
	Block       [3]int
	SharedBytes int // dynamic shared memory
	Args        []Arg
	// Dependent launches with programmatic stream serialization (sm_90:
	// PDL): the runner may start it while the previous launch of the
	// program is still running, so that its launch latency overlaps that
	// launch's tail. Its kernel must execute griddepcontrol.wait
	// (ptx.Func.GridDepWait) before it reads or writes memory that the
	// previous launches touch; griddepcontrol.wait returns once they have
	// completed and their writes are visible. The first launch of a
	// program is never dependent: it follows the runner's L2 flush.
	// Backends without the feature launch it in plain stream order, which
	// is what the wait ensures anyway.
	Dependent bool
	// Cluster, when not zero, launches the grid in thread-block clusters
	// of this shape (sm_90); Grid is a multiple of it.
	Cluster [3]int `json:",omitempty"`
}

// Program is everything one variant runs: one PTX module, the launches
// made from it, in order, and the buffers of its own (State and Scratch)
// that it needs beside the shape's data. Launches name either.
type Program struct {
	PTX      string
	Launches []Launch
	Buffers  []Buffer
}

// Baseline is a vendor library's implementation of the same problem,
// timed beside the variants with the same protocol and validated against
// the same reference. GEMM is the one kind so far.
type Baseline struct {
	Name string // "cublas"
	GEMM *GEMMCall
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

// Uniform returns n values uniform in [lo, hi) rounded to dt, from a
// generator seeded by seed and the stream name, so every buffer of every
// shape gets its own reproducible data.
func Uniform(dt dtype.DType, n int, lo, hi float64, seed uint64, stream string) []float64 {
	h := fnv.New64a()
	h.Write([]byte(stream))
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	out := make([]float64, n)
	for i := range out {
		out[i] = dt.Round(lo + (hi-lo)*r.Float64())
	}
	return out
}
