package sim

// ptype is a PTX fundamental type.
type ptype uint8

const (
	tyNone ptype = iota
	tyPred
	tyB8
	tyU8
	tyS8
	tyB16
	tyU16
	tyS16
	tyF16
	tyBF16
	tyB32
	tyU32
	tyS32
	tyF32
	tyF16x2
	tyBF16x2
	tyB64
	tyU64
	tyS64
	tyF64
	tyB128
)

var ptypeNames = map[string]ptype{
	"pred": tyPred, "b8": tyB8, "u8": tyU8, "s8": tyS8, "b16": tyB16, "u16": tyU16, "s16": tyS16,
	"f16": tyF16, "bf16": tyBF16, "b32": tyB32, "u32": tyU32, "s32": tyS32, "f32": tyF32,
	"f16x2": tyF16x2, "bf16x2": tyBF16x2, "b64": tyB64, "u64": tyU64, "s64": tyS64, "f64": tyF64,
	"b128": tyB128,
}

func (t ptype) String() string {
	for k, v := range ptypeNames {
		if v == t {
			return k
		}
	}
	return "none"
}

// bits is the width in bits (1 for pred).
func (t ptype) bits() int {
	switch t {
	case tyPred:
		return 1
	case tyB8, tyU8, tyS8:
		return 8
	case tyB16, tyU16, tyS16, tyF16, tyBF16:
		return 16
	case tyB32, tyU32, tyS32, tyF32, tyF16x2, tyBF16x2:
		return 32
	case tyB64, tyU64, tyS64, tyF64:
		return 64
	case tyB128:
		return 128
	}
	return 0
}

func (t ptype) bytes() int { return t.bits() / 8 }

func (t ptype) signed() bool { return t == tyS8 || t == tyS16 || t == tyS32 || t == tyS64 }

func (t ptype) isInt() bool {
	switch t {
	case tyU8, tyS8, tyU16, tyS16, tyU32, tyS32, tyU64, tyS64:
		return true
	}
	return false
}

func (t ptype) isBits() bool { return t == tyB8 || t == tyB16 || t == tyB32 || t == tyB64 }

func (t ptype) isFloat() bool {
	switch t {
	case tyF16, tyBF16, tyF32, tyF64, tyF16x2, tyBF16x2:
		return true
	}
	return false
}

func (t ptype) isHalf() bool { return t == tyF16 || t == tyBF16 }

func (t ptype) isHalf2() bool { return t == tyF16x2 || t == tyBF16x2 }

// mask is the all-ones value of t's width (64 bits for 64- and 128-bit).
func (t ptype) mask() uint64 {
	b := t.bits()
	if b >= 64 || b == 0 {
		return ^uint64(0)
	}
	return uint64(1)<<b - 1
}

// sext sign-extends the low bits of v to 64 bits.
func sext(v uint64, bits int) int64 {
	if bits >= 64 {
		return int64(v)
	}
	s := 64 - uint(bits)
	return int64(v<<s) >> s
}

// ival returns v interpreted as an integer of type t, extended to 64 bits
// (sign-extended for signed types).
func (t ptype) ival(v uint64) uint64 {
	if t.signed() {
		return uint64(sext(v, t.bits()))
	}
	return v & t.mask()
}
