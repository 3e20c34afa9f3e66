package gemm

import (
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/hopper"
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
	lane, wr, wc := hopper.WarpOf(k, tid, sk.wn)
	sk.w = hopper.Warp{K: k, In: g.in, BM: p.BM, BN: p.BN, BK: p.BK, TM: sk.tm, TN: sk.tn, AKMajor: g.a.kMajor,
		ABytes: sk.aBytes, Lane: lane, Row: wr, Col: wc, KeepHi: true}
	sz := sizesOf(k, g, p, m)
	t := tileOf(k, p, sz, k.Mov(ptx.U32, ptx.CtaidX))
	la := newLoader(k, g.a, a, tid, t.row0, t.kt0, p.BM, p.BK, sz.r, sz.l, sk.threads())
	lb := newLoader(k, g.b, b, tid, t.col0, t.kt0, p.BN, p.BK, immExt(g.c), sz.l, sk.threads())
	aOff, bOff := sk.w.FragOffsets()
	acc := sk.w.ZeroAcc()
	sk.mainLoop(smem, t, la, lb, func(slot ptx.Reg) { sk.w.Compute(slot, aOff, bOff, acc) })
	sk.epilogue(c, t, rowsExt(k, g, m), acc)
}

// mainLoop runs the cp.async ring (hopper.CpAsyncLoop) over the tile's
// k-tiles: each load copies A's and B's k-tile into a slot.
func (sk *syncKernel) mainLoop(smem ptx.Reg, t tile, la, lb *loader, compute func(slot ptx.Reg)) {
	k, p := sk.k, sk.p
	kbase := k.Mul(ptx.U32, t.kt0, ptx.Imm(p.BK))
	load := func(slot ptx.Reg) {
		la.load(slot, kbase)
		lb.load(k.Add(ptx.U32, slot, ptx.Imm(sk.aBytes)), kbase)
		k.MovTo(kbase, k.Add(ptx.U32, kbase, ptx.Imm(p.BK)))
	}
	hopper.CpAsyncLoop(k, smem, p.Stages, sk.stage, t.nk, load, compute)
}
