package elementwise

import (
	"math"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// Families are the activation backward families.
func Families() []kernels.Family {
	return []kernels.Family{kernels.Define(reluBwd), kernels.Define(geluBwd), kernels.Define(siluBwd)}
}

// reluBwd: dx = x ≤ 0 ? 0 : dy, as PyTorch's threshold_backward.
var reluBwd = &family{
	name: "relu_bwd",
	doc:  "ReLU backward: dx = (x > 0) · dy",
	emit: func(k *ptx.Func, dy, x ptx.Reg) ptx.Reg {
		le := k.Setp("le", ptx.F32, x, ptx.F32Imm(0))
		return k.Selp(ptx.F32, ptx.F32Imm(0), dy, le)
	},
	ref: func(dy, x float64) float64 {
		if x <= 0 {
			return 0
		}
		return dy
	},
}

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
var geluBwd = &family{
	name: "gelu_bwd",
	doc:  "GELU backward, tanh approximation (PyTorch approximate=\"tanh\")",
	emit: func(k *ptx.Func, dy, x ptx.Reg) ptx.Reg {
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
	ref: func(dy, x float64) float64 {
		t := math.Tanh(geluBeta * (x + geluKappa*x*x*x))
		return dy * (0.5*(1+t) + 0.5*x*(1-t*t)*geluBeta*(1+3*geluKappa*x*x))
	},
	atolF32: 1e-6,
}

// siluBwd: s = σ(x), dx = dy · s · (1 + x(1 − s)), with σ from ex2.approx
// and an exactly rounded reciprocal.
var siluBwd = &family{
	name: "silu_bwd",
	doc:  "SiLU backward: dx = dy · σ(x) · (1 + x(1 − σ(x)))",
	emit: func(k *ptx.Func, dy, x ptx.Reg) ptx.Reg {
		e := k.Ex2Approx(k.Mul(ptx.F32, x, ptx.F32Imm(-log2e)))
		s := k.Rcp(ptx.F32, k.Add(ptx.F32, e, ptx.F32Imm(1)))
		oms := k.Sub(ptx.F32, ptx.F32Imm(1), s)
		in := k.Fma(ptx.F32, x, oms, ptx.F32Imm(1))
		return k.Mul(ptx.F32, dy, k.Mul(ptx.F32, s, in))
	},
	ref: func(dy, x float64) float64 {
		s := 1 / (1 + math.Exp(-x))
		return dy * s * (1 + x*(1-s))
	},
	atolF32: 1e-6,
}
