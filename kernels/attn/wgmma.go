package attn

import (
	"math"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The wgmma main kernel (mma=wgmma, sm_90a): FlashAttention-3's backward
// schedule on the TMA ring and warpgroup roles of package hopper. The
// package doc states its rules; this file holds its layout and code.

// chunk is the bytes of one 64-column row of a tile in the 128-byte
// swizzle: tiles are stored as column chunks of 64 elements.
const chunk = 128

// wgLayout is the wgmma kernel's shared memory, offsets from the
// 1024-aligned base: K and V [bn × d] and two dS buffers [bm × bn] (column
// chunks of 64), the ring's slots (Q and dO [bm × d] in column chunks,
// then the block's lse2 and D [bm] f32), the K/V barrier and the ring's.
type wgLayout struct {
	g                   geom
	cons                int // consumer warpgroups, 64 keys each
	kOff, vOff, dsOff   int
	ringOff, stage      int
	doOff, lseOff, dOff int // within a slot
	stgOff              int // dq=tma: each consumer's dQ staging, two [64 × 32] f32 halves of a chunk
	kvBar, ringBars     int
}

// stgBytes is a consumer's dQ staging: a 64-column chunk of 64 queries in
// f32, as two 32-column halves of 128-byte rows in the 128-byte swizzle.
const stgBytes = 64 * 64 * 4

func newWGLayout(g geom) wgLayout {
	l := wgLayout{g: g, cons: g.bn / 64}
	l.vOff = g.bn * g.D * 2
	l.dsOff = 2 * l.vOff
	l.ringOff = l.dsOff + 2*g.bm*g.bn*2
	l.doOff = g.bm * g.D * 2
	l.lseOff = 2 * l.doOff
	l.dOff = l.lseOff + 4*g.bm
	l.stage = (l.dOff + 4*g.bm + 1023) &^ 1023
	l.stgOff = l.ringOff + g.stages*l.stage
	l.kvBar = l.stgOff
	if g.dqTMA {
		l.kvBar += l.cons * stgBytes
	}
	l.ringBars = l.kvBar + 8
	return l
}

func (l wgLayout) ring() hopper.Ring {
	return hopper.Ring{N: l.g.stages, Stride: l.stage, Data: l.ringOff, Bars: l.ringBars}
}

// smem is the dynamic shared memory, with the 1024 bytes the base may
// need to round up.
func (l wgLayout) smem() int { return l.ringBars + l.ring().BarsBytes() + 1024 }

func (l wgLayout) split() hopper.Split {
	return hopper.Split{Producer: hopper.ProducerRegs, Consumers: l.cons}
}

// slotBytes is what TMA writes into a slot: Q, dO, lse2 and D.
func (l wgLayout) slotBytes() int { return l.dOff + 4*l.g.bm }

// wgMaps are the main kernel's tensor maps, in its parameter order: q and
// do [b·s, hq, d] in boxes {64, 1, bm}, k and v [b·s, hk, d] in boxes
// {64, 1, bn} (all in the 128-byte swizzle; rows past b·s read as zeros),
// lse2 and dd [b·hq, sp] f32 in boxes {bm, 1}; with dq=tma dq32
// [b·s, hq, d] f32 in boxes {32, 1, bm} (the 128-byte swizzle).
func wgMaps(g geom) []kernels.Arg {
	// rows maps a [b·s, heads, d] buffer of dt in boxes {cols, 1, box}.
	rows := func(buf string, dt dtype.DType, heads, cols, box int) kernels.Arg {
		es := dt.Size()
		return kernels.Arg{TensorMap: &kernels.TensorMap{Buffer: buf, DType: dt, Dims: configs.Ints(g.D, heads, g.B*g.S),
			Strides: configs.Ints(es*g.D, es*heads*g.D), Box: []int{cols, 1, box}, Swizzle: 128}}
	}
	vec := func(buf string) kernels.Arg {
		return kernels.Arg{TensorMap: &kernels.TensorMap{Buffer: buf, DType: dtype.F32, Dims: configs.Ints(g.sp, g.B*g.HQ),
			Strides: configs.Ints(4 * g.sp), Box: []int{g.bm, 1}}}
	}
	maps := []kernels.Arg{rows("q", g.DType, g.HQ, 64, g.bm), rows("k", g.DType, g.HK, 64, g.bn), rows("v", g.DType, g.HK, 64, g.bn),
		rows("do", g.DType, g.HQ, 64, g.bm), vec("lse2"), vec("dd")}
	if g.dqTMA {
		maps = append(maps, rows("dq32", dtype.F32, g.HQ, 32, g.bm))
	}
	return maps
}

// dqMap is the index of dq32's tensor map among the kernel's maps.
const dqMap = 6

// wgKernel is the build state of the wgmma main kernel: a CTA holds keys
// [n·bn, +bn) of a KV head of a sequence for hpc of the head's query
// heads; consumer warpgroup c owns keys [64c, +64) of the block, their dK
// and dV in registers.
type wgKernel struct {
	k       *ptx.Func
	g       geom
	l       wgLayout
	b       bugs
	base    ptx.Reg
	maps    []ptx.Sym // q, k, v, do, lse2, dd, and dq32 with dq=tma (dqMap)
	dq32    ptx.Reg
	bi, kvh ptx.Reg
	nb, n0  ptx.Reg
	loop    queryLoop
	ab      ptx.Type
}

// emitMainWG writes the wgmma main kernel; its parameters are wgMaps'
// tensor maps, then dq32 and the dK and dV outputs (geom.kvOut).
func emitMainWG(k *ptx.Func, g geom, b bugs) {
	l := newWGLayout(g)
	wk := &wgKernel{k: k, g: g, l: l, b: b, ab: gen.HalfType(g.DType)}
	k.ReqNTid(l.split().Threads())
	l.split().Declare(k)
	names := []string{"q", "k", "v", "do", "lse2", "dd"}
	if g.dqTMA {
		names = append(names, "dq32map")
	}
	for _, n := range names {
		wk.maps = append(wk.maps, k.TensorMapParam(n))
	}
	wk.dq32 = gen.Param(k, "dq32")
	dk, dv := gen.Param(k, g.kvOut()[0]), gen.Param(k, g.kvOut()[1])
	wk.base = hopper.AlignedBase(k)
	tid := k.Mov(ptx.U32, ptx.TidX)
	// CTA (x, y, z): query heads [x·hpc, +hpc), sequence y, key block z,
	// so that the longest key blocks (causal: the first) start first.
	wk.nb = k.Mov(ptx.U32, ptx.CtaidZ)
	wk.bi = k.Mov(ptx.U32, ptx.CtaidY)
	h0 := k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(int64(g.hpc)))
	wk.kvh = k.Div(ptx.U32, h0, ptx.Imm(int64(g.g)))
	wk.n0 = k.Mul(ptx.U32, wk.nb, ptx.Imm(int64(g.bn)))
	wk.loop = newQueryLoop(k, g, wk.n0, h0)
	hopper.InitBarriers(k, tid, func() {
		k.MbarInit(wk.at(l.kvBar), ptx.Imm(1))
		for s := range g.stages {
			l.ring().InitSlot(k, wk.base, s, 1, 4*l.cons)
		}
	})
	k.BarSync(0)
	wg := hopper.Warpgroup(k, tid)
	split := l.split()
	hopper.Roles(k, wg, func() {
		if split.Reallocates() {
			split.EnterProducer(k)
		}
		k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), wk.issuer)
	}, func() {
		if split.Reallocates() {
			split.EnterConsumer(k)
		}
		wk.consumer(k.Sub(ptx.U32, wg, ptx.Imm(1)), k.And(ptx.U32, tid, ptx.Imm(127)), dk, dv)
	})
}

// at is the shared address base + off.
func (wk *wgKernel) at(off int) ptx.Addr { return ptx.At(wk.base, int64(off)) }

// issuer (thread 0): K and V once on their barrier, then per query block
// its slot's Q, dO, lse2 and D.
func (wk *wgKernel) issuer() {
	k, g, l := wk.k, wk.g, wk.l
	tm := func(i int) ptx.Reg { return k.TensorMapAddr(wk.maps[i]) }
	mq, mk, mv, mdo, ml, md := tm(0), tm(1), tm(2), tm(3), tm(4), tm(5)
	kv := wk.at(l.kvBar)
	k.MbarArriveExpectTx(kv, ptx.Imm(int64(2*g.bn*g.D*2)))
	row := k.Mad(ptx.U32, wk.bi, ptx.Imm(int64(g.S)), wk.n0)
	for c := range g.D / 64 {
		col := ptx.Imm(int64(64 * c))
		k.TmaLoad(wk.at(l.kOff+c*g.bn*chunk), mk, []ptx.Operand{col, wk.kvh, row}, kv)
		k.TmaLoad(wk.at(l.vOff+c*g.bn*chunk), mv, []ptx.Operand{col, wk.kvh, row}, kv)
	}
	r := l.ring().Cursor(k)
	k.For(ptx.U32, ptx.Imm(0), wk.loop.total, ptx.Imm(1), func(it ptx.Reg) {
		q0, h := wk.loop.block(it)
		r.WaitEmpty(wk.base)
		full, dst := r.Full(wk.base), r.Data(wk.base)
		k.MbarArriveExpectTx(full, ptx.Imm(int64(l.slotBytes())))
		qrow := k.Mad(ptx.U32, wk.bi, ptx.Imm(int64(g.S)), q0)
		for c := range g.D / 64 {
			col := ptx.Imm(int64(64 * c))
			k.TmaLoad(ptx.At(dst, int64(c*g.bm*chunk)), mq, []ptx.Operand{col, h, qrow}, full)
			k.TmaLoad(ptx.At(dst, int64(l.doOff+c*g.bm*chunk)), mdo, []ptx.Operand{col, h, qrow}, full)
		}
		head := k.Mad(ptx.U32, wk.bi, ptx.Imm(int64(g.HQ)), h)
		k.TmaLoad(ptx.At(dst, int64(l.lseOff)), ml, []ptx.Operand{q0, head}, full)
		k.TmaLoad(ptx.At(dst, int64(l.dOff)), md, []ptx.Operand{q0, head}, full)
		r.Next()
	})
}

// wgThread is a consumer thread's place: its warpgroup c, warp w of it,
// the accumulator row g4 and first column tig of its lane, whether it is
// the warpgroup's thread 0 (leader: it issues the dQ reductions), the
// keys of its two accumulator rows (n0 + 64c + 16w + g4 and 8 past it)
// and whether each is below s, and the shared address of its
// warpgroup's 64 rows of K (V's are vOff further).
type wgThread struct {
	c, w, g4, tig, leader ptx.Reg
	key, inSeq            [2]ptx.Reg
	kRows                 ptx.Reg
}

// consumer runs warpgroup c's loop over the query blocks (wgStep), then
// stores its dK (scaled) and dV.
func (wk *wgKernel) consumer(c, t, dk, dv ptx.Reg) {
	k, g := wk.k, wk.g
	lane := k.And(ptx.U32, t, ptx.Imm(31))
	th := wgThread{c: c, w: k.Shr(ptx.U32, t, ptx.Imm(5)), g4: k.Shr(ptx.U32, lane, ptx.Imm(2)),
		tig: k.Shl(ptx.U32, k.And(ptx.U32, lane, ptx.Imm(3)), ptx.Imm(1)), leader: k.Setp("eq", ptx.U32, t, ptx.Imm(0)),
		kRows: k.Add(ptx.U32, wk.base, k.Shl(ptx.U32, c, ptx.Imm(13)))} // 64 rows of 128 bytes a warpgroup
	key := k.Add(ptx.U32, k.Add(ptx.U32, wk.n0, k.Shl(ptx.U32, th.c, ptx.Imm(6))), k.Add(ptx.U32, k.Shl(ptx.U32, th.w, ptx.Imm(4)), th.g4))
	th.key = [2]ptx.Reg{key, k.Add(ptx.U32, key, ptx.Imm(8))}
	for i, key := range th.key {
		th.inSeq[i] = k.Setp("lt", ptx.U32, key, ptx.Imm(int64(g.S)))
	}
	dkAcc, dvAcc := k.WgmmaAcc(g.D), k.WgmmaAcc(g.D)
	for _, a := range append(append([]ptx.Reg{}, dkAcc...), dvAcc...) {
		k.MovTo(a, ptx.F32Imm(0))
	}
	k.MbarWait(wk.at(wk.l.kvBar), ptx.Imm(0))
	lane0 := k.Setp("eq", ptx.U32, lane, ptx.Imm(0))
	r := wk.l.ring().Cursor(k)
	k.For(ptx.U32, ptx.Imm(0), wk.loop.total, ptx.Imm(1), func(it ptx.Reg) {
		q0, h := wk.loop.block(it)
		r.WaitFull(wk.base)
		wk.step(th, r.Data(wk.base), it, q0, h, dkAcc, dvAcc)
		r.Release(wk.base, lane0)
		r.Next()
	})
	rows := rowStore{k: k, g: g, bi: wk.bi, kvh: wk.kvh, key: th.key, tig: th.tig}
	wk.stagingDone(th, false)
	put := rows.store
	if g.splitKV() {
		put = rows.add
	}
	put(dk, quads(dkAcc), g.scale)
	put(dv, quads(dvAcc), 1)
}

// stagingDone (dq=tma) makes the leader wait for its dQ reductions: until
// they have read the staging (read), or until they are complete.
func (wk *wgKernel) stagingDone(th wgThread, read bool) {
	if wk.g.dqTMA {
		wk.k.If(th.leader, func() { wk.k.BulkWait(0, read) })
	}
}

// quads is a wgmma accumulator as m16n8 blocks (hopper.Warp's layout).
func quads(acc []ptx.Reg) [][4]ptx.Reg {
	out := make([][4]ptx.Reg, len(acc)/4)
	for j := range out {
		out[j] = [4]ptx.Reg(acc[4*j : 4*j+4])
	}
	return out
}

// desc is the wgmma descriptor of the 128-byte-swizzled tile at shared
// address base + off: K-major (lbo unused), or MN-major with its 64-column
// atoms lbo bytes apart.
func (wk *wgKernel) desc(at ptx.Reg, off, lbo int) ptx.Reg {
	return wk.k.WgmmaDesc(wk.k.Add(ptx.U32, at, ptx.Imm(int64(off))), lbo, 1024, ptx.Swizzle128B)
}

// kMajorStep is the byte offset of k16 step kk in a K-major tile of rows
// rows stored as 64-column chunks.
func kMajorStep(kk, rows int) int { return kk/4*rows*chunk + kk%4*32 }

// step is one query block (rows q0.., head h) in slot: Sᵀ = K·Qᵀ and
// dPᵀ = V·dOᵀ (the warpgroup's 64 keys by bm queries), P and dS in
// registers, dSᵀ into the dS buffer of the block's parity, dV += Pᵀ·dO,
// then, after the consumers' barrier, dQ = dS·K into dq32 and
// dK += dSᵀ·Q.
func (wk *wgKernel) step(th wgThread, slot, it, q0, h ptx.Reg, dkAcc, dvAcc []ptx.Reg) {
	k, g, l := wk.k, wk.g, wk.l
	sAcc, pAcc := k.WgmmaAcc(g.bm), k.WgmmaAcc(g.bm)
	k.WgmmaFence()
	for _, gemm := range []struct {
		acc  []ptx.Reg
		a, b int
	}{{sAcc, l.kOff, 0}, {pAcc, l.vOff, l.doOff}} {
		for kk := range g.D / 16 {
			var scale ptx.Operand = ptx.Imm(1)
			if kk == 0 {
				scale = ptx.Imm(0)
			}
			a := wk.desc(th.kRows, gemm.a+kMajorStep(kk, g.bn), 16)
			b := wk.desc(slot, gemm.b+kMajorStep(kk, g.bm), 16)
			k.Wgmma(wk.ab, gemm.acc, a, b, ptx.WgmmaOpts{ScaleD: scale})
		}
		k.WgmmaCommit()
	}
	k.WgmmaWait(1)
	wk.probabilities(th, slot, q0, sAcc)
	k.WgmmaWait(0)
	wk.dsFromDP(th, slot, sAcc, pAcc)
	aP, aS := wk.fragments(sAcc), wk.fragments(pAcc)
	ds := k.Add(ptx.U32, k.Add(ptx.U32, wk.base, ptx.Imm(int64(l.dsOff))), k.Mul(ptx.U32, k.And(ptx.U32, it, ptx.Imm(1)), ptx.Imm(int64(g.bm*g.bn*2))))
	wk.storeDS(th, ds, pAcc)
	k.WgmmaFence()
	wk.rsGEMM(dvAcc, aP, slot, l.doOff)
	k.FenceProxyAsync()
	wk.stagingDone(th, true) // the last reductions have read the staging before barrier 1 frees it
	if !wk.b.noDSBar {
		k.BarSyncN(1, 128*l.cons)
	}
	chunks := wk.dqChunks()
	dq := k.WgmmaAcc(64)
	wk.dqGEMM(dq, ds, chunks[0], th)
	wk.rsGEMM(dkAcc, aS, slot, 0)
	k.WgmmaWait(1)
	wk.flushDQ(th, q0, h, dq, chunks[0])
	for _, ch := range chunks[1:] {
		wk.dqGEMM(dq, ds, ch, th)
		k.WgmmaWait(0)
		if g.dqTMA {
			wk.stagingDone(th, true)
			k.BarSyncN(stgBar, 128*l.cons)
		}
		wk.flushDQ(th, q0, h, dq, ch)
	}
	k.WgmmaWait(0)
}

// stgBar is the consumers' named barrier between their dQ staging and
// its reduction (barrier 1 orders the dS buffers).
const stgBar = 2

// flushDQ adds dq·scale, dQ's chunk c + ch for the block's queries, into
// dq32: by red.add (addDQ), or with dq=tma staged into the consumer's
// staging (the two 32-column halves in the 128-byte swizzle: row r's
// 16-byte unit u at u ^ (r mod 8)), then, after the async-proxy fence and
// the consumers' staging barrier, added by the leader's two TMA
// reductions as one bulk group. Queries past s stage zeros (P = 0
// there), which add nothing to the rows of the next sequence.
func (wk *wgKernel) flushDQ(th wgThread, q0, h ptx.Reg, dq []ptx.Reg, ch int) {
	if !wk.g.dqTMA {
		wk.addDQ(th, q0, h, dq, ch)
		return
	}
	k, g, l := wk.k, wk.g, wk.l
	stg := k.Add(ptx.U32, k.Mad(ptx.U32, th.c, ptx.Imm(stgBytes), wk.base), ptx.Imm(int64(l.stgOff)))
	sc := gen.F32Imm(g.scale)
	unit0 := k.Shr(ptx.U32, th.tig, ptx.Imm(2))
	sub := k.Shl(ptx.U32, k.And(ptx.U32, th.tig, ptx.Imm(2)), ptx.Imm(2))
	row := k.Add(ptx.U32, k.Shl(ptx.U32, th.w, ptx.Imm(4)), th.g4)
	rowAt := k.Add(ptx.U32, k.Mad(ptx.U32, row, ptx.Imm(chunk), stg), sub)
	for j, c := range quads(dq) {
		u := k.Xor(ptx.U32, k.Add(ptx.U32, unit0, ptx.Imm(int64(2*(j%4)))), th.g4)
		at := k.Add(ptx.U32, rowAt, k.Shl(ptx.U32, u, ptx.Imm(4)))
		for half := range 2 {
			v := []ptx.Reg{k.Mul(ptx.F32, c[2*half], sc), k.Mul(ptx.F32, c[2*half+1], sc)}
			k.St(ptx.Shared, ptx.F32, ptx.At(at, int64(j/4*stgBytes/2+8*half*chunk)), v)
		}
	}
	k.FenceProxyAsync()
	k.BarSyncN(stgBar, 128*l.cons)
	issue := th.leader
	if wk.b.dropDQ {
		issue = k.And(ptx.Pred, issue, k.Setp("ne", ptx.U32, wk.nb, ptx.Imm(0)))
	}
	k.If(issue, func() {
		m := k.TensorMapAddr(wk.maps[dqMap])
		qrow := k.Mad(ptx.U32, wk.bi, ptx.Imm(int64(g.S)), q0)
		col := k.Shl(ptx.U32, k.Add(ptx.U32, th.c, ptx.Imm(int64(ch))), ptx.Imm(6))
		for hb := range 2 {
			k.TmaReduceAdd(m, []ptx.Operand{k.Add(ptx.U32, col, ptx.Imm(int64(32*hb))), h, qrow}, ptx.At(stg, int64(hb*stgBytes/2)))
		}
		k.BulkCommit()
	})
}

// dqChunks is the offsets of the 64-column chunks of dQ a consumer
// computes, from its own index c: chunk c + i·consumers for i below
// d/64/consumers (bn ≤ d: at least one).
func (wk *wgKernel) dqChunks() []int {
	out := make([]int, wk.g.D/64/wk.l.cons)
	for i := range out {
		out[i] = i * wk.l.cons
	}
	return out
}

// probabilities turns Sᵀ into P = 2^(S·scale·log₂e − lse2) in place, 0
// where the causal mask hides the key or the key is past s (the rows of
// the next sequence or TMA's zeros).
func (wk *wgKernel) probabilities(th wgThread, slot, q0 ptx.Reg, sAcc []ptx.Reg) {
	k, g := wk.k, wk.g
	c := gen.F32Imm(g.scale * math.Log2E)
	for j := range g.bm / 8 {
		col := k.Add(ptx.U32, th.tig, ptx.Imm(int64(8*j)))
		lse := k.Ld(ptx.Shared, ptx.F32, 2, ptx.At(k.Add(ptx.U32, slot, k.Shl(ptx.U32, col, ptx.Imm(2))), int64(wk.l.lseOff)))
		qi := k.Add(ptx.U32, q0, col)
		for e := range 4 {
			p := k.Ex2Approx(k.Fma(ptx.F32, sAcc[4*j+e], c, k.Neg(ptx.F32, lse[e&1])))
			ok := th.inSeq[e>>1]
			if g.Causal == 1 {
				cmp := "le"
				if wk.b.maskEdge {
					cmp = "lt"
				}
				ok = k.And(ptx.Pred, ok, k.Setp(cmp, ptx.U32, th.key[e>>1], k.Add(ptx.U32, qi, ptx.Imm(int64(e&1)))))
			}
			k.MovTo(sAcc[4*j+e], k.Selp(ptx.F32, p, ptx.F32Imm(0), ok))
		}
	}
}

// dsFromDP turns dPᵀ into dSᵀ = P·(dP − D) in place.
func (wk *wgKernel) dsFromDP(th wgThread, slot ptx.Reg, pAcc, dpAcc []ptx.Reg) {
	k, g := wk.k, wk.g
	for j := range g.bm / 8 {
		col := k.Add(ptx.U32, th.tig, ptx.Imm(int64(8*j)))
		d := k.Ld(ptx.Shared, ptx.F32, 2, ptx.At(k.Add(ptx.U32, slot, k.Shl(ptx.U32, col, ptx.Imm(2))), int64(wk.l.dOff)))
		for e := range 4 {
			i := 4*j + e
			k.MovTo(dpAcc[i], k.Mul(ptx.F32, pAcc[i], k.Sub(ptx.F32, dpAcc[i], d[e&1])))
		}
	}
}

// fragments rounds a [64 keys × bm queries] accumulator into the A
// fragments of its k16 steps over the queries (the RS wgmma's A: the
// accumulator's layout is the fragment's).
func (wk *wgKernel) fragments(acc []ptx.Reg) [][4]ptx.Reg {
	q := quads(acc)
	out := make([][4]ptx.Reg, len(q)/2)
	for t := range out {
		out[t] = hopper.PackA(wk.k, wk.g.DType, q[2*t], q[2*t+1])
	}
	return out
}

// rsGEMM issues acc += A·B over the block's queries as one group: A the
// fragments, B the slot's [bm × d] tile at off read MN-major (N = d).
func (wk *wgKernel) rsGEMM(acc []ptx.Reg, a [][4]ptx.Reg, slot ptx.Reg, off int) {
	for t, f := range a {
		b := wk.desc(slot, off+t*16*chunk, wk.g.bm*chunk)
		wk.k.WgmmaRegA(wk.ab, acc, f, b, ptx.WgmmaOpts{TransB: true})
	}
	wk.k.WgmmaCommit()
}

// storeDS stores the warpgroup's dSᵀ [64 keys × bm], rounded, transposed
// into chunk c of the dS buffer ds: row q holds dS[q][64c ..] in the
// 128-byte swizzle, the A of dQ = dS·K. stmatrix.x4.trans takes the
// m8n8 blocks (keys +0/+8, queries 8j..) and (keys +0/+8, queries
// 8j+8..); lane t gives the address of row t%8 of block t/8.
func (wk *wgKernel) storeDS(th wgThread, ds ptx.Reg, acc []ptx.Reg) {
	k, g := wk.k, wk.g
	pt := ptx.F16x2
	if g.DType == dtype.BF16 {
		pt = ptx.BF16x2
	}
	lane := k.Add(ptx.U32, k.Shl(ptx.U32, th.g4, ptx.Imm(2)), k.Shr(ptx.U32, th.tig, ptx.Imm(1)))
	m, r := k.Shr(ptx.U32, lane, ptx.Imm(3)), k.And(ptx.U32, lane, ptx.Imm(7))
	unit := k.Add(ptx.U32, k.Shl(ptx.U32, th.w, ptx.Imm(1)), k.And(ptx.U32, m, ptx.Imm(1))) // keys 16w + 8(m&1): their 16-byte unit
	at := k.Add(ptx.U32, k.Mad(ptx.U32, th.c, ptx.Imm(int64(g.bm*chunk)), ds), k.Shl(ptx.U32, k.Xor(ptx.U32, unit, r), ptx.Imm(4)))
	row := k.Add(ptx.U32, k.Shl(ptx.U32, k.Shr(ptx.U32, m, ptx.Imm(1)), ptx.Imm(3)), r) // query 8(m>>1) + r of the pair of blocks
	at = k.Mad(ptx.U32, row, ptx.Imm(chunk), at)
	q := quads(acc)
	for j := 0; j < len(q); j += 2 {
		vals := make([]ptx.Reg, 4)
		for mi := range 4 {
			b := q[j+mi>>1]
			h := mi & 1
			vals[mi] = k.PackHalf2(pt, b[2*h+1], b[2*h])
		}
		k.Stmatrix(true, ptx.At(at, int64(8*j*chunk)), vals)
	}
}

// dqGEMM issues dq = dS·K over the block's bn keys for dQ's 64-column
// chunk c + ch as one group: A the dS buffer (K-major), B K's chunk
// (MN-major). Every consumer has its chunks (bn ≤ d): a wgmma under a
// branch is one ptxas serializes (C7512).
func (wk *wgKernel) dqGEMM(dq []ptx.Reg, ds ptx.Reg, ch int, th wgThread) {
	k, g, l := wk.k, wk.g, wk.l
	kChunk := k.Add(ptx.U32, wk.base, k.Mul(ptx.U32, k.Add(ptx.U32, th.c, ptx.Imm(int64(ch))), ptx.Imm(int64(g.bn*chunk))))
	k.WgmmaFence()
	for kt := range g.bn / 16 {
		var scale ptx.Operand = ptx.Imm(1)
		if kt == 0 {
			scale = ptx.Imm(0)
		}
		a := wk.desc(ds, kMajorStep(kt, g.bm), 16)
		b := wk.desc(kChunk, l.kOff+kt*16*chunk, g.bn*chunk)
		k.Wgmma(wk.ab, dq, a, b, ptx.WgmmaOpts{ScaleD: scale, TransB: true})
	}
	k.WgmmaCommit()
}

// addDQ adds dq·scale, dQ's chunk c + ch for the block's queries, into
// dq32 by red.add.v4 (queries at or past s left out): lanes l and l^1 hold
// columns 2t.. and 2t+2.. of rows g4 and g4+8, so they swap a pair
// (shfl.bfly 1) and the even lane adds four columns of row g4, the odd
// lane four of row g4+8: half the atomics of a pair each.
func (wk *wgKernel) addDQ(th wgThread, q0, h ptx.Reg, dq []ptx.Reg, ch int) {
	k, g := wk.k, wk.g
	odd := k.Setp("ne", ptx.U32, k.And(ptx.U32, th.tig, ptx.Imm(2)), ptx.Imm(0))
	col := k.Add(ptx.U32, k.Shl(ptx.U32, k.Add(ptx.U32, th.c, ptx.Imm(int64(ch))), ptx.Imm(6)), k.And(ptx.U32, th.tig, ptx.Imm(4)))
	row := k.Add(ptx.U32, k.Add(ptx.U32, q0, k.Shl(ptx.U32, th.w, ptx.Imm(4))), k.Add(ptx.U32, th.g4, k.Selp(ptx.U32, ptx.Imm(8), ptx.Imm(0), odd)))
	e := k.Mad(ptx.U32, k.Mad(ptx.U32, k.Mad(ptx.U32, wk.bi, ptx.Imm(int64(g.S)), row), ptx.Imm(int64(g.HQ)), h), ptx.Imm(int64(g.D)), col)
	base := k.Add(ptx.U64, wk.dq32, k.MulWide(ptx.U32, e, ptx.Imm(4)))
	ok := k.Setp("lt", ptx.U32, row, ptx.Imm(int64(g.S)))
	if wk.b.dropDQ {
		ok = k.And(ptx.Pred, ok, k.Setp("ne", ptx.U32, wk.nb, ptx.Imm(0)))
	}
	sc := gen.F32Imm(g.scale)
	for j, c := range quads(dq) {
		v := gen.QuadRows(k, odd, c)
		for i := range v {
			v[i] = k.Mul(ptx.F32, v[i], sc)
		}
		k.If(ok, func() { k.RedAddF32(ptx.At(base, int64(32*j)), v[:]) })
	}
}
