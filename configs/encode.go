package configs

import (
	"encoding/binary"
	"math"
)

// Encode writes vals as little-endian elements of type d.
// Narrow types are rounded through f32 first (as a kernel would see them).
func (d DType) Encode(vals []float64) []byte {
	b := make([]byte, len(vals)*d.Size())
	d.EncodeInto(b, vals)
	return b
}

// EncodeInto is Encode into b, which must hold len(vals) elements.
func (d DType) EncodeInto(b []byte, vals []float64) {
	for i, v := range vals {
		switch d {
		case F32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		case F16:
			binary.LittleEndian.PutUint16(b[2*i:], FloatToF16(float32(v)))
		case BF16:
			binary.LittleEndian.PutUint16(b[2*i:], FloatToBF16(float32(v)))
		case F64:
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
		case U8:
			b[i] = toU8(v)
		case I32:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(toI32(v)))
		case I64:
			binary.LittleEndian.PutUint64(b[8*i:], uint64(toI64(v)))
		}
	}
}
