package gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/variants"
)

// name is the family's name, and the prefix of its kernels' entries.
const name = "gemm_bwd"

// Grad is which gradient of y = x·Wᵀ a shape computes.
type Grad string

// The gradients.
const (
	DX Grad = "dx" // dX[M×K] = dY[M×N]·W[N×K]
	DW Grad = "dw" // dW[N×K] = dY[M×N]ᵀ·X[M×K]
)

// Shape is the backward of nn.Linear y = x·Wᵀ with x of [M×K] (M tokens,
// K in-features) and W of [N×K] (N out-features): Grad names the product.
// Out=f32 (dw only) writes dW in f32 (for an f32 main-grad); left out,
// the output has the inputs' dtype, as PyTorch's bf16 and f16 backward do.
// LoRA=r (dx only) adds a LoRA adapter's dX in the same GEMM: dX = dY·W +
// dh·A with dh = s·dY·B [M×r] (lora_bwd's dh) and A [r×K].
type Shape struct {
	M     int    `dim:"m"`
	N     int    `dim:"n"`
	K     int    `dim:"k"`
	Grad  Grad   `dim:"grad" values:"dx,dw"`
	Out   string `dim:"out,optional" values:"f32"`
	LoRA  int    `dim:"lora,optional=0"`
	DType dtype.DType
}

// maxLoRA is the largest adapter rank whose dX the GEMM adds.
const maxLoRA = 64

// Families lists gemm_bwd.
func Families() []kernels.Family { return []kernels.Family{kernels.Define(def{})} }

// def is gemm_bwd written against Shape and Params.
type def struct{}

func (def) Name() string { return name }
func (def) Doc() string {
	return "nn.Linear backward GEMMs: dX = dY·W (grad=dx) or dW = dYᵀ·X (grad=dw), f16/bf16 in, f32 accumulation"
}
func (def) DTypes() []dtype.DType { return []dtype.DType{dtype.BF16, dtype.F16} }

// Shapes: the preset's distinct projections (variants.Preset.Projections:
// q and o, k and v or a fused qkv, gate and up or a fused gate_up, down),
// W of [out×in] = [N×K], at Tokens rows, each for dx then dw.
func (d def) Shapes(p variants.Preset, dt dtype.DType) []Shape {
	var out []Shape
	for _, nk := range p.Projections() {
		for _, g := range []Grad{DX, DW} {
			s := Shape{M: p.Tokens, N: nk[0], K: nk[1], Grad: g, DType: dt}
			if d.CheckShape(s) == nil {
				out = append(out, s)
			}
		}
	}
	return out
}

// CheckShape: n and k multiples of 8 (every row of dY, W and X starts on
// 16 bytes, as cp.async and TMA need), every matrix within u32 element
// indexing, out=f32 only for dw.
func (def) CheckShape(s Shape) error {
	switch {
	case s.N%8 != 0 || s.K%8 != 0:
		return fmt.Errorf("n=%d and k=%d must be multiples of 8 (rows of 16 bytes)", s.N, s.K)
	case s.M*s.N > gen.MaxElems || s.M*s.K > gen.MaxElems || s.N*s.K > gen.MaxElems:
		return fmt.Errorf("m=%d, n=%d, k=%d: a matrix has more than %d elements", s.M, s.N, s.K, gen.MaxElems)
	case s.Out != "" && s.Grad != DW:
		return fmt.Errorf("out=%s is for grad=dw (dx has the inputs' dtype)", s.Out)
	case s.LoRA != 0 && (s.Grad != DX || s.LoRA%8 != 0 || s.LoRA > maxLoRA):
		return fmt.Errorf("lora=%d: an adapter's rank, a multiple of 8 up to %d, with grad=dx", s.LoRA, maxLoRA)
	}
	return nil
}

// outDType is the dtype of the output.
func (s Shape) outDType() dtype.DType {
	if s.Out == "f32" {
		return dtype.F32
	}
	return s.DType
}

// Buffers: dy and w (dx) or dy and x (dw) in, the gradient out.
func (def) Buffers(s Shape) []kernels.Buffer {
	p := problemOf(s)
	b := []kernels.Buffer{
		{Name: "dy", DType: s.DType, Elems: configs.Var(tokenDim).TimesInt(s.N), Role: kernels.Input},
		{Name: p.b.buf, DType: s.DType, Elems: p.lExpr().TimesInt(p.c), Role: kernels.Input},
		{Name: p.out, DType: s.outDType(), Elems: p.rExpr().TimesInt(p.c), Role: kernels.Output},
	}
	if s.LoRA > 0 {
		b = append(b, kernels.Buffer{Name: loraH, DType: s.DType, Elems: configs.Var(tokenDim).TimesInt(s.LoRA), Role: kernels.Input},
			kernels.Buffer{Name: loraA, DType: s.DType, Elems: configs.Int(s.LoRA * s.K), Role: kernels.Input})
	}
	return b
}

// The adapter's buffers: dh [M×r] and A [r×K].
const (
	loraH = "dh"
	loraA = "a"
)

// Cost: 2·R·C·L flops; both operands read once and the output written
// once (the adapter's dh and A count as more reduction: L = N + r).
func (def) Cost(s Shape) kernels.Cost {
	p := problemOf(s)
	in := int64(s.DType.Size())
	l := p.l + s.LoRA
	return kernels.Cost{
		Flops: 2 * int64(p.r) * int64(p.c) * int64(l),
		Bytes: in*int64(p.r*l+l*p.c) + int64(s.outDType().Size())*int64(p.r*p.c),
	}
}

// Baselines: cuBLAS on the same buffers. Row-major, C = op(A)·op(B):
// dx is dy·w (no transposes); dw is dyᵀ·x (A = dy transposed). With an
// adapter, cuBLAS's base GEMM alone (-base): a lower bound of the unfused
// path, which also runs dh·A and adds it.
func (def) Baselines(s Shape) []kernels.Baseline {
	g := &kernels.GEMMCall{A: "dy", C: string(s.Grad), In: s.DType, Out: s.outDType(), LDA: s.N, LDB: s.K, LDC: s.K}
	switch s.Grad {
	case DX:
		g.B, g.M, g.N, g.K = "w", s.M, s.K, s.N
	default:
		g.B, g.M, g.N, g.K, g.TransA = "x", s.N, s.K, s.M, true
	}
	if s.LoRA > 0 {
		// the base GEMM alone: less work than the fused one does
		return []kernels.Baseline{{Name: "cublas-base", Library: "cublas", GEMM: g}, {Name: "cublaslt-best-base", Library: "cublaslt-best", GEMM: g}}
	}
	return []kernels.Baseline{{Name: "cublas", GEMM: g}, {Name: "cublaslt-best", GEMM: g}}
}
