package lora

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// geom is a variant's work split (the package doc).
type geom struct {
	dt                  dtype.DType
	in, out, r, rp      int // rp: r rounded up to a power of two, the pitch of r-wide tiles
	bt, warps, stages   int
	osplit, isplit      int
	rg                  int // row blocks an x-kernel CTA takes
	threads, wrows, mt  int // wrows = bt/warps rows per warp, mt = wrows/16 m16 blocks
	xThreads            int // the x kernel's: threads, or one warpgroup with wgmma
	kSteps              int // ⌈r/16⌉ k16 steps over the rank
	rHalf               bool
	tileBytes, rowBytes int // a [bt × 64] tile; one 64-column row
	dx, pdl             bool
	maxnreg             int  // .maxnreg of the dY and x kernels; 0: none
	wgmma               bool // the x kernel multiplies by wgmma (one warpgroup)
	tparts              int  // with wgmma: parts of the rows an x-kernel CTA of one chunk streams; 0: row groups
	tma                 bool // with wgmma over row groups: TMA fills the x kernel's ring
	dytma               bool // the dY kernel is TMA-fed wgmma (dyload=tma)
	dbsplit             int  // with dytma: dB's own CTAs a 64-column chunk of out; 0: none
	fold                bool // the TMA x kernel finalizes: no third launch
	hp                  int  // the pitch of dh's hi and lo tiles: rp, or 64 with wgmma
	ar                  int  // the A tile's rows: r, or r rounded up to 16 with wgmma
}

func newGeom(s Shape, p Params) geom {
	g := geom{dt: s.DType, in: s.In, out: s.Out, r: s.R, rp: max(8, gen.Pow2Ceil(s.R)),
		bt: p.BT, warps: p.Warps, stages: p.Stages, osplit: p.OSplit, isplit: p.ISplit, rg: max(p.RG, 1), dx: s.dx(), pdl: p.PDL, maxnreg: p.MaxNReg}
	g.threads, g.wrows = 32*p.Warps, p.BT/p.Warps
	g.mt = g.wrows / 16
	g.kSteps, g.rHalf = gen.CeilDiv(s.R, 16), s.R%16 == 8
	g.rowBytes = chunk * 2
	g.tileBytes = p.BT * g.rowBytes
	g.hp, g.ar, g.xThreads = g.rp, g.r, g.threads
	if p.MMA == "wgmma" {
		g.wgmma, g.hp, g.ar, g.tparts, g.xThreads = true, chunk, 16*g.kSteps, p.TParts, 128
		if p.XLoad == "tma" {
			g.tma, g.xThreads = true, 256 // a producer warpgroup and a consumer
		}
	}
	g.dytma, g.fold, g.dbsplit = p.DYLoad == "tma", p.Fold, p.DBSplit
	return g
}

// The dY kernel's ring slot: a dY tile [bt × 64], then a B tile [64 × r]
// of pitch rp; after the ring, the h tile [bt × r] of pitch rp.
// With dyload=tma the B and h tiles are 64 columns wide (the rank
// padded), every tile 1024-aligned from a base the kernel rounds up, and
// the ring's mbarriers and h's follow the h tile. With dbsplit > 0 a
// slot holds either a dh CTA's dY and B tiles or a dB CTA's dY and h
// tiles, and no CTA keeps an h tile beside the ring.
func (g geom) stageDY() int {
	switch {
	case g.dytma && g.dbsplit > 0:
		return 2 * g.tileBytes // bt ≥ 64: at least a dY tile and a B tile
	case g.dytma:
		return g.tileBytes + chunk*g.rowBytes
	}
	return g.tileBytes + chunk*g.rp*2
}
func (g geom) smemDY() int {
	if g.dytma {
		return g.dyTMABars() + 16*g.stages + 8 + 1024
	}
	return g.stages*g.stageDY() + g.bt*g.rp*2
}

// The x kernel's ring slot: an x tile [bt × 64], then an A tile [ar × 64]
// (with dX only) or, streaming (tparts), dh32's rows [bt × r] f32 of
// pitch rp; after the ring, dh's hi and lo tiles [rg·bt × r] of pitch hp
// and, streaming with dX, the CTA's one A tile. With wgmma every tile
// starts at a multiple of 1024 bytes from a base the kernel rounds up
// (1024 bytes more).
func (g geom) stageX() int {
	switch {
	case g.tparts > 0:
		return g.tileBytes + g.bt*g.rp*4
	case g.dx:
		return g.tileBytes + g.ar*g.rowBytes
	}
	return g.tileBytes
}
func (g geom) smemX() int {
	b := g.stages*g.stageX() + 2*g.rg*g.bt*g.hp*2
	if g.tparts > 0 && g.dx {
		b += g.ar * g.rowBytes
	}
	if g.tma {
		b += 16 * g.stages // the ring's full and empty mbarriers
	}
	if g.fold {
		b += 4 * g.foldFlags() // the tickets drawn (static)
	}
	if g.wgmma {
		b += 1024
	}
	return b
}

// smem is the larger of the two GEMM kernels' shared memory.
func (g geom) smem() int { return max(g.smemDY(), g.smemX()) }

// Emit generates one variant: the dY kernel, the x kernel (which also
// rounds dh where its partials meet in dh32, osplit > 1) and the
// finalize of dB and dA, in one module. t is every kernel's last
// parameter.
func (f family) Emit(s Shape, p Params) (kernels.Program, error) {
	g := newGeom(s, p)
	m := ptx.NewModule()
	name := func(what string) string { return fmt.Sprintf("%s_%s_%v", f.Name(), what, s.DType) }
	emitDY(m.Func(name("dy")), g)
	emitX(m.Func(name("x")), g)
	t := configs.Var(Dim)
	end := g.finalArgs(t)
	if end != nil {
		emitFinalize(m.Func(name("end")), g.dt, end, g.pdl)
	}
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, fmt.Errorf("building: %w", err)
	}
	tArg := kernels.Arg{Scalar: t, Type: configs.U32}
	rows := configs.CeilDiv(t, configs.Int(g.bt))
	groups := rows
	if g.rg > 1 {
		groups = configs.CeilDiv(t, configs.Int(g.rg*g.bt))
	}
	gemm := func(entry string, grid configs.Expr, threads, smem int, bufs ...string) kernels.Launch {
		l := kernels.Launch{Entry: entry, Grid: [3]configs.Expr{grid, configs.Int(1), configs.Int(1)},
			Block: [3]int{threads, 1, 1}, SharedBytes: smem}
		for _, b := range bufs {
			if m, ok := g.tensorMap(b, t); ok {
				l.Args = append(l.Args, kernels.Arg{TensorMap: m})
				continue
			}
			l.Args = append(l.Args, kernels.Arg{Buffer: b})
		}
		l.Args = append(l.Args, tArg)
		return l
	}
	dh32 := kernels.Buffer{Name: "dh32", DType: dtype.F32, Elems: t.TimesInt(g.r), Role: kernels.Scratch}
	prog := kernels.Program{PTX: built.String(), RuntimeDims: []string{Dim}}
	dyBufs, dyThreads := append(operandArgs(g.dytma, "dy", "b", "h"), "scale", "dh", "dh32", "db32"), g.threads
	if g.dytma {
		dyThreads = dyTMAThreads
	}
	dyGrid := rows.TimesInt(g.osplit)
	if g.dbsplit > 0 { // dB's CTAs after dh's
		dyGrid = dyGrid.PlusInt(chunks(g.out) * g.dbsplit)
	}
	prog.Launches = append(prog.Launches, gemm(name("dy"), dyGrid, dyThreads, g.smemDY(), dyBufs...))
	if g.osplit > 1 {
		dh32.Role = kernels.State
	}
	xBufs := append(operandArgs(g.tma, "x"), "dh32", "da32")
	if g.dx {
		xBufs = append(operandArgs(g.tma, "x", "a"), "dh32", "dx", "da32")
	}
	if g.osplit > 1 {
		xBufs = append(xBufs, "dh")
	}
	if g.fold {
		xBufs = append(xBufs, "db32", "db", "da", "tickets")
	}
	xRows, xSplit := groups, g.isplit
	if g.tparts > 0 {
		xRows, xSplit = configs.Int(g.tparts), chunks(g.in)
	}
	prog.Launches = append(prog.Launches, gemm(name("x"), xRows.TimesInt(xSplit), g.xThreads, g.smemX(), xBufs...))
	if end != nil {
		prog.Launches = append(prog.Launches, finalLaunch(name("end"), end))
	}
	for i := 1; i < len(prog.Launches); i++ {
		prog.Launches[i].Dependent = g.pdl
	}
	prog.Buffers = []kernels.Buffer{dh32,
		{Name: "db32", DType: dtype.F32, Elems: configs.Int(g.out * g.r), Role: kernels.State},
		{Name: "da32", DType: dtype.F32, Elems: configs.Int(g.r * g.in), Role: kernels.State}}
	if g.fold {
		tickets := configs.Int(chunks(g.in))
		if g.osplit > 1 {
			tickets = tickets.Plus(groups)
		}
		prog.Buffers = append(prog.Buffers, kernels.Buffer{Name: "tickets", DType: dtype.I32, Elems: tickets, Role: kernels.State})
	}
	return prog, nil
}

// ring runs a cp.async ring of stages slots of stage bytes from smem over
// the chunks first .. first+cnt−1: stages−1 in flight before the loop;
// each iteration waits for its chunk, passes a barrier (after which no
// warp still reads the slot the next copy overwrites), issues the copy of
// the chunk stages−1 ahead and computes. Every iteration commits a group,
// empty or not, so that wait_group counts stay aligned. Copies issued
// before ring belong to its first group. ready, when set, runs after the
// first copies are issued and before the loop. With asyncRead (compute
// reads the slots by wgmma, the async proxy) each thread fences its
// completed copies, and its other shared-memory writes so far, for the
// async proxy before the barrier.
func ring(k *ptx.Func, smem ptx.Reg, stage, stages int, first, cnt ptx.Reg, load, compute func(slot, c ptx.Reg), ready func(), asyncRead bool) {
	for s := range stages - 1 {
		k.If(k.Setp("gt", ptx.U32, cnt, ptx.Imm(s)), func() {
			load(k.Add(ptx.U32, smem, ptx.Imm(s*stage)), k.Add(ptx.U32, first, ptx.Imm(s)))
		})
		k.CpAsyncCommit()
	}
	if ready != nil {
		ready()
	}
	end := k.Add(ptx.U32, smem, ptx.Imm(stages*stage))
	next := func(slot ptx.Reg) {
		k.MovTo(slot, k.Add(ptx.U32, slot, ptx.Imm(stage)))
		k.MovTo(slot, k.Selp(ptx.U32, smem, slot, k.Setp("eq", ptx.U32, slot, end)))
	}
	rd := k.Mov(ptx.U32, smem)
	wr := k.Add(ptx.U32, smem, ptx.Imm((stages-1)*stage))
	k.For(ptx.U32, ptx.Imm(0), cnt, ptx.Imm(1), func(it ptx.Reg) {
		k.CpAsyncWait(stages - 2)
		if asyncRead {
			k.FenceProxyAsync()
		}
		k.BarSync(0)
		ahead := k.Add(ptx.U32, it, ptx.Imm(stages-1))
		k.If(k.Setp("lt", ptx.U32, ahead, cnt), func() { load(wr, k.Add(ptx.U32, first, ahead)) })
		k.CpAsyncCommit()
		compute(rd, k.Add(ptx.U32, first, it))
		next(rd)
		next(wr)
	})
	k.CpAsyncWait(0)
}

// cta is a GEMM kernel's CTA: its row group's first row (a group is rows
// rows) and its share of the 64-column chunks of a row of n (split CTAs a
// row group).
type cta struct {
	row0, first, cnt ptx.Reg
	part             ptx.Reg // the CTA's share of the split, 0 to split−1
}

func newCTA(k *ptx.Func, rows, split, n int) cta {
	id := k.Mov(ptx.U32, ptx.CtaidX)
	block, part := id, k.Mov(ptx.U32, ptx.Imm(0))
	switch {
	case split > 1 && split&(split-1) == 0:
		block = k.Shr(ptx.U32, id, ptx.Imm(gen.Log2(split)))
		part = k.And(ptx.U32, id, ptx.Imm(split-1))
	case split > 1:
		block = k.Div(ptx.U32, id, ptx.Imm(split))
		part = k.Sub(ptx.U32, id, k.Mul(ptx.U32, block, ptx.Imm(split)))
	}
	nc, cc := chunks(n), gen.CeilDiv(chunks(n), split)
	first := k.Mul(ptx.U32, part, ptx.Imm(cc))
	// The rules leave no CTA without chunks (first < nc) where the split
	// is of chunks; the TMA x kernel's even split of steps (xKernel.steps)
	// uses part alone.
	cnt := k.Min(ptx.U32, k.Sub(ptx.U32, k.Mov(ptx.U32, ptx.Imm(nc)), first), ptx.Imm(cc))
	return cta{row0: k.Mul(ptx.U32, block, ptx.Imm(rows)), first: first, cnt: cnt, part: part}
}

// warpCtx is what a GEMM kernel's warps share: the thread's lane and warp,
// ldmatrix's lane pattern, and a zero b32 fragment register.
type warpCtx struct {
	tid, lane, warp ptx.Reg
	g4, tig         ptx.Reg // lane/4 and lane%4: an accumulator's row and column pair
	odd             ptx.Reg // lane & 1 ≠ 0: the lane that takes row g4+8 in gen.QuadRows
	l               lanes
	zero, zrow      ptx.Reg // b32 0; u32 0
}

func newWarpCtx(k *ptx.Func) warpCtx {
	w := warpCtx{tid: k.Mov(ptx.U32, ptx.TidX)}
	w.lane = k.And(ptx.U32, w.tid, ptx.Imm(31))
	w.warp = k.Shr(ptx.U32, w.tid, ptx.Imm(5))
	w.g4 = k.Shr(ptx.U32, w.lane, ptx.Imm(2))
	w.tig = k.Shl(ptx.U32, k.And(ptx.U32, w.lane, ptx.Imm(3)), ptx.Imm(1))
	w.odd = k.Setp("ne", ptx.U32, k.And(ptx.U32, w.lane, ptx.Imm(1)), ptx.Imm(0))
	w.l = newLanes(k, w.lane)
	w.zero = k.Mov(ptx.B32, ptx.Imm(0))
	w.zrow = k.Mov(ptx.U32, ptx.Imm(0))
	return w
}

// imm is v in a u32 register.
func imm(k *ptx.Func, v int) ptx.Reg { return k.Mov(ptx.U32, ptx.Imm(v)) }

// zeroAcc is n m16n8 accumulator blocks of zeros.
func zeroAcc(k *ptx.Func, n int) [][4]ptx.Reg {
	acc := make([][4]ptx.Reg, n)
	for i := range acc {
		for j := range 4 {
			acc[i][j] = k.Mov(ptx.F32, ptx.F32Imm(0))
		}
	}
	return acc
}

// redQuad adds an m16n8 accumulator fragment c into the f32 matrix at
// base [· × ld], the fragment's row g4 at row and its column pair at col
// (columns col, col+1 of rows row and row+8): regrouped by gen.QuadRows,
// each lane adds four columns of one row by one red.global.add.v4.f32.
// okOf gives the guard of a lane's row and first column (nil: none). ld
// is a multiple of 4 and base 16-byte aligned.
func redQuad(k *ptx.Func, w warpCtx, base, row, col ptx.Reg, ld int, c [4]ptx.Reg, okOf func(row, col ptx.Reg) ptx.Reg) {
	v := gen.QuadRows(k, w.odd, c)
	row = k.Add(ptx.U32, row, k.Selp(ptx.U32, ptx.Imm(8), ptx.Imm(0), w.odd))
	col = k.Sub(ptx.U32, col, k.Selp(ptx.U32, ptx.Imm(2), ptx.Imm(0), w.odd))
	addr := k.Add(ptx.U64, base, k.MulWide(ptx.U32, k.Mad(ptx.U32, row, ptx.Imm(ld), col), ptx.Imm(4)))
	put := func() { k.RedAddF32(ptx.At(addr, 0), v[:]) }
	if okOf == nil {
		put()
		return
	}
	k.If(okOf(row, col), put)
}

// operandParam declares a GEMM kernel's operand parameter name: with TMA
// the address of its tensor map, parameter name+"map" (tensorMap), else
// its global pointer.
func operandParam(k *ptx.Func, tma bool, name string) ptx.Reg {
	if tma {
		return k.TensorMapAddr(k.TensorMapParam(name + "map"))
	}
	return gen.Param(k, name)
}

// operandArgs are the launch arguments of operands names as operandParam
// declares them.
func operandArgs(tma bool, names ...string) []string {
	if !tma {
		return names
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + "map"
	}
	return out
}

// tensorMap is the tensor map of a TMA kernel's parameter name, each box
// 64 columns in the 128-byte swizzle: "xmap", x [t × in] in boxes of bt
// rows; "amap", A [r × in] in boxes of ar rows whose rows past r read as
// zeros; "dymap", dY [t × out] in boxes of bt rows; "bmap", B [out × r]
// in boxes of 64 rows and "hmap", h [t × r] in boxes of bt rows, both
// with the columns past r read as zeros. ok is false for any other name.
func (g geom) tensorMap(name string, t configs.Expr) (*configs.TensorMap, bool) {
	var buf string
	var cols int
	var rows configs.Expr
	var box int
	switch name {
	case "xmap":
		buf, cols, rows, box = "x", g.in, t, g.bt
	case "amap":
		buf, cols, rows, box = "a", g.in, configs.Int(g.r), g.ar
	case "dymap":
		buf, cols, rows, box = "dy", g.out, t, g.bt
	case "bmap":
		buf, cols, rows, box = "b", g.r, configs.Int(g.out), chunk
	case "hmap":
		buf, cols, rows, box = "h", g.r, t, g.bt
	default:
		return nil, false
	}
	return &configs.TensorMap{Buffer: buf, DType: g.dt, Dims: []configs.Expr{configs.Int(cols), rows},
		Strides: []configs.Expr{configs.Int(2 * cols)}, Box: []int{chunk, box}, Swizzle: 128}, true
}

// sum4 is the blockwise sum a + b of two accumulator fragments.
func sum4(k *ptx.Func, a, b [4]ptx.Reg) [4]ptx.Reg {
	for i := range a {
		a[i] = k.Add(ptx.F32, a[i], b[i])
	}
	return a
}

// scaled is c times s.
func scaled(k *ptx.Func, c [4]ptx.Reg, s ptx.Reg) [4]ptx.Reg {
	for i := range c {
		c[i] = k.Mul(ptx.F32, c[i], s)
	}
	return c
}
