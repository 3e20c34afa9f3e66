package attn

import (
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// mainKernel is the build state of the main kernel: CTA (n, kv head,
// sequence) holds keys [n·bn, +bn) of its KV head; warp w owns keys
// [16w, +16) of the block, their dK and dV in registers, and loops over
// the query blocks of every query head of the group (the package doc).
type mainKernel struct {
	k    *ptx.Func
	g    geom
	b    bugs
	lane ptx.Reg
	warp ptx.Reg
	g4   ptx.Reg // lane/4: an accumulator's row
	tig  ptx.Reg // 2·(lane%4): an accumulator's first column
	zero ptx.Reg // u32 0

	bi, kvh, n0 ptx.Reg
	nb          ptx.Reg    // the key block
	key         [2]ptx.Reg // the lane's keys: rows g4 and g4+8 of the warp's block
	kTile       ptx.Reg
	vTile       ptx.Reg
	dsTile      ptx.Reg
	// ldmatrix patterns: K and V as A (K-major), Q and dO as B (K-major:
	// Sᵀ = K·Qᵀ), Q, dO and K as B (MN-major: dV += Pᵀ·dO, dK += dSᵀ·Q,
	// dQ += dS·K), dSᵀ as A (MN-major).
	aKV, bQ, bT, aDS hopper.Ldsm
}

// emitMain writes the main kernel.
func emitMain(k *ptx.Func, g geom, b bugs) {
	q, kp, v, do := gen.Param(k, "q"), gen.Param(k, "k"), gen.Param(k, "v"), gen.Param(k, "do")
	lse2, dd, dq32 := gen.Param(k, "lse2"), gen.Param(k, "dd"), gen.Param(k, "dq32")
	dk, dv := gen.Param(k, "dk"), gen.Param(k, "dv")
	k.ReqNTid(g.threads)
	smem := k.Mov(ptx.U32, k.DynamicShared("smem", 128))
	mk := &mainKernel{k: k, g: g, b: b}
	tid := k.Mov(ptx.U32, ptx.TidX)
	mk.lane = k.And(ptx.U32, tid, ptx.Imm(31))
	mk.warp = k.Shr(ptx.U32, tid, ptx.Imm(5))
	mk.g4 = k.Shr(ptx.U32, mk.lane, ptx.Imm(2))
	mk.tig = k.Shl(ptx.U32, k.And(ptx.U32, mk.lane, ptx.Imm(3)), ptx.Imm(1))
	mk.zero = k.Mov(ptx.U32, ptx.Imm(0))
	mk.nb = k.Mov(ptx.U32, ptx.CtaidX)
	mk.kvh = k.Mov(ptx.U32, ptx.CtaidY)
	mk.bi = k.Mov(ptx.U32, ptx.CtaidZ)
	mk.n0 = k.Mul(ptx.U32, mk.nb, ptx.Imm(int64(g.bn)))
	kw0 := k.Shl(ptx.U32, mk.warp, ptx.Imm(4))
	mk.key[0] = k.Add(ptx.U32, k.Add(ptx.U32, mk.n0, kw0), mk.g4)
	mk.key[1] = k.Add(ptx.U32, mk.key[0], ptx.Imm(8))
	mk.kTile = k.Add(ptx.U32, smem, ptx.Imm(int64(g.kvBase())))
	mk.vTile = k.Add(ptx.U32, mk.kTile, ptx.Imm(int64(g.tileK())))
	mk.dsTile = k.Add(ptx.U32, smem, ptx.Imm(int64(g.dsBase())))
	mk.aKV = hopper.NewLdsm(k, mk.lane, kw0, g.D, hopper.AKMajor)
	mk.bQ = hopper.NewLdsm(k, mk.lane, mk.zero, g.D, hopper.BKMajor)
	mk.bT = hopper.NewLdsm(k, mk.lane, mk.zero, g.D, hopper.BMNMajor)
	mk.aDS = hopper.NewLdsm(k, mk.lane, mk.zero, g.bm, hopper.AMNMajor)

	// K and V: rows n0 .. n0+bn−1 of the sequence's KV head, in the
	// ring's first group.
	kvRow0 := k.Mad(ptx.U32, k.Mul(ptx.U32, mk.bi, ptx.Imm(int64(g.S))), ptx.Imm(int64(g.HK)), mk.kvh)
	kvSrc := func(base ptx.Reg) ptx.Reg {
		return k.Add(ptx.U64, base, k.MulWide(ptx.U32, kvRow0, ptx.Imm(int64(2*g.D))))
	}
	kl := hopper.NewTileLoader(k, tid, g.bn, g.D, g.HK*g.D, g.threads)
	kl.Issue(k, mk.kTile, kvSrc(kp), mk.n0, ptx.Imm(int64(g.S)))
	kl.Issue(k, mk.vTile, kvSrc(v), mk.n0, ptx.Imm(int64(g.S)))

	loop := newQueryLoop(k, g, mk.n0, k.Mul(ptx.U32, mk.kvh, ptx.Imm(int64(g.g))))
	ql := hopper.NewTileLoader(k, tid, g.bm, g.D, g.HQ*g.D, g.threads)
	// thread t < bm/4 copies chunk t of lse2, bm/4 ≤ t < bm/2 chunk t − bm/4 of dd
	vecT := k.And(ptx.U32, tid, ptx.Imm(int64(g.bm/4-1)))
	vecSrc := k.Selp(ptx.U64, lse2, dd, k.Setp("lt", ptx.U32, tid, ptx.Imm(int64(g.bm/4))))
	vecDst := k.Add(ptx.U32, k.Shl(ptx.U32, tid, ptx.Imm(4)), ptx.Imm(int64(2*g.tileQ())))
	ldIt := k.Mov(ptx.U32, ptx.Imm(0))
	load := func(slot ptx.Reg) {
		q0, h := loop.block(ldIt)
		row0 := k.Mad(ptx.U32, k.Mul(ptx.U32, mk.bi, ptx.Imm(int64(g.S))), ptx.Imm(int64(g.HQ)), h)
		src := func(base ptx.Reg) ptx.Reg {
			return k.Add(ptx.U64, base, k.MulWide(ptx.U32, row0, ptx.Imm(int64(2*g.D))))
		}
		ql.Issue(k, slot, src(q), q0, ptx.Imm(int64(g.S)))
		ql.Issue(k, k.Add(ptx.U32, slot, ptx.Imm(int64(g.tileQ()))), src(do), q0, ptx.Imm(int64(g.S)))
		k.If(k.Setp("lt", ptx.U32, tid, ptx.Imm(int64(g.bm/2))), func() {
			e := k.Add(ptx.U32, k.Mad(ptx.U32, k.Mad(ptx.U32, mk.bi, ptx.Imm(int64(g.HQ)), h), ptx.Imm(int64(g.sp)), q0), k.Shl(ptx.U32, vecT, ptx.Imm(2)))
			k.CpAsync("cg", ptx.At(k.Add(ptx.U32, slot, vecDst), 0), ptx.At(k.Add(ptx.U64, vecSrc, k.MulWide(ptx.U32, e, ptx.Imm(4))), 0), 16)
		})
		k.MovTo(ldIt, k.Add(ptx.U32, ldIt, ptx.Imm(1)))
	}
	dkAcc, dvAcc := zeroAcc(k, g.D/8), zeroAcc(k, g.D/8)
	cIt := k.Mov(ptx.U32, ptx.Imm(0))
	hopper.CpAsyncLoop(k, smem, g.stages, g.stage(), loop.total, load, func(slot ptx.Reg) {
		q0, h := loop.block(cIt)
		mk.step(slot, q0, h, dq32, dkAcc, dvAcc)
		k.MovTo(cIt, k.Add(ptx.U32, cIt, ptx.Imm(1)))
	})
	rows := rowStore{k: k, g: g, bi: mk.bi, kvh: mk.kvh, key: mk.key, tig: mk.tig}
	rows.store(dk, dkAcc, g.scale)
	rows.store(dv, dvAcc, 1)
}

// queryLoop is a CTA's loop over query blocks: iteration it = gi·nq +
// (qb − first) over its query heads h0 + gi (gi below g.hpc) and the
// query blocks from first (causal: the first block with a query at or
// past n0) to the last.
type queryLoop struct {
	k         *ptx.Func
	g         geom
	h0        ptx.Reg
	first, nq ptx.Reg
	total     ptx.Reg // iterations: nq per head
}

func newQueryLoop(k *ptx.Func, g geom, n0, h0 ptx.Reg) queryLoop {
	ql := queryLoop{k: k, g: g, h0: h0, first: k.Mov(ptx.U32, ptx.Imm(0))}
	if g.Causal == 1 {
		ql.first = k.Div(ptx.U32, n0, ptx.Imm(int64(g.bm)))
	}
	ql.nq = k.Sub(ptx.U32, k.Mov(ptx.U32, ptx.Imm(int64(gen.CeilDiv(g.S, g.bm)))), ql.first)
	ql.total = k.Mul(ptx.U32, ql.nq, ptx.Imm(int64(g.hpc)))
	return ql
}

// block returns iteration it's query block's first row and its head.
func (ql queryLoop) block(it ptx.Reg) (q0, h ptx.Reg) {
	k := ql.k
	gi, rest := k.Mov(ptx.U32, ptx.Imm(0)), it
	if ql.g.hpc > 1 {
		gi = k.Div(ptx.U32, it, ql.nq)
		rest = k.Sub(ptx.U32, it, k.Mul(ptx.U32, gi, ql.nq))
	}
	q0 = k.Mul(ptx.U32, k.Add(ptx.U32, ql.first, rest), ptx.Imm(int64(ql.g.bm)))
	return q0, k.Add(ptx.U32, ql.h0, gi)
}

// zeroAcc is n m16n8 accumulator blocks of zeros: one m16 row of
// hopper.Warp's.
func zeroAcc(k *ptx.Func, n int) [][4]ptx.Reg {
	return hopper.Warp{K: k, TM: 16, TN: 8 * n}.ZeroAcc()[0]
}

// step is one query block (rows q0.., head h) at the ring's slot.
func (mk *mainKernel) step(slot, q0, h, dq32 ptx.Reg, dkAcc, dvAcc [][4]ptx.Reg) {
	k, g := mk.k, mk.g
	ab := gen.HalfType(g.DType)
	nq8 := g.bm / 8
	doTile := k.Add(ptx.U32, slot, ptx.Imm(int64(g.tileQ())))
	// Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ over d: [16 keys × bm queries] a warp.
	sAcc, pAcc := zeroAcc(k, nq8), zeroAcc(k, nq8)
	for kk := range g.D / 16 {
		ak := [4]ptx.Reg(mk.aKV.Load(k, mk.kTile, 0, ptx.Reg{}, kk))
		av := [4]ptx.Reg(mk.aKV.Load(k, mk.vTile, 0, ptx.Reg{}, kk))
		for j := range g.bm / 16 {
			bq := mk.bQ.Load(k, slot, j, ptx.Reg{}, kk)
			bd := mk.bQ.Load(k, doTile, j, ptx.Reg{}, kk)
			for h := range 2 {
				k.MmaSyncTo(ab, sAcc[2*j+h], ak, [2]ptx.Reg{bq[2*h], bq[2*h+1]}, sAcc[2*j+h])
				k.MmaSyncTo(ab, pAcc[2*j+h], av, [2]ptx.Reg{bd[2*h], bd[2*h+1]}, pAcc[2*j+h])
			}
		}
	}
	// P = 2^(S·scale·log₂e − lse2) on the visible keys, dS = P·(dP − D),
	// in place: sAcc becomes P, pAcc dS.
	c := gen.F32Imm(g.scale * math.Log2E)
	lTile := k.Add(ptx.U32, slot, ptx.Imm(int64(2*g.tileQ())))
	for j := range nq8 {
		col := k.Add(ptx.U32, mk.tig, ptx.Imm(int64(8*j)))
		at := k.Add(ptx.U32, lTile, k.Shl(ptx.U32, col, ptx.Imm(2)))
		l := k.Ld(ptx.Shared, ptx.F32, 2, ptx.At(at, 0))
		d := k.Ld(ptx.Shared, ptx.F32, 2, ptx.At(at, int64(4*g.bm)))
		qi := k.Add(ptx.U32, q0, col)
		for e := range 4 {
			p := k.Ex2Approx(k.Fma(ptx.F32, sAcc[j][e], c, k.Neg(ptx.F32, l[e&1])))
			if g.Causal == 1 {
				cmp := "le"
				if mk.b.maskEdge {
					cmp = "lt"
				}
				p = k.Selp(ptx.F32, p, ptx.F32Imm(0), k.Setp(cmp, ptx.U32, mk.key[e>>1], k.Add(ptx.U32, qi, ptx.Imm(int64(e&1)))))
			}
			k.MovTo(sAcc[j][e], p)
			k.MovTo(pAcc[j][e], k.Mul(ptx.F32, p, k.Sub(ptx.F32, pAcc[j][e], d[e&1])))
		}
	}
	// dV += Pᵀ·dO, dK += dSᵀ·Q (scaled at the end), over the block's
	// queries.
	for t := range g.bm / 16 {
		ap := hopper.PackA(k, g.DType, sAcc[2*t], sAcc[2*t+1])
		as := hopper.PackA(k, g.DType, pAcc[2*t], pAcc[2*t+1])
		for np := range g.D / 16 {
			bd := mk.bT.Load(k, doTile, t, ptx.Reg{}, np)
			bq := mk.bT.Load(k, slot, t, ptx.Reg{}, np)
			for h := range 2 {
				k.MmaSyncTo(ab, dvAcc[2*np+h], ap, [2]ptx.Reg{bd[2*h], bd[2*h+1]}, dvAcc[2*np+h])
				k.MmaSyncTo(ab, dkAcc[2*np+h], as, [2]ptx.Reg{bq[2*h], bq[2*h+1]}, dkAcc[2*np+h])
			}
		}
	}
	mk.storeDS(pAcc)
	if !mk.b.noDSBar {
		k.BarSync(0)
	}
	mk.dq(q0, h, dq32)
}

// storeDS stores the warp's dSᵀ rows into the dSᵀ tile [bn × bm],
// rounded to the dtype.
func (mk *mainKernel) storeDS(ds [][4]ptx.Reg) {
	k, g := mk.k, mk.g
	pt := ptx.F16x2
	if g.DType == dtype.BF16 {
		pt = ptx.BF16x2
	}
	for half := range 2 {
		row := k.Sub(ptx.U32, mk.key[half], mk.n0)
		base := gen.SwizzledTileOffset(k, row, mk.zero, g.bm)
		at := k.Add(ptx.U32, mk.dsTile, k.Shl(ptx.U32, mk.tig, ptx.Imm(1)))
		for j := range ds {
			w := k.PackHalf2(pt, ds[j][2*half+1], ds[j][2*half])
			k.St(ptx.Shared, ptx.B32, ptx.At(k.Add(ptx.U32, at, k.Xor(ptx.U32, base, ptx.Imm(int64(16*j)))), 0), []ptx.Reg{w})
		}
	}
}

// dq adds the CTA's dQ partial dS·K·scale [bm × d] into dq32: pieces of
// an m16 block of queries by 32 columns, spread over the warps, each
// reduced over the bn keys and added by red.add.v2.
func (mk *mainKernel) dq(q0, h, dq32 ptx.Reg) {
	k, g := mk.k, mk.g
	ab := gen.HalfType(g.DType)
	groups := g.D / 32
	pieces := g.bm / 16 * groups
	sc := gen.F32Imm(g.scale)
	for i := range pieces / g.warps {
		pc := k.Add(ptx.U32, mk.warp, ptx.Imm(int64(i*g.warps)))
		mi := k.Shr(ptx.U32, pc, ptx.Imm(int64(gen.Log2(groups))))
		ng := k.And(ptx.U32, pc, ptx.Imm(int64(groups-1)))
		acc := zeroAcc(k, 4)
		for kt := range g.bn / 16 {
			a := [4]ptx.Reg(mk.aDS.Load(k, mk.dsTile, kt, mi, 0))
			for half := range 2 {
				bk := mk.bT.Load(k, mk.kTile, kt, k.Add(ptx.U32, k.Shl(ptx.U32, ng, ptx.Imm(1)), ptx.Imm(int64(half))), 0)
				for h := range 2 {
					d := acc[2*half+h]
					k.MmaSyncTo(ab, d, a, [2]ptx.Reg{bk[2*h], bk[2*h+1]}, d)
				}
			}
		}
		row := k.Add(ptx.U32, k.Add(ptx.U32, q0, k.Shl(ptx.U32, mi, ptx.Imm(4))), mk.g4)
		col := k.Add(ptx.U32, k.Shl(ptx.U32, ng, ptx.Imm(5)), mk.tig)
		for half := range 2 {
			r := k.Add(ptx.U32, row, ptx.Imm(int64(8*half)))
			ok := k.Setp("lt", ptx.U32, r, ptx.Imm(int64(g.S)))
			if mk.b.dropDQ {
				ok = k.And(ptx.Pred, ok, k.Setp("ne", ptx.U32, mk.nb, ptx.Imm(0)))
			}
			e := k.Mad(ptx.U32, k.Mad(ptx.U32, k.Mad(ptx.U32, mk.bi, ptx.Imm(int64(g.S)), r), ptx.Imm(int64(g.HQ)), h), ptx.Imm(int64(g.D)), col)
			base := k.Add(ptx.U64, dq32, k.MulWide(ptx.U32, e, ptx.Imm(4)))
			k.If(ok, func() {
				for j := range 4 {
					v := []ptx.Reg{k.Mul(ptx.F32, acc[j][2*half], sc), k.Mul(ptx.F32, acc[j][2*half+1], sc)}
					k.RedAddF32(ptx.At(base, int64(32*j)), v)
				}
			})
		}
	}
}

// rowStore writes a thread's accumulator rows of keys to a [b·s, hk, d]
// output: rows key[0] and key[1] of KV head kvh of sequence bi, columns
// tig + 8j, +1.
type rowStore struct {
	k       *ptx.Func
	g       geom
	bi, kvh ptx.Reg
	key     [2]ptx.Reg
	tig     ptx.Reg
}

// store writes acc [rows × d], times mul, to out rounded; keys at or past
// s are not stored.
func (rs rowStore) store(out ptx.Reg, acc [][4]ptx.Reg, mul float64) {
	rs.each(out, rs.g.DType.Size(), acc, mul, func(at ptx.Addr, v []ptx.Reg, ok ptx.Reg) { gen.StVals(rs.k, rs.g.DType, at, v, ok) })
}

// add adds acc [rows × d], times mul, into out32 (f32) by red.add.v2;
// keys at or past s are left out.
func (rs rowStore) add(out32 ptx.Reg, acc [][4]ptx.Reg, mul float64) {
	rs.each(out32, 4, acc, mul, func(at ptx.Addr, v []ptx.Reg, ok ptx.Reg) {
		rs.k.If(ok, func() { rs.k.RedAddF32(at, v) })
	})
}

// each calls put with each pair of acc's values, times mul, the address
// of their element in out (size bytes an element) and whether the key is
// below s.
func (rs rowStore) each(out ptx.Reg, size int, acc [][4]ptx.Reg, mul float64, put func(at ptx.Addr, v []ptx.Reg, ok ptx.Reg)) {
	k, g := rs.k, rs.g
	for half := range 2 {
		key := rs.key[half]
		ok := k.Setp("lt", ptx.U32, key, ptx.Imm(int64(g.S)))
		e := k.Mad(ptx.U32, k.Mad(ptx.U32, k.Mad(ptx.U32, rs.bi, ptx.Imm(int64(g.S)), key), ptx.Imm(int64(g.HK)), rs.kvh), ptx.Imm(int64(g.D)), rs.tig)
		base := k.Add(ptx.U64, out, k.MulWide(ptx.U32, e, ptx.Imm(int64(size))))
		for j := range acc {
			v := []ptx.Reg{acc[j][2*half], acc[j][2*half+1]}
			if mul != 1 {
				v = []ptx.Reg{k.Mul(ptx.F32, v[0], gen.F32Imm(mul)), k.Mul(ptx.F32, v[1], gen.F32Imm(mul))}
			}
			put(ptx.At(base, int64(8*j*size)), v, ok)
		}
	}
}
