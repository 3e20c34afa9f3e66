package attn

import (
	"fmt"
	"math"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// geom is a variant's work split (the package doc).
type geom struct {
	Shape
	bm, bn, warps, stages int
	threads               int
	g                     int  // query heads per KV head
	hpc                   int  // query heads per CTA: g, or a divisor of it (splitKV)
	dqTMA                 bool // dQ partials staged and added by TMA (wgmma)
	sp                    int  // s padded to a multiple of pad: a head's row of the per-query scratch
	scale                 float64
}

func newGeom(s Shape, p Params) geom {
	g := geom{Shape: s, bm: p.BM, bn: p.BN, warps: p.Warps, stages: p.Stages, threads: 32 * p.Warps,
		g: s.HQ / s.HK, hpc: p.Heads, dqTMA: p.DQ == "tma", sp: gen.CeilDiv(s.S, pad) * pad, scale: 1 / math.Sqrt(float64(s.D))}
	if g.hpc == 0 {
		g.hpc = g.g
	}
	return g
}

// splitKV says whether a KV head's query heads are split over CTAs: their
// dK and dV partials are then added into dk32 and dv32 (f32, zeroed by the
// preprocess) and rounded by a conversion launch.
func (g geom) splitKV() bool { return g.hpc < g.g }

// kvOut is the main kernel's dK and dV buffers.
func (g geom) kvOut() []string {
	if g.splitKV() {
		return []string{"dk32", "dv32"}
	}
	return []string{"dk", "dv"}
}

// A ring slot holds the Q and dO tiles [bm × d], then the block's base-2
// log-sum-exp and D [bm] (f32). After the ring: the K and V tiles
// [bn × d] and the dSᵀ tile [bn × bm].
func (g geom) tileQ() int  { return g.bm * g.D * 2 }
func (g geom) stage() int  { return 2*g.tileQ() + 8*g.bm }
func (g geom) tileK() int  { return g.bn * g.D * 2 }
func (g geom) kvBase() int { return g.stages * g.stage() }
func (g geom) dsBase() int { return g.kvBase() + 2*g.tileK() }
func (g geom) smem() int   { return g.dsBase() + g.bn*g.bm*2 }

// smemOf is the main kernel's dynamic shared memory under mma.
func (g geom) smemOf(mma string) int {
	if mma == WGMMA {
		return newWGLayout(g).smem()
	}
	return g.smem()
}

// Emit generates one variant: the preprocess, the main kernel and dQ's
// conversion, in one module.
func (f family) Emit(s Shape, p Params) (kernels.Program, error) {
	return emit(s, p, bugs{})
}

// bugs are the planted bugs of export_test.go.
type bugs struct {
	maskEdge bool // keys j < i visible instead of j ≤ i
	dropDQ   bool // key block 0's dQ partials not added
	noDSBar  bool // no barrier between dSᵀ's store and dQ's reads of it
}

func emit(s Shape, p Params, b bugs) (kernels.Program, error) {
	g := newGeom(s, p)
	m := ptx.NewModule()
	name := func(what string) string { return fmt.Sprintf("flash_attn_bwd_%s_%v", what, s.DType) }
	emitPre(m.Func(name("pre")), g)
	grid := func(x, y, z int) [3]configs.Expr {
		return [3]configs.Expr{configs.Int(x), configs.Int(y), configs.Int(z)}
	}
	nb := gen.CeilDiv(s.S, g.bn)
	main := kernels.Launch{Entry: name("main")}
	if p.MMA == WGMMA {
		emitMainWG(m.Func(main.Entry), g, b)
		l := newWGLayout(g)
		main.Grid = grid(s.HQ/g.hpc, s.B, nb)
		main.Block, main.SharedBytes = [3]int{l.split().Threads(), 1, 1}, l.smem()
		main.Args = wgMaps(g)
	} else {
		emitMain(m.Func(main.Entry), g, b)
		main.Grid = grid(nb, s.HK, s.B)
		main.Block, main.SharedBytes = [3]int{g.threads, 1, 1}, g.smem()
		main.Args = bufferArgs("q", "k", "v", "do", "lse2", "dd")
	}
	main.Args = append(main.Args, bufferArgs(append([]string{"dq32"}, g.kvOut()...)...)...)
	qElems, kvElems := s.B*s.S*s.HQ*s.D, s.B*s.S*s.HK*s.D
	emitConvert(m.Func(name("dq")), g, qElems)
	if g.splitKV() {
		emitConvert(m.Func(name("kv")), g, kvElems)
	}
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, fmt.Errorf("building: %w", err)
	}
	rows := s.B * s.HQ * g.sp
	convert := func(what string, n int, src, dst string) kernels.Launch {
		return kernels.Launch{Entry: name(what), Grid: grid(gen.CeilDiv(n, 8*convThreads), 1, 1),
			Block: [3]int{convThreads, 1, 1}, Args: bufferArgs(src, dst)}
	}
	f32 := func(name string, n int) kernels.Buffer {
		return kernels.Buffer{Name: name, DType: dtype.F32, Elems: configs.Int(n), Role: kernels.Scratch}
	}
	pre := kernels.Launch{Entry: name("pre"), Grid: grid(rows/g.preRows(), 1, 1),
		Block: [3]int{preThreads, 1, 1}, Args: bufferArgs("o", "do", "lse", "lse2", "dd", "dq32")}
	bufs := []kernels.Buffer{f32("lse2", rows), f32("dd", rows), f32("dq32", qElems)}
	after := []kernels.Launch{convert("dq", qElems, "dq32", "dq")}
	if g.splitKV() {
		pre.Args = append(pre.Args, bufferArgs("dk32", "dv32")...)
		bufs = append(bufs, f32("dk32", kvElems), f32("dv32", kvElems))
		after = append(after, convert("kv", kvElems, "dk32", "dk"), convert("kv", kvElems, "dv32", "dv"))
	}
	return kernels.Program{PTX: built.String(), Launches: append([]kernels.Launch{pre, main}, after...), Buffers: bufs}, nil
}

// bufferArgs is the arguments naming buffers.
func bufferArgs(names ...string) []kernels.Arg {
	var out []kernels.Arg
	for _, n := range names {
		out = append(out, kernels.Arg{Buffer: n})
	}
	return out
}

// The preprocess: d/8 threads a (query, head) row of the padded scratch,
// preThreads a CTA.
const preThreads = 256

func (g geom) preRows() int { return preThreads / (g.D / 8) }

// emitPre writes the preprocess: for row r = (bi·hq + h)·sp + i of the
// padded scratch, D = Σ_c dO·O (8 columns a thread by fma, then a
// butterfly over the row's threads) and lse2 = lse·log₂e, zeroing the
// row's dq32; rows past s get D = 0 and lse2 = +∞ (P = 0 there).
func emitPre(k *ptx.Func, g geom) {
	o, do, lse := gen.Param(k, "o"), gen.Param(k, "do"), gen.Param(k, "lse")
	lse2, dd, dq32 := gen.Param(k, "lse2"), gen.Param(k, "dd"), gen.Param(k, "dq32")
	k.ReqNTid(preThreads)
	tpr := g.D / 8
	tid := k.Mov(ptx.U32, ptx.TidX)
	r := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(int64(g.preRows())), k.Shr(ptx.U32, tid, ptx.Imm(int64(gen.Log2(tpr)))))
	part := k.And(ptx.U32, tid, ptx.Imm(int64(tpr-1)))
	bh := k.Div(ptx.U32, r, ptx.Imm(int64(g.sp)))
	i := k.Sub(ptx.U32, r, k.Mul(ptx.U32, bh, ptx.Imm(int64(g.sp))))
	bi := k.Div(ptx.U32, bh, ptx.Imm(int64(g.HQ)))
	h := k.Sub(ptx.U32, bh, k.Mul(ptx.U32, bi, ptx.Imm(int64(g.HQ))))
	ok := k.Setp("lt", ptx.U32, i, ptx.Imm(int64(g.S)))
	// element (token bi·s + i, head h, column 8·part)
	e := k.Mad(ptx.U32, k.Mad(ptx.U32, k.Mad(ptx.U32, bi, ptx.Imm(int64(g.S)), i), ptx.Imm(int64(g.HQ)), h), ptx.Imm(int64(g.D)), k.Shl(ptx.U32, part, ptx.Imm(3)))
	at := func(base ptx.Reg, size int) ptx.Addr {
		return ptx.At(k.Add(ptx.U64, base, k.MulWide(ptx.U32, e, ptx.Imm(int64(size)))), 0)
	}
	ov := gen.LdVals(k, ptx.Global, g.DType, 8, at(o, 2), ok, gen.LdNC)
	dv := gen.LdVals(k, ptx.Global, g.DType, 8, at(do, 2), ok, gen.LdNC)
	sum := k.Mul(ptx.F32, ov[0], dv[0])
	for c := 1; c < 8; c++ {
		sum = k.Fma(ptx.F32, ov[c], dv[c], sum)
	}
	for w := 1; w < tpr; w *= 2 {
		sum = k.Add(ptx.F32, sum, k.BitsToF32(k.ShflSync("bfly", sum, ptx.Imm(int64(w)), ptx.Imm(31), 0xffffffff)))
	}
	z := k.Mov(ptx.F32, ptx.F32Imm(0))
	zeros := []ptx.Reg{z, z, z, z, z, z, z, z}
	gen.StF32(k, ptx.Global, at(dq32, 4), zeros, ok)
	if g.splitKV() {
		// rows of KV heads h < hk: the same token's dK and dV rows
		dk32, dv32 := gen.Param(k, "dk32"), gen.Param(k, "dv32")
		kv := k.And(ptx.Pred, ok, k.Setp("lt", ptx.U32, h, ptx.Imm(int64(g.HK))))
		ekv := k.Mad(ptx.U32, k.Mad(ptx.U32, k.Mad(ptx.U32, bi, ptx.Imm(int64(g.S)), i), ptx.Imm(int64(g.HK)), h), ptx.Imm(int64(g.D)), k.Shl(ptx.U32, part, ptx.Imm(3)))
		for _, buf := range []ptx.Reg{dk32, dv32} {
			gen.StF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, buf, k.MulWide(ptx.U32, ekv, ptx.Imm(4))), 0), zeros, kv)
		}
	}
	k.If(k.Setp("eq", ptx.U32, part, ptx.Imm(0)), func() {
		l := k.Mov(ptx.F32, ptx.F32Imm(float32(math.Inf(1))))
		k.If(ok, func() {
			src := k.Add(ptx.U64, lse, k.MulWide(ptx.U32, k.Mad(ptx.U32, bh, ptx.Imm(int64(g.S)), i), ptx.Imm(4)))
			v := k.Ld(ptx.Global, ptx.F32, 1, ptx.At(src, 0), gen.LdNC)[0]
			k.MovTo(l, k.Mul(ptx.F32, v, gen.F32Imm(math.Log2E)))
		})
		d := k.Selp(ptx.F32, sum, z, ok)
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, lse2, k.MulWide(ptx.U32, r, ptx.Imm(4))), 0), []ptx.Reg{l})
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, dd, k.MulWide(ptx.U32, r, ptx.Imm(4))), 0), []ptx.Reg{d})
	})
}

// convThreads is the conversion's CTA; each thread takes 8 elements.
const convThreads = 256

// emitConvert writes a conversion of n elements: dst = src (f32)
// rounded to the dtype.
func emitConvert(k *ptx.Func, g geom, n int) {
	src, dst := gen.Param(k, "src"), gen.Param(k, "dst")
	k.ReqNTid(convThreads)
	e := k.Shl(ptx.U32, k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(convThreads), k.Mov(ptx.U32, ptx.TidX)), ptx.Imm(3))
	k.If(k.Setp("lt", ptx.U32, e, ptx.Imm(int64(n))), func() {
		v := gen.LdF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, src, k.MulWide(ptx.U32, e, ptx.Imm(4))), 0), 8, ptx.Reg{})
		gen.StVals(k, g.DType, ptx.At(k.Add(ptx.U64, dst, k.MulWide(ptx.U32, e, ptx.Imm(int64(g.DType.Size())))), 0), v, ptx.Reg{})
	})
}
