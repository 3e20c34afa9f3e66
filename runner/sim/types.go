package sim

import "github.com/gradtune/gradtune/kernels/ptx"

// ptype is a PTX fundamental type (ptx.Type: its names and widths), with
// the interpreter's value helpers.
type ptype ptx.Type

const (
	tyNone   = ptype(0)
	tyPred   = ptype(ptx.Pred)
	tyB8     = ptype(ptx.B8)
	tyU8     = ptype(ptx.U8)
	tyS8     = ptype(ptx.S8)
	tyB16    = ptype(ptx.B16)
	tyU16    = ptype(ptx.U16)
	tyS16    = ptype(ptx.S16)
	tyF16    = ptype(ptx.F16)
	tyBF16   = ptype(ptx.BF16)
	tyB32    = ptype(ptx.B32)
	tyU32    = ptype(ptx.U32)
	tyS32    = ptype(ptx.S32)
	tyF32    = ptype(ptx.F32)
	tyF16x2  = ptype(ptx.F16x2)
	tyBF16x2 = ptype(ptx.BF16x2)
	tyB64    = ptype(ptx.B64)
	tyU64    = ptype(ptx.U64)
	tyS64    = ptype(ptx.S64)
	tyF64    = ptype(ptx.F64)
	tyB128   = ptype(ptx.B128)
)

// parseType is the type spelled s ("f32"), and whether s names one.
func parseType(s string) (ptype, bool) {
	t, ok := ptx.ParseType(s)
	return ptype(t), ok
}

func (t ptype) String() string {
	if t == tyNone {
		return "none"
	}
	return ptx.Type(t).String()
}

// bits is the width in bits (1 for pred).
func (t ptype) bits() int { return ptx.Type(t).Bits() }

func (t ptype) bytes() int { return ptx.Type(t).Bytes() }

func (t ptype) signed() bool { return ptx.Type(t).Signed() }

func (t ptype) isInt() bool { return ptx.Type(t).IsInt() }

func (t ptype) isBits() bool { return ptx.Type(t).IsBits() }

func (t ptype) isFloat() bool { return ptx.Type(t).IsFloat() }

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
