// Package fill makes and encodes large input buffers on every core:
// Uniform's values are those of one PCG generator drawing in order, each
// piece's generator jumped ahead to its first value, and EncodeInto
// converts pieces at once. kernels.Uniform, Encode and EncodeInto are
// these; the package keeps their generator's arithmetic out of kernels,
// so that its tests import nothing that imports kernels.
package fill

import (
	"encoding/binary"
	"hash/fnv"
	"math/bits"
	"math/rand/v2"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/parallel"
)

// Uniform returns n values uniform in [lo, hi) rounded to dt: value i is
// lo + (hi−lo)·u_i with u_i the (i+1)-th Float64 of
// rand.New(rand.NewPCG(seed, fnv64a(stream))). Large buffers are filled
// in pieces on every core, the same values as one generator drawing them
// in order.
func Uniform(dt dtype.DType, n int, lo, hi float64, seed uint64, stream string) []float64 {
	start := pcgState{hi: seed, lo: streamKey(stream)}
	out := make([]float64, n)
	fill := func(from, to int) { // a generator per piece, jumped to its first value
		r := rand.New(start.advanced(uint64(from)).pcg())
		for i := from; i < to; i++ {
			out[i] = dt.Round(lo + (hi-lo)*r.Float64())
		}
	}
	parallel.Chunks(n, pieceElems, fill)
	return out
}

// streamKey is the second word of a stream's PCG seed: FNV-1a of its name.
func streamKey(stream string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return h.Sum64()
}

// pieceElems is the elements one goroutine of Uniform or EncodeInto makes
// at a time.
const pieceElems = 1 << 18

// EncodeInto is dt.EncodeInto(b, vals) (configs.DType.EncodeInto) with
// large buffers converted on every core; b must hold len(vals) elements.
func EncodeInto(dt dtype.DType, b []byte, vals []float64) {
	size := dt.Size()
	parallel.Chunks(len(vals), pieceElems, func(from, to int) { dt.EncodeInto(b[from*size:to*size], vals[from:to]) })
}

// pcgState is the 128-bit state of math/rand/v2's PCG, which steps it by
// state = state·pcgMul + pcgInc (mod 2¹²⁸) before each output.
type pcgState struct{ hi, lo uint64 }

var (
	pcgMul = pcgState{hi: 2549297995355413924, lo: 4865540595714422341}
	pcgInc = pcgState{hi: 6364136223846793005, lo: 1442695040888963407}
)

func (a pcgState) mul(b pcgState) pcgState {
	hi, lo := bits.Mul64(a.lo, b.lo)
	return pcgState{hi: hi + a.hi*b.lo + a.lo*b.hi, lo: lo}
}

func (a pcgState) add(b pcgState) pcgState {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return pcgState{hi: hi, lo: lo}
}

// advanced is the state k steps on, in O(log k) (F. Brown, "Random
// number generation with arbitrary strides", 1994): k steps of x → ax + c
// are x → A·x + C with A = aᵏ and C = c·(aᵏ⁻¹ + … + 1).
func (s pcgState) advanced(k uint64) pcgState {
	accMul, accAdd := pcgState{lo: 1}, pcgState{}
	curMul, curAdd := pcgMul, pcgInc
	for ; k > 0; k >>= 1 {
		if k&1 == 1 {
			accMul = accMul.mul(curMul)
			accAdd = accAdd.mul(curMul).add(curAdd)
		}
		curAdd = curMul.add(pcgState{lo: 1}).mul(curAdd)
		curMul = curMul.mul(curMul)
	}
	return accMul.mul(s).add(accAdd)
}

// pcg is a math/rand/v2 PCG in state s (its binary form: "pcg:", then the
// high and low words big-endian).
func (s pcgState) pcg() *rand.PCG {
	b := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte("pcg:"), s.hi), s.lo)
	p := new(rand.PCG)
	if err := p.UnmarshalBinary(b); err != nil {
		panic(err) // the format above is the package's own
	}
	return p
}
