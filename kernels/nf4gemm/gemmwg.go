package nf4gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
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
// units' scales a k-tile ahead, wait for the codes, dequantize
// (lookup.go) and write each 8-code word as a 16-byte chunk of the
// swizzled B tile. Unit
// u of a k-tile is row u%64 of block column u/64, so that the eight
// threads of a store phase write eight distinct rows: conflict-free.

// wgSource is the NF4 weight as a gemm.BSource.
type wgSource struct {
	s    GEMMShape
	w    weight
	p    GEMMParams
	tm   ptx.Sym            // w4's tensor map (codes=tma)
	bufs map[string]ptx.Reg // the scale buffers' generic addresses, and w4's (codes=ld)
	d    *deq
	n    int        // fillers
	sh   gemm.Share // the k-rows of each k-tile this CTA dequantizes
}

// Declare: w4's tensor map ({k/2 bytes, n rows}, boxes {bn/2, 64/cluster},
// no swizzle) or, with codes=ld, its address; then the scale buffers.
func (src *wgSource) Declare(k *ptx.Func) []kernels.Arg {
	src.bufs = map[string]ptx.Reg{}
	var args []kernels.Arg
	if src.p.Codes == "ld" {
		args = bufferParams(k, src.bufs, "w4")
	} else {
		src.tm = k.TensorMapParam("w4")
		args = append(args, kernels.Arg{TensorMap: &kernels.TensorMap{Buffer: "w4", DType: dtype.U8,
			Dims: configs.Ints(src.s.K/2, src.s.N), Strides: configs.Ints(src.s.K / 2), Box: []int{src.p.BN / 2, src.rows()}}})
	}
	return append(args, bufferParams(k, src.bufs, src.w.scaleNames()...)...)
}

// rows is the k-rows of a k-tile the CTA dequantizes.
func (src *wgSource) rows() int { return 64 / src.p.Cluster }

// Setup: the lookup's shared table.
func (src *wgSource) Setup(k *ptx.Func, tid ptx.Reg, fillers int, share gemm.Share) {
	src.n, src.sh = fillers, share
	src.d = newDeq(k, src.p.Lookup, src.s.DType, tid)
}

// RawBytes: the CTA's share of a k-tile's packed codes, 64/cluster rows
// of bn/2 bytes (none with codes=ld: each filler loads its own).
func (src *wgSource) RawBytes(p gemm.Params) int {
	if src.p.Codes == "ld" {
		return 0
	}
	return (src.rows()*p.BN/2 + 1023) &^ 1023
}

// Issue loads the CTA's share of the k-tile's codes: rows kc+first..,
// bytes col0/2...
func (src *wgSource) Issue(k *ptx.Func, raw ptx.Reg, bar ptx.Addr, col0, kc ptx.Reg) {
	k.MbarArriveExpectTx(bar, ptx.Imm(src.rows()*src.p.BN/2))
	if src.rows() < 64 {
		kc = k.Add(ptx.U32, kc, src.sh.First)
	}
	k.TmaLoad(ptx.At(raw, 0), k.TensorMapAddr(src.tm), []ptx.Operand{k.Shr(ptx.U32, col0, ptx.Imm(1)), kc}, bar)
}

// units are filler i's units of a k-tile: u = i, i+n, ... (n fillers) below
// rows·bn/64 (rows: the CTA's share) whose columns start within K, each
// its row in the k-tile (rel: in the share) and block column.
func (src *wgSource) units(k *ptx.Func, col0, i ptx.Reg) (ok, row, rel, bc []ptx.Reg) {
	rows := src.rows()
	n := rows * src.p.BN / 64
	for j := range gen.CeilDiv(n, src.n) {
		u := k.Add(ptx.U32, i, ptx.Imm(j*src.n))
		r, c := k.And(ptx.U32, u, ptx.Imm(int64(rows-1))), k.Shr(ptx.U32, u, ptx.Imm(int64(gen.Log2(rows))))
		// Units past the tile or past K (whose B columns only make
		// outputs that are never stored) are skipped.
		in := k.And(ptx.Pred, k.Setp("lt", ptx.U32, u, ptx.Imm(n)),
			k.Setp("lt", ptx.U32, k.Mad(ptx.U32, c, ptx.Imm(64), col0), ptx.Imm(src.s.K)))
		abs := r
		if rows < 64 {
			abs = k.Add(ptx.U32, r, src.sh.First)
		}
		ok, row, rel, bc = append(ok, in), append(row, abs), append(rel, r), append(bc, c)
	}
	return ok, row, rel, bc
}

// Load: the scale of each of filler i's units of the k-tile at kc, and
// with codes=ld its 32 bytes of codes (8 words): per unit 1 or 9
// registers.
func (src *wgSource) Load(k *ptx.Func, col0, kc, i, more ptx.Reg) []ptx.Reg {
	ok, row, _, bc := src.units(k, col0, i)
	var out []ptx.Reg
	for j := range ok {
		// The unit's first element: (kc+row, col0+64·bc) of W; element 0
		// for a unit that is not read.
		e := k.Mad(ptx.U32, k.Add(ptx.U32, kc, row[j]), ptx.Imm(src.s.K), k.Mad(ptx.U32, bc[j], ptx.Imm(64), col0))
		blk := k.Selp(ptx.U32, k.Div(ptx.U32, e, ptx.Imm(src.w.block)), ptx.Imm(0), k.And(ptx.Pred, ok[j], more))
		out = append(out, loadScale(k, src.w.dq, src.bufs, blk))
		if src.p.Codes == "ld" {
			e = k.Selp(ptx.U32, e, ptx.Imm(0), k.And(ptx.Pred, ok[j], more))
			at := k.Add(ptx.U64, src.bufs["w4"], k.Cvt(ptx.U64, ptx.U32, "", k.Shr(ptx.U32, e, ptx.Imm(1))))
			for h := range 2 {
				out = append(out, k.Ld(ptx.Global, ptx.B32, 4, ptx.At(at, int64(16*h)), ptx.LdOpts{NC: true})...)
			}
		}
	}
	return out
}

// Fill dequantizes filler i's units from raw into the B tile at b. The
// units run straight-line, only their stores guarded, so that the
// compiler can interleave them (a unit that is not filler i's reads codes
// that are there and block 0's scale).
func (src *wgSource) Fill(k *ptx.Func, b, raw, col0, kc, i ptx.Reg, loaded []ptx.Reg) {
	ok, row, rel, bc := src.units(k, col0, i)
	per := len(loaded) / len(ok)
	for j := range ok {
		t := src.d.forScale(loaded[j*per])
		words := loaded[j*per+1 : (j+1)*per]
		if src.p.Codes != "ld" {
			// A unit past the tile would read past the raw area: row 0's.
			unit := k.Selp(ptx.U32, k.Mad(ptx.U32, rel[j], ptx.Imm(src.p.BN/2), k.Mul(ptx.U32, bc[j], ptx.Imm(32))), ptx.Imm(0), ok[j])
			codes := k.Add(ptx.U32, raw, unit)
			words = nil
			for h := range 2 {
				words = append(words, k.Ld(ptx.Shared, ptx.B32, 4, ptx.At(codes, int64(16*h)))...)
			}
		}
		rowAt := k.Add(ptx.U32, b, k.Mad(ptx.U32, bc[j], ptx.Imm(8192), k.Mul(ptx.U32, row[j], ptx.Imm(128))))
		swz := k.And(ptx.U32, row[j], ptx.Imm(7))
		for q, w := range words {
			halves := src.d.word(w, t)
			at := k.Add(ptx.U32, rowAt, k.Shl(ptx.U32, k.Xor(ptx.U32, swz, ptx.Imm(q)), ptx.Imm(4)))
			k.St(ptx.Shared, ptx.B32, ptx.At(at, 0), halves[:])
			k.Guard(ok[j], false)
		}
	}
}

// codesRing is the slots of the codes' own ring (codes=ring).
const codesRing = 8

// wgParams is the gemm_bwd variant of p: two consumers of 64-row blocks,
// the register split, order m (grouped when persistent).
func wgParams(p GEMMParams) gemm.Params {
	gp := gemm.Params{MMA: gemm.WGMMA, BM: p.BM, BN: p.BN, BK: p.BK, Stages: p.Stages, Consumers: 2, Cluster: p.Cluster,
		Multicast: p.Cluster > 1, SplitK: 1, Reduce: gemm.ReduceLaunch, Order: gemm.OrderM, Persistent: p.Persistent, Epilogue: p.Epilogue, RegSplit: true}
	if p.Persistent {
		gp.Order = gemm.Grouped
	}
	return gp
}

func (s GEMMShape) writtenB() gemm.WrittenB {
	return gemm.WrittenB{M: s.M, N: s.N, K: s.K, DType: s.DType, LoRA: s.LoRA, Entry: fmt.Sprintf("nf4_gemm_bwd_wgmma_%v", s.DType)}
}

// writtenB is s's problem with p's fillers.
func (p GEMMParams) writtenB(s GEMMShape) gemm.WrittenB {
	w := s.writtenB()
	if p.Dequant == Dedicated {
		w.FillWarpgroups = 1
	}
	if p.Codes == "ring" {
		w.RawRing = codesRing
	}
	return w
}

// emitWgmma writes the wgmma path's program.
func emitWgmma(s GEMMShape, p GEMMParams) (kernels.Program, error) {
	return p.writtenB(s).Emit(wgParams(p), &wgSource{s: s, w: s.weight(), p: p})
}
