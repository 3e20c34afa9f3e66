package elementwise

import (
	"math"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// Families are the activation backward families, swiglu_bwd and
// rope_bwd.
func Families() []kernels.Family {
	return []kernels.Family{kernels.Define(reluBwd), kernels.Define(geluBwd), kernels.Define(siluBwd),
		kernels.Define(swigluBwd), kernels.Define(ropeBwd)}
}

// activation is the map dx = f(dy, x) over the MLP's intermediate and the
// hidden activations: emit and ref compute one element.
func activation(name, doc string, emit func(k *ptx.Func, dy, x ptx.Reg) ptx.Reg, ref func(dy, x float64) float64, atolF32 float64) *family {
	return &family{
		name: name, doc: doc,
		ins:     []operand{{"dy", -1, 1}, {"x", -4, 4}},
		outs:    []string{"dx"},
		emit:    func(k *ptx.Func, in []ptx.Reg) []ptx.Reg { return []ptx.Reg{emit(k, in[0], in[1])} },
		ref:     func(in []float64) []float64 { return []float64{ref(in[0], in[1])} },
		widths:  func(p variants.Preset) []int { return []int{p.Intermediate, p.Hidden} },
		atolF32: atolF32,
	}
}

// reluBwd: dx = x ≤ 0 ? 0 : dy, as PyTorch's threshold_backward.
var reluBwd = activation("relu_bwd", "ReLU backward: dx = (x > 0) · dy",
	func(k *ptx.Func, dy, x ptx.Reg) ptx.Reg {
		le := k.Setp("le", ptx.F32, x, ptx.F32Imm(0))
		return k.Selp(ptx.F32, ptx.F32Imm(0), dy, le)
	},
	func(dy, x float64) float64 {
		if x <= 0 {
			return 0
		}
		return dy
	},
	0)

// GELU (tanh approximation) constants, as PyTorch's gelu_backward with
// approximate="tanh".
const (
	geluBeta  = 0.7978845608028654 // √(2/π)
	geluKappa = 0.044715
)

// geluBwd follows PyTorch's formula:
//
//	u = β(x + κx³), t = tanh(u)
//	dx = dy · (½(1+t) + ½x(1−t²) · β(1+3κx²))
//
// tanh is built from ex2.approx as t = 1 − 2/(2^(2u·log2 e)+1): accurate
// to about 2⁻²¹ absolute, where tanh.approx.f32 would give only 2⁻¹¹.
var geluBwd = activation("gelu_bwd", "GELU backward, tanh approximation (PyTorch approximate=\"tanh\")",
	func(k *ptx.Func, dy, x ptx.Reg) ptx.Reg {
		x2 := k.Mul(ptx.F32, x, x)
		x3 := k.Mul(ptx.F32, x2, x)
		inner := k.Fma(ptx.F32, ptx.F32Imm(geluKappa), x3, x)
		// 2u·log2(e) folded into one constant.
		e := k.Ex2Approx(k.Mul(ptx.F32, inner, ptx.F32Imm(float32(2*geluBeta*math.Log2E))))
		r := k.Rcp(ptx.F32, k.Add(ptx.F32, e, ptx.F32Imm(1)))
		t := k.Fma(ptx.F32, ptx.F32Imm(-2), r, ptx.F32Imm(1))
		left := k.Fma(ptx.F32, ptx.F32Imm(0.5), t, ptx.F32Imm(0.5))
		omt2 := k.Fma(ptx.F32, k.Neg(ptx.F32, t), t, ptx.F32Imm(1))
		right := k.Mul(ptx.F32, k.Mul(ptx.F32, x, ptx.F32Imm(0.5)), omt2)
		innerD := k.Fma(ptx.F32, ptx.F32Imm(float32(3*geluKappa*geluBeta)), x2, ptx.F32Imm(geluBeta))
		g := k.Fma(ptx.F32, right, innerD, left)
		return k.Mul(ptx.F32, dy, g)
	},
	func(dy, x float64) float64 {
		t := math.Tanh(geluBeta * (x + geluKappa*x*x*x))
		return dy * (0.5*(1+t) + 0.5*x*(1-t*t)*geluBeta*(1+3*geluKappa*x*x))
	},
	1e-6)

// siluBwd: s = σ(x), dx = dy · s · (1 + x(1 − s)), with σ from ex2.approx
// and an exactly rounded reciprocal.
var siluBwd = activation("silu_bwd", "SiLU backward: dx = dy · σ(x) · (1 + x(1 − σ(x)))",
	func(k *ptx.Func, dy, x ptx.Reg) ptx.Reg {
		e := k.Ex2Approx(k.Mul(ptx.F32, x, ptx.F32Imm(-log2e)))
		s := k.Rcp(ptx.F32, k.Add(ptx.F32, e, ptx.F32Imm(1)))
		oms := k.Sub(ptx.F32, ptx.F32Imm(1), s)
		in := k.Fma(ptx.F32, x, oms, ptx.F32Imm(1))
		return k.Mul(ptx.F32, dy, k.Mul(ptx.F32, s, in))
	},
	func(dy, x float64) float64 {
		s := 1 / (1 + math.Exp(-x))
		return dy * s * (1 + x*(1-s))
	},
	1e-6)
