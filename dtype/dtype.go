package dtype

import "github.com/gradtune/gradtune/configs"

// DType is an element type of a kernel buffer (configs.DType).
type DType = configs.DType

// The element types; the zero value is invalid.
const (
	Invalid = configs.Invalid
	F32     = configs.F32
	F16     = configs.F16
	BF16    = configs.BF16
	F64     = configs.F64
	U8      = configs.U8
	I32     = configs.I32
	I64     = configs.I64
)

// All lists the floating-point dtypes in a stable order (configs.DTypes).
func All() []DType { return configs.DTypes() }

// Parse turns a name such as "bf16" into a DType (configs.ParseDType).
func Parse(s string) (DType, error) { return configs.ParseDType(s) }

// ParseList parses a comma-separated list of dtypes (configs.ParseDTypes).
func ParseList(s string) ([]DType, error) { return configs.ParseDTypes(s) }

// FloatToBF16 rounds f to bfloat16 bits, to nearest, ties to even.
func FloatToBF16(f float32) uint16 { return configs.FloatToBF16(f) }

// FloatToF16 rounds f to binary16 bits, to nearest, ties to even.
func FloatToF16(f float32) uint16 { return configs.FloatToF16(f) }

// BF16ToFloat widens bfloat16 bits to float64 exactly.
func BF16ToFloat(h uint16) float64 { return configs.BF16ToFloat(h) }

// F16ToFloat widens binary16 bits to float64 exactly.
func F16ToFloat(h uint16) float64 { return configs.F16ToFloat(h) }

// BF16ToFloat32 widens bfloat16 bits to float32 exactly.
func BF16ToFloat32(h uint16) float32 { return configs.BF16ToFloat32(h) }

// F16ToFloat32 widens binary16 bits to float32 exactly.
func F16ToFloat32(h uint16) float32 { return configs.F16ToFloat32(h) }
