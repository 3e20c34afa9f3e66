package ptx

import "fmt"

// Type is a PTX fundamental type as used in instruction suffixes.
type Type int

// The PTX types the builder supports.
const (
	invalidType Type = iota
	Pred
	B16
	B32
	B64
	U16
	U32
	U64
	S16
	S32
	S64
	F16
	BF16
	F32
	F64
	F16x2
	BF16x2
	// Types of memory and conversion suffixes that no register has
	// (ld.u8, cvt.s8.s32, st.shared.b128), for the analyses and the
	// interpreter that read such suffixes.
	B8
	U8
	S8
	B128
)

var typeNames = [...]string{"", "pred", "b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f16", "bf16", "f32", "f64", "f16x2", "bf16x2",
	"b8", "u8", "s8", "b128"}

// typeNamed maps each spelling in typeNames to its type.
var typeNamed = func() map[string]Type {
	m := make(map[string]Type, len(typeNames))
	for t, name := range typeNames[1:] {
		m[name] = Type(t + 1)
	}
	return m
}()

// ParseType is the type spelled s without the dot ("f32"), and whether
// s names one.
func ParseType(s string) (Type, bool) {
	t, ok := typeNamed[s]
	return t, ok
}

// String returns the PTX spelling without the dot ("f32").
func (t Type) String() string {
	if t > 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", int(t))
}

// Bits returns the width of the type in bits (1 for Pred).
func (t Type) Bits() int {
	switch t {
	case Pred:
		return 1
	case B8, U8, S8:
		return 8
	case B16, U16, S16, F16, BF16:
		return 16
	case B32, U32, S32, F32, F16x2, BF16x2:
		return 32
	case B64, U64, S64, F64:
		return 64
	case B128:
		return 128
	}
	return 0
}

// Bytes is the width in bytes (0 for Pred).
func (t Type) Bytes() int { return t.Bits() / 8 }

// IsFloat reports whether arithmetic on t is floating point.
func (t Type) IsFloat() bool {
	switch t {
	case F16, BF16, F32, F64, F16x2, BF16x2:
		return true
	}
	return false
}

// IsInt reports whether t is a signed or unsigned integer type.
func (t Type) IsInt() bool {
	switch t {
	case U8, U16, U32, U64, S8, S16, S32, S64:
		return true
	}
	return false
}

// Signed reports whether t is a signed integer type.
func (t Type) Signed() bool { return t == S8 || t == S16 || t == S32 || t == S64 }

// IsBits reports whether t is an untyped bit-size type (b8 to b64).
func (t Type) IsBits() bool { return t == B8 || t == B16 || t == B32 || t == B64 }

// class is a register class: what the printer declares.
type class int

const (
	clsPred class = iota
	clsB16
	clsB32
	clsB64
	clsF32
	clsF64
	numClasses
)

var classDecl = [numClasses]struct{ prefix, typ string }{
	{"%p", "pred"}, {"%h", "b16"}, {"%r", "b32"}, {"%rd", "b64"}, {"%f", "f32"}, {"%fd", "f64"},
}

func classOf(t Type) class {
	switch t {
	case Pred:
		return clsPred
	case F32:
		return clsF32
	case F64:
		return clsF64
	}
	switch t.Bits() {
	case 16:
		return clsB16
	case 32:
		return clsB32
	}
	return clsB64
}

// Space is a PTX state space.
type Space string

// State spaces for ld, st, atom and red. SharedCluster is the shared
// memory of any CTA of the cluster, at a 32-bit address from Mapa (sm_90).
const (
	Global        Space = "global"
	Shared        Space = "shared"
	SharedCluster Space = "shared::cluster"
	Local         Space = "local"
	Param         Space = "param"
	Const         Space = "const"
)
