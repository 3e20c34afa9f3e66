package kernels

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/variants"
)

// Family is one tunable kernel.
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
	// Buffers lists the device buffers of a shape with their roles.
	Buffers(s variants.Shape) []Buffer
	// Inputs returns deterministic input data for the Input buffers.
	Inputs(s variants.Shape, seed uint64) map[string][]float64
	// Reference computes the Output and Accumulate buffers in float64.
	Reference(s variants.Shape, in map[string][]float64) map[string][]float64
	// Cost is the work of one program run.
	Cost(s variants.Shape) Cost
	// Tolerance is the accepted error of outputs against the reference.
	Tolerance(s variants.Shape) Tolerance
}

// Role says how a buffer is used.
type Role int

// Buffer roles.
const (
	Input      Role = iota // filled with Inputs before the program
	Output                 // written by the program; poisoned before validation
	Accumulate             // zeroed inside the timed program, then accumulated into
	Scratch                // workspace; contents are not checked
)

func (r Role) String() string {
	return [...]string{"input", "output", "accumulate", "scratch"}[r]
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

// Arg is one kernel argument: the address of a named buffer, or a scalar.
type Arg struct {
	Buffer string // non-empty: pass the buffer's device address
	Scalar uint64 // otherwise this 64-bit value (u64 parameter)
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
}

// Program is everything one variant runs: one PTX module and the launches
// made from it, in order.
type Program struct {
	PTX      string
	Launches []Launch
}

// Cost is the work of one program run, for throughput figures.
type Cost struct {
	Bytes int64 // fewest bytes moved through device memory (reads + writes)
	Flops int64
}

// Tolerance is the accepted error: |got − ref| ≤ Atol + Rtol·|ref|.
type Tolerance struct {
	Atol, Rtol float64
}

// OutputTolerancer is implemented by families whose outputs need
// different tolerances (a row-wise dx next to a column sum over all rows).
// Their Tolerance returns the loosest of them.
type OutputTolerancer interface {
	OutputTolerance(s variants.Shape, buffer string) Tolerance
}

// ToleranceFor returns the tolerance of buffer: the family's
// OutputTolerance when it has one, else its Tolerance.
func ToleranceFor(f Family, s variants.Shape, buffer string) Tolerance {
	if o, ok := f.(OutputTolerancer); ok {
		return o.OutputTolerance(s, buffer)
	}
	return f.Tolerance(s)
}

// Check compares got with ref and returns the largest absolute and
// relative errors and the index of the first element outside tolerance
// (-1 if none). Non-finite values must match exactly: NaN where ref is
// NaN and an infinity where ref has the same infinity pass; anything else
// against a NaN or an infinity (in either slice) fails with infinite
// absolute and relative errors. Elements where ref is 0 have no relative
// error. Slices of different lengths fail at the first index only one of
// them has, with an infinite absolute error.
func (t Tolerance) Check(got, ref []float64) (maxAbs, maxRel float64, bad int) {
	bad = -1
	if len(got) != len(ref) {
		n := min(len(got), len(ref))
		maxAbs, maxRel, bad = t.Check(got[:n], ref[:n])
		if bad < 0 {
			bad = n
		}
		return math.Inf(1), maxRel, bad
	}
	inf := math.Inf(1)
	for i := range ref {
		g, r := got[i], ref[i]
		var d, rel float64
		switch {
		case g == r || math.IsNaN(g) && math.IsNaN(r):
			// Equal, including equal infinities.
		case math.IsNaN(g) || math.IsNaN(r) || math.IsInf(g, 0) || math.IsInf(r, 0):
			d, rel = inf, inf
		default:
			d = math.Abs(g - r)
			if r != 0 {
				rel = d / math.Abs(r)
			}
		}
		maxAbs, maxRel = max(maxAbs, d), max(maxRel, rel)
		// With r finite the limit is finite, so an infinite d always fails.
		if bad < 0 && d > 0 && (math.IsInf(d, 1) || d > t.Atol+t.Rtol*math.Abs(r)) {
			bad = i
		}
	}
	return maxAbs, maxRel, bad
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

// registry of families, filled by init functions of this package.
var registry = map[string]Family{}

func register(f Family) {
	if _, dup := registry[f.Name()]; dup {
		panic("kernels: family registered twice: " + f.Name())
	}
	registry[f.Name()] = f
}

// Lookup returns the family called name.
func Lookup(name string) (Family, error) {
	f, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown kernel %q (kernels: %s)", name, strings.Join(Names(), ", "))
	}
	return f, nil
}

// Names lists the registered families, sorted.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// All returns the registered families sorted by name.
func All() []Family {
	var out []Family
	for _, n := range Names() {
		out = append(out, registry[n])
	}
	return out
}

// ParseList resolves "a,b" or "all" into families.
func ParseList(s string) ([]Family, error) {
	if strings.TrimSpace(s) == "all" {
		return All(), nil
	}
	var out []Family
	seen := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		f, err := Lookup(n)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no kernel named (kernels: %s, or all)", strings.Join(Names(), ", "))
	}
	return out, nil
}
