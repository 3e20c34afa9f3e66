package nf4gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The sync path is gemm_bwd's (kernels/gemm, grad=dx) on the library's
// sm80 helpers (hopper.Warp, hopper.CpAsyncLoop): 4 warps in a 2×2 grid,
// each a (BM/2)×(BN/2) warp tile of m16n8k16 MMAs; dY tiles [BM×BK]
// arrive by cp.async into a ring of Stages slots; the W tile of a
// slot is [BK×BN] halves, rows along the reduction (N), written by the
// warps themselves: each thread loads 4 packed bytes (8 codes along K)
// per chunk with ld.global.nc, looks up their scale, dequantizes
// (lookup.go) and stores one 16-byte chunk. Both tiles use gemm_bwd's
// XOR swizzle so that ldmatrix reads them conflict-free. The dequantized
// stores of a slot are read stages−1 iterations later, after at least one
// barrier.
const syncWarpsM, syncWarpsN, syncThreads = 2, 2, 128

type syncKernel struct {
	k      *ptx.Func
	s      GEMMShape
	w      weight
	p      GEMMParams
	tm, tn int
	aBytes int
	stage  int
	warp   hopper.Warp // the thread's warp (set by body)
}

func (gemmDef) Emit(s GEMMShape, p GEMMParams) (kernels.Program, error) {
	if !p.Dequant.fused() {
		return emitDense(s, p)
	}
	if p.MMA == "wgmma" && p.Dequant == Consumers {
		return emitRS(s, p)
	}
	if p.MMA == "wgmma" {
		return emitWgmma(s, p)
	}
	entry := fmt.Sprintf("nf4_gemm_bwd_sync_%v", s.DType)
	m := ptx.NewModule()
	sk := &syncKernel{k: m.Func(entry), s: s, w: s.weight(), p: p}
	sk.tm, sk.tn = p.BM/syncWarpsM, p.BN/syncWarpsN
	sk.aBytes = p.BM * p.BK * 2
	sk.stage = sk.aBytes + p.BK*p.BN*2
	sk.k.ReqNTid(syncThreads)
	args := sk.body()
	mod, err := m.Build()
	if err != nil {
		return kernels.Program{}, fmt.Errorf("building: %w", err)
	}
	// tiles: ⌈m/bm⌉ tile rows by the tile columns
	grid := configs.CeilDiv(tokens, configs.Int(p.BM)).TimesInt(gen.CeilDiv(s.K, p.BN))
	l := kernels.Launch{Entry: entry, Grid: [3]configs.Expr{grid, configs.Int(1), configs.Int(1)},
		Block: [3]int{syncThreads, 1, 1}, SharedBytes: smemBytes(p), Args: args}
	return kernels.Program{PTX: mod.String(), Launches: []kernels.Launch{l}, RuntimeDims: []string{tokenDim}}, nil
}

// body writes the kernel and returns its launch arguments: the buffers,
// then m.
func (sk *syncKernel) body() []kernels.Arg {
	k, s, p := sk.k, sk.s, sk.p
	names := []string{"dy", "dx"}
	for _, b := range sk.w.buffers() {
		names = append(names, b.Name)
	}
	bufs := map[string]ptx.Reg{}
	var args []kernels.Arg
	for _, n := range names {
		bufs[n] = gen.Param(k, n)
		args = append(args, kernels.Arg{Buffer: n})
	}
	m, arg := tokensParam(k)
	args = append(args, arg)
	smem := k.Mov(ptx.U32, k.DynamicShared("smem", 128))
	tid := k.Mov(ptx.U32, ptx.TidX)
	d := newDeq(k, p.Lookup, s.DType, tid)
	lane, wr, wc := hopper.WarpOf(k, tid, syncWarpsN)
	sk.warp = hopper.Warp{K: k, In: s.DType, BM: p.BM, BN: p.BN, BK: p.BK, TM: sk.tm, TN: sk.tn, AKMajor: true,
		ABytes: sk.aBytes, Lane: lane, Row: wr, Col: wc}
	// Tiles go down the rows of dX (order m): ⌈m/bm⌉ of them per column.
	tr := k.Div(ptx.U32, k.Add(ptx.U32, m, ptx.Imm(p.BM-1)), ptx.Imm(p.BM))
	t := k.Mov(ptx.U32, ptx.CtaidX)
	r, c := hopper.DownRows(k, t, tr)
	row0 := k.Mul(ptx.U32, r, ptx.Imm(p.BM))
	col0 := k.Mul(ptx.U32, c, ptx.Imm(p.BN))
	la := newALoader(k, bufs["dy"], tid, row0, m, p.BM, p.BK, s.N)
	lb := newBLoader(sk, d, bufs, tid, col0)
	aOff, bOff := sk.warp.FragOffsets()
	acc := sk.warp.ZeroAcc()
	kbase := k.Mov(ptx.U32, ptx.Imm(0))
	load := func(slot ptx.Reg) {
		la.load(slot)
		lb.load(k.Add(ptx.U32, slot, ptx.Imm(sk.aBytes)), kbase)
		k.MovTo(kbase, k.Add(ptx.U32, kbase, ptx.Imm(p.BK)))
	}
	hopper.CpAsyncLoop(k, smem, p.Stages, sk.stage, ptx.Imm(s.N/p.BK), load, func(slot ptx.Reg) { sk.warp.Compute(slot, aOff, bOff, acc) })
	// rows past m (a register) are not stored
	rows := func(row ptx.Reg) func(dr int) ptx.Reg {
		left := k.Sub(ptx.S32, m, row) // rows from the thread's first to m's end
		return func(dr int) ptx.Reg { return k.Setp("gt", ptx.S32, left, ptx.Imm(dr)) }
	}
	sk.warp.Store(bufs["dx"], row0, col0, s.DType, s.K, rows, acc)
	return args
}

// aLoader copies dY k-tiles [rows × bk] (K-major: the reduction index
// contiguous) with cp.async, 16 bytes per chunk; rows past m (a register)
// are zero-filled.
type aLoader struct {
	k         *ptx.Func
	n, step   int
	cols      int
	base, ptr ptx.Reg
	ok        []ptx.Reg
	sOff      ptx.Reg
	ld        int
	bk        int
}

func newALoader(k *ptx.Func, base, tid, row0, m ptx.Reg, rows, bk, n int) *aLoader {
	chunks := bk / 8
	la := &aLoader{k: k, cols: bk, base: base, ld: 2 * n, bk: bk}
	la.n, la.step = rows*chunks/syncThreads, syncThreads/chunks
	rr0 := k.Shr(ptx.U32, tid, ptx.Imm(gen.Log2(chunks)))
	cc := k.And(ptx.U32, tid, ptx.Imm(chunks-1))
	la.sOff = gen.SwizzledTileOffset(k, rr0, cc, bk)
	grow := k.Add(ptx.U32, row0, rr0)
	left := k.Sub(ptx.S32, m, grow) // rows from the thread's first to m's end
	for i := range la.n {
		la.ok = append(la.ok, k.Setp("gt", ptx.S32, left, ptx.Imm(i*la.step)))
	}
	elem := k.Mad(ptx.U32, grow, ptx.Imm(n), k.Shl(ptx.U32, cc, ptx.Imm(3)))
	la.ptr = k.Add(ptx.U64, base, k.MulWide(ptx.U32, elem, ptx.Imm(2)))
	return la
}

func (la *aLoader) load(dst ptx.Reg) {
	k := la.k
	d := k.Add(ptx.U32, dst, la.sOff)
	for i := range la.n {
		src := k.Selp(ptx.U64, k.Add(ptx.U64, la.ptr, ptx.Imm(int64(i*la.step)*int64(la.ld))), la.base, la.ok[i])
		size := k.Selp(ptx.U32, ptx.Imm(16), ptx.Imm(0), la.ok[i])
		k.Raw(80, 70, "cp.async.cg.shared.global", ptx.At(d, int64(i*la.step*la.cols*2)), ptx.At(src, 0), ptx.Imm(16), size)
	}
	k.MovTo(la.ptr, k.Add(ptx.U64, la.ptr, ptx.Imm(int64(2*la.bk))))
}

// bLoader dequantizes W k-tiles [bk rows of n × bn columns of k] into a
// slot: a thread owns chunk column cc of rows rr0 + i·step (8 codes, 4
// packed bytes, one scale each); chunks past k store zeros.
type bLoader struct {
	sk      *syncKernel
	d       *deq
	bufs    map[string]ptx.Reg
	n, step int
	rr0     ptx.Reg
	col     ptx.Reg // the chunk's first column (element index along k)
	colOK   ptx.Reg
	sOff    ptx.Reg
}

func newBLoader(sk *syncKernel, d *deq, bufs map[string]ptx.Reg, tid, col0 ptx.Reg) *bLoader {
	k, p := sk.k, sk.p
	chunks := p.BN / 8
	lb := &bLoader{sk: sk, d: d, bufs: bufs}
	lb.n, lb.step = p.BK*chunks/syncThreads, syncThreads/chunks
	lb.rr0 = k.Shr(ptx.U32, tid, ptx.Imm(gen.Log2(chunks)))
	cc := k.And(ptx.U32, tid, ptx.Imm(chunks-1))
	lb.sOff = gen.SwizzledTileOffset(k, lb.rr0, cc, p.BN)
	lb.col = k.Add(ptx.U32, col0, k.Shl(ptx.U32, cc, ptx.Imm(3)))
	lb.colOK = k.Setp("lt", ptx.U32, lb.col, ptx.Imm(sk.s.K))
	return lb
}

// load dequantizes the k-tile whose first row of W is kbase into dst.
func (lb *bLoader) load(dst, kbase ptx.Reg) {
	sk := lb.sk
	k, s, w := sk.k, sk.s, sk.w
	d := k.Add(ptx.U32, dst, lb.sOff)
	for i := range lb.n {
		row := k.Add(ptx.U32, k.Add(ptx.U32, kbase, lb.rr0), ptx.Imm(i*lb.step))
		elem := k.Mad(ptx.U32, row, ptx.Imm(s.K), lb.col) // element index in W
		out := [4]ptx.Reg{}
		for j := range out {
			out[j] = k.Mov(ptx.B32, ptx.Imm(0))
		}
		k.If(lb.colOK, func() {
			src := k.Add(ptx.U64, lb.bufs["w4"], k.Cvt(ptx.U64, ptx.U32, "", k.Shr(ptx.U32, elem, ptx.Imm(1))))
			codes := k.Ld(ptx.Global, ptx.B32, 1, ptx.At(src, 0), ptx.LdOpts{NC: true})[0]
			blk := k.Div(ptx.U32, elem, ptx.Imm(w.block))
			vals := lb.d.word(codes, lb.d.forScale(loadScale(k, w.dq, lb.bufs, blk)))
			for j := range out {
				k.MovTo(out[j], vals[j])
			}
		})
		k.St(ptx.Shared, ptx.B32, ptx.At(d, int64(i*lb.step*sk.p.BN*2)), out[:])
	}
}
