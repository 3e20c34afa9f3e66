package gen

// Vector loads and stores shared by the families: vec elements of a dtype
// moved as raw words (f32 or f64 elements, b32 words of two halves, or one
// b16), widened to the math type after a load and narrowed (round to
// nearest even) before a store.

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// RawType is the register type and count of the words of a vec-element
// vector of dt: f32 or f64 elements, b32 words of two halves, or one b16.
func RawType(dt dtype.DType, vec int) (ptx.Type, int) {
	switch {
	case dt == dtype.F32:
		return ptx.F32, vec
	case dt == dtype.F64:
		return ptx.F64, vec
	case vec == 1:
		return ptx.B16, 1
	}
	return ptx.B32, vec / 2
}

// LdRaw loads the vec elements of dt at at from space sp as raw words,
// guarded by ok when valid (the words are zeroed first, so that a guarded
// load reads as zeros and no register is read before it is written).
func LdRaw(k *ptx.Func, sp ptx.Space, dt dtype.DType, vec int, at ptx.Addr, ok ptx.Reg, o ...ptx.LdOpts) []ptx.Reg {
	t, nw := RawType(dt, vec)
	w := make([]ptx.Reg, nw)
	for i := range w {
		w[i] = k.Reg(t)
		if ok.Valid() {
			switch t {
			case ptx.F32:
				k.MovTo(w[i], ptx.F32Imm(0))
			case ptx.F64:
				k.MovTo(w[i], ptx.F64Imm(0))
			default:
				k.MovTo(w[i], ptx.Imm(0))
			}
		}
	}
	k.LdTo(sp, t, w, at, o...)
	if ok.Valid() {
		k.Guard(ok, false)
	}
	return w
}

// LdVals loads vec elements of dt at at like LdRaw and returns them in the
// math type (f32, or f64 for f64).
func LdVals(k *ptx.Func, sp ptx.Space, dt dtype.DType, vec int, at ptx.Addr, ok ptx.Reg, o ...ptx.LdOpts) []ptx.Reg {
	return Widen(k, dt, LdRaw(k, sp, dt, vec, at, ok, o...))
}

// StRaw stores raw words as LdRaw returns them (no guard).
func StRaw(k *ptx.Func, sp ptx.Space, at ptx.Addr, w []ptx.Reg) {
	k.St(sp, w[0].Type(), at, w)
}

// Widen converts raw words of dt to values of the math type (f32, or f64
// for f64).
func Widen(k *ptx.Func, dt dtype.DType, w []ptx.Reg) []ptx.Reg {
	switch {
	case dt == dtype.F32 || dt == dtype.F64:
		return w
	case len(w) == 1 && w[0].Type() == ptx.B16:
		return []ptx.Reg{k.Cvt(ptx.F32, HalfType(dt), "", w[0])}
	}
	var out []ptx.Reg
	for _, x := range w {
		if dt == dtype.BF16 {
			// bf16 is the top half of an f32: shift or mask, no cvt needed.
			out = append(out, k.BitsToF32(k.Shl(ptx.B32, x, ptx.Imm(16))), k.BitsToF32(k.And(ptx.B32, x, ptx.Imm(-65536))))
		} else {
			lo, hi := k.Unpack(x)
			out = append(out, k.Cvt(ptx.F32, ptx.F16, "", lo), k.Cvt(ptx.F32, ptx.F16, "", hi))
		}
	}
	return out
}

// StVals rounds values of the math type to dt (round to nearest even) and
// stores them in global memory at at, guarded by ok when valid. o may set
// a cache operator.
func StVals(k *ptx.Func, dt dtype.DType, at ptx.Addr, vals []ptx.Reg, ok ptx.Reg, o ...ptx.LdOpts) {
	StValsIn(k, ptx.Global, dt, at, vals, ok, o...)
}

// StValsIn is StVals into the state space sp.
func StValsIn(k *ptx.Func, sp ptx.Space, dt dtype.DType, at ptx.Addr, vals []ptx.Reg, ok ptx.Reg, o ...ptx.LdOpts) {
	switch {
	case dt == dtype.F32:
		k.St(sp, ptx.F32, at, vals, o...)
	case dt == dtype.F64:
		k.St(sp, ptx.F64, at, vals, o...)
	case len(vals) == 1:
		k.St(sp, ptx.B16, at, []ptx.Reg{k.Cvt(HalfType(dt), ptx.F32, "rn", vals[0])}, o...)
	default:
		pt := Half2Type(dt)
		words := make([]ptx.Reg, len(vals)/2)
		for i := range words {
			words[i] = k.PackHalf2(pt, vals[2*i+1], vals[2*i])
		}
		k.St(sp, ptx.B32, at, words, o...)
	}
	if ok.Valid() {
		k.Guard(ok, false)
	}
}

// HalfType is the scalar PTX type of a 16-bit dtype.
func HalfType(dt dtype.DType) ptx.Type {
	if dt == dtype.BF16 {
		return ptx.BF16
	}
	return ptx.F16
}

// Half2Type is the packed pair type of a 16-bit dtype.
func Half2Type(dt dtype.DType) ptx.Type {
	if dt == dtype.BF16 {
		return ptx.BF16x2
	}
	return ptx.F16x2
}

// LdNC selects the read-only data path (ld.global.nc).
var LdNC = ptx.LdOpts{NC: true}
