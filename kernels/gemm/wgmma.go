package gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The wgmma path. A CTA of 1 + consumers warpgroups computes a BM×BN tile
// of C: warpgroup 0 is the producer, one thread of which issues the TMA
// loads of each k-tile into a ring of `stages` slots guarded by full and
// empty mbarriers; warpgroup 1 + c (a consumer) owns rows c·BM/consumers
// of the tile, one or two m64 blocks, and runs wgmma m64nBNk16 on them
// from 128B-swizzled shared-memory descriptors.
//
// Shared memory, from the dynamic base rounded up to 1024 bytes: slot s
// at s·stage holds A (BM·128 bytes) then B (BN·128 bytes); then the full
// barriers (8 bytes each), then the empty ones.
//
//   - A K-major (dx): one TMA box {64 k, BM rows} of dy: row i of the tile
//     is 128 bytes at i·128, the 128B swizzle in 1024-byte atoms of 8
//     rows. Descriptor: SBO 1024 (8 rows), a k16 step adds 32 bytes.
//   - A MN-major (dw) and B (both): boxes {64 mn, 64 k}, one per 64
//     columns of the tile (8 KB each, k-row j at j·128): element (mn, k)
//     of the tile at (mn/64)·8192 + k·128 + (mn%64)·2, swizzled.
//     Descriptor (imm-trans): LBO 8192 between 64-element atoms, SBO 1024
//     (8 k-rows), a k16 step adds 2048 bytes.
//   - B of a BN that is an odd multiple of 32 (96, 160): the same in
//     atoms of 32 columns, 64-byte k-rows and the 64B swizzle (boxes
//     {32 n, 64 k} of 4 KB, LBO 4096, SBO 512, a k16 step adds 1024).
//
// Either way the m64 block that starts at tile row i starts at byte
// i·128 of the A tile.

// wgAtom is a [64][64] 16-bit swizzled box.
const wgAtom = 8192

// bAtom is B's shared-memory atom: [64 k][cols] 16-bit elements in k-rows
// of rowBytes, swizzled over that span.
type bAtom struct {
	cols, rowBytes, bytes int
	swizzle               ptx.Swizzle
}

// bAtomOf is 64 columns in the 128B swizzle, or 32 in the 64B swizzle
// where BN is not a multiple of 64.
func bAtomOf(p Params) bAtom {
	if p.BN%64 == 0 {
		return bAtom{cols: 64, rowBytes: 128, bytes: wgAtom, swizzle: ptx.Swizzle128B}
	}
	return bAtom{cols: 32, rowBytes: 64, bytes: wgAtom / 2, swizzle: ptx.Swizzle64B}
}

// descriptor is the wgmma descriptor of B in atoms at: LBO (the bytes
// between atoms), SBO (8 k-rows), a k16 step and the swizzle.
func (at bAtom) descriptor() (lbo, sbo, step int, swz ptx.Swizzle) {
	return at.bytes, 8 * at.rowBytes, 16 * at.rowBytes, at.swizzle
}

// rowsOr is the operand's rows, or n where it takes the problem's extent.
func (o operand) rowsOr(n int) int {
	if o.rows != 0 {
		return o.rows
	}
	return n
}

// wgKernel is the build state of a wgmma-path kernel.
type wgKernel struct {
	k       *ptx.Func
	g       problem
	p       Params
	aBytes  int // A tile of a slot; B follows it
	stage   int // bytes of one slot
	rowsPC  int // tile rows per consumer
	mBlocks int // m64 blocks per consumer
	stgOff  int // offset of the TMA-store staging tile (epilogue=tma)
	bars    int // offset of the full barriers; the empty ones follow (then the raw ones of a BSource)
	src     BSource
	fillWGs int        // warpgroups beside the consumers that only run the BSource's Fill
	rawRing int        // slots of a BSource's own raw ring (0: the raw area is in each slot)
	rawOff  int        // offset of the raw ring
	dsm     *dsmemTile // reduce=dsmem: the consumer's tile, for the sum after the cluster barrier
	m       ptx.Sym    // the parameter m (M)
	scale   ptx.Reg    // u64: the rows' factors of a scaled epilogue (problem.scale)
	// loraMaps are the tensor maps of an adapter's dh and A (problem.lora).
	loraMaps [2]ptx.Sym
	prod     *produced // B written into its buffer during the kernel (producedb.go), or nil
	// waitPrior: the producer thread waits for the previous grid
	// (griddepcontrol.wait) before its first load, for a dependent launch
	// after the one that writes B.
	waitPrior bool
	// waitAtEpilogue: with waitPrior, the consumers wait before each
	// epilogue instead of the producer before its first load (a
	// Custom's WaitAtEpilogue)
	waitAtEpilogue bool
	// launchNext: every CTA executes griddepcontrol.launch_dependents as
	// it begins (a Custom's chain)
	launchNext bool
}

// wgBuild is what buildWgmma writes: the kernel's entry (red: the split-K
// reduce's), the problem and the variant, and how B reaches the slots:
// TMA loads of B's buffer, written by src (its fillers: the producer's
// warps 1..3 and fillWGs warpgroups; its raw data in each slot or in a
// ring of rawRing slots of its own), or TMA loads of a buffer that prod
// writes during the kernel; waitPrior and launchNext as in wgKernel.
type wgBuild struct {
	entry, red       string
	g                problem
	p                Params
	src              BSource
	fillWGs, rawRing int
	prod             BProducer
	waitPrior        bool
	waitAtEpilogue   bool
	launchNext       bool
	// before adds kernels of the caller's to the module and returns the
	// launches that run ahead of the GEMM's and the buffers they own.
	before func(m *ptx.Module) ([]kernels.Launch, []kernels.Buffer)
}

// dsmem reports whether the splits sum in distributed shared memory.
func (wk *wgKernel) dsmem() bool { return wk.p.Reduce == ReduceDSMEM }

func (wk *wgKernel) threads() int { return wk.split().Threads() }

// consumerRegs is setmaxnreg.inc's budget for a consumer thread: what the
// register file leaves after the producer's hopper.ProducerRegs, at most
// 240.
func consumerRegs(p Params) int {
	return hopper.Split{Producer: hopper.ProducerRegs, Consumers: p.Consumers, CTAs: p.CTAs()}.ConsumerRegs()
}

// emitWgmma writes the wgmma path's program.
func emitWgmma(s Shape, g problem, p Params) (kernels.Program, error) {
	return buildWgmma(wgBuild{entry: entry(s, "wgmma"), red: entry(s, "reduce"), g: g, p: p})
}

// buildWgmma writes the wgmma path's program b describes.
func buildWgmma(b wgBuild) (kernels.Program, error) {
	entry, red, g, p, src := b.entry, b.red, b.g, b.p, b.src
	if b.prod != nil && (src != nil || p.Cluster != 1 || p.BN%64 != 0 || p.Reduce != ReduceLaunch || g.l%64 != 0 || g.c%64 != 0) {
		return kernels.Program{}, fmt.Errorf("mma=wgmma: a produced B takes no written B, cluster=1, bn a multiple of 64, reduce=launch and a %d×%d B of whole 64×64 chunks", g.l, g.c)
	}
	if p.Cluster != 1 && (p.Cluster != 2 && (src == nil || p.Cluster != 4) || !p.Multicast) {
		return kernels.Program{}, fmt.Errorf("mma=wgmma: cluster=%d multicast=%v is not emitted", p.Cluster, p.Multicast)
	}
	if p.Epilogue == TMAStore && p.SplitK > 1 {
		return kernels.Program{}, fmt.Errorf("mma=wgmma: split-K partials are stored directly")
	}
	if p.PerSM > 1 {
		return kernels.Program{}, fmt.Errorf("mma=wgmma: %d CTAs an SM is a Custom's tiling (gemm.Tiling), not gemm_bwd's", p.PerSM)
	}
	if p.Order == StreamK && (!p.Persistent || p.SplitK > 1 || p.Cluster > 1) {
		return kernels.Program{}, fmt.Errorf("mma=wgmma: order=streamk takes persistent=1 splitk=1 cluster=1")
	}
	if p.Reduce == ReduceDSMEM && (p.SplitK < 2 || p.Cluster != 1 || p.Persistent || p.Epilogue != Direct || src != nil) {
		return kernels.Program{}, fmt.Errorf("mma=wgmma: reduce=dsmem takes splitk >= 2, cluster=1, persistent=0, epilogue=direct and a TMA-loaded B")
	}
	if src != nil && (!g.a.kMajor || p.SplitK != 1 || p.Order == StreamK) {
		return kernels.Program{}, fmt.Errorf("mma=wgmma: a written B takes a K-major A, splitk=1 and no stream-K")
	}
	m := ptx.NewModule()
	var pre []kernels.Launch
	var preBufs []kernels.Buffer
	if b.before != nil {
		pre, preBufs = b.before(m)
	}
	wk := newWgKernel(m, b)
	srcArgs := wk.body()
	launchReduce := p.SplitK > 1 && !wk.dsmem()
	if launchReduce {
		emitReduce(m.Func(red), g, p.SplitK, false)
	}
	mod, err := m.Build()
	if err != nil {
		return kernels.Program{}, fmt.Errorf("building: %w", err)
	}
	prog := kernels.Program{PTX: mod.String(), RuntimeDims: []string{tokenDim}}
	outArg := kernels.Arg{Buffer: g.out}
	switch {
	case launchReduce:
		outArg.Buffer = workspace
		prog.Buffers = []kernels.Buffer{workspaceBuffer(g, p.SplitK)}
		splitRuntime(&prog, g, p.BM, p.BN, p.SplitK)
	case p.Epilogue == TMAStore:
		outArg = kernels.Arg{TensorMap: cMap(g, p)}
	}
	main := wk.launch(entry, outArg)
	switch {
	case src != nil:
		main.SharedBytes += wk.srcSmem()
		main.Args = append(append(append([]kernels.Arg{{TensorMap: aMap(g, p)}}, srcArgs...), loraArgs(g, p)...), outArg)
	case wk.prod != nil:
		main.Args = append(append(append([]kernels.Arg{{TensorMap: aMap(g, p)}, {TensorMap: bMap(g, p)}}, loraArgs(g, p)...), srcArgs...), outArg)
	}
	if p.Order == StreamK {
		main.Grid[0] = skGrid(g, p)
		main.Args = append(main.Args, kernels.Arg{Buffer: workspace}, kernels.Arg{Buffer: skFlags})
		prog.Buffers = streamKBuffers(g, p)
	}
	if wk.prod != nil {
		main.Args = append(main.Args, wk.prod.args()...)
		prog.Buffers = append(prog.Buffers, wk.prod.buffers()...)
	}
	main.Args = append(main.Args, g.mArg())
	main.Dependent = b.waitPrior
	if p.Cluster > 1 {
		main.Cluster = [3]int{p.Cluster, 1, 1}
	}
	if wk.dsmem() {
		main.Cluster = [3]int{p.SplitK, 1, 1}
	}
	if p.Persistent {
		// One CTA per SM, but never more than there are tiles: the runner
		// takes min(GridPerSM·SMs, Grid[0]), so Grid[0] must be the tile
		// count (0 would launch one CTA that walks every tile).
		main.GridPerSM = 1
	}
	prog.Launches = append(append(pre, prog.Launches...), main)
	prog.Buffers = append(preBufs, prog.Buffers...)
	if launchReduce {
		prog.Launches = append(prog.Launches, reduceLaunch(red, g, false))
	}
	return prog, nil
}

// newWgKernel starts the kernel b describes in module m: its entry and
// its shared-memory layout.
func newWgKernel(m *ptx.Module, b wgBuild) *wgKernel {
	g, p, src := b.g, b.p, b.src
	wk := &wgKernel{g: g, p: p, src: src, fillWGs: b.fillWGs, rawRing: b.rawRing, waitPrior: b.waitPrior, waitAtEpilogue: b.waitAtEpilogue, launchNext: b.launchNext}
	if b.prod != nil {
		wk.prod = &produced{src: b.prod, wk: wk}
	}
	wk.k = m.Func(b.entry)
	wk.rowsPC = p.BM / p.Consumers
	wk.mBlocks = wk.rowsPC / 64
	wk.aBytes = p.BM * 128
	wk.stage = wk.aBytes + p.BN*128
	if src != nil && b.rawRing == 0 {
		wk.stage += src.RawBytes(p)
	}
	wk.stgOff = p.Stages * wk.stage
	wk.bars = wk.stgOff
	if p.Epilogue == TMAStore {
		wk.bars += wk.staging().Bytes()
	}
	if b.rawRing > 0 {
		wk.rawOff = wk.bars
		wk.bars += b.rawRing * src.RawBytes(p)
	}
	return wk
}

// launch is the kernel's launch with the tensor maps of A and B and the
// output argument out; the caller appends the rest of its arguments.
func (wk *wgKernel) launch(entry string, out kernels.Arg) kernels.Launch {
	g, p := wk.g, wk.p
	args := append([]kernels.Arg{{TensorMap: aMap(g, p)}, {TensorMap: bMap(g, p)}}, loraArgs(g, p)...)
	return kernels.Launch{Entry: entry, Grid: [3]configs.Expr{tilesExpr(g, p).TimesInt(p.SplitK), configs.Int(1), configs.Int(1)},
		Block: [3]int{wk.threads(), 1, 1}, SharedBytes: smemBytes(g, p, p.Stages), Args: append(args, out)}
}

// loraArgs are the launch arguments of an adapter's tensor maps (the
// parameters lora_h and lora_a), none without an adapter.
func loraArgs(g problem, p Params) []kernels.Arg {
	if g.lora == 0 {
		return nil
	}
	h, a := loraMaps(g, p)
	return []kernels.Arg{{TensorMap: h}, {TensorMap: a}}
}

// loraMaps are the tensor maps of an adapter's k-tiles: dh [M×r] as A
// (K-major, boxes {64 k, BM rows}) and A [r×K] as B (MN-major, boxes of
// one atom), both zero past r.
func loraMaps(g problem, p Params) (h, a *kernels.TensorMap) {
	h = &kernels.TensorMap{Buffer: loraH, DType: g.in, Dims: []configs.Expr{configs.Int(g.lora), g.rExpr()}, Strides: configs.Ints(2 * g.lora),
		Box: []int{64, p.BM}, Swizzle: 128}
	at := bAtomOf(p)
	a = &kernels.TensorMap{Buffer: loraA, DType: g.in, Dims: []configs.Expr{configs.Int(g.c), configs.Int(g.lora)}, Strides: configs.Ints(2 * g.c),
		Box: []int{at.cols, 64}, Swizzle: at.rowBytes}
	return h, a
}

// aMap is A's tensor map: dy as {N, M} elements. K-major (dx: N is the
// reduction) in boxes {64 k, BM rows}; MN-major (dw: N is the row of C)
// in boxes {64 rows, 64 k}.
func aMap(g problem, p Params) *kernels.TensorMap {
	m := &kernels.TensorMap{Buffer: g.a.buf, DType: g.in, Strides: configs.Ints(2 * g.a.ld), Swizzle: 128}
	if g.a.kMajor {
		m.Dims, m.Box = []configs.Expr{g.lExpr(), g.rExpr()}, []int{64, p.BM}
	} else {
		m.Dims, m.Box = []configs.Expr{g.rExpr(), g.lExpr()}, []int{64, 64}
	}
	setOffset(m, g.a.off)
	return m
}

// bMap is B's tensor map: MN-major ([l×c]) in boxes of one atom
// {64 or 32 columns, 64 k}, or {64 columns, 64/cluster k} when the
// cluster's CTAs each load a part of the k-rows and multicast it;
// K-major ([c×l], a Custom's) in boxes {64 k, BN rows} like a K-major A.
// Rows of the buffer past b.rows read as zeros.
func bMap(g problem, p Params) *kernels.TensorMap {
	var m *kernels.TensorMap
	if g.b.kMajor {
		m = &kernels.TensorMap{Buffer: g.b.buf, DType: g.in, Dims: []configs.Expr{g.lExpr(), configs.Int(g.b.rowsOr(g.c))}, Strides: configs.Ints(2 * g.b.ld),
			Box: []int{64, p.BN}, Swizzle: 128}
	} else {
		at := bAtomOf(p)
		l := g.lExpr()
		if g.b.rows != 0 {
			l = configs.Int(g.b.rows)
		}
		m = &kernels.TensorMap{Buffer: g.b.buf, DType: g.in, Dims: []configs.Expr{configs.Int(g.c), l}, Strides: configs.Ints(2 * g.b.ld),
			Box: []int{at.cols, 64 / p.Cluster}, Swizzle: at.rowBytes}
	}
	setOffset(m, g.b.off)
	return m
}

// cMap is the output's tensor map for the TMA-store epilogue: C as {c, r}
// elements in boxes of one staging atom's width (128 bytes: 64 16-bit or
// 32 f32 columns; or 64 bytes, stagingRow) by a consumer's rows, swizzled
// over that width. The box is clipped at C's edges, so tails need no masks.
func cMap(g problem, p Params) *kernels.TensorMap {
	rb := stagingOf(g, p, 0).RowBytes()
	return &kernels.TensorMap{Buffer: g.out, DType: g.od, Dims: []configs.Expr{configs.Int(g.c), g.rExpr()}, Strides: configs.Ints(g.c * g.od.Size()),
		Box: []int{rb / g.od.Size(), p.BM / p.Consumers}, Swizzle: rb}
}

// body writes the kernel: barriers, then the producer and consumer
// warpgroups. It returns the launch arguments of a BSource's parameters.
func (wk *wgKernel) body() []kernels.Arg {
	k, p := wk.k, wk.p
	k.ReqNTid(wk.threads())
	if p.Cluster > 1 {
		k.ReqNCtaPerCluster(p.Cluster, 1, 1)
	}
	if wk.dsmem() {
		k.ReqNCtaPerCluster(p.SplitK, 1, 1)
	}
	if p.RegSplit {
		wk.split().Declare(k)
	}
	tmA := k.TensorMapParam("a")
	var tmB ptx.Sym
	var srcArgs []kernels.Arg
	if wk.src == nil {
		tmB = k.TensorMapParam("b")
	} else {
		srcArgs = wk.src.Declare(k)
	}
	if wk.g.lora > 0 {
		wk.loraMaps = [2]ptx.Sym{k.TensorMapParam("lora_h"), k.TensorMapParam("lora_a")}
	}
	if wk.prod != nil {
		srcArgs = wk.prod.src.Declare(k)
	}
	var c ptx.Reg
	var tmC ptx.Sym
	if p.Epilogue == TMAStore {
		tmC = k.TensorMapParam("c")
	} else {
		c = gen.Param(k, "c")
	}
	if wk.g.scale != "" {
		wk.scale = gen.Param(k, "scale")
	}
	if wk.g.epi != nil {
		wk.g.epi.Declare(k)
	}
	var ws, flags ptx.Sym
	if p.Order == StreamK {
		ws, flags = k.Param("ws", ptx.U64), k.Param("flags", ptx.U64)
	}
	if wk.prod != nil {
		wk.prod.declare()
	}
	wk.m = mParam(k)
	k.Comment("tiles start on 1024 bytes (128B swizzle atoms): round the dynamic base up")
	base := hopper.AlignedBase(k)
	tid := k.Mov(ptx.U32, ptx.TidX)
	wg := hopper.Warpgroup(k, tid)
	if wk.src != nil {
		wk.src.Setup(k, tid, wk.fillers(), wk.share())
	}
	if wk.prod != nil {
		wk.prod.src.Setup(k, tid)
	}
	hopper.InitBarriers(k, tid, func() {
		ring := wk.ring()
		for s := range p.Stages {
			ring.InitSlot(k, base, s, wk.fullArrivals(), 4*p.Consumers*p.Cluster)
			if wk.src != nil && wk.src.RawBytes(p) > 0 && wk.rawRing == 0 {
				k.MbarInit(ptx.At(base, int64(wk.rawBars()+8*s)), ptx.Imm(1))
			}
		}
		for s := range wk.rawRing {
			wk.rawRingLayout().InitSlot(k, base, s, 1, wk.fullArrivals()-1)
		}
	})
	wk.clusterSync()
	if wk.launchNext {
		k.Comment("a chain: the next launch may start; it waits for this one before its first load")
		k.GridDepLaunch()
	}
	hopper.Roles(k, wg, func() {
		k.Comment("producer warpgroup: one thread issues the TMA loads")
		if p.RegSplit {
			wk.split().EnterProducer(k)
		}
		k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
			if wk.waitPrior && !wk.waitAtEpilogue {
				k.Comment("a dependent launch: B is written by the previous grid")
				k.GridDepWait()
			}
			ma := k.TensorMapAddr(tmA)
			var mb ptx.Reg
			if wk.src == nil {
				mb = k.TensorMapAddr(tmB)
			}
			r, rr := wk.newRing(), wk.newRawRing()
			wk.prod.gateStart()
			wk.forTiles(func(t tile) { wk.producer(base, t, ma, mb, r, rr) })
		})
		// warps 1..3 (a warp-uniform condition: the fillers of a
		// cluster meet at a named barrier)
		rest := func() ptx.Reg { return k.Setp("ge", ptx.U32, k.Shr(ptx.U32, tid, ptx.Imm(5)), ptx.Imm(1)) }
		switch {
		case wk.src != nil:
			k.If(rest(), func() { wk.fill(base, k.Sub(ptx.U32, tid, ptx.Imm(32))) })
		case wk.prod != nil:
			k.If(rest(), func() { wk.prod.produce(k.Sub(ptx.U32, tid, ptx.Imm(32))) })
		}
	}, func() {
		if wk.fillWGs == 0 {
			wk.consumers(base, tid, wg, c, tmC, ws, flags)
			return
		}
		k.IfElse(k.Setp("gt", ptx.U32, wg, ptx.Imm(p.Consumers)), func() {
			k.Comment("dequantizing warpgroups: fillers 96, 97, ...")
			if p.RegSplit {
				wk.split().EnterProducer(k)
			}
			wk.fill(base, k.Add(ptx.U32, k.Sub(ptx.U32, tid, ptx.Imm(128*(1+p.Consumers))), ptx.Imm(96)))
		}, func() { wk.consumers(base, tid, wg, c, tmC, ws, flags) })
	})
	if wk.dsmem() {
		k.Comment("reduce=dsmem: every partial of the cluster is stored")
		wk.dsmemSync()
		k.If(k.Setp("ne", ptx.U32, wg, ptx.Imm(0)), wk.dsmemSum)
		k.Comment("the others read this CTA's partial until they pass here")
		wk.dsmemSync()
	}
	if p.Cluster > 1 {
		k.Comment("the peer CTA may still arrive on this CTA's empty barriers: exit together")
		wk.clusterSync()
	}
	wk.prod.finish(tid)
	return srcArgs
}

// consumers is the consumer warpgroups' part of the kernel: the k-loops
// and epilogues of their tiles.
func (wk *wgKernel) consumers(base, tid, wg, c ptx.Reg, tmC, ws, flags ptx.Sym) {
	k, p := wk.k, wk.p
	k.Comment("consumer warpgroups")
	if p.RegSplit {
		wk.split().EnterConsumer(k)
	}
	cw := k.Sub(ptx.U32, wg, ptx.Imm(1))
	l := k.And(ptx.U32, tid, ptx.Imm(127))
	acc := make([][]ptx.Reg, wk.mBlocks)
	for i := range acc {
		acc[i] = k.WgmmaAcc(p.BN)
	}
	r := wk.newRing()
	fx := wk.newFixup(ws, flags, cw, l)
	if wk.dsmem() {
		wk.forTiles(func(t tile) {
			wk.consumer(base, t, cw, acc, r)
			wk.dsmemPublish(base, c, t, cw, l, acc)
		})
		return
	}
	if p.Epilogue != TMAStore {
		wk.forTiles(func(t tile) {
			wk.consumer(base, t, cw, acc, r)
			fx.finish(t, acc, func() { wk.epilogue(c, t, cw, l, acc) })
		})
		return
	}
	st := wk.staging().Stager(k, base, tmC, cw, l)
	wk.forTiles(func(t tile) {
		wk.consumer(base, t, cw, acc, r)
		fx.finish(t, acc, func() { st.Store(t.row0, t.col0, acc) })
	})
	k.Comment("the last store must have read the staging tile before the CTA exits")
	st.Drain()
}

// staging is the TMA-store epilogue's layout (epilogue=tma): after the
// ring, each consumer's rowsPC rows of the tile.
func (wk *wgKernel) staging() hopper.Staging { return stagingOf(wk.g, wk.p, wk.stgOff) }

// stagingOf is the staging layout of p's tile at offset off.
func stagingOf(g problem, p Params, off int) hopper.Staging {
	return hopper.Staging{Off: off, Rows: p.BM / p.Consumers, Cols: p.BN, Consumers: p.Consumers, Out: g.od}
}

// clusterSync is bar.sync 0, or with a cluster barrier.cluster.arrive
// (release) + wait (acquire) by every thread: at the start, the barriers
// of both CTAs are initialized before either multicasts into the other
// or arrives on its barriers; at the end, neither exits while the other
// may still arrive on its barriers.
func (wk *wgKernel) clusterSync() {
	if wk.p.Cluster == 1 {
		wk.k.BarSync(0)
		return
	}
	wk.k.ClusterArrive(true)
	wk.k.ClusterWait(true)
}

// forTiles calls body with the CTA's tile, or, in a persistent grid, in
// a loop over tiles ctaid, ctaid + nctaid, ... (the ring's slot and
// parity carry over from one tile to the next: the producer loads the
// next tile's first k-tiles while the consumers store this one), or
// with stream-K over the segments of the CTA's range.
func (wk *wgKernel) forTiles(body func(t tile)) {
	k, p := wk.k, wk.p
	if p.Order == StreamK {
		wk.forStreamK(body)
		return
	}
	sz := wk.sizes()
	tiles := func() ptx.Operand { return sz.tiles.times(k, p.SplitK).op() }
	hopper.ForTiles(k, p.Persistent, tiles, func(i ptx.Reg) { body(tileOf(k, p, sz, i)) })
}

// sizes computes the variant's sizes from the parameter m.
func (wk *wgKernel) sizes() sizes { return sizesOf(wk.k, wk.g, wk.p, wk.m) }

// mayBeEmpty reports whether a tile's split may have no k-tile: with
// split-K over a runtime reduction, which may have fewer k-tiles than
// splits.
func (wk *wgKernel) mayBeEmpty() bool {
	return wk.p.SplitK > 1 && (!wk.g.mRows || kTiles(wk.g, wk.p) < wk.p.SplitK)
}

// ring is the layout of the variant's ring: Stages slots of stage bytes
// at the base (A, then B, then a BSource's raw area), the barriers at
// bars.
func (wk *wgKernel) ring() hopper.Ring {
	return hopper.Ring{N: wk.p.Stages, Stride: wk.stage, Bars: wk.bars}
}

// newRing is a cursor of the ring at slot 0 of lap 0.
func (wk *wgKernel) newRing() *hopper.Cursor { return wk.ring().Cursor(wk.k) }

// producer: per k-tile, wait until the consumers released the slot (on
// the first lap the wait for the parity before phase 0 passes at once),
// announce the slot's bytes on its full barrier and issue the loads.
// With a BSource an adapter's k-tiles follow the loop (issueLoRA).
func (wk *wgKernel) producer(base ptx.Reg, t tile, ma, mb ptx.Reg, r, rr *hopper.Cursor) {
	k, g, p := wk.k, wk.g, wk.p
	var rank ptx.Reg
	if p.Cluster > 1 {
		rank = k.Mov(ptx.U32, ptx.ClusterCtaRank)
	}
	all := t
	t = wk.baseTiles(t)
	kc := k.Mul(ptx.U32, t.kt0, ptx.Imm(p.BK))
	kCodes := wk.issueAhead(base, t, kc, rr)
	k.For(ptx.U32, ptx.Imm(0), t.nk, ptx.Imm(1), func(it ptx.Reg) {
		r.WaitEmpty(base)
		full := r.Full(base)
		if wk.src != nil {
			k.MbarArriveExpectTx(full, ptx.Imm(wk.aBytes+(p.Cluster-1)*p.BN*128/p.Cluster))
			dst := r.Data(base)
			k.TmaLoad(ptx.At(dst, 0), ma, []ptx.Operand{kc, t.row0}, full)
			switch {
			case wk.rawRing > 0:
				wk.issueNext(base, t, it, kCodes, rr)
			case wk.src.RawBytes(p) > 0:
				wk.src.Issue(k, k.Add(ptx.U32, dst, ptx.Imm(wk.aBytes+p.BN*128)), r.Bar(base, wk.rawBars()), t.col0, kc)
			}
			k.MovTo(kc, k.Add(ptx.U32, kc, ptx.Imm(p.BK)))
			r.Next()
			return
		}
		k.MbarArriveExpectTx(full, ptx.Imm(wk.stage))
		dst := r.Data(base)
		if g.lora > 0 {
			wk.loadOrLoRA(dst, full, t, kc, ma, mb)
			k.MovTo(kc, k.Add(ptx.U32, kc, ptx.Imm(p.BK)))
			r.Next()
			return
		}
		if g.a.kMajor {
			k.TmaLoad(ptx.At(dst, 0), ma, []ptx.Operand{kc, t.row0}, full)
		} else {
			for j := range p.BM / 64 {
				k.TmaLoad(ptx.At(dst, int64(j*wgAtom)), ma, []ptx.Operand{k.Add(ptx.U32, t.row0, ptx.Imm(64*j)), kc}, full)
			}
		}
		wk.prod.gate(kc)
		switch {
		case g.b.kMajor:
			k.TmaLoad(ptx.At(dst, int64(wk.aBytes)), mb, []ptx.Operand{kc, t.col0}, full)
		case p.Cluster == 1:
			at := bAtomOf(p)
			for j := range p.BN / at.cols {
				k.TmaLoad(ptx.At(dst, int64(wk.aBytes+j*at.bytes)), mb, []ptx.Operand{k.Add(ptx.U32, t.col0, ptx.Imm(at.cols*j)), kc}, full)
			}
		default:
			// the cluster's CTAs share B (same columns, consecutive tile
			// rows): CTA q loads k-rows [q·64/cluster, (q+1)·64/cluster)
			// of every atom into both CTAs' slots (whole 1024-byte
			// swizzle atoms, so the swizzle is the same as one box's),
			// completing its bytes on each CTA's full barrier.
			part := 64 / p.Cluster
			kq := k.Mad(ptx.U32, rank, ptx.Imm(part), kc)
			dq := k.Mad(ptx.U32, rank, ptx.Imm(part*128), dst)
			mask := k.Mov(ptx.U16, ptx.Imm(1<<p.Cluster-1))
			for j := range p.BN / 64 {
				k.TmaLoadMulticast(ptx.At(dq, int64(wk.aBytes+j*wgAtom)), mb, []ptx.Operand{k.Add(ptx.U32, t.col0, ptx.Imm(64*j)), kq}, full, mask)
			}
		}
		k.MovTo(kc, k.Add(ptx.U32, kc, ptx.Imm(p.BK)))
		r.Next()
	})
	wk.issueLoRA(base, all, r)
}

// loadOrLoRA issues the loads of the k-tile at kc into dst: A from dy
// (K-major) and B from w in atoms below the base reduction's whole
// k-tiles, and past them the adapter's: dh's and A's at kc less those.
// A produced B's k-tiles wait for their k-slice (the adapter's need not).
func (wk *wgKernel) loadOrLoRA(dst ptx.Reg, full ptx.Addr, t tile, kc, ma, mb ptx.Reg) {
	k, g, p := wk.k, wk.g, wk.p
	baseK := gen.CeilDiv(g.l, p.BK) * p.BK
	k.IfElse(k.Setp("lt", ptx.U32, kc, ptx.Imm(baseK)), func() { wk.loadTile(dst, full, t, ma, mb, kc, true) }, func() {
		wk.loadTile(dst, full, t, k.TensorMapAddr(wk.loraMaps[0]), k.TensorMapAddr(wk.loraMaps[1]), k.Sub(ptx.U32, kc, ptx.Imm(baseK)), false)
	})
}

// loadTile issues the TMA loads of a whole k-tile into the slot at dst,
// completing on full: A's box {64 k, BM rows} at reduction element kc
// from ma (K-major), then B's atoms from mb (MN-major), gated: after
// waiting for a produced B's k-slice (produced.gate).
func (wk *wgKernel) loadTile(dst ptx.Reg, full ptx.Addr, t tile, ma, mb, kc ptx.Reg, gated bool) {
	k, p := wk.k, wk.p
	at := bAtomOf(p)
	k.TmaLoad(ptx.At(dst, 0), ma, []ptx.Operand{kc, t.row0}, full)
	if gated {
		wk.prod.gate(kc)
	}
	for j := range p.BN / at.cols {
		k.TmaLoad(ptx.At(dst, int64(wk.aBytes+j*at.bytes)), mb, []ptx.Operand{k.Add(ptx.U32, t.col0, ptx.Imm(at.cols*j)), kc}, full)
	}
}

// consumer runs the k-loop of consumer cw on tile t into its
// accumulators, one m64×BN block per m64 of its rows: per k-tile, wait
// for the slot, four k16 steps of wgmma (scale-d 0 on the first of the
// tile's reduction), commit, wait until only this group is pending and
// release the previous k-tile's slot (lane 0 of each warp arrives); after
// the loop, wait for the last group and release its slot, if there was
// one. A split without k-tiles leaves the accumulators zero.
func (wk *wgKernel) consumer(base ptx.Reg, t tile, cw ptx.Reg, acc [][]ptx.Reg, r *hopper.Cursor) {
	k, g, p := wk.k, wk.g, wk.p
	ab := gen.HalfType(g.in)
	aStep, aLBO := 32, 16
	if !g.a.kMajor {
		aStep, aLBO = 2048, wgAtom
	}
	bLBO, bSBO, bStep, bSwz := bAtomOf(p).descriptor()
	if g.b.kMajor {
		bLBO, bSBO, bStep, bSwz = 16, 1024, 32, ptx.Swizzle128B
	}
	lane0 := k.Setp("eq", ptx.U32, k.And(ptx.U32, k.Mov(ptx.U32, ptx.TidX), ptx.Imm(31)), ptx.Imm(0))
	// Zeroed, never undefined: ptxas serializes the wgmma (C7515) when
	// the first one's scale-d may read undefined accumulators.
	for _, a := range acc {
		for _, r := range a {
			k.MovTo(r, ptx.F32Imm(0))
		}
	}
	aOff := k.Mul(ptx.U32, cw, ptx.Imm(wk.rowsPC*128))
	rel := hopper.NewReleaser(k, p.Cluster)
	k.For(ptx.U32, ptx.Imm(0), t.nk, ptx.Imm(1), func(it ptx.Reg) {
		r.WaitFull(base)
		sa := r.Data(base)
		var da []ptx.Reg
		for mb := range wk.mBlocks {
			da = append(da, k.WgmmaDesc(k.Add(ptx.U32, k.Add(ptx.U32, sa, aOff), ptx.Imm(64*128*mb)), aLBO, 1024, ptx.Swizzle128B))
		}
		db := k.WgmmaDesc(k.Add(ptx.U32, sa, ptx.Imm(wk.aBytes)), bLBO, bSBO, bSwz)
		accumulate := k.Setp("ne", ptx.U32, it, ptx.Imm(0))
		k.WgmmaFence()
		for kk := range p.BK / 16 {
			o := ptx.WgmmaOpts{TransA: !g.a.kMajor, TransB: !g.b.kMajor}
			if kk == 0 {
				o.ScaleD = accumulate
			}
			for mb := range wk.mBlocks {
				a := da[mb]
				if kk > 0 {
					a = k.WgmmaDescAdd(da[mb], kk*aStep)
				}
				b := db
				if kk > 0 {
					b = k.WgmmaDescAdd(db, kk*bStep)
				}
				k.Wgmma(ab, acc[mb], a, b, o)
			}
		}
		k.WgmmaCommit()
		k.Comment("keep this k-tile's wgmma in flight; the previous one is done: release its slot")
		k.WgmmaWait(1)
		rel.Step(k.And(ptx.Pred, lane0, accumulate), r, base)
	})
	k.WgmmaWait(0)
	last := lane0
	if wk.mayBeEmpty() {
		last = k.And(ptx.Pred, lane0, k.Setp("ne", ptx.U32, t.nk, ptx.Imm(0)))
	}
	rel.Last(last)
}

// epilogue stores consumer cw's accumulators from the wgmma layout: in
// m64 block mb, thread l of the warpgroup (warp w = l/32) holds rows
// 16w + (l%32)/4 and 8 below, at columns 8j + 2(l%4) and the next, as a
// pair (rounded to the output dtype, or f32 into the split's slice of
// the workspace). Rows and columns outside C are not stored; a pair is
// both in or both out (C has a multiple of 8 columns).
func (wk *wgKernel) epilogue(c ptx.Reg, t tile, cw, l ptx.Reg, acc [][]ptx.Reg) {
	k, g := wk.k, wk.g
	if wk.waitAtEpilogue {
		k.Comment("a dependent launch: what the epilogue reads and writes follows the previous grid")
		k.GridDepWait()
	}
	od := g.od
	r := rowsExt(wk.k, wk.g, wk.m)
	if wk.p.SplitK > 1 {
		od = dtype.F32
		c = splitSlice(k, c, t.split, r, g.c)
	}
	ds := wk.newDirectStore(c, od, t, r, cw, l)
	if wk.g.epi != nil {
		wk.g.epi.Store(k, Tile{Acc: acc, Row: ds.row, Col: ds.col, Cols: g.c, OutDT: od, Col0: t.col0, Lane: ds.lane,
			RowOK: ds.rowBound, ColOK: ds.colOK, Out: ds.ptr, BN: wk.p.BN})
		return
	}
	if wk.g.scale != "" || wk.g.accumulate {
		ds.accumulate(wk.scale, acc)
		return
	}
	if wk.g.reduce {
		ds.reduce(acc)
		return
	}
	for mb := range acc {
		for h := range 2 {
			for j := range wk.p.BN / 8 {
				ds.pair(mb, h, j, acc[mb][4*j+2*h], acc[mb][4*j+2*h+1])
			}
		}
	}
}

// directStore stores accumulator pairs of the wgmma layout into C (or a
// workspace of C's shape) at the thread's rows and columns.
type directStore struct {
	wk    *wgKernel
	od    dtype.DType
	ptr   ptx.Reg   // u64: the thread's first pair
	row   ptx.Reg   // u32: the thread's first row of C
	col   ptx.Reg   // u32: the thread's first column of C
	lane  ptx.Reg   // u32: the thread's lane
	rows  *bound    // the thread's first row of C against r
	colOK []ptx.Reg // column group j is inside C
	rowOK map[int]ptx.Reg
}

// newDirectStore sets up the stores of consumer cw's thread l of tile t
// into C of r rows (or a split's slice of the workspace) at c.
func (wk *wgKernel) newDirectStore(c ptx.Reg, od dtype.DType, t tile, r ext, cw, l ptx.Reg) *directStore {
	k, g := wk.k, wk.g
	lane := k.And(ptx.U32, l, ptx.Imm(31))
	wrow := k.Add(ptx.U32, k.Shl(ptx.U32, k.Shr(ptx.U32, l, ptx.Imm(5)), ptx.Imm(4)), k.Shr(ptx.U32, lane, ptx.Imm(2)))
	row := k.Add(ptx.U32, k.Mad(ptx.U32, cw, ptx.Imm(wk.rowsPC), t.row0), wrow)
	col := k.Add(ptx.U32, t.col0, k.Shl(ptx.U32, k.And(ptx.U32, lane, ptx.Imm(3)), ptx.Imm(1)))
	ds := &directStore{wk: wk, od: od, rowOK: map[int]ptx.Reg{}}
	ds.row, ds.col, ds.lane = row, col, lane
	ds.ptr = k.Add(ptx.U64, c, k.MulWide(ptx.U32, k.Mad(ptx.U32, row, ptx.Imm(g.c), col), ptx.Imm(od.Size())))
	for j := range wk.p.BN / 8 {
		ds.colOK = append(ds.colOK, k.Setp("lt", ptx.S32, col, ptx.Imm(g.c-8*j)))
	}
	ds.rows = newBound(k, row, r)
	return ds
}

// rowsOf computes the row bounds of mBlocks m64 blocks now (pair computes
// a bound at its first use, which must then dominate the later ones).
func (ds *directStore) rowsOf(mBlocks int) {
	for mb := range mBlocks {
		for h := range 2 {
			dr := 64*mb + 8*h
			ds.rowOK[dr] = ds.rows.below(dr)
		}
	}
}

// pair stores v0, v1 at rows 64mb + 8h and columns 8j of the thread's
// (the row's bound checked once per row).
func (ds *directStore) pair(mb, h, j int, v0, v1 ptx.Reg) {
	at, ok := ds.slot(64*mb+8*h, j)
	gen.StVals(ds.wk.k, ds.od, at, []ptx.Reg{v0, v1}, ok)
}

// slot is the address of the thread's pair at row dr below its first
// and column group j, and whether it lies inside C.
func (ds *directStore) slot(dr, j int) (ptx.Addr, ptx.Reg) {
	ok := ds.wk.k.And(ptx.Pred, ds.rowBound(dr), ds.colOK[j])
	return ptx.At(ds.ptr, int64(dr*ds.wk.g.c+8*j)*int64(ds.od.Size())), ok
}

// rowBound is the bound of the thread's row dr below its first, computed
// at its first use (which must dominate the later ones).
func (ds *directStore) rowBound(dr int) ptx.Reg {
	rowOK, ok := ds.rowOK[dr]
	if !ok {
		rowOK = ds.rows.below(dr)
		ds.rowOK[dr] = rowOK
	}
	return rowOK
}

// accumulate stores C = scale[row]·C + acc (C + acc where scale is not
// valid) for the thread's pairs, rounded once to C's dtype: each row's
// factor and each pair's old value are loaded under the store's guards,
// so rows and columns outside C read nothing. A row's old values are
// loaded accGroup pairs at a time, a group ahead of the sums and stores,
// so that their latencies overlap instead of following one another.
func (ds *directStore) accumulate(scale ptx.Reg, acc [][]ptx.Reg) {
	k, od := ds.wk.k, ds.od
	var scaleAt ptx.Reg
	if scale.Valid() {
		scaleAt = k.Add(ptx.U64, scale, k.MulWide(ptx.U32, ds.row, ptx.Imm(4)))
	}
	type pending struct {
		j   int
		at  ptx.Addr
		ok  ptx.Reg
		old []ptx.Reg
	}
	for mb := range acc {
		for h := range 2 {
			dr := 64*mb + 8*h
			rowOK := ds.rowBound(dr)
			var f ptx.Reg
			if scale.Valid() {
				f = gen.LdVals(k, ptx.Global, dtype.F32, 1, ptx.At(scaleAt, int64(4*dr)), rowOK)[0]
			}
			load := func(j0 int) []pending {
				var g []pending
				for j := j0; j < min(j0+accGroup, ds.wk.p.BN/8); j++ {
					at, ok := ds.slot(dr, j)
					g = append(g, pending{j: j, at: at, ok: ok, old: gen.LdVals(k, ptx.Global, od, 2, at, ok)})
				}
				return g
			}
			store := func(g []pending) {
				for _, q := range g {
					v := []ptx.Reg{acc[mb][4*q.j+2*h], acc[mb][4*q.j+2*h+1]}
					for i := range v {
						if f.Valid() {
							v[i] = k.Fma(ptx.F32, f, q.old[i], v[i])
						} else {
							v[i] = k.Add(ptx.F32, q.old[i], v[i])
						}
					}
					gen.StVals(k, od, q.at, v, q.ok)
				}
			}
			cur := load(0)
			for j0 := accGroup; j0 < ds.wk.p.BN/8; j0 += accGroup {
				next := load(j0)
				store(cur)
				cur = next
			}
			store(cur)
		}
	}
}

// reduce adds the thread's pairs to C (f32) with atomic adds, under the
// stores' guards.
func (ds *directStore) reduce(acc [][]ptx.Reg) {
	k := ds.wk.k
	for mb := range acc {
		for h := range 2 {
			for j := range ds.wk.p.BN / 8 {
				at, ok := ds.slot(64*mb+8*h, j)
				k.RedAddF32(at, []ptx.Reg{acc[mb][4*j+2*h], acc[mb][4*j+2*h+1]})
				k.Guard(ok, false)
			}
		}
	}
}

// accGroup is the pairs of old values an accumulating epilogue loads
// ahead of its stores.
const accGroup = 8
