package configs

import "math"

// FloatToBF16 converts f to bfloat16 bits, rounding to nearest even
// (cvt.rn.bf16.f32). NaN stays NaN.
func FloatToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	lsb := (b >> 16) & 1
	b += 0x7fff + lsb
	return uint16(b >> 16)
}

// BF16ToFloat widens bfloat16 bits to float64 exactly.
func BF16ToFloat(h uint16) float64 {
	return float64(BF16ToFloat32(h))
}

// FloatToF16 converts f to IEEE binary16 bits, rounding to nearest even
// (cvt.rn.f16.f32), with overflow to infinity and gradual underflow.
func FloatToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b >> 23) & 0xff)
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint32(14 - e)
		half := uint32(1) << (shift - 1)
		rest := man & ((1 << shift) - 1)
		v := man >> shift
		if rest > half || (rest == half && v&1 == 1) {
			v++
		}
		return sign | uint16(v)
	}
	v := uint32(e)<<10 | man>>13
	rest := man & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && v&1 == 1) {
		v++ // may carry into the exponent, which is the right result
	}
	return sign | uint16(v)
}

// F16ToFloat widens binary16 bits to float64 exactly.
func F16ToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	man := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * man * 0x1p-24
	case 0x1f:
		if man != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + man/1024) * math.Ldexp(1, exp-15)
}
