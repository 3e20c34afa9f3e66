package gemm

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// body writes the kernel: tile coordinates, the loaders, the pipelined
// main loop and the epilogue.
func (sk *syncKernel) body() {
	k, g, p := sk.k, sk.g, sk.p
	a, b, c := gen.Param(k, "a"), gen.Param(k, "b"), gen.Param(k, "c")
	m := mParam(k)
	smem := k.Mov(ptx.U32, k.DynamicShared("smem", 128))
	tid := k.Mov(ptx.U32, ptx.TidX)
	sk.lane = k.And(ptx.U32, tid, ptx.Imm(31))
	warp := k.Shr(ptx.U32, tid, ptx.Imm(5))
	sk.wr = k.Shr(ptx.U32, warp, ptx.Imm(gen.Log2(sk.wn)))
	sk.wc = k.And(ptx.U32, warp, ptx.Imm(sk.wn-1))
	sz := sizesOf(k, g, p, m)
	t := tileOf(k, p, sz, k.Mov(ptx.U32, ptx.CtaidX))
	la := newLoader(k, g.a, a, tid, t.row0, t.kt0, p.BM, p.BK, sz.r, sz.l, sk.threads())
	lb := newLoader(k, g.b, b, tid, t.col0, t.kt0, p.BN, p.BK, immExt(g.c), sz.l, sk.threads())
	aOff, bOff := sk.fragOffsets()
	acc := sk.zeroAcc()
	sk.mainLoop(smem, t, la, lb, func(slot ptx.Reg) { sk.compute(slot, aOff, bOff, acc) })
	sk.epilogue(c, t, rowsExt(k, g, m), acc)
}

// mainLoop runs the cp.async ring: stages−1 k-tiles in flight before the
// loop; each iteration waits for its k-tile, passes a barrier (after which
// no warp still reads the slot the next copy overwrites), issues the copy
// of the k-tile stages−1 ahead and computes. Every iteration commits a
// group, empty or not, so that wait_group counts stay aligned.
func (sk *syncKernel) mainLoop(smem ptx.Reg, t tile, la, lb *loader, compute func(slot ptx.Reg)) {
	k, p := sk.k, sk.p
	kbase := k.Mul(ptx.U32, t.kt0, ptx.Imm(p.BK))
	load := func(slot ptx.Reg) {
		la.load(slot, kbase)
		lb.load(k.Add(ptx.U32, slot, ptx.Imm(sk.aBytes)), kbase)
		k.MovTo(kbase, k.Add(ptx.U32, kbase, ptx.Imm(p.BK)))
	}
	for s := range p.Stages - 1 {
		k.If(k.Setp("gt", ptx.U32, t.nk, ptx.Imm(s)), func() { load(k.Add(ptx.U32, smem, ptx.Imm(s*sk.stage))) })
		k.CpAsyncCommit()
	}
	end := k.Add(ptx.U32, smem, ptx.Imm(p.Stages*sk.stage))
	next := func(slot ptx.Reg) {
		k.MovTo(slot, k.Add(ptx.U32, slot, ptx.Imm(sk.stage)))
		k.MovTo(slot, k.Selp(ptx.U32, smem, slot, k.Setp("eq", ptx.U32, slot, end)))
	}
	rd := k.Mov(ptx.U32, smem)
	wr := k.Add(ptx.U32, smem, ptx.Imm((p.Stages-1)*sk.stage))
	k.For(ptx.U32, ptx.Imm(0), t.nk, ptx.Imm(1), func(it ptx.Reg) {
		k.CpAsyncWait(p.Stages - 2)
		k.BarSync(0)
		ahead := k.Add(ptx.U32, it, ptx.Imm(p.Stages-1))
		k.If(k.Setp("lt", ptx.U32, ahead, t.nk), func() { load(wr) })
		k.CpAsyncCommit()
		compute(rd)
		next(rd)
		next(wr)
	})
	k.CpAsyncWait(0)
}

// fragOffsets returns each lane's ldmatrix row address within a slot's A
// tile (per m16 block and k16 step) and B tile (per pair of n8 blocks and
// k16 step). Lane 8i+r gives row r of matrix i; the matrices are ordered
// as mma.sync's fragment registers (package doc).
func (sk *syncKernel) fragOffsets() (aOff, bOff [][]ptx.Reg) {
	k, p := sk.k, sk.p
	i := k.Shr(ptx.U32, sk.lane, ptx.Imm(3))
	r := k.And(ptx.U32, sk.lane, ptx.Imm(7))
	i0, i1 := k.And(ptx.U32, i, ptx.Imm(1)), k.Shr(ptx.U32, i, ptx.Imm(1))
	lo := k.Mad(ptx.U32, i0, ptx.Imm(8), r) // r + 8·(i&1)
	hi := k.Mad(ptx.U32, i1, ptx.Imm(8), r) // r + 8·(i>>1)
	wrow := k.Mul(ptx.U32, sk.wr, ptx.Imm(sk.tm))
	wcol := k.Mul(ptx.U32, sk.wc, ptx.Imm(sk.tn))
	for mi := range sk.tm / 16 {
		var row []ptx.Reg
		for kk := range p.BK / 16 {
			if sk.g.a.kMajor {
				m := k.Add(ptx.U32, k.Add(ptx.U32, wrow, lo), ptx.Imm(16*mi))
				row = append(row, gen.SwizzledTileOffset(k, m, k.Add(ptx.U32, i1, ptx.Imm(2*kk)), p.BK))
			} else {
				ch := k.Add(ptx.U32, k.Shr(ptx.U32, wrow, ptx.Imm(3)), k.Add(ptx.U32, i0, ptx.Imm(2*mi)))
				row = append(row, gen.SwizzledTileOffset(k, k.Add(ptx.U32, hi, ptx.Imm(16*kk)), ch, p.BM))
			}
		}
		aOff = append(aOff, row)
	}
	for nj := range sk.tn / 16 {
		var row []ptx.Reg
		for kk := range p.BK / 16 {
			ch := k.Add(ptx.U32, k.Shr(ptx.U32, wcol, ptx.Imm(3)), k.Add(ptx.U32, i1, ptx.Imm(2*nj)))
			row = append(row, gen.SwizzledTileOffset(k, k.Add(ptx.U32, lo, ptx.Imm(16*kk)), ch, p.BN))
		}
		bOff = append(bOff, row)
	}
	return aOff, bOff
}

// zeroAcc allocates the warp tile's accumulators, zeroed: [m16][n8][4].
func (sk *syncKernel) zeroAcc() [][][4]ptx.Reg {
	acc := make([][][4]ptx.Reg, sk.tm/16)
	for mi := range acc {
		acc[mi] = make([][4]ptx.Reg, sk.tn/8)
		for ni := range acc[mi] {
			for j := range 4 {
				acc[mi][ni][j] = sk.k.Mov(ptx.F32, ptx.F32Imm(0))
			}
		}
	}
	return acc
}

// compute multiplies the slot's tiles into the accumulators, one k16 step
// at a time: A fragments by ldmatrix (.trans for an MN-major A), B
// fragments by ldmatrix.trans, then every m16n8k16 of the warp tile.
func (sk *syncKernel) compute(slot ptx.Reg, aOff, bOff [][]ptx.Reg, acc [][][4]ptx.Reg) {
	k := sk.k
	ab := gen.HalfType(sk.g.in)
	for kk := range sk.p.BK / 16 {
		var af [][]ptx.Reg
		for mi := range aOff {
			af = append(af, k.Ldmatrix(4, !sk.g.a.kMajor, ptx.At(k.Add(ptx.U32, slot, aOff[mi][kk]), 0)))
		}
		var bf [][]ptx.Reg
		for nj := range bOff {
			bf = append(bf, k.Ldmatrix(4, true, ptx.At(k.Add(ptx.U32, slot, bOff[nj][kk]), int64(sk.aBytes))))
		}
		for mi := range acc {
			for ni := range acc[mi] {
				h := 2 * (ni % 2)
				b := [2]ptx.Reg{bf[ni/2][h], bf[ni/2][h+1]}
				k.MmaSyncTo(ab, acc[mi][ni], [4]ptx.Reg(af[mi]), b, acc[mi][ni])
			}
		}
	}
}
