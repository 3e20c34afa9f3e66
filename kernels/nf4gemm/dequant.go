package nf4gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// DequantShape is an NF4 weight W [N×K] dequantized to DType (bf16 or
// f16): blocks of Block elements along K (default 64), f32 scales
// (scales=f32, the default) or double-quantized ones (scales=dq). Keys
// leave the defaults out.
type DequantShape struct {
	N      int    `dim:"n"`
	K      int    `dim:"k"`
	Block  int    `dim:"block,optional=64"`
	Scales string `dim:"scales,optional=f32" values:"f32,dq"`
	DType  dtype.DType
}

func (s DequantShape) weight() weight {
	return weight{n: s.N, k: s.K, block: blockOr64(s.Block), dq: s.Scales == "dq"}
}

func blockOr64(b int) int {
	if b == 0 {
		return 64
	}
	return b
}

// DequantParams is one nf4_dequant variant: a thread converts Unroll
// units of Bytes packed bytes (2·Bytes elements, all in one block), each
// with one load, and stores 4·Bytes bytes of halves per unit. With
// Unroll > 1 a thread issues every unit's loads before it converts the
// first, and its units lie a grid's threads apart, so that each load and
// store instruction of a warp stays contiguous.
type DequantParams struct {
	Threads int    `axis:"threads" values:"128,256" doc:"threads per CTA"`
	Bytes   int    `axis:"bytes" values:"4,8,16" doc:"packed bytes per thread (8, 16 or 32 codes)"`
	Lookup  Lookup `axis:"lookup" values:"smem,prmt,sel" doc:"code to value: shared-memory table, prmt byte tables, selp tree"`
	Unroll  int    `axis:"unroll" values:"1,2,4" default:"1" doc:"units a thread converts, their loads issued together"`
	// launchNext: the kernel lets the next launch start as it begins
	// (nf4_gemm_bwd's early=1), not an axis of nf4_dequant
	launchNext bool
}

// dequantDef is nf4_dequant.
type dequantDef struct{}

func (dequantDef) Name() string { return "nf4_dequant" }
func (dequantDef) Doc() string {
	return "NF4 (bitsandbytes layout, optional double quantization) to bf16/f16: the first kernel of the unfused QLoRA backward"
}
func (dequantDef) DTypes() []dtype.DType { return []dtype.DType{dtype.BF16, dtype.F16} }

// Shapes: the weights of the preset's distinct projections (q and o, k
// and v or a fused qkv, gate and up or a fused gate_up, down), W of
// [out×in], with f32 scales and double-quantized.
func (d dequantDef) Shapes(p variants.Preset, dt dtype.DType) []DequantShape {
	var out []DequantShape
	for _, nk := range projections(p) {
		for _, sc := range []string{"", "dq"} {
			s := DequantShape{N: nk[0], K: nk[1], Scales: sc, DType: dt}
			if d.CheckShape(s) == nil {
				out = append(out, s)
			}
		}
	}
	return out
}

// projections are the [N×K] weights of a preset's distinct linear layers
// (variants.Preset.Projections: fused qkv and gate_up where the model has
// them).
func projections(p variants.Preset) [][2]int { return p.Projections() }

// CheckShape: k a multiple of the block size (64, 128 or 256), the weight
// within u32 element indexing.
func (dequantDef) CheckShape(s DequantShape) error { return s.weight().check() }

// Space: every point is valid (a thread's codes never straddle a block:
// 32 codes at most, blocks of 64 or more).
func (dequantDef) Space(DequantShape) variants.Typed[DequantParams] {
	return variants.Typed[DequantParams]{}
}

func (dequantDef) Buffers(s DequantShape) []kernels.Buffer {
	return append(s.weight().buffers(), kernels.Buffer{Name: "w", DType: s.DType, Elems: configs.Int(s.N * s.K), Role: kernels.Output})
}

func (dequantDef) Inputs(s DequantShape, seed uint64) map[string][]float64 {
	w := s.weight()
	return w.inputs(w.tensor(seed, "nf4/"+variants.ShapeOf(s).Key()))
}

// Reference: fl32(Codebook[c]·absmax) rounded to the output type, the
// bits every lookup method produces.
func (dequantDef) Reference(s DequantShape, in map[string][]float64) map[string][]float64 {
	return map[string][]float64{"w": dequantized(s.weight().fromInputs(in), s.DType)}
}

func (dequantDef) Cost(s DequantShape) kernels.Cost {
	e := int64(s.N) * int64(s.K)
	return kernels.Cost{Bytes: e/2 + s.weight().scaleBytes() + e*int64(s.DType.Size()), Flops: e}
}

// Tolerance: none; the kernels round the same f32 product once.
func (dequantDef) Tolerance(DequantShape, string) kernels.Tolerance { return kernels.Tolerance{} }

// Emit: one unit of Bytes packed bytes per thread, as many CTAs as units.
func (dequantDef) Emit(s DequantShape, p DequantParams) (kernels.Program, error) {
	m := ptx.NewModule()
	l := emitDequant(m, s.weight(), s.DType, p, fmt.Sprintf("nf4_dequant_%v", s.DType), "w")
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, fmt.Errorf("building: %w", err)
	}
	return kernels.Program{PTX: built.String(), Launches: []kernels.Launch{l}}, nil
}

// emitDequant adds the dequantization kernel of w into dt to m under
// entry, writing the buffer out, and returns its launch.
func emitDequant(m *ptx.Module, w weight, dt dtype.DType, p DequantParams, entry, out string) kernels.Launch {
	k := m.Func(entry)
	k.ReqNTid(p.Threads)
	if p.launchNext {
		k.Comment("the GEMM may launch now: it waits for this kernel before its first load")
		k.GridDepLaunch()
	}
	bufs := map[string]ptx.Reg{}
	args := bufferParams(k, bufs, append([]string{"w4", out}, w.scaleNames()...)...)
	tid := k.Mov(ptx.U32, ptx.TidX)
	d := newDeq(k, p.Lookup, dt, tid)
	units := w.n * w.k / 2 / p.Bytes
	unroll := max(p.Unroll, 1)
	ctas := gen.CeilDiv(units, p.Threads*unroll)
	u := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(p.Threads), tid)
	du := dequantUnit{k: k, d: d, w: w, p: p, bufs: bufs, out: out}
	if unroll == 1 {
		k.If(k.Setp("lt", ptx.U32, u, ptx.Imm(units)), func() { du.store(u, du.load(u)) })
	} else {
		// Every unit's loads first, from an index clamped into the
		// weight; the stores of the units past its end are skipped.
		us := make([]ptx.Reg, unroll)
		loaded := make([]unitData, unroll)
		for j := range us {
			us[j] = k.Add(ptx.U32, u, ptx.Imm(j*ctas*p.Threads))
			loaded[j] = du.load(k.Min(ptx.U32, us[j], ptx.Imm(units-1)))
		}
		for j := range us {
			k.If(k.Setp("lt", ptx.U32, us[j], ptx.Imm(units)), func() { du.store(us[j], loaded[j]) })
		}
	}
	return kernels.Launch{Entry: entry, Grid: configs.Grid(ctas, 1, 1), Block: [3]int{p.Threads, 1, 1}, Args: args}
}

// dequantUnit emits the two halves of converting one unit of a thread:
// its loads (packed codes and scale) and its conversion and stores.
type dequantUnit struct {
	k    *ptx.Func
	d    *deq
	w    weight
	p    DequantParams
	bufs map[string]ptx.Reg
	out  string
}

// unitData is a unit's loaded codes (Bytes/4 words) and block scale.
type unitData struct {
	codes []ptx.Reg
	scale ptx.Reg
}

// load reads unit u's packed codes and its block's scale.
func (du dequantUnit) load(u ptx.Reg) unitData {
	k, p := du.k, du.p
	src := k.Add(ptx.U64, du.bufs["w4"], k.MulWide(ptx.U32, u, ptx.Imm(p.Bytes)))
	codes := k.Ld(ptx.Global, ptx.B32, p.Bytes/4, ptx.At(src, 0), ptx.LdOpts{NC: true})
	blk := k.Div(ptx.U32, u, ptx.Imm(du.w.block/2/p.Bytes))
	return unitData{codes, loadScale(k, du.w.dq, du.bufs, blk)}
}

// store converts unit u's loaded codes and stores them, 16 bytes each.
func (du dequantUnit) store(u ptx.Reg, in unitData) {
	k := du.k
	t := du.d.forScale(in.scale)
	dst := k.Add(ptx.U64, du.bufs[du.out], k.MulWide(ptx.U32, u, ptx.Imm(4*du.p.Bytes)))
	for i, c := range in.codes {
		out := du.d.word(c, t)
		k.St(ptx.Global, ptx.B32, ptx.At(dst, int64(16*i)), out[:])
	}
}
