package nf4gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// The unfused and streamed paths run gemm_bwd's dX kernel (kernels/gemm,
// DXGemm) on the weight dequantized once into a bf16 (f16) scratch
// buffer, deqBuffer [N×K], instead of dequantizing per tile:
//
//   - dequant=unfused: nf4_dequant's kernel (lookup smem or prmt; 8
//     packed bytes a thread and 256 threads, or 4 and 128: dkernel)
//     writes it, and
//     the GEMM follows as a programmatic dependent launch whose producer
//     thread waits for that grid before its first load. What
//     bitsandbytes' backward does, in one program.
//   - dequant=streamed: one launch. The GEMM CTAs' spare producer warps
//     dequantize the weight in chunks of 64 rows by 64 columns, claimed
//     in the k-loops' order, and count each in its k-slice; the thread
//     that loads B waits for its k-slice's count (gemm.BProducer has the
//     protocol). Each weight element is dequantized once, while
//     the tensor cores run, and the scratch buffer is written into L2
//     just before the k-loops read it.
//
// Either way the GEMM's axes are gemm_bwd's (bm, bn, stages, splitk,
// order, persistent, epilogue; consumers follow bm), tuned together with
// the dequantization's.

// deqBuffer is the dequantized weight both paths write.
const deqBuffer = "w_deq"

// unfusedDequant is the dequantization kernel of an unfused variant: its
// dkernel's bytes and threads, the variant's lookup.
func unfusedDequant(p GEMMParams) DequantParams {
	d := DequantParams{Threads: 256, Bytes: 8, Lookup: p.Lookup, launchNext: p.Early == 1}
	if p.DKernel == "4x128" {
		d.Threads, d.Bytes = 128, 4
	}
	return d
}

// gemmParams is the gemm_bwd point of an unfused or streamed variant.
func (p GEMMParams) gemmParams() gemm.Params {
	return gemm.Params{MMA: gemm.WGMMA, BM: p.BM, BN: p.BN, BK: p.BK, Stages: p.Stages, Consumers: gemm.WGConsumers(p.BM),
		Cluster: 1, SplitK: p.SplitK, Reduce: gemm.ReduceLaunch, Order: p.Order, Persistent: p.Persistent, Epilogue: p.Epilogue, RegSplit: true}
}

// dxGemm is s's product for p's path (unfused or streamed).
func (s GEMMShape) dxGemm(p GEMMParams) gemm.DXGemm {
	d := gemm.DXGemm{M: s.M, N: s.N, K: s.K, DType: s.DType, B: deqBuffer, LoRA: s.LoRA, Entry: fmt.Sprintf("nf4_gemm_bwd_%s_%v", p.Dequant, s.DType)}
	switch p.Dequant {
	case Streamed:
		d.Producer = &chunkSource{s: s, w: s.weight()}
	case Unfused:
		d.WaitPrior = true
		d.Before = func(m *ptx.Module) ([]kernels.Launch, []kernels.Buffer) {
			return s.dequantToScratch(m, unfusedDequant(p), fmt.Sprintf("nf4_gemm_bwd_dequant_%v", s.DType))
		}
	}
	return d
}

// dequantToScratch adds to m, under entry, nf4_dequant's kernel of s's
// weight with params p into deqBuffer, and returns its launch and the
// scratch buffer (the program's own).
func (s GEMMShape) dequantToScratch(m *ptx.Module, p DequantParams, entry string) ([]kernels.Launch, []kernels.Buffer) {
	l := emitDequant(m, s.weight(), s.DType, p, entry, deqBuffer)
	return []kernels.Launch{l}, []kernels.Buffer{{Name: deqBuffer, DType: s.DType, Elems: configs.Int(s.N * s.K), Role: kernels.Scratch}}
}

// emitDense writes an unfused or streamed variant's program.
func emitDense(s GEMMShape, p GEMMParams) (kernels.Program, error) {
	return s.dxGemm(p).Emit(p.gemmParams())
}

// chunkSource is the NF4 weight as a gemm.BProducer: a warp dequantizes
// 64 rows of W by 64 columns (one scale per row: blocks run along K and
// hold whole chunks). Lane l takes the 8 columns from 8·(l%8) of rows
// l/8, l/8 + 4, ...: per row, its 8 lanes read 32 contiguous bytes of
// codes and write 128 contiguous bytes. A batch of 8 rows per lane loads
// all its codes and scales before it converts any, so that the loads are
// in flight together.
type chunkSource struct {
	s    GEMMShape
	w    weight
	bufs map[string]ptx.Reg
	d    *deq
}

// A chunk's lanes: lanesPerRow per row (8 codes each), so a warp
// converts rowStep rows at a time and a lane chunkSteps rows in all, in
// batches of chunkBatch.
const (
	lanesPerRow = gemm.ChunkCols / 8
	rowStep     = 32 / lanesPerRow
	chunkSteps  = gemm.ChunkRows / rowStep
	chunkBatch  = 8
)

// Declare: the packed codes' and the scale buffers' addresses.
func (c *chunkSource) Declare(k *ptx.Func) []kernels.Arg {
	c.bufs = map[string]ptx.Reg{}
	return bufferParams(k, c.bufs, append([]string{"w4"}, c.w.scaleNames()...)...)
}

// Setup: the codebook in shared memory.
func (c *chunkSource) Setup(k *ptx.Func, tid ptx.Reg) { c.d = newDeq(k, LookupSmem, c.s.DType, tid) }

// Chunk dequantizes rows row0.. and columns col0.. of W into b.
func (c *chunkSource) Chunk(k *ptx.Func, b, lane, row0, col0 ptx.Reg) {
	K := c.s.K
	// e0: the lane's first element, (row0 + l/8)·K + col0 + 8·(l%8)
	row := k.Add(ptx.U32, row0, k.Shr(ptx.U32, lane, ptx.Imm(gen.Log2(lanesPerRow))))
	e0 := k.Mad(ptx.U32, row, ptx.Imm(K), k.Add(ptx.U32, col0, k.Shl(ptx.U32, k.And(ptx.U32, lane, ptx.Imm(lanesPerRow-1)), ptx.Imm(3))))
	codes := k.Add(ptx.U64, c.bufs["w4"], k.Cvt(ptx.U64, ptx.U32, "", k.Shr(ptx.U32, e0, ptx.Imm(1))))
	out := k.Add(ptx.U64, b, k.MulWide(ptx.U32, e0, ptx.Imm(2)))
	blk0 := k.Div(ptx.U32, e0, ptx.Imm(c.w.block))
	for batch := range chunkSteps / chunkBatch {
		var words, scales [chunkBatch]ptx.Reg
		for i := range chunkBatch {
			step := batch*chunkBatch + i // the lane's row row0 + l/8 + rowStep·step
			words[i] = k.Ld(ptx.Global, ptx.B32, 1, ptx.At(codes, int64(step*rowStep*K/2)), ptx.LdOpts{NC: true})[0]
			scales[i] = loadScale(k, c.w.dq, c.bufs, k.Add(ptx.U32, blk0, ptx.Imm(step*rowStep*K/c.w.block)))
		}
		for i := range chunkBatch {
			step := batch*chunkBatch + i
			halves := c.d.word(words[i], c.d.forScale(scales[i]))
			k.St(ptx.Global, ptx.B32, ptx.At(out, int64(step*rowStep*K*c.s.DType.Size())), halves[:])
		}
	}
}
