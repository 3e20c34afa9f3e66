package elementwise

import (
	"math"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
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

// operand is one buffer of a map: its name and, for an input, the range
// its random values are drawn from.
type operand struct {
	name   string
	lo, hi float64
}

// family is an elementwise map over a flat or [m × n] tensor: every
// output element depends only on the inputs' elements at the same index.
// The math is done in f32 whatever the storage type.
type family struct {
	name, doc string
	ins       []operand
	outs      []string
	// emit computes the outputs from the inputs (f32 registers).
	emit mapFunc
	// ref is the float64 reference of one element: the outputs from the
	// inputs.
	ref func(in []float64) []float64
	// atolF32 widens the f32 tolerance for families built on approximate
	// instructions.
	atolF32 float64
	// widths are the n of a preset's [tokens × n] shapes.
	widths func(p variants.Preset) []int
}

// names lists the operands: the inputs, then the outputs.
func (e *family) names() []string {
	var out []string
	for _, in := range e.ins {
		out = append(out, in.name)
	}
	return append(out, e.outs...)
}

func (e *family) Name() string          { return e.name }
func (e *family) Doc() string           { return e.doc }
func (e *family) DTypes() []dtype.DType { return []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} }

// Shapes yields the [tokens × n] tensors of the preset, one per width.
func (e *family) Shapes(p variants.Preset, dt dtype.DType) []Shape {
	var out []Shape
	for _, n := range e.widths(p) {
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
	var out []kernels.Buffer
	for _, in := range e.ins {
		out = append(out, kernels.Buffer{Name: in.name, DType: s.DType, Elems: n, Role: kernels.Input})
	}
	for _, name := range e.outs {
		out = append(out, kernels.Buffer{Name: name, DType: s.DType, Elems: n, Role: kernels.Output})
	}
	return out
}

func (e *family) Inputs(s Shape, seed uint64) map[string][]float64 {
	n, key := s.elems(), variants.ShapeOf(s).Key()
	out := map[string][]float64{}
	for _, in := range e.ins {
		out[in.name] = kernels.Uniform(s.DType, n, in.lo, in.hi, seed, key+"/"+in.name)
	}
	return out
}

// Reference maps every element, in chunks on every processor (a map of
// 18 M elements is seconds on one core).
func (e *family) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	n := s.elems()
	out := map[string][]float64{}
	ins, outs := make([][]float64, len(e.ins)), make([][]float64, len(e.outs))
	for j, op := range e.ins {
		ins[j] = in[op.name]
	}
	for o, name := range e.outs {
		outs[o] = make([]float64, n)
		out[name] = outs[o]
	}
	const chunk = 1 << 16
	kernels.ParallelRows((n+chunk-1)/chunk, func(c int) {
		args := make([]float64, len(ins))
		for i := c * chunk; i < min(n, (c+1)*chunk); i++ {
			for j := range ins {
				args[j] = ins[j][i]
			}
			for o, v := range e.ref(args) {
				outs[o][i] = v
			}
		}
	})
	return out
}

// Cost: every input read and every output written once.
func (e *family) Cost(s Shape) kernels.Cost {
	return kernels.Cost{Bytes: int64(len(e.ins)+len(e.outs)) * int64(s.elems()) * int64(s.DType.Size())}
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
func (s Shape) elemsExpr() configs.Expr {
	return configs.Var(s.runtimeDim()).TimesInt(s.perToken())
}

// Emit generates one variant (see the package doc for the work split).
// The PTX takes the runtime dim as its last parameter: the element count,
// the unit count and every bound are computed from it.
func (e *family) Emit(s Shape, p Params) (kernels.Program, error) {
	dt, dim := s.DType, s.runtimeDim()
	entry := e.name + "_" + dt.String()
	m := ptx.NewModule()
	kn := newKernel(m, entry, dt, p, len(e.ins), e.emit)
	k := kn.k
	ptrs := kn.params(e.names())
	elems := k.LdParam(k.Param(dim, ptx.U32))
	if s.perToken() > 1 {
		elems = k.Mul(ptx.U32, elems, ptx.Imm(s.perToken()))
	}
	units := elems
	if p.Vec > 1 {
		units = k.Shr(ptx.U32, elems, ptx.Imm(gen.Log2(p.Vec)))
	}
	kn.setUnits(units)
	kn.place = flat(k, ptrs, p.Vec*dt.Size())
	first := kn.run(p.Grid)
	if s.perToken()%p.Vec != 0 {
		kn.leftover(first, ptrs, elems)
	}
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	work := configs.Div(s.elemsExpr(), configs.Int(p.Vec))
	return program(built.String(), entry, e.names(), dim, work, p), nil
}

// program is the one-launch program of entry over units (an expression
// of the runtime dim dim) with p's grid mode: the operands' pointers in
// order, then dim (u32).
func program(ptxText, entry string, operands []string, dim string, units configs.Expr, p Params) kernels.Program {
	var args []kernels.Arg
	for _, name := range operands {
		args = append(args, kernels.Arg{Buffer: name})
	}
	args = append(args, kernels.Arg{Scalar: configs.Var(dim), Type: configs.U32})
	l := kernels.Launch{
		Entry: entry, Grid: [3]configs.Expr{configs.CeilDiv(units, configs.Int(p.Block*p.EPT)), configs.Int(1), configs.Int(1)},
		Block: [3]int{p.Block, 1, 1},
		Args:  args,
	}
	if p.Grid == GridStride {
		// One full-occupancy wave (2048 threads per SM), never more CTAs
		// than there is work for (configs.Resolve caps the grid).
		l.GridPerSM = hopper.ThreadsPerSM / p.Block
	}
	return kernels.Program{PTX: ptxText, Launches: []kernels.Launch{l}, RuntimeDims: []string{dim}}
}

// flat places unit u of every operand at u·stride bytes from its pointer.
func flat(k *ptx.Func, ptrs []ptx.Reg, stride int) placer {
	return func(u ptx.Reg) func(int) ptx.Addr {
		off := k.MulWide(ptx.U32, u, ptx.Imm(stride))
		return func(i int) ptx.Addr { return ptx.At(k.Add(ptx.U64, ptrs[i], off), 0) }
	}
}

// leftover: the elems mod vec elements past the last unit (fewer than
// vec), done by thread 0 of CTA 0, each guarded by the element count.
func (kn *kernel) leftover(first ptx.Reg, ptrs []ptx.Reg, elems ptx.Reg) {
	k, dt := kn.k, kn.dt
	k.Comment("up to %d leftover elements, done by thread 0 of CTA 0", kn.vec-1)
	k.If(k.Setp("eq", ptx.U32, first, ptx.Imm(0)), func() {
		i0 := k.Shl(ptx.U32, kn.units, ptx.Imm(gen.Log2(kn.vec)))
		off := k.MulWide(ptx.U32, i0, ptx.Imm(dt.Size()))
		at := make([]ptx.Reg, len(ptrs))
		for i, p := range ptrs {
			at[i] = k.Add(ptx.U64, p, off)
		}
		for e := range kn.vec - 1 {
			ok := k.Setp("lt", ptx.U32, k.Add(ptx.U32, i0, ptx.Imm(e)), elems)
			elem := func(i int) ptx.Addr { return ptx.At(at[i], int64(e*dt.Size())) }
			var in [][]ptx.Reg
			for i := range kn.nIn {
				in = append(in, gen.LdVals(k, ptx.Global, dt, 1, elem(i), ok, kn.ld))
			}
			kn.store(elem, kn.lanes(in, 1), ok)
		}
	})
}

// log2e is log2(e) rounded to f32.
const log2e = float32(math.Log2E)
