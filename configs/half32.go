package configs

import "math"

// F16ToFloat32 widens binary16 bits to float32 exactly (NaN gives a quiet
// NaN; its payload is not kept).
func F16ToFloat32(h uint16) float32 { return float32(F16ToFloat(h)) }

// BF16ToFloat32 widens bfloat16 bits to float32 exactly, bit for bit (NaN
// payloads included).
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
