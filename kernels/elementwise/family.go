package elementwise

import (
	"math"

	"github.com/gradtune/gradtune/contract"
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
	n := s.elemsExpr()
	return []kernels.Buffer{
		{Name: "dy", DType: s.DType, Elems: n, Role: kernels.Input},
		{Name: "x", DType: s.DType, Elems: n, Role: kernels.Input},
		{Name: "dx", DType: s.DType, Elems: n, Role: kernels.Output},
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

// runtimeDim is the dim the programs take at run time, the token dim: m
// for an [m × n] tensor, n for a flat one.
func (s Shape) runtimeDim() string {
	if s.M > 0 {
		return "m"
	}
	return "n"
}

// perToken is the elements per unit of the runtime dim: n for an [m × n]
// tensor, 1 for a flat one.
func (s Shape) perToken() int {
	if s.M > 0 {
		return s.N
	}
	return 1
}

// elemsExpr is the element count as an expression of the runtime dim.
func (s Shape) elemsExpr() contract.Expr {
	return contract.Var(s.runtimeDim()).TimesInt(s.perToken())
}

// kernel is the emission state of one activation kernel.
type kernel struct {
	e         *family
	k         *ptx.Func
	dt        dtype.DType
	block     int
	vec, ept  int
	ld, st    ptx.LdOpts
	dy, x, dx ptx.Reg // global addresses
	// elems and units are the element and vector-unit counts (u32, from
	// the runtime dim); a thread whose first unit is below fullEnd has
	// all its ept units in range.
	elems, units, fullEnd ptx.Reg
}

// Emit generates one variant (see the package doc for the work split).
// The PTX takes the runtime dim as its last parameter: the element count,
// the unit count and every bound are computed from it.
func (e *family) Emit(s Shape, p Params) (kernels.Program, error) {
	dt, dim := s.DType, s.runtimeDim()
	entry := e.name + "_" + dt.String()
	m := ptx.NewModule()
	kn := &kernel{e: e, k: m.Func(entry), dt: dt, block: p.Block, vec: p.Vec, ept: p.EPT, ld: ptx.LdOpts{NC: true}}
	// Loads take the read-only path; cache=stream adds .cs to both.
	if p.Cache == CacheStream {
		kn.ld.Cache, kn.st.Cache = ptx.CacheStreaming, ptx.CacheStreaming
	}
	k := kn.k
	k.ReqNTid(p.Block)
	k.MaxNReg(p.MaxNReg)
	kn.dy, kn.x, kn.dx = gen.Param(k, "dy"), gen.Param(k, "x"), gen.Param(k, "dx")
	kn.counts(k.LdParam(k.Param(dim, ptx.U32)), s.perToken())
	tid := k.Mov(ptx.U32, ptx.TidX)
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	chunk := p.Block * p.EPT
	first := k.Mad(ptx.U32, cta, ptx.Imm(chunk), tid)
	if p.Grid == GridStride {
		kn.strided(first, chunk)
	} else {
		kn.once(first)
	}
	if s.perToken()%p.Vec != 0 {
		kn.leftover(first)
	}
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	units := contract.Div(s.elemsExpr(), contract.Int(p.Vec))
	l := kernels.Launch{
		Entry: entry, Grid: [3]contract.Expr{contract.CeilDiv(units, contract.Int(chunk)), contract.Int(1), contract.Int(1)},
		Block: [3]int{p.Block, 1, 1},
		Args:  []kernels.Arg{{Buffer: "dy"}, {Buffer: "x"}, {Buffer: "dx"}, {Scalar: contract.Var(dim), Type: contract.U32}},
	}
	if p.Grid == GridStride {
		// One full-occupancy wave (2048 threads per SM), never more CTAs
		// than there is work for (contract.Resolve caps the grid).
		l.GridPerSM = 2048 / p.Block
	}
	return kernels.Program{PTX: built.String(), Launches: []kernels.Launch{l}, RuntimeDims: []string{dim}}, nil
}

// counts derives the element count (tokens·perToken), the unit count and
// fullEnd from the runtime dim.
func (kn *kernel) counts(tokens ptx.Reg, perToken int) {
	k := kn.k
	kn.elems = tokens
	if perToken > 1 {
		kn.elems = k.Mul(ptx.U32, tokens, ptx.Imm(perToken))
	}
	kn.units = kn.elems
	if kn.vec > 1 {
		kn.units = k.Shr(ptx.U32, kn.elems, ptx.Imm(gen.Log2(kn.vec)))
	}
	kn.fullEnd = kn.units
	if span := (kn.ept - 1) * kn.block; span > 0 {
		// units − span, or 0 when there are fewer units.
		kn.fullEnd = k.Sub(ptx.U32, k.Max(ptx.U32, kn.units, ptx.Imm(span)), ptx.Imm(span))
	}
}

// once: each thread does the ept units from first, unguarded when all are
// in range, else those in range.
func (kn *kernel) once(first ptx.Reg) {
	k := kn.k
	full := k.Setp("lt", ptx.U32, first, kn.fullEnd)
	if kn.ept == 1 {
		k.If(full, func() { kn.body(first, false) })
		return
	}
	k.IfElse(full, func() { kn.body(first, false) }, func() { kn.tail(first) })
}

// strided: a grid-stride loop over the iterations whose units are all in
// range (unguarded), then the one iteration that may hold the last units.
func (kn *kernel) strided(first ptx.Reg, chunk int) {
	k := kn.k
	step := k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.NCtaidX), ptx.Imm(chunk))
	u0 := k.Mov(ptx.U32, first)
	k.While(func() ptx.Reg { return k.Setp("lt", ptx.U32, u0, kn.fullEnd) }, func() {
		kn.body(u0, false)
		k.MovTo(u0, k.Add(ptx.U32, u0, step))
	})
	// The loop ends at the first u0 whose last unit is past the end; the
	// next iteration's units would all be (step ≥ chunk).
	if kn.ept > 1 {
		kn.tail(u0)
	}
}

// tail does the units from u0 that are in range.
func (kn *kernel) tail(u0 ptx.Reg) {
	k := kn.k
	k.If(k.Setp("lt", ptx.U32, u0, kn.units), func() { kn.body(u0, true) })
}

// body does units u0, u0+block, …: all loads issued first, so that ept×2
// requests are in flight. guarded: unit 0 is known in range, the others
// are checked against the unit count.
func (kn *kernel) body(u0 ptx.Reg, guarded bool) {
	k, dt, vec := kn.k, kn.dt, kn.vec
	type unit struct {
		ok, off ptx.Reg
		dyv, xv []ptx.Reg
	}
	us := make([]unit, kn.ept)
	for j := range us {
		u := k.Add(ptx.U32, u0, ptx.Imm(j*kn.block))
		if guarded && j > 0 {
			us[j].ok = k.Setp("lt", ptx.U32, u, kn.units)
		}
		us[j].off = k.MulWide(ptx.U32, u, ptx.Imm(vec*dt.Size()))
		us[j].dyv = gen.LdVals(k, ptx.Global, dt, vec, ptx.At(k.Add(ptx.U64, kn.dy, us[j].off), 0), us[j].ok, kn.ld)
		us[j].xv = gen.LdVals(k, ptx.Global, dt, vec, ptx.At(k.Add(ptx.U64, kn.x, us[j].off), 0), us[j].ok, kn.ld)
	}
	for j := range us {
		out := make([]ptx.Reg, vec)
		for i := range out {
			out[i] = kn.e.emit(k, us[j].dyv[i], us[j].xv[i])
		}
		gen.StVals(k, dt, ptx.At(k.Add(ptx.U64, kn.dx, us[j].off), 0), out, us[j].ok, kn.st)
	}
}

// leftover: the elems mod vec elements past the last unit (fewer than
// vec), done by thread 0 of CTA 0, each guarded by the element count.
func (kn *kernel) leftover(first ptx.Reg) {
	k, dt := kn.k, kn.dt
	k.Comment("up to %d leftover elements, done by thread 0 of CTA 0", kn.vec-1)
	k.If(k.Setp("eq", ptx.U32, first, ptx.Imm(0)), func() {
		i0 := k.Shl(ptx.U32, kn.units, ptx.Imm(gen.Log2(kn.vec)))
		off := k.MulWide(ptx.U32, i0, ptx.Imm(dt.Size()))
		dy, x, dx := k.Add(ptx.U64, kn.dy, off), k.Add(ptx.U64, kn.x, off), k.Add(ptx.U64, kn.dx, off)
		for i := range kn.vec - 1 {
			ok := k.Setp("lt", ptx.U32, k.Add(ptx.U32, i0, ptx.Imm(i)), kn.elems)
			at := int64(i * dt.Size())
			a := gen.LdVals(k, ptx.Global, dt, 1, ptx.At(dy, at), ok, kn.ld)
			b := gen.LdVals(k, ptx.Global, dt, 1, ptx.At(x, at), ok, kn.ld)
			gen.StVals(k, dt, ptx.At(dx, at), []ptx.Reg{kn.e.emit(k, a[0], b[0])}, ok, kn.st)
		}
	})
}

// log2e is log2(e) rounded to f32.
const log2e = float32(math.Log2E)
