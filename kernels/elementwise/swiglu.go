package elementwise

import (
	"math"

	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// swigluBwd is the backward of the gated MLP's y = silu(gate)·up:
//
//	s = σ(gate)
//	dup   = dy · gate · s
//	dgate = dy · up · s · (1 + gate·(1 − s))
//
// with σ from ex2.approx.ftz and rcp.approx.ftz, one MUFU operation each
// (the exactly rounded reciprocal and the subnormal-keeping forms took
// 333 SASS instructions a thread of vec=4 against 190): 1 + e ≥ 1, so
// only a σ under 2⁻¹²⁶ (gate < −87) is flushed, to 0.
var swigluBwd = &family{
	name: "swiglu_bwd",
	doc:  "SwiGLU backward: dgate, dup of y = silu(gate) · up",
	ins:  []operand{{"dy", -1, 1}, {"gate", -6, 6}, {"up", -2, 2}},
	outs: []string{"dgate", "dup"},
	emit: func(k *ptx.Func, in []ptx.Reg) []ptx.Reg {
		dy, gate, up := in[0], in[1], in[2]
		e := k.Ex2ApproxFtz(k.Mul(ptx.F32, gate, ptx.F32Imm(-log2e)))
		s := k.RcpApproxFtz(k.Add(ptx.F32, e, ptx.F32Imm(1)))
		dys := k.Mul(ptx.F32, dy, s)
		dup := k.Mul(ptx.F32, dys, gate)
		oms := k.Sub(ptx.F32, ptx.F32Imm(1), s)
		in1 := k.Fma(ptx.F32, gate, oms, ptx.F32Imm(1))
		dgate := k.Mul(ptx.F32, k.Mul(ptx.F32, dys, up), in1)
		return []ptx.Reg{dgate, dup}
	},
	ref: func(in []float64) []float64 {
		dy, gate, up := in[0], in[1], in[2]
		s := 1 / (1 + math.Exp(-gate))
		return []float64{dy * up * s * (1 + gate*(1-s)), dy * gate * s}
	},
	// |dgate| reaches |dy·up|·1.1: the approximate σ's error scaled by it.
	atolF32: 4e-6,
	widths:  func(p variants.Preset) []int { return []int{p.Intermediate} },
}
