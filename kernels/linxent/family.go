package linxent

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/variants"
)

// Families is linear_cross_entropy_bwd.
func Families() []kernels.Family { return []kernels.Family{kernels.Define(family{})} }

// Dim is the runtime dim: the token count t.
const Dim = "t"

// IgnoreIndex is the label of a row that has no loss (PyTorch's default).
const IgnoreIndex = -100

// maxChunks bounds a program's chunks: each is three launches.
const maxChunks = 64

// Shape is the LM head and loss of t tokens: hidden states x [t×h], the
// head's weight w [v×h], labels of t rows (labels: i32, or i64 as
// PyTorch keeps them), the head's gradient (dw: 0 none, a frozen head; 1
// written into dw [v×h] f32; 2 added to what dw holds, the tied
// embedding's gradient), label smoothing ε (smooth, optional: 0) and
// z-loss (zloss, optional: 0; 1 adds λ·lse² to each row's loss, λ the
// run-time input zloss_scale).
type Shape struct {
	T      int            `dim:"t"`
	H      int            `dim:"h"`
	V      int            `dim:"v"`
	Labels string         `dim:"labels,optional=i32" values:"i32,i64"`
	DW     int            `dim:"dw,optional=0"`
	Smooth variants.Milli `dim:"smooth,optional"`
	ZLoss  int            `dim:"zloss,optional=0"`
	DType  dtype.DType
}

// eps is the label smoothing ε.
func (s Shape) eps() float64 { return s.Smooth.Float() }

// zloss reports whether the loss has PaLM's z-loss term λ·lse².
func (s Shape) zloss() bool { return s.ZLoss == 1 }

// The dw modes.
const (
	dwNone  = 0
	dwWrite = 1
	dwAdd   = 2
)

// labelType is the labels' storage type.
func (s Shape) labelType() dtype.DType {
	if s.Labels == "i64" {
		return dtype.I64
	}
	return dtype.I32
}

// Params is one variant: the vocabulary's chunk, the tiles and grids of
// the logits GEMM (z) and of the gradient GEMM (dx), and the softmax
// kernel's CTA.
type Params struct {
	Softmax string `axis:"softmax" values:"kernel,epilogue" doc:"kernel: a softmax kernel per chunk reads the f32 logits the logits GEMM stored; epilogue: the logits GEMM's epilogue writes the probabilities against the row's maximum over the chunks before (no f32 logits, no softmax kernel; without dW)"`
	Chunk   int    `axis:"chunk" values:"256,512,1024,2048,4096,8192" doc:"vocabulary rows of w per chunk: a chunk's probabilities [t×chunk] (and with softmax=kernel its f32 logits) are the only per-class data stored"`
	TBlock  int    `axis:"tblock" values:"0,2048,4096" default:"0" doc:"softmax=epilogue with ref=fixed: 0, every row in one pass over the vocabulary; past 0, passes over blocks of that many rows (at most four, the last taking the rest), so that a pass's probabilities and accumulator rows stay in L2 at large token counts"`
	ZBM     int    `axis:"zbm" values:"64,128,256" doc:"tile rows (tokens) of the logits GEMM"`
	ZBN     int    `axis:"zbn" values:"64,128,192,256" doc:"tile columns (classes) of the logits GEMM"`
	ZPers   bool   `axis:"zpers" values:"0,1" doc:"1: the logits GEMM runs a persistent grid"`
	ZCTAs   int    `axis:"zctas" values:"1,2" default:"1" doc:"softmax=epilogue: CTAs of the logits GEMM an SM holds at once: 2 gives each half the shared memory (a shallower ring) and registers (one consumer warpgroup per 128 rows), so that one CTA's softmax epilogue runs beside another's main loop"`
	DBM     int    `axis:"dbm" values:"64,128,256" doc:"tile rows (tokens) of the gradient GEMM"`
	DBN     int    `axis:"dbn" values:"64,128,192,256" doc:"tile columns (hidden) of the gradient GEMM"`
	DPers   bool   `axis:"dpers" values:"0,1" doc:"1: the gradient GEMM runs a persistent grid"`
	Ref     string `axis:"ref" values:"running,fixed" default:"running" doc:"softmax=epilogue: running: each chunk's probabilities are against the row's maximum over the chunks before, and each gradient GEMM rescales the accumulator (loads and stores it); fixed (bf16): every chunk's are against ref_0 (chunk 0's maximum, or the probe's classes'), and the gradient GEMMs add into the accumulator with atomic adds, loading nothing"`
	PStore  string `axis:"pstore" values:"pair,quad" default:"pair" doc:"softmax=epilogue: how the logits GEMM's epilogue stores P: pair (each thread its 4-byte pairs as the accumulator holds them) or quad (the quad's four threads exchange pairs by shuffles, so that each stores 16 contiguous bytes)"`
	Probe   int    `axis:"probe" values:"0,2048" default:"0" doc:"softmax=epilogue: the classes whose maximum gives ref_0: 0, chunk 0's; 2048 (bf16), the first 2048 (a probe launch of 2048 columns' tiles instead of the chunk's; a row whose logits pass its reference by more than the clamp goes to the repair kernel either way)"`
	PDL     int    `axis:"pdl" values:"0,1,2" doc:"softmax=epilogue: 1, the GEMMs run as a chain of programmatic dependent launches, each starting during the previous one's tail and waiting for it before its first load; 2, as 1, but the logits GEMMs, whose operands x and w nothing in the chain writes, wait only before their epilogue, so that their main loop overlaps the gradient GEMM's tail"`
	SBlock  int    `axis:"sblock" values:"128,256,512" doc:"threads per CTA of the softmax kernel (one row of a chunk each)"`
	WBM     int    `axis:"wbm" values:"64,128,256" doc:"tile rows (classes) of the dW GEMM (dw=1 or 2; 128 without dW)"`
	WBN     int    `axis:"wbn" values:"64,128,192,256" doc:"tile columns (hidden) of the dW GEMM (dw=1 or 2; 128 without dW)"`
}

type family struct{}

func (family) Name() string { return "linear_cross_entropy_bwd" }
func (family) Doc() string {
	return "LM head + mean cross-entropy, forward and backward without the logits: dx, lse and loss from x, w and labels (online log-sum-exp over vocabulary chunks, two wgmma GEMMs per chunk)"
}
func (family) DTypes() []dtype.DType { return []dtype.DType{dtype.BF16, dtype.F16} }

// Shapes yields the preset's LM head at its tokens.
func (family) Shapes(p variants.Preset, dt dtype.DType) []Shape {
	if p.Tokens <= 0 || p.Vocab <= 0 || p.Hidden <= 0 {
		return nil
	}
	return []Shape{{T: p.Tokens, H: p.Hidden, V: p.Vocab, DType: dt}}
}

// CheckShape: h a multiple of 8 (16-byte rows of x, w and dx, which TMA
// and the vector accesses need; a last k-tile of the logits GEMM past h
// reads zeros), every tensor indexable in u32 arithmetic at t.
func (family) CheckShape(s Shape) error {
	switch {
	case s.H%8 != 0:
		return fmt.Errorf("h=%d: the hidden size must be a multiple of 8", s.H)
	case s.ZLoss > 1:
		return fmt.Errorf("zloss=%d: want 0 or 1", s.ZLoss)
	case s.Smooth >= 1000:
		return fmt.Errorf("smooth=%v: label smoothing must be below 1", s.eps())
	case s.DW > dwAdd:
		return fmt.Errorf("dw=%d: want 0 (a frozen head), 1 (dW written) or 2 (dW added to dw)", s.DW)
	case s.T > maxT(s):
		return fmt.Errorf("t=%d: at most %d tokens at h=%d", s.T, maxT(s), s.H)
	}
	return gen.CheckIndexable([]string{"v", "h"}, s.V, s.H)
}

// maxT bounds the token count: t·max(h, the largest chunk) elements fit
// u32 indices.
func maxT(s Shape) int { return gen.MaxElems / max(s.H, 8192) }

// Buffers are the shape's data; the chunk's logits and probabilities, the
// f32 accumulator of dx and the rows' statistics are the program's.
func (family) Buffers(s Shape) []kernels.Buffer {
	t, one := configs.Var(Dim), configs.Int(1)
	b := []kernels.Buffer{
		{Name: "x", DType: s.DType, Elems: t.TimesInt(s.H), Role: kernels.Input},
		{Name: "w", DType: s.DType, Elems: configs.Int(s.V * s.H), Role: kernels.Input},
		{Name: "labels", DType: s.labelType(), Elems: t, Role: kernels.Input},
		{Name: "dloss", DType: dtype.F32, Elems: one, Role: kernels.Input},
		{Name: "n_valid", DType: dtype.F32, Elems: one, Role: kernels.Input},
		{Name: "dx", DType: s.DType, Elems: t.TimesInt(s.H), Role: kernels.Output},
		{Name: "lse", DType: dtype.F32, Elems: t, Role: kernels.Output},
		{Name: "loss", DType: dtype.F32, Elems: t, Role: kernels.Output},
	}
	if s.zloss() {
		b = append(b, kernels.Buffer{Name: "zloss_scale", DType: dtype.F32, Elems: one, Role: kernels.Input})
	}
	switch s.DW {
	case dwWrite:
		b = append(b, kernels.Buffer{Name: "dw", DType: dtype.F32, Elems: configs.Int(s.V * s.H), Role: kernels.Output})
	case dwAdd:
		b = append(b, kernels.Buffer{Name: "dw", DType: dtype.F32, Elems: configs.Int(s.V * s.H), Role: kernels.InOut})
	}
	return b
}

// Cost: x read and dx written, w read by both GEMMs, labels read, lse
// and loss written; the two GEMMs' flops, 4·t·v·h. With dW, w read again
// by the recomputation, dw written (and read, dw=2) in f32, and two more
// GEMMs; with label smoothing w read once more (its column sums).
func (family) Cost(s Shape) kernels.Cost {
	t, h, v := int64(s.T), int64(s.H), int64(s.V)
	elems, flops, f32 := 2*v*h+2*t*h, 4*t*v*h, int64(0)
	if s.DW != dwNone {
		elems, flops, f32 = elems+v*h, flops+4*t*v*h, int64(s.DW)*v*h
	}
	if s.Smooth > 0 {
		elems += v * h
	}
	return kernels.Cost{Bytes: elems*int64(s.DType.Size()) + 4*f32 + (8+int64(s.labelType().Size()))*t, Flops: flops}
}

// Space: at most maxChunks chunks and no chunk past the vocabulary's
// next power of two; tiles the wgmma path's rules take on each GEMM (the
// last chunk's too); the softmax kernel's threads no more than a chunk
// row's 4-float vectors and at most maxVecs vectors held per thread.
func (family) Space(s Shape) variants.Typed[Params] {
	return variants.Typed[Params]{Rules: []variants.Rule[Params]{
		{Name: "chunks", Axes: []string{"chunk"}, Check: func(p Params) error {
			switch {
			case gen.CeilDiv(s.V, p.Chunk) > maxChunks:
				return fmt.Errorf("chunk=%d makes %d chunks of v=%d (at most %d)", p.Chunk, gen.CeilDiv(s.V, p.Chunk), s.V, maxChunks)
			case p.Chunk > 256 && p.Chunk >= 2*gen.Pow2Ceil(s.V):
				return fmt.Errorf("chunk=%d for v=%d", p.Chunk, s.V)
			}
			return nil
		}},
		{Name: "epilogue path", Axes: []string{"softmax", "sblock", "pdl", "ref", "pstore", "probe", "zctas", "tblock", "chunk"}, Check: func(p Params) error {
			onlyEpilogue := p.PDL != 0 || p.Ref != refRunning || p.PStore != pstorePair || p.Probe != 0 || p.ZCTAs != 1 || p.TBlock != 0
			switch {
			case p.Softmax != softmaxEpilogue && onlyEpilogue:
				return fmt.Errorf("pdl=%d, ref=%s, pstore=%s, probe=%d, zctas=%d, tblock=%d: past 0, running, pair, 0, 1 and 0 these are the epilogue path's (softmax=epilogue)", p.PDL, p.Ref, p.PStore, p.Probe, p.ZCTAs, p.TBlock)
			case p.TBlock != 0 && p.Ref != refFixed:
				return fmt.Errorf("tblock=%d: passes over blocks of rows take ref=fixed (the running reference's α is not offset per pass)", p.TBlock)
			case p.Softmax != softmaxEpilogue:
				return nil
			case (p.Ref == refFixed || p.Probe != 0) && s.DType != dtype.BF16:
				return fmt.Errorf("ref=%s, probe=%d: %v probabilities overflow %v bits above a reference from fewer classes; ref=fixed and probe=2048 are bf16 only", p.Ref, p.Probe, s.DType, clampOf(s.DType))
			case p.Probe >= min(p.Chunk, s.V):
				return fmt.Errorf("probe=%d: chunk 0 has %d classes (probe=0 takes them all)", p.Probe, min(p.Chunk, s.V))
			case s.DW != dwNone:
				return fmt.Errorf("softmax=epilogue: the dW pass needs the logits (dw=0 only)")
			case p.SBlock != 128:
				return fmt.Errorf("softmax=epilogue runs no softmax kernel: sblock 128 only")
			case 4*s.H > maxRepairSmem:
				return fmt.Errorf("softmax=epilogue: the repair kernel's row of h=%d f32 sums passes %d bytes of static shared memory", s.H, maxRepairSmem)
			}
			return nil
		}},
		{Name: "quad store", Axes: []string{"pstore", "zbn"}, Check: func(p Params) error {
			if p.PStore == pstoreQuad && p.ZBN > 128 {
				// not a correctness bound: where a chunk ends inside a
				// tile, its column checks beside the exchange spill
				// registers at 192 and 256 columns (ptxas 12.4)
				return fmt.Errorf("pstore=quad: zbn 64 or 128")
			}
			return nil
		}},
		{Name: "softmax CTA", Axes: []string{"chunk", "sblock"}, Check: func(p Params) error {
			w := padded(min(p.Chunk, s.V))
			if vecs := gen.CeilDiv(w/4, p.SBlock); vecs > maxVecs {
				return fmt.Errorf("sblock=%d holds %d vectors of a %d-wide chunk per thread (at most %d)", p.SBlock, vecs, w, maxVecs)
			}
			if p.SBlock > 128 && p.SBlock >= 2*gen.Pow2Ceil(gen.CeilDiv(w, 4)) {
				return fmt.Errorf("sblock=%d for %d vectors", p.SBlock, w/4)
			}
			return nil
		}},
		{Name: "row blocks", Axes: []string{"tblock"}, Check: func(p Params) error {
			if p.TBlock != 0 && s.T <= p.TBlock {
				return fmt.Errorf("tblock=%d at t=%d: one block holds every row (tblock=0)", p.TBlock, s.T)
			}
			return nil
		}},
		{Name: "logits GEMM tiles", Axes: []string{"chunk", "tblock", "zbm", "zbn", "zpers", "zctas"}, Check: func(p Params) error {
			return checkGEMMs(s, p, true)
		}},
		{Name: "probe tiles", Axes: []string{"softmax", "chunk", "tblock", "zbm", "zbn", "zpers", "zctas", "probe"}, Check: func(p Params) error {
			if p.Softmax != softmaxEpilogue || p.TBlock == 0 { // the probe's tiles are the first chunk's
				return nil
			}
			_, _, err := probeChunk(s, p).epiGEMM(s, p, rowStats{n: 1}, true, 0, bugs{}) // over every row at once
			return err
		}},
		{Name: "gradient GEMM tiles", Axes: []string{"chunk", "tblock", "dbm", "dbn", "dpers"}, Check: func(p Params) error {
			return checkGEMMs(s, p, false)
		}},
		{Name: "dW GEMM tiles", Axes: []string{"chunk", "wbm", "wbn"}, Check: func(p Params) error {
			if s.DW == dwNone {
				if p.WBM != 128 || p.WBN != 128 {
					return fmt.Errorf("wbm, wbn = 128 without dW")
				}
				return nil
			}
			cs := chunksOf(s, p)
			for _, c := range []chunk{cs[0], cs[len(cs)-1]} {
				if _, _, err := c.dwGEMM(s, p); err != nil {
					return err
				}
			}
			return nil
		}},
	}}
}

// passRows is the rows of a pass, for which the pass's GEMMs' tiles are
// chosen: t with tblock 0, else tblock (the space takes tblock below t).
func (p Params) passRows(s Shape) int {
	if p.TBlock == 0 {
		return s.T
	}
	return p.TBlock
}

// zTiling is the logits GEMM's tiling.
func (p Params) zTiling() gemm.Tiling {
	return gemm.Tiling{BM: p.ZBM, BN: p.ZBN, Persistent: p.ZPers, PerSM: p.ZCTAs}
}

// softmaxEpilogue is the softmax axis's value of the epilogue path.
const softmaxEpilogue = "epilogue"

// pdlEpilogue is the pdl axis's value at which the logits GEMMs wait for
// the previous launch only before their epilogue.
const pdlEpilogue = 2

// The ref and pstore axes' values.
const (
	refRunning = "running"
	refFixed   = "fixed"
	pstorePair = "pair"
	pstoreQuad = "quad"
)

// maxVecs bounds the 4-float vectors a softmax thread holds.
const maxVecs = 16

// checkGEMMs checks the tiles of the logits (z) or gradient GEMM of the
// first chunk and the last (the others are the first's at other offsets).
func checkGEMMs(s Shape, p Params, z bool) error {
	cs := chunksOf(s, p)
	for i, c := range []chunk{cs[0], cs[len(cs)-1]} {
		var g gemm.Custom
		var gp gemm.Params
		var err error
		if z {
			g, gp, err = c.zGEMM(s, p)
		} else {
			g, gp, err = c.dxGEMM(s, p, true)
		}
		switch {
		case err != nil:
			return err
		case i == 0 && gp.Persistent && g.Tiles(p.passRows(s), gp) <= gemm.Wave*gp.CTAs():
			return fmt.Errorf("a persistent grid for %d tiles (one wave of %d CTAs an SM)", g.Tiles(p.passRows(s), gp), gp.CTAs())
		}
	}
	return nil
}

// padded is a chunk's width rounded up to 8 columns: rows of its logits
// and probabilities start on 16 bytes (the pad reads as zeros).
func padded(w int) int { return gen.CeilDiv(w, 8) * 8 }
