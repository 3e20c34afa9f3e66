package elementwise

import (
	"github.com/gradtune/gradtune/contract"
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// Shape is a flat tensor of n elements, or an [m × n] one.
type Shape struct {
	M     int `dim:"m,optional"`
	N     int `dim:"n"`
	DType dtype.DType
}

// elems is the element count.
func (s Shape) elems() int { return max(s.M, 1) * s.N }

// Grid says how the grid covers the elements.
type Grid string

// The grid modes.
const (
	GridOnce   Grid = "once"   // one unit of work per thread, as many CTAs as that needs
	GridStride Grid = "stride" // a full-occupancy grid walking the elements
)

// Cache is the caching of loads and stores.
type Cache string

// The cache modes.
const (
	CacheDefault Cache = "default"
	CacheStream  Cache = "stream" // .cs: evict first
)

// Params is one variant: threads per block, elements per vector access,
// vector accesses per thread per iteration (unrolled, all loads issued
// before any math), a one-shot grid or a grid-stride loop over a
// full-occupancy grid, the register cap and the cache policy.
type Params struct {
	Block   int   `axis:"block" values:"128,256" doc:"threads per block"`
	Vec     int   `axis:"vec" doc:"elements per vector access (16 bytes at most)"`
	EPT     int   `axis:"ept" values:"1,2,4" doc:"vector accesses per thread per iteration"`
	Grid    Grid  `axis:"grid" values:"once,stride" doc:"one-shot grid or grid-stride loop over a full-occupancy grid"`
	MaxNReg int   `axis:"maxnreg" values:"0,32,64" doc:"register cap (0 = none)"`
	Cache   Cache `axis:"cache" values:"default,stream" doc:"default caching, or streaming (.cs: evict first) loads and stores"`
}

// family is an activation backward: dx[i] depends only on dy[i] and x[i].
// The math is done in f32 whatever the storage type.
type family struct {
	name, doc string
	// emit computes dx from dy and x (f32 registers).
	emit func(k *ptx.Func, dy, x ptx.Reg) ptx.Reg
	// ref is the float64 reference of one element.
	ref func(dy, x float64) float64
	// atolF32 widens the f32 tolerance for families built on approximate
	// instructions.
	atolF32 float64
}

func (e *family) Name() string          { return e.name }
func (e *family) Doc() string           { return e.doc }
func (e *family) DTypes() []dtype.DType { return []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} }

// Shapes yields the MLP intermediate [tokens × intermediate] and the hidden
// [tokens × hidden] activations of the preset.
func (e *family) Shapes(p variants.Preset, dt dtype.DType) []Shape {
	var out []Shape
	for _, n := range []int{p.Intermediate, p.Hidden} {
		if n > 0 && p.Tokens > 0 {
			out = append(out, Shape{M: p.Tokens, N: n, DType: dt})
		}
	}
	return out
}

// CheckShape keeps element indices within u32 arithmetic.
func (e *family) CheckShape(s Shape) error {
	return gen.CheckIndexable([]string{"m", "n"}, s.M, s.N)
}

// Space: vector widths up to 16 bytes; every point is valid.
func (e *family) Space(s Shape) variants.Typed[Params] {
	vecs := []int{1, 2, 4}
	if s.DType.Size() == 2 {
		vecs = []int{2, 4, 8}
	}
	return variants.Typed[Params]{Values: map[string][]string{"vec": variants.Ints(vecs...)}}
}

func (e *family) Buffers(s Shape) []kernels.Buffer {
	n := s.elems()
	return []kernels.Buffer{
		{Name: "dy", DType: s.DType, Elems: contract.Int(n), Role: kernels.Input},
		{Name: "x", DType: s.DType, Elems: contract.Int(n), Role: kernels.Input},
		{Name: "dx", DType: s.DType, Elems: contract.Int(n), Role: kernels.Output},
	}
}

func (e *family) Inputs(s Shape, seed uint64) map[string][]float64 {
	n, key := s.elems(), variants.ShapeOf(s).Key()
	return map[string][]float64{
		"dy": kernels.Uniform(s.DType, n, -1, 1, seed, key+"/dy"),
		"x":  kernels.Uniform(s.DType, n, -4, 4, seed, key+"/x"),
	}
}

func (e *family) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	dy, x := in["dy"], in["x"]
	dx := make([]float64, len(x))
	for i := range x {
		dx[i] = e.ref(dy[i], x[i])
	}
	return map[string][]float64{"dx": dx}
}

func (e *family) Cost(s Shape) kernels.Cost {
	return kernels.Cost{Bytes: 3 * int64(s.elems()) * int64(s.DType.Size())}
}

// Tolerance: f32 outputs within 1e-5 (plus the family's allowance for
// approximate instructions); f16 and bf16 outputs within one unit in the
// last place of the stored type.
func (e *family) Tolerance(s Shape, _ string) kernels.Tolerance {
	switch s.DType {
	case dtype.F16, dtype.BF16:
		return kernels.Tolerance{Atol: 1e-4, Rtol: 2 * s.DType.Epsilon()}
	}
	return kernels.Tolerance{Atol: 1e-5 + e.atolF32, Rtol: 1e-5}
}

// Emit generates one variant. Every thread handles ept vector units of vec
// elements; unit u of iteration covers elements [u·vec, u·vec+vec). The
// n mod vec leftover elements are done by thread 0 of CTA 0.
func (e *family) Emit(s Shape, p Params) (kernels.Program, error) {
	block, vec, ept := p.Block, p.Vec, p.EPT
	stride := p.Grid == GridStride
	// Loads take the read-only path; cache=stream adds .cs to both.
	ld, st := ptx.LdOpts{NC: true}, ptx.LdOpts{}
	if p.Cache == CacheStream {
		ld.Cache, st.Cache = ptx.CacheStreaming, ptx.CacheStreaming
	}
	dt := s.DType
	n := s.elems()
	units := n / vec
	chunk := block * ept
	entry := e.name + "_" + dt.String()

	m := ptx.NewModule()
	k := m.Func(entry)
	k.ReqNTid(block)
	k.MaxNReg(p.MaxNReg)
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
			us[j].dyv = gen.LdVals(k, ptx.Global, dt, vec, ptx.At(k.Add(ptx.U64, dy, us[j].off), 0), us[j].ok, ld)
			us[j].xv = gen.LdVals(k, ptx.Global, dt, vec, ptx.At(k.Add(ptx.U64, x, us[j].off), 0), us[j].ok, ld)
		}
		for j := range us {
			out := make([]ptx.Reg, vec)
			for i := range out {
				out[i] = e.emit(k, us[j].dyv[i], us[j].xv[i])
			}
			gen.StVals(k, dt, ptx.At(k.Add(ptx.U64, dx, us[j].off), 0), out, us[j].ok, st)
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
				a := gen.LdVals(k, ptx.Global, dt, 1, ptx.At(k.Add(ptx.U64, dy, ptx.Imm(off)), 0), ptx.Reg{}, ld)
				b := gen.LdVals(k, ptx.Global, dt, 1, ptx.At(k.Add(ptx.U64, x, ptx.Imm(off)), 0), ptx.Reg{}, ld)
				gen.StVals(k, dt, ptx.At(k.Add(ptx.U64, dx, ptx.Imm(off)), 0), []ptx.Reg{e.emit(k, a[0], b[0])}, ptx.Reg{}, st)
			}
		})
	}
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	l := kernels.Launch{Entry: entry, Block: [3]int{block, 1, 1}, Args: []kernels.Arg{{Buffer: "dy"}, {Buffer: "x"}, {Buffer: "dx"}}}
	if stride {
		// One full-occupancy wave (2048 threads per SM), never more CTAs
		// than there is work for.
		l.GridPerSM = 2048 / block
		if grid < l.GridPerSM {
			l.GridPerSM = 0
		}
	}
	l.Grid = contract.Grid(grid, 1, 1)
	return kernels.Program{PTX: built.String(), Launches: []kernels.Launch{l}}, nil
}

// log2e is log2(e) rounded to f32.
const log2e = float32(math.Log2E)
