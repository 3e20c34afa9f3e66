package nf4gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The wgmma path is gemm_bwd's (kernels/gemm, grad=dx) with its B tile
// written by the producer warpgroup (gemm.BSource, dequant=producer):
// thread 0 loads each k-tile's packed codes, [64 rows of W][BN/2 bytes],
// by TMA into the slot's raw area beside dY's tile; the other three warps
// take units of one W row's 64-code block (32 bytes, one scale), load the
// units' scales first, wait for the codes, dequantize (lookup.go) and
// write each 8-code word as a 16-byte chunk of the swizzled B tile. Unit
// u of a k-tile is row u%64 of block column u/64, so that the eight
// threads of a store phase write eight distinct rows: conflict-free.

// wgSource is the NF4 weight as a gemm.BSource.
type wgSource struct {
	s    GEMMShape
	w    weight
	p    GEMMParams
	tm   ptx.Sym            // w4's tensor map
	bufs map[string]ptx.Reg // the scale buffers' generic addresses
	d    *deq
}

func (src *wgSource) scaleNames() []string {
	if src.w.dq {
		return []string{"absmax_q", "code2", "absmax2", "dq_offset"}
	}
	return []string{"absmax"}
}

// Declare: w4's tensor map ({k/2 bytes, n rows}, boxes {bn/2, 64}, no
// swizzle), then the scale buffers.
func (src *wgSource) Declare(k *ptx.Func) []kernels.Arg {
	src.tm = k.TensorMapParam("w4")
	args := []kernels.Arg{{TensorMap: &kernels.TensorMap{Buffer: "w4", DType: dtype.U8,
		Dims: []int{src.s.K / 2, src.s.N}, Strides: []int{src.s.K / 2}, Box: []int{src.p.BN / 2, 64}}}}
	src.bufs = map[string]ptx.Reg{}
	for _, n := range src.scaleNames() {
		src.bufs[n] = gen.Param(k, n)
		args = append(args, kernels.Arg{Buffer: n})
	}
	return args
}

// Setup: the lookup's shared table.
func (src *wgSource) Setup(k *ptx.Func, tid ptx.Reg) {
	src.d = newDeq(k, src.p.Lookup, src.s.DType, tid)
}

// RawBytes: a k-tile's packed codes, 64 rows of bn/2 bytes.
func (src *wgSource) RawBytes(p gemm.Params) int { return (64*p.BN/2 + 1023) &^ 1023 }

// Issue loads the k-tile's codes: rows kc.., bytes col0/2...
func (src *wgSource) Issue(k *ptx.Func, raw ptx.Reg, bar ptx.Addr, col0, kc ptx.Reg) {
	k.MbarArriveExpectTx(bar, ptx.Imm(64*src.p.BN/2))
	k.TmaLoad(ptx.At(raw, 0), k.TensorMapAddr(src.tm), []ptx.Operand{k.Shr(ptx.U32, col0, ptx.Imm(1)), kc}, bar)
}

// Fill dequantizes filler i's units: u = i, i+96, ... below 64·bn/64
// whose columns start within K.
func (src *wgSource) Fill(k *ptx.Func, b, raw, col0, kc, i ptx.Reg, wait func()) {
	units := src.p.BN
	per := gen.CeilDiv(units, gemm.FillThreads)
	type unit struct{ ok, row, bc, scale ptx.Reg }
	us := make([]unit, per)
	for j := range us {
		u := k.Add(ptx.U32, i, ptx.Imm(j*gemm.FillThreads))
		us[j].row, us[j].bc = k.And(ptx.U32, u, ptx.Imm(63)), k.Shr(ptx.U32, u, ptx.Imm(6))
		// Units past the tile or past K (whose B columns only make
		// outputs that are never stored) are skipped.
		us[j].ok = k.And(ptx.Pred, k.Setp("lt", ptx.U32, u, ptx.Imm(units)),
			k.Setp("lt", ptx.U32, k.Mad(ptx.U32, us[j].bc, ptx.Imm(64), col0), ptx.Imm(src.s.K)))
		// The unit's block: element (kc+row, col0+64·bc) of W over the block size.
		e := k.Mad(ptx.U32, k.Add(ptx.U32, kc, us[j].row), ptx.Imm(src.s.K), k.Mad(ptx.U32, us[j].bc, ptx.Imm(64), col0))
		blk := k.Div(ptx.U32, e, ptx.Imm(src.w.block))
		blk = k.Selp(ptx.U32, blk, ptx.Imm(0), us[j].ok) // a filler without this unit reads block 0
		us[j].scale = loadScale(k, src.w.dq, src.bufs, blk)
	}
	wait()
	for _, un := range us {
		k.If(un.ok, func() {
			t := src.d.forScale(un.scale)
			codes := k.Mad(ptx.U32, un.row, ptx.Imm(src.p.BN/2), k.Mad(ptx.U32, un.bc, ptx.Imm(32), raw))
			var words []ptx.Reg
			for h := range 2 {
				words = append(words, k.Ld(ptx.Shared, ptx.B32, 4, ptx.At(codes, int64(16*h)))...)
			}
			rowAt := k.Add(ptx.U32, b, k.Mad(ptx.U32, un.bc, ptx.Imm(8192), k.Mul(ptx.U32, un.row, ptx.Imm(128))))
			swz := k.And(ptx.U32, un.row, ptx.Imm(7))
			for q, w := range words {
				halves := src.d.word(w, t)
				at := k.Add(ptx.U32, rowAt, k.Shl(ptx.U32, k.Xor(ptx.U32, swz, ptx.Imm(q)), ptx.Imm(4)))
				k.St(ptx.Shared, ptx.B32, ptx.At(at, 0), halves[:])
			}
		})
	}
}

// wgParams is the gemm_bwd variant of p: two consumers of 64-row blocks,
// the register split, order m (grouped when persistent).
func wgParams(p GEMMParams) gemm.Params {
	gp := gemm.Params{MMA: gemm.WGMMA, BM: p.BM, BN: p.BN, BK: p.BK, Stages: p.Stages, Consumers: 2, Cluster: 1,
		SplitK: 1, Order: gemm.OrderM, Persistent: p.Persistent, Epilogue: p.Epilogue, RegSplit: true}
	if p.Persistent {
		gp.Order = gemm.Grouped
	}
	return gp
}

func (s GEMMShape) writtenB() gemm.WrittenB {
	return gemm.WrittenB{M: s.M, N: s.N, K: s.K, DType: s.DType, Entry: fmt.Sprintf("nf4_gemm_bwd_wgmma_%v", s.DType)}
}

// emitWgmma writes the wgmma path's program.
func emitWgmma(s GEMMShape, p GEMMParams) (kernels.Program, error) {
	return s.writtenB().Emit(wgParams(p), &wgSource{s: s, w: s.weight(), p: p})
}
