package sim

import (
	"math"
	"math/big"

	"github.com/gradtune/gradtune/dtype"
)

// Floating-point helpers. The GPU's exactly rounded instructions (add.rn,
// mul.rn, fma.rn, div.rn, sqrt.rn, rcp.rn, cvt.rn) are reproduced bit for
// bit; results that are NaN come out as the GPU's canonical NaN
// (0x7fffffff for f32, 0x7fff for f16 and bf16, 0x7fffffffffffffff for
// f64).

const (
	nanF32  = 0x7fffffff
	nanF64  = 0x7fffffffffffffff
	nanHalf = 0x7fff
)

func float64bits(f float64) uint64 { return math.Float64bits(f) }

func f32(u uint64) float32 { return math.Float32frombits(uint32(u)) }
func f64(u uint64) float64 { return math.Float64frombits(u) }

// b32 returns the bits of f, canonicalizing NaN.
func b32(f float32) uint64 {
	if f != f {
		return nanF32
	}
	return uint64(math.Float32bits(f))
}

// b64 returns the bits of f, canonicalizing NaN.
func b64(f float64) uint64 {
	if f != f {
		return nanF64
	}
	return math.Float64bits(f)
}

// fmaOdd returns a·b + c rounded to float64 with round-to-odd, for a, b
// and c whose product a·b is exact in float64 (each operand has at most 26
// significant bits: f32, f16 and bf16 values). Rounding the result once
// more to a format of at most 51 bits (f32: 24) then gives the correctly
// rounded a·b + c; rounding math.FMA's round-to-nearest result would round
// twice and can be off by one unit when the exact value lies just beside a
// midpoint of the narrower format.
func fmaOdd(a, b, c float64) float64 {
	p := a * b // exact
	s := p + c
	if math.IsInf(s, 0) || math.IsNaN(s) || math.IsInf(p, 0) {
		return p + c
	}
	// TwoSum: p + c = s + e exactly.
	bb := s - p
	e := (p - (s - bb)) + (c - bb)
	if e == 0 {
		return s
	}
	bits := math.Float64bits(s)
	// Truncate toward zero: step s's magnitude down when s is larger in
	// magnitude than the exact value.
	if (s > 0) == (e < 0) {
		bits--
	}
	return math.Float64frombits(bits | 1)
}

// fmaF32 is fma.rn.f32. The float64 sum of the exact product and c is
// rounded once; rounding it again to f32 is correct unless it landed
// exactly on the midpoint of two f32 values (or in f32's subnormal range),
// where the round-to-odd path decides.
func fmaF32(a, b, c float32) float32 {
	s := float64(a)*float64(b) + float64(c)
	if bits := math.Float64bits(s); bits&0x1fffffff != 0x10000000 && math.Abs(s) >= 0x1p-126 {
		return float32(s)
	}
	return float32(fmaOdd(float64(a), float64(b), float64(c)))
}

// toF32Odd rounds x to float32 with round-to-odd, so that a later
// round-to-nearest to f16 or bf16 is correct.
func toF32Odd(x float64) float32 {
	f := float32(x)
	if float64(f) == x || x != x {
		return f
	}
	bits := math.Float32bits(f)
	if math.Abs(float64(f)) > math.Abs(x) {
		bits-- // magnitude down; from ±Inf this gives ±MaxFloat32
	}
	return math.Float32frombits(bits | 1)
}

// The half conversions are dtype's (round to nearest even, exact
// widening); the GPU's canonical NaN replaces theirs.

// f32ToF16 converts to IEEE binary16 bits with round to nearest even
// (cvt.rn.f16.f32).
func f32ToF16(f float32) uint16 {
	if f != f {
		return nanHalf
	}
	return dtype.FloatToF16(f)
}

// f16ToF32 widens binary16 bits exactly.
func f16ToF32(h uint16) float32 {
	if h&0x7fff > 0x7c00 {
		return f32(nanF32)
	}
	return dtype.F16ToFloat32(h)
}

// f32ToBF16 converts to bfloat16 bits with round to nearest even.
func f32ToBF16(f float32) uint16 {
	if f != f {
		return nanHalf
	}
	return dtype.FloatToBF16(f)
}

// bf16ToF32 widens bfloat16 bits exactly.
func bf16ToF32(h uint16) float32 { return dtype.BF16ToFloat32(h) }

// Rounding modes of cvt and of arithmetic.
const (
	rndNone uint8 = iota
	rndRN
	rndRZ
	rndRM
	rndRP
	rndRNI
	rndRZI
	rndRMI
	rndRPI
)

// format describes a binary floating-point format for directed rounding.
type format struct {
	bits    uint // total width
	encode  func(x float64) uint64
	decode  func(u uint64) float64
	signBit uint64
}

var (
	fmtF16 = &format{16, func(x float64) uint64 { return uint64(f32ToF16(toF32Odd(x))) },
		func(u uint64) float64 { return float64(f16ToF32(uint16(u))) }, 0x8000}
	fmtBF16 = &format{16, func(x float64) uint64 { return uint64(f32ToBF16(toF32Odd(x))) },
		func(u uint64) float64 { return float64(bf16ToF32(uint16(u))) }, 0x8000}
	fmtF32 = &format{32, func(x float64) uint64 { return b32(float32(x)) },
		func(u uint64) float64 { return float64(f32(u)) }, 1 << 31}
	fmtF64 = &format{64, func(x float64) uint64 { return b64(x) },
		func(u uint64) float64 { return f64(u) }, 1 << 63}
)

// round converts the exact value x to format f with rounding mode mode
// (rndRN, rndRZ, rndRM, rndRP). x must be exactly the value to round (any
// float64; formats narrower than float64 only).
func (f *format) round(x float64, mode uint8) uint64 {
	u := f.encode(x)
	if x != x || mode == rndRN || mode == rndNone {
		return u
	}
	back := f.decode(u)
	if back == x {
		return u
	}
	neg := u&f.signBit != 0
	mag := u &^ f.signBit
	switch mode {
	case rndRZ:
		if math.Abs(back) > math.Abs(x) {
			mag--
		}
	case rndRM:
		if back > x {
			if neg || back == 0 {
				neg, mag = true, mag+1
			} else {
				mag--
			}
		}
	case rndRP:
		if back < x {
			if !neg || mag == 0 {
				neg, mag = false, mag+1
			} else {
				mag--
			}
		}
	}
	if neg {
		return f.signBit | mag
	}
	return mag
}

// roundBig rounds an exact big value (64-bit integers that float64 cannot
// hold) to f32 or f64 with mode.
func roundBig(v *big.Float, to ptype, mode uint8) uint64 {
	m := big.ToNearestEven
	switch mode {
	case rndRZ:
		m = big.ToZero
	case rndRM:
		m = big.ToNegativeInf
	case rndRP:
		m = big.ToPositiveInf
	}
	if to == tyF64 {
		x, _ := new(big.Float).SetMode(m).SetPrec(53).Set(v).Float64()
		return b64(x)
	}
	x, _ := new(big.Float).SetMode(m).SetPrec(24).Set(v).Float64()
	if to == tyF32 {
		return b32(float32(x))
	}
	// f16/bf16 from a 64-bit integer: through the exact-enough f64.
	return fmtOf(to).round(x, mode)
}

func fmtOf(t ptype) *format {
	switch t {
	case tyF16:
		return fmtF16
	case tyBF16:
		return fmtBF16
	case tyF32:
		return fmtF32
	}
	return fmtF64
}

// roundInt applies an integer rounding mode to x.
func roundInt(x float64, mode uint8) float64 {
	switch mode {
	case rndRNI:
		return math.RoundToEven(x)
	case rndRZI:
		return math.Trunc(x)
	case rndRMI:
		return math.Floor(x)
	case rndRPI:
		return math.Ceil(x)
	}
	return x
}

// floatToInt converts x to an integer type with saturation (PTX cvt from
// float to integer clamps, and NaN converts to 0).
func floatToInt(x float64, mode uint8, to ptype) uint64 {
	if x != x {
		return 0
	}
	x = roundInt(x, mode)
	bitsN := to.bits()
	if to.signed() {
		lo := -math.Ldexp(1, bitsN-1)
		hi := math.Ldexp(1, bitsN-1)
		switch {
		case x <= lo:
			return uint64(int64(-1) << (bitsN - 1))
		case x >= hi:
			return uint64(1)<<(bitsN-1) - 1
		}
		return uint64(int64(x))
	}
	if x <= 0 {
		return 0
	}
	hi := math.Ldexp(1, bitsN)
	if x >= hi {
		if bitsN == 64 {
			return math.MaxUint64
		}
		return uint64(1)<<bitsN - 1
	}
	return uint64(x)
}

// Approximate instructions. The GPU evaluates them in its special function
// unit; the interpreter computes them in float64 and rounds once, which is
// within the PTX ISA's stated error of the GPU's result:
//
//	ex2.approx.f32    max relative error 2^-22.5 (|x| ≤ 126: 2 ulp)
//	lg2.approx.f32    max absolute error 2^-22.6 for x in [0.5, 2], else 2^-22 relative
//	rcp.approx.f32    max relative error 2^-23
//	rsqrt.approx.f32  max relative error 2^-22.9
//	sqrt.approx.f32   max relative error 2^-23
//	tanh.approx.f32   max relative error 2^-10.987
//	sin/cos.approx    max absolute error 2^-20.5 in [-π, π]
//
// so the GPU and the interpreter can differ by up to those bounds (plus
// half an ulp): a family built on them states a tolerance at least that
// wide.
func approx(op opcode, x float32) float32 {
	v := float64(x)
	switch op {
	case opEx2:
		return float32(math.Exp2(v))
	case opLg2:
		return float32(math.Log2(v))
	case opRcpApprox:
		return float32(1 / v)
	case opRsqrt:
		return float32(1 / math.Sqrt(v))
	case opSqrtApprox:
		return float32(math.Sqrt(v))
	case opTanh:
		return float32(math.Tanh(v))
	case opSin:
		return float32(math.Sin(v))
	case opCos:
		return float32(math.Cos(v))
	}
	return x
}

// ftz32 flushes an f32 subnormal to zero of the same sign.
func ftz32(f float32) float32 {
	b := math.Float32bits(f)
	if b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return f
}

// half arithmetic: decode a 16-bit operand of type t.
func halfToF64(u uint64, t ptype) float64 {
	if t == tyBF16 || t == tyBF16x2 {
		return float64(bf16ToF32(uint16(u)))
	}
	return float64(f16ToF32(uint16(u)))
}

// halfRound rounds an exact (or round-to-odd) float64 to f16 or bf16 bits.
func halfRound(x float64, t ptype) uint64 {
	if t == tyBF16 || t == tyBF16x2 {
		return uint64(f32ToBF16(toF32Odd(x)))
	}
	return uint64(f32ToF16(toF32Odd(x)))
}

// minF and maxF follow PTX min/max: a NaN operand yields the other
// operand, two NaNs yield the canonical NaN, and -0 is less than +0.
func minF(a, b float64) float64 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b:
		if math.Signbit(a) {
			return a
		}
		return b
	case a < b:
		return a
	}
	return b
}

func maxF(a, b float64) float64 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b:
		if math.Signbit(a) {
			return b
		}
		return a
	case a > b:
		return a
	}
	return b
}

// directed evaluates add, sub, mul, div or fma of f32 or f64 operands with
// a directed rounding mode (.rz, .rm, .rp), through math/big.
func directed(op opcode, t ptype, mode uint8, x, y, z float64) uint64 {
	finite := !math.IsInf(x, 0) && !math.IsInf(y, 0) && !math.IsInf(z, 0) && x == x && y == y && z == z
	if !finite || (op == opDiv && y == 0) {
		var r float64
		switch op {
		case opAdd:
			r = x + y
		case opSub:
			r = x - y
		case opMulLo:
			r = x * y
		case opDiv:
			r = x / y
		default:
			r = math.FMA(x, y, z)
		}
		if t == tyF32 {
			return b32(float32(r))
		}
		return b64(r)
	}
	prec := uint(53)
	if t == tyF32 {
		prec = 24
	}
	m := map[uint8]big.RoundingMode{rndRZ: big.ToZero, rndRM: big.ToNegativeInf, rndRP: big.ToPositiveInf}[mode]
	X, Y := new(big.Float).SetFloat64(x), new(big.Float).SetFloat64(y)
	r := new(big.Float).SetPrec(prec).SetMode(m)
	switch op {
	case opAdd:
		r.Add(X, Y)
	case opSub:
		r.Sub(X, Y)
	case opMulLo:
		r.Mul(X, Y)
	case opDiv:
		r.Quo(X, Y)
	default:
		p := new(big.Float).SetPrec(256).Mul(X, Y)
		r.Add(p, new(big.Float).SetFloat64(z))
	}
	f, _ := r.Float64()
	if t == tyF32 {
		return fmtF32.round(f, mode)
	}
	if math.IsInf(f, 0) {
		if mode == rndRZ || (mode == rndRM && f > 0) || (mode == rndRP && f < 0) {
			f = math.Copysign(math.MaxFloat64, f)
		}
	}
	return b64(f)
}
