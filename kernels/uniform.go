package kernels

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/fill"
)

// Uniform returns n values uniform in [lo, hi) rounded to dt, from a
// generator seeded by seed and the stream name, so every buffer of every
// shape gets its own reproducible data: value i is lo + (hi−lo)·u_i with
// u_i the (i+1)-th Float64 of rand.New(rand.NewPCG(seed, fnv64a(stream))).
// Large buffers are filled in chunks on every core, each chunk's
// generator jumped ahead to its first value, the same values as one
// generator drawing them in order (fill.Uniform).
func Uniform(dt dtype.DType, n int, lo, hi float64, seed uint64, stream string) []float64 {
	return fill.Uniform(dt, n, lo, hi, seed, stream)
}

// Encode is dt.Encode(vals) (configs.DType.Encode) with large buffers
// converted on every core.
func Encode(dt dtype.DType, vals []float64) []byte {
	b := make([]byte, len(vals)*dt.Size())
	EncodeInto(dt, b, vals)
	return b
}

// EncodeInto is Encode into b, which must hold len(vals) elements.
func EncodeInto(dt dtype.DType, b []byte, vals []float64) { fill.EncodeInto(dt, b, vals) }
