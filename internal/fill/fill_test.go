package fill

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gradtune/gradtune/dtype"
)

// serialUniform is Uniform's definition: one generator drawing in order.
func serialUniform(dt dtype.DType, n int, lo, hi float64, seed uint64, stream string) []float64 {
	r := rand.New(rand.NewPCG(seed, streamKey(stream)))
	out := make([]float64, n)
	for i := range out {
		out[i] = dt.Round(lo + (hi-lo)*r.Float64())
	}
	return out
}

func TestUniformIsOneGeneratorInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{0, 1, pieceElems - 1, pieceElems, pieceElems + 1, 3*pieceElems + 17} {
		for _, dt := range []dtype.DType{dtype.BF16, dtype.F64} {
			got := Uniform(dt, n, -1, 1, 7, "a/stream")
			want := serialUniform(dt, n, -1, 1, 7, "a/stream")
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("n=%d %v: value %d = %v, want %v (chunk %d)", n, dt, i, got[i], want[i], i/pieceElems)
				}
			}
		}
	}
}

func TestPCGAdvance(t *testing.T) {
	for _, k := range []uint64{0, 1, 2, 5, 1000} {
		q := pcgState{hi: 3, lo: 99}.advanced(k).pcg()
		r := rand.NewPCG(3, 99)
		for range k {
			r.Uint64()
		}
		if a, b := q.Uint64(), r.Uint64(); a != b {
			t.Errorf("advanced %d: next output %#x, want %#x", k, a, b)
		}
	}
}

func TestEncodeIntoIsDTypeEncode(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	vals := serialUniform(dtype.F64, 3*pieceElems+5, -3, 3, 1, "enc")
	for _, dt := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F64, dtype.U8} {
		got := make([]byte, len(vals)*dt.Size())
		EncodeInto(dt, got, vals)
		if want := dt.Encode(vals); string(got) != string(want) {
			t.Errorf("%v: EncodeInto differs from %v.Encode", dt, dt)
		}
	}
}

func TestStreamKeyIsFNV1a(t *testing.T) {
	// FNV-1a 64-bit test vectors (the offset basis, and "a").
	for s, want := range map[string]uint64{"": 0xcbf29ce484222325, "a": 0xaf63dc4c8601ec8c} {
		if got := streamKey(s); got != want {
			t.Errorf("streamKey(%q) = %#x, want %#x", s, got, want)
		}
	}
}
