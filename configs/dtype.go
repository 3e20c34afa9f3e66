package configs

import (
	"fmt"
	"math"
	"strings"
)

// DType is an element type of a kernel buffer.
type DType int

// The element types. The zero value is invalid so that a forgotten dtype is
// caught rather than silently treated as f32.
const (
	Invalid DType = iota
	F32
	F16
	BF16
	F64
	// U8 is a raw byte (0..255): packed data such as NF4 weights (two
	// 4-bit codes per byte) and 8-bit codes. It is a storage type for
	// Input buffers, not an element type families compute in, so All
	// leaves it out and Parse accepts it only by its name "u8".
	U8
	// I32 is a signed 32-bit integer: class indices such as the labels
	// of a cross-entropy (ignore_index −100 included). Like U8 it is a
	// storage type for Input buffers: All leaves it out and Parse
	// accepts it only by its name "i32".
	I32
	// I64 is a signed 64-bit integer: class indices as PyTorch keeps
	// them (int64 labels, ignore_index −100 included). Like I32 it is a
	// storage type for Input buffers: All leaves it out and Parse
	// accepts it only by its name "i64".
	I64
)

var names = map[DType]string{F32: "f32", F16: "f16", BF16: "bf16", F64: "f64", U8: "u8", I32: "i32", I64: "i64"}

// All lists the valid floating-point dtypes in a stable order (U8, I32
// and I64 are storage types and are not listed).
func DTypes() []DType { return []DType{F32, F16, BF16, F64} }

// String returns the short name ("f32", "bf16", ...).
func (d DType) String() string {
	if s, ok := names[d]; ok {
		return s
	}
	return fmt.Sprintf("dtype(%d)", int(d))
}

// Size returns the size of one element in bytes.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case F16, BF16:
		return 2
	case F64, I64:
		return 8
	case U8:
		return 1
	}
	return 0
}

// Valid reports whether d is one of the known dtypes.
func (d DType) Valid() bool { _, ok := names[d]; return ok }

// Parse turns a name such as "bf16" (also "float32", "half", "bfloat16")
// into a DType.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "f32", "float32", "float", "fp32":
		return F32, nil
	case "f16", "float16", "half", "fp16":
		return F16, nil
	case "bf16", "bfloat16":
		return BF16, nil
	case "f64", "float64", "double", "fp64":
		return F64, nil
	case "u8":
		return U8, nil
	case "i32":
		return I32, nil
	case "i64":
		return I64, nil
	}
	return Invalid, fmt.Errorf("unknown dtype %q (accepted: f32, f16, bf16, f64)", s)
}

// ParseList parses a comma-separated list of dtypes.
func ParseDTypes(s string) ([]DType, error) {
	var out []DType
	seen := map[DType]bool{}
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		d, err := ParseDType(f)
		if err != nil {
			return nil, err
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty dtype list (accepted: f32, f16, bf16, f64)")
	}
	return out, nil
}

// Round returns v rounded to the nearest value representable in d.
func (d DType) Round(v float64) float64 {
	switch d {
	case F32:
		return float64(float32(v))
	case F16:
		return F16ToFloat(FloatToF16(float32(v)))
	case BF16:
		return BF16ToFloat(FloatToBF16(float32(v)))
	case U8:
		return float64(toU8(v))
	case I32:
		return float64(toI32(v))
	case I64:
		return float64(toI64(v))
	}
	return v
}

// toU8 is v rounded to the nearest integer (ties to even) and clamped to
// 0..255; NaN gives 0.
func toU8(v float64) uint8 {
	switch {
	case !(v > 0):
		return 0
	case v >= 255:
		return 255
	}
	return uint8(math.RoundToEven(v))
}

// toInt is v rounded to the nearest integer (ties to even) and clamped
// to [lo, hi], T's range; NaN gives 0.
func toInt[T int32 | int64](v float64, lo, hi T) T {
	switch {
	case v != v:
		return 0
	case v <= float64(lo):
		return lo
	case v >= float64(hi):
		return hi
	}
	return T(math.RoundToEven(v))
}

func toI32(v float64) int32 { return toInt[int32](v, math.MinInt32, math.MaxInt32) }
func toI64(v float64) int64 { return toInt[int64](v, math.MinInt64, math.MaxInt64) }

// Decode reads little-endian elements of type d into float64 values.
func (d DType) Decode(b []byte) []float64 {
	n := 0
	if d.Size() > 0 {
		n = len(b) / d.Size()
	}
	out := make([]float64, n)
	d.DecodeInto(out, b)
	return out
}

// Epsilon returns the unit roundoff of d (half the distance from 1 to the
// next representable value).
func (d DType) Epsilon() float64 {
	switch d {
	case F32:
		return 0x1p-24
	case F16:
		return 0x1p-11
	case BF16:
		return 0x1p-8
	case F64:
		return 0x1p-53
	}
	return 0
}
