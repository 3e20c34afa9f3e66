package kernels

import (
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/gradtune/gradtune/dtype"
)

// serialUniform is Uniform's definition: one generator drawing in order.
func serialUniform(dt dtype.DType, n int, lo, hi float64, seed uint64, stream string) []float64 {
	h := fnv.New64a()
	h.Write([]byte(stream))
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	out := make([]float64, n)
	for i := range out {
		out[i] = dt.Round(lo + (hi-lo)*r.Float64())
	}
	return out
}

func TestUniformIsOneGeneratorInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{0, 1, uniformChunk - 1, uniformChunk, uniformChunk + 1, 3*uniformChunk + 17} {
		for _, dt := range []dtype.DType{dtype.BF16, dtype.F64} {
			got := Uniform(dt, n, -1, 1, 7, "a/stream")
			want := serialUniform(dt, n, -1, 1, 7, "a/stream")
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("n=%d %v: value %d = %v, want %v (chunk %d)", n, dt, i, got[i], want[i], i/uniformChunk)
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
