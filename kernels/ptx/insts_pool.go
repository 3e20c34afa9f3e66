package ptx

// Instructions added for the LP-pooling family: the base-2 logarithm and
// the fast reciprocal, which with Ex2Approx compute |x|^q as
// 2^(q·log2|x|) and 1/y in one MUFU operation each.

// Lg2Approx returns log2(a) by lg2.approx.f32: maximum absolute error
// 2^-22 for the result, whatever the input (PTX ISA: 2^-22.6 for inputs in
// (0.5, 2), relative error 2^-22 elsewhere); subnormal inputs are kept (no
// .ftz). lg2(±0) = −Inf, lg2(+Inf) = +Inf, and a negative input gives NaN.
func (f *Func) Lg2Approx(a Operand) Reg { return f.floatOnly("lg2.approx", F32, a) }

// RcpApprox returns 1/a by rcp.approx.f32: at most 1 ulp from the exact
// reciprocal over the whole range (PTX ISA); subnormal inputs and results
// are kept (no .ftz). One MUFU operation, where the exactly rounded Rcp
// (rcp.rn.f32) is a multi-instruction sequence with a slow path.
func (f *Func) RcpApprox(a Operand) Reg { return f.floatOnly("rcp.approx", F32, a) }

// RcpApproxFtz returns 1/a by rcp.approx.ftz.f32: as RcpApprox, but a
// subnormal input counts as 0 and a result under 2^-126 is 0. It is one
// MUFU operation; RcpApprox adds the compares and scaling that keep
// subnormals.
func (f *Func) RcpApproxFtz(a Operand) Reg { return f.floatOnly("rcp.approx.ftz", F32, a) }
