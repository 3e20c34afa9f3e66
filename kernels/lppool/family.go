package lppool

import (
	"fmt"
	"strconv"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/variants"
)

// name is the family's name, and the prefix of its kernels' entries.
const name = "lp_pool1d_bwd"

// Limits of the shapes the family takes, and of its inputs.
const (
	minP       = variants.Milli(250)   // p ≥ 0.25
	maxP       = variants.Milli(16000) // p ≤ 16
	maxWindow  = 64                    // window and stride
	mulMaxP32  = 4                     // the mul form with f32 math takes p ≤ 4
	inputMax   = 2.0                   // |x| ≤ 2 in the inputs
	inputMinLT = 0.25                  // |x| ≥ 0.25 (or x = 0) in the inputs when p < 1
	f16Max     = 65504.0
)

// Shape is x of [N, C, L] pooled along L with windows of Window elements
// every Stride elements (Stride 0: Window), the norm's power P (a decimal,
// p=1.5) and ceil_mode (ceil=1; ceil=0, floor mode, is the default and
// the key omits it).
type Shape struct {
	N      int            `dim:"n"`
	C      int            `dim:"c"`
	L      int            `dim:"l"`
	Window int            `dim:"window"`
	Stride int            `dim:"stride,optional"`
	P      variants.Milli `dim:"p"`
	Ceil   int            `dim:"ceil,optional=0"`
	DType  dtype.DType
}

// Form is how dx is formed from the windows.
type Form string

// The forms.
const (
	Gather       Form = "gather"        // each dx element sums its windows, no atomics
	Scatter      Form = "scatter"       // windows add into a zeroed dx with atomics
	ScatterEdges Form = "scatter_edges" // atomics only where neighbours' windows overlap
)

// Pow is how the power is computed.
type Pow string

// The power forms.
const (
	PowMul  Pow = "mul"  // integer p by multiplies and a reciprocal
	PowExp2 Pow = "exp2" // ex2/lg2 approximations
)

// Params is one variant: the form; windows per unit (SPT: a gather unit is
// SPT·stride elements, a scatter thread SPT windows); the vector width of
// x and dx in gather (scatter moves scalars); units per thread (EPT, all
// loads issued before any math); threads per block; how the power is
// computed; the register cap.
type Params struct {
	Form    Form `axis:"form" values:"gather,scatter,scatter_edges" doc:"gather: each dx element sums its windows (no atomics); scatter: windows add into a zeroed dx with atomics; scatter_edges: atomics only where neighbours' windows overlap"`
	SPT     int  `axis:"spt" values:"1,2,4" doc:"windows per thread (gather: a unit of spt·stride elements)"`
	Vec     int  `axis:"vec" doc:"x/dx elements per vector access (gather; 16 bytes at most)"`
	EPT     int  `axis:"ept" values:"1,2,4" doc:"units per thread"`
	Block   int  `axis:"block" values:"128,256" doc:"threads per block"`
	Pow     Pow  `axis:"pow" doc:"mul: integer p by multiplies and a reciprocal; exp2: ex2/lg2 approximations"`
	MaxNReg int  `axis:"maxnreg" values:"0,32,64" doc:"register cap (0 = none)"`
}

// Families lists lp_pool1d_bwd.
func Families() []kernels.Family { return []kernels.Family{family{kernels.Define(def{})}} }

// family is the adapted def with stride's default written into the shape:
// a spec may leave stride out, and a shape's key always prints it.
type family struct{ kernels.Family }

func (f family) Shape(sp variants.Spec, dt dtype.DType) (variants.Shape, error) {
	s, err := f.Family.Shape(sp, dt)
	if err != nil || s.Has("stride") {
		return s, err
	}
	v, err := variants.DecodeShape[Shape](s.Dims, s.DType)
	if err != nil {
		return variants.Shape{}, fmt.Errorf("%s: %w", name, err)
	}
	v.Stride = v.Window
	return variants.ShapeOf(v), nil
}

// def is lp_pool1d_bwd written against Shape and Params.
type def struct{}

func (def) Name() string { return name }
func (def) Doc() string {
	return "LPPool1d backward (PyTorch lp_pool1d): dx from x, dy and the saved y over [N, C, L]"
}
func (def) DTypes() []dtype.DType {
	return []dtype.DType{dtype.F32, dtype.F16, dtype.BF16, dtype.F64}
}

// Shapes: LPPool1d is not part of a transformer preset; every preset gives
// the benchmark shape, x of [32, 256, 4096] pooled with window 4, stride 2
// and p = 2.
func (d def) Shapes(_ variants.Preset, dt dtype.DType) []Shape {
	s := Shape{N: 32, C: 256, L: 4096, Window: 4, Stride: 2, P: 2000, DType: dt}
	if d.CheckShape(s) != nil {
		return nil
	}
	return []Shape{s}
}

// CheckShape: n, c, l and their product within u32 indexing; window and
// stride at most 64 (the kernels unroll the windows covering a thread's
// elements); ceil only 1; 0.25 ≤ p ≤ 16, an integer for f64 (PTX has no
// f64 lg2/ex2); at least one output; and for f16 a y that f16 holds.
func (def) CheckShape(s Shape) error {
	for _, d := range []struct {
		name   string
		v, max int
	}{{"n", s.N, gen.MaxElems}, {"c", s.C, gen.MaxElems}, {"l", s.L, gen.MaxElems},
		{"window", s.Window, maxWindow}, {"stride", s.Stride, maxWindow}} {
		if d.v > d.max {
			return fmt.Errorf("%s=%d must be in 1..%d", d.name, d.v, d.max)
		}
	}
	switch {
	case s.Ceil > 1:
		return fmt.Errorf("ceil=%d: want 0 (floor mode, the default) or 1 (ceil_mode)", s.Ceil)
	case s.P < minP || s.P > maxP:
		return fmt.Errorf("p=%s must be in 0.25..16", pString(s.P))
	case s.DType == dtype.F64 && s.P%1000 != 0:
		return fmt.Errorf("f64 needs an integer p, not %s (PTX has no f64 lg2/ex2)", pString(s.P))
	}
	g := geomOf(s)
	switch {
	case g.rows > gen.MaxElems || g.rows*g.l > gen.MaxElems:
		return fmt.Errorf("%d×%d elements is more than %d", g.rows, g.l, gen.MaxElems)
	case g.lout < 1:
		return fmt.Errorf("l=%d, window=%d, stride=%d give no output (PyTorch: output size is too small)", g.l, g.k, g.s)
	case s.DType == dtype.F16 && g.ymax() > f16Max/2:
		return fmt.Errorf("f16 cannot hold y (up to %.3g for window=%d, p=%s)", g.ymax(), g.k, pString(s.P))
	}
	return nil
}

// pString prints p as a spec gives it: 2, 1.5, 0.25.
func pString(p variants.Milli) string { return strconv.FormatFloat(p.Float(), 'f', -1, 64) }

// Space: vector widths of at most 16 bytes, the power forms the shape's p
// allows; scatter moves scalars, and a gather vector divides the unit and
// the row.
func (def) Space(s Shape) variants.Typed[Params] {
	g := geomOf(s)
	pows := make([]string, 0, 2)
	for _, p := range powForms(g, s.DType) {
		pows = append(pows, string(p))
	}
	return variants.Typed[Params]{
		Values: map[string][]string{"vec": variants.Ints(vecs(s.DType)...), "pow": pows},
		Rules: []variants.Rule[Params]{
			{Name: "vector width divides the unit and the row", Check: func(p Params) error {
				if p.Form != Gather {
					if p.Vec != 1 {
						return fmt.Errorf("form=%s moves scalars (vec=1), not vec=%d", p.Form, p.Vec)
					}
					return nil
				}
				if (p.SPT*g.s)%p.Vec != 0 || g.l%p.Vec != 0 {
					return fmt.Errorf("vec=%d does not divide the unit of %d elements and the row of %d", p.Vec, p.SPT*g.s, g.l)
				}
				return nil
			}},
		},
	}
}

// powForms lists the ways a shape's power can be computed: multiplies for
// f64 and for p = 1; both for integer p ≤ 4; ex2/lg2 otherwise.
func powForms(g geom, dt dtype.DType) []Pow {
	ip, isInt := g.intP()
	switch {
	case dt == dtype.F64:
		return []Pow{PowMul}
	case isInt && ip == 1:
		return []Pow{PowMul}
	case isInt && ip <= mulMaxP32:
		return []Pow{PowMul, PowExp2}
	}
	return []Pow{PowExp2}
}

// vecs lists the vector widths of x and dx: up to 16 bytes.
func vecs(dt dtype.DType) []int {
	switch dt {
	case dtype.F64:
		return []int{1, 2}
	case dtype.F16, dtype.BF16:
		return []int{1, 2, 4, 8}
	}
	return []int{1, 2, 4}
}

// Buffers: x, dy and the saved y in, dx out, sized by the batch dim n.
// Scatter variants of 16-bit dtypes add their own f32 accumulator
// (Program.Buffers).
func (def) Buffers(s Shape) []kernels.Buffer {
	g := geomOf(s)
	elems, outs := batchElems(g.c*g.l), batchElems(g.c*g.lout)
	return []kernels.Buffer{
		{Name: "x", DType: s.DType, Elems: elems, Role: kernels.Input},
		{Name: "dy", DType: s.DType, Elems: outs, Role: kernels.Input},
		{Name: "y", DType: s.DType, Elems: outs, Role: kernels.Input},
		{Name: "dx", DType: s.DType, Elems: elems, Role: kernels.Output},
	}
}
