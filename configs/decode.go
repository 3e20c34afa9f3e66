package configs

import (
	"encoding/binary"
	"math"
)

// DecodeInto decodes len(dst) little-endian elements of type d from b into
// dst without allocating; b must hold at least len(dst) elements.
func (d DType) DecodeInto(dst []float64, b []byte) {
	switch d {
	case F32:
		for i := range dst {
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case F64:
		for i := range dst {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
	case U8:
		for i := range dst {
			dst[i] = float64(b[i])
		}
	case I32:
		for i := range dst {
			dst[i] = float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case I64:
		for i := range dst {
			dst[i] = float64(int64(binary.LittleEndian.Uint64(b[8*i:])))
		}
	}
}
