package kernels

import (
	"fmt"
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// elementwise is a family whose output dx[i] depends only on dy[i] and
// x[i]: the activation backward kernels. The math is done in f32 whatever
// the storage type.
type elementwise struct {
	name, doc string
	// emit computes dx from dy and x (f32 registers).
	emit func(k *ptx.Func, dy, x ptx.Reg) ptx.Reg
	// ref is the float64 reference of one element.
	ref func(dy, x float64) float64
	// atolF32 widens the f32 tolerance for families built on approximate
	// instructions.
	atolF32 float64
}

// maxElems bounds shapes so that unit indices fit in u32 arithmetic.
const maxElems = 1<<31 - 1

func (e *elementwise) Name() string          { return e.name }
func (e *elementwise) Doc() string           { return e.doc }
func (e *elementwise) Dims() []string        { return []string{"m", "n"} }
func (e *elementwise) DTypes() []dtype.DType { return []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} }

// Shapes yields the MLP intermediate [tokens × intermediate] and the hidden
// [tokens × hidden] activations of the preset, once each (a preset whose
// hidden and intermediate sizes agree gives one shape), in the dtypes of
// dts the family supports.
func (e *elementwise) Shapes(p variants.Preset, dts []dtype.DType) []variants.Shape {
	var out []variants.Shape
	seen := map[string]bool{}
	for _, dt := range dts {
		if checkDType(e, dt) != nil {
			continue
		}
		for _, n := range []int{p.Intermediate, p.Hidden} {
			s := variants.Shape{Dims: []variants.Dim{{Name: "m", Value: p.Tokens}, {Name: "n", Value: n}}, DType: dt}
			if n > 0 && p.Tokens > 0 && !seen[s.Key()] {
				seen[s.Key()] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// Shape accepts n=N (a flat tensor) or m=M,n=N.
func (e *elementwise) Shape(sp variants.Spec, dt dtype.DType) (variants.Shape, error) {
	n, okN := sp.Get("n")
	m, okM := sp.Get("m")
	if !okN || len(sp.Dims) != map[bool]int{true: 2, false: 1}[okM] {
		return variants.Shape{}, fmt.Errorf("%s takes n=N or m=M,n=N (got %v)", e.name, dimNames(sp))
	}
	if err := checkDType(e, dt); err != nil {
		return variants.Shape{}, err
	}
	for _, d := range sp.Dims {
		if d.Value <= 0 || d.Value > maxElems {
			return variants.Shape{}, fmt.Errorf("%s: %s=%d must be in 1..%d", e.name, d.Name, d.Value, maxElems)
		}
	}
	s := variants.Shape{Dims: []variants.Dim{{Name: "n", Value: n}}, DType: dt}
	if okM {
		s.Dims = []variants.Dim{{Name: "m", Value: m}, {Name: "n", Value: n}}
	}
	if s.Elems() > maxElems {
		return variants.Shape{}, fmt.Errorf("%s: %d elements is more than %d", e.name, s.Elems(), maxElems)
	}
	return s, nil
}

// Space: threads per block, elements per vector access, vector accesses
// per thread per iteration (unrolled, all loads issued before any math), a
// one-shot grid or a grid-stride loop over a full-occupancy grid, and the
// register cap.
func (e *elementwise) Space(s variants.Shape) variants.Space {
	vecs := []int{1, 2, 4}
	if s.DType.Size() == 2 {
		vecs = []int{2, 4, 8}
	}
	return variants.Space{Axes: []variants.Axis{
		variants.IntAxis("block", "threads per block", 128, 256),
		variants.IntAxis("vec", "elements per vector access (16 bytes at most)", vecs...),
		variants.IntAxis("ept", "vector accesses per thread per iteration", 1, 2, 4),
		{Name: "grid", Values: []string{"once", "stride"}, Doc: "one-shot grid or grid-stride loop over a full-occupancy grid"},
		variants.IntAxis("maxnreg", "register cap (0 = none)", 0, 32, 64),
		{Name: "cache", Values: []string{"default", "stream"}, Doc: "default caching, or streaming (.cs: evict first) loads and stores"},
	}}
}

func (e *elementwise) Buffers(s variants.Shape) []Buffer {
	n := s.Elems()
	return []Buffer{{"dy", s.DType, n, Input}, {"x", s.DType, n, Input}, {"dx", s.DType, n, Output}}
}

func (e *elementwise) Inputs(s variants.Shape, seed uint64) map[string][]float64 {
	n := s.Elems()
	return map[string][]float64{
		"dy": Uniform(s.DType, n, -1, 1, seed, s.Key()+"/dy"),
		"x":  Uniform(s.DType, n, -4, 4, seed, s.Key()+"/x"),
	}
}

func (e *elementwise) Reference(s variants.Shape, in map[string][]float64) map[string][]float64 {
	dy, x := in["dy"], in["x"]
	dx := make([]float64, len(x))
	for i := range x {
		dx[i] = e.ref(dy[i], x[i])
	}
	return map[string][]float64{"dx": dx}
}

func (e *elementwise) Cost(s variants.Shape) Cost {
	return Cost{Bytes: 3 * int64(s.Elems()) * int64(s.DType.Size())}
}

// Tolerance: f32 outputs within 1e-5 (plus the family's allowance for
// approximate instructions); f16 and bf16 outputs within one unit in the
// last place of the stored type.
func (e *elementwise) Tolerance(s variants.Shape) Tolerance {
	switch s.DType {
	case dtype.F16, dtype.BF16:
		return Tolerance{Atol: 1e-4, Rtol: 2 * s.DType.Epsilon()}
	}
	return Tolerance{Atol: 1e-5 + e.atolF32, Rtol: 1e-5}
}

// Emit generates one variant. Every thread handles ept vector units of vec
// elements; unit u of iteration covers elements [u·vec, u·vec+vec). The
// n mod vec leftover elements are done by thread 0 of CTA 0.
func (e *elementwise) Emit(s variants.Shape, p variants.Params) (Program, error) {
	if err := e.Space(s).Check(p); err != nil {
		return Program{}, fmt.Errorf("%s: %w", e.name, err)
	}
	r := variants.NewReader(p)
	block, vec, ept, maxnreg := r.Int("block"), r.Int("vec"), r.Int("ept"), r.Int("maxnreg")
	stride := r.String("grid") == "stride"
	// Loads take the read-only path; cache=stream adds .cs to both.
	ld, st := ptx.LdOpts{NC: true}, ptx.LdOpts{}
	if r.String("cache") == "stream" {
		ld.Cache, st.Cache = "cs", "cs"
	}
	if err := r.Err(); err != nil {
		return Program{}, err
	}
	dt := s.DType
	n := s.Elems()
	units := n / vec
	chunk := block * ept
	entry := e.name + "_" + dt.String()

	m := ptx.NewModule()
	k := m.Func(entry)
	k.ReqNTid(block)
	k.MaxNReg(maxnreg)
	pdy, px, pdx := k.Param("dy", ptx.U64), k.Param("x", ptx.U64), k.Param("dx", ptx.U64)
	dy := k.Cvta(ptx.Global, k.LdParam(pdy))
	x := k.Cvta(ptx.Global, k.LdParam(px))
	dx := k.Cvta(ptx.Global, k.LdParam(pdx))
	tid := k.Mov(ptx.U32, ptx.TidX)
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	grid := max(1, (units+chunk-1)/chunk)
	first := k.Mad(ptx.U32, cta, ptx.Imm(chunk), tid)
	exact := units%chunk == 0 // no unit of any iteration falls past the end

	body := func(u0 ptx.Reg) {
		type unit struct {
			ok      ptx.Reg
			off     ptx.Reg
			dyv, xv []ptx.Reg
		}
		us := make([]unit, ept)
		// Issue every load first so ept×2 requests are in flight.
		for j := range us {
			u := k.Add(ptx.U32, u0, ptx.Imm(j*block))
			if !exact {
				us[j].ok = k.Setp("lt", ptx.U32, u, ptx.Imm(units))
			}
			us[j].off = k.MulWide(ptx.U32, u, ptx.Imm(vec*dt.Size()))
			us[j].dyv = ldVals(k, ptx.Global, dt, vec, ptx.At(k.Add(ptx.U64, dy, us[j].off), 0), us[j].ok, ld)
			us[j].xv = ldVals(k, ptx.Global, dt, vec, ptx.At(k.Add(ptx.U64, x, us[j].off), 0), us[j].ok, ld)
		}
		for j := range us {
			out := make([]ptx.Reg, vec)
			for i := range out {
				out[i] = e.emit(k, us[j].dyv[i], us[j].xv[i])
			}
			stVals(k, dt, ptx.At(k.Add(ptx.U64, dx, us[j].off), 0), out, us[j].ok, st)
		}
	}
	if units > 0 {
		if stride {
			step := k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.NCtaidX), ptx.Imm(chunk))
			u0 := k.Mov(ptx.U32, first)
			k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, u0, ptx.Imm(units)) }, func() {
				body(u0)
				k.MovTo(u0, k.Add(ptx.U32, u0, step))
			})
		} else {
			body(first)
		}
	}
	if rem := n % vec; rem > 0 {
		k.Comment("%d leftover elements, done by thread 0 of CTA 0", rem)
		k.If(k.Setp("eq", ptx.U32, first, ptx.Imm(0)), func() {
			for i := units * vec; i < n; i++ {
				off := int64(i * dt.Size())
				a := ldVals(k, ptx.Global, dt, 1, ptx.At(k.Add(ptx.U64, dy, ptx.Imm(off)), 0), ptx.Reg{}, ld)
				b := ldVals(k, ptx.Global, dt, 1, ptx.At(k.Add(ptx.U64, x, ptx.Imm(off)), 0), ptx.Reg{}, ld)
				stVals(k, dt, ptx.At(k.Add(ptx.U64, dx, ptx.Imm(off)), 0), []ptx.Reg{e.emit(k, a[0], b[0])}, ptx.Reg{}, st)
			}
		})
	}
	built, err := m.Build()
	if err != nil {
		return Program{}, fmt.Errorf("%s %s: %w", e.name, p, err)
	}
	l := Launch{Entry: entry, Block: [3]int{block, 1, 1}, Args: []Arg{{Buffer: "dy"}, {Buffer: "x"}, {Buffer: "dx"}}}
	if stride {
		// One full-occupancy wave (2048 threads per SM), never more CTAs
		// than there is work for.
		l.GridPerSM = 2048 / block
		if grid < l.GridPerSM {
			l.GridPerSM = 0
		}
	}
	l.Grid = [3]int{grid, 1, 1}
	return Program{PTX: built.String(), Launches: []Launch{l}}, nil
}

func checkDType(f Family, dt dtype.DType) error {
	for _, d := range f.DTypes() {
		if d == dt {
			return nil
		}
	}
	return fmt.Errorf("%s does not support dtype %v (dtypes: %v)", f.Name(), dt, f.DTypes())
}

func dimNames(sp variants.Spec) []string {
	var n []string
	for _, d := range sp.Dims {
		n = append(n, d.Name)
	}
	return n
}

// log2e is log2(e) rounded to f32.
const log2e = float32(math.Log2E)
