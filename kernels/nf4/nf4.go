package nf4

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
)

// Codebook is the 16-value NF4 codebook (bitsandbytes'
// nf4_dequantization_lut), in f32, ascending; index 7 is exactly zero.
var Codebook = [16]float32{
	-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
	-0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
	0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
	0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
}

// ZeroCode is the index of the codebook's exact zero.
const ZeroCode = 7

// DefaultBlock is bitsandbytes' (and QLoRA's) block size.
const DefaultBlock = 64

// NestedBlock is the number of blocks that share a second-level scale
// under double quantization.
const NestedBlock = 256

// Order is the position of even elements in a byte.
type Order int

// The nibble orders.
const (
	// HighFirst is bitsandbytes' order: element 2j in the high nibble of
	// byte j.
	HighFirst Order = iota
	// LowFirst is the seed kernel's order: element 2j in the low nibble.
	LowFirst
)

func (o Order) String() string {
	if o == LowFirst {
		return "low-first"
	}
	return "high-first"
}

// ErrLayout is wrapped by the errors of shapes the format cannot hold.
var ErrLayout = errors.New("nf4 layout")

// CheckLayout says why an [n×k] weight cannot be stored with blocks of
// block elements: block must be a positive even number dividing k.
func CheckLayout(n, k, block int) error {
	switch {
	case n < 1 || k < 1:
		return fmt.Errorf("%w: %d×%d weight", ErrLayout, n, k)
	case block < 2 || block%2 != 0:
		return fmt.Errorf("%w: block size %d is not a positive even number", ErrLayout, block)
	case k%block != 0:
		return fmt.Errorf("%w: k=%d is not a multiple of the block size %d", ErrLayout, k, block)
	}
	return nil
}

// Tensor is an NF4-quantized [N×K] weight.
type Tensor struct {
	N, K, Block int
	Order       Order
	// Data holds the codes, two per byte: N·K/2 bytes.
	Data []byte
	// Absmax is the f32 scale of each block (N·K/Block). With double
	// quantization it is what Nested dequantizes to (Nested.Scale).
	Absmax []float32
	// Nested is the double quantization of Absmax, or nil.
	Nested *Nested
}

// Nested is the double quantization of a tensor's scales.
type Nested struct {
	Codes   []uint8      // per block: an index into Code
	Code    [256]float32 // the second-level code table
	Absmax2 []float32    // per NestedBlock blocks
	Offset  float32
}

// Blocks is the number of blocks.
func (t *Tensor) Blocks() int { return t.N * t.K / t.Block }

// Scale is block b's scale: fma32(Code[Codes[b]], Absmax2[b/256], Offset).
func (q *Nested) Scale(b int) float32 {
	return FMA32(q.Code[q.Codes[b]], q.Absmax2[b/NestedBlock], q.Offset)
}

// FMA32 is a·b + c rounded once to f32 (the GPU's fma.rn.f32).
func FMA32(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(256).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(256).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(256).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

// Code returns the 4-bit code of flattened element i.
func (t *Tensor) Code(i int) uint8 {
	b := t.Data[i/2]
	if (i%2 == 0) == (t.Order == HighFirst) {
		return b >> 4
	}
	return b & 15
}

// Value is element i dequantized: fl32(Codebook[code] · absmax).
func (t *Tensor) Value(i int) float32 {
	return Codebook[t.Code(i)] * t.Absmax[i/t.Block]
}

// Dequantize returns every element, as Value.
func (t *Tensor) Dequantize() []float32 {
	out := make([]float32, t.N*t.K)
	for i := range out {
		out[i] = t.Value(i)
	}
	return out
}

// Pack packs 4-bit codes (one per element, an even count) into bytes in
// order o.
func Pack(codes []uint8, o Order) []byte {
	out := make([]byte, len(codes)/2)
	for j := range out {
		a, b := codes[2*j]&15, codes[2*j+1]&15
		if o == HighFirst {
			out[j] = a<<4 | b
		} else {
			out[j] = b<<4 | a
		}
	}
	return out
}

// Unpack is the inverse of Pack.
func Unpack(data []byte, o Order) []uint8 {
	out := make([]uint8, 2*len(data))
	for j, b := range data {
		hi, lo := b>>4, b&15
		if o == HighFirst {
			out[2*j], out[2*j+1] = hi, lo
		} else {
			out[2*j], out[2*j+1] = lo, hi
		}
	}
	return out
}

// WithOrder returns a copy of t whose data is in order o (the same
// codes, the nibbles of every byte swapped when the order changes).
func (t *Tensor) WithOrder(o Order) *Tensor {
	c := *t
	c.Order = o
	c.Data = append([]byte(nil), t.Data...)
	if o != t.Order {
		for j, b := range c.Data {
			c.Data[j] = b<<4 | b>>4
		}
	}
	return &c
}

// FromCodes builds a tensor from one code per element and one f32 scale
// per block, in order o: the exact dequantized values are known by
// construction (tests and kernel inputs start here).
func FromCodes(n, k, block int, codes []uint8, absmax []float32, o Order) (*Tensor, error) {
	if err := CheckLayout(n, k, block); err != nil {
		return nil, err
	}
	if len(codes) != n*k || len(absmax) != n*k/block {
		return nil, fmt.Errorf("%w: %d codes and %d scales for %d×%d in blocks of %d", ErrLayout, len(codes), len(absmax), n, k, block)
	}
	return &Tensor{N: n, K: k, Block: block, Order: o, Data: Pack(codes, o), Absmax: append([]float32(nil), absmax...)}, nil
}

// thresholds are the midpoints between consecutive codebook values: a
// normalized value above thresholds[i] has a code above i (bitsandbytes'
// dQuantizeNF4 decision tree compares against the same midpoints).
var thresholds = func() (t [15]float64) {
	for i := range t {
		t[i] = (float64(Codebook[i]) + float64(Codebook[i+1])) / 2
	}
	return t
}()

// QuantizeValue is the code of a value normalized to [−1, 1]: the nearest
// codebook entry, ties to the lower one.
func QuantizeValue(x float32) uint8 {
	c := uint8(0)
	for c < 15 && float64(x) > thresholds[c] {
		c++
	}
	return c
}

// Quantize quantizes a row-major [n×k] weight in blocks of block elements,
// in bitsandbytes' order: absmax = max |w| over the block, x = w·(1/absmax)
// in f32, code = QuantizeValue(x).
func Quantize(w []float32, n, k, block int) (*Tensor, error) {
	if err := CheckLayout(n, k, block); err != nil {
		return nil, err
	}
	if len(w) != n*k {
		return nil, fmt.Errorf("%w: %d values for %d×%d", ErrLayout, len(w), n, k)
	}
	codes := make([]uint8, n*k)
	absmax := make([]float32, n*k/block)
	for b := range absmax {
		blk := w[b*block : (b+1)*block]
		var m float32
		for _, v := range blk {
			m = max(m, float32(math.Abs(float64(v))))
		}
		absmax[b] = m
		inv := 1 / m
		for j, v := range blk {
			codes[b*block+j] = ZeroCode
			if m > 0 {
				codes[b*block+j] = QuantizeValue(v * inv)
			}
		}
	}
	return FromCodes(n, k, block, codes, absmax, HighFirst)
}

// DoubleQuantize quantizes t's scales with the table code (DynamicMap for
// bitsandbytes' default), and replaces Absmax by what they dequantize to:
// offset = mean(absmax), absmax2 = max |absmax − offset| per NestedBlock
// blocks, codes[b] = the nearest entry of code to (absmax − offset)/absmax2.
func (t *Tensor) DoubleQuantize(code [256]float32) {
	nb := t.Blocks()
	var sum float64
	for _, a := range t.Absmax {
		sum += float64(a)
	}
	q := &Nested{Code: code, Codes: make([]uint8, nb), Offset: float32(sum / float64(nb))}
	sorted := make([]int, 256)
	for i := range sorted {
		sorted[i] = i
	}
	sort.SliceStable(sorted, func(i, j int) bool { return code[sorted[i]] < code[sorted[j]] })
	for g := 0; g < nb; g += NestedBlock {
		end := min(g+NestedBlock, nb)
		var m float32
		for _, a := range t.Absmax[g:end] {
			m = max(m, float32(math.Abs(float64(a-q.Offset))))
		}
		q.Absmax2 = append(q.Absmax2, m)
		for b := g; b < end; b++ {
			x := float32(0)
			if m > 0 {
				x = (t.Absmax[b] - q.Offset) * (1 / m)
			}
			q.Codes[b] = nearest(code, sorted, x)
		}
	}
	t.Nested = q
	for b := range t.Absmax {
		t.Absmax[b] = q.Scale(b)
	}
}

// nearest is the index of the entry of code nearest to x (sorted lists
// code's indices in ascending order of value).
func nearest(code [256]float32, sorted []int, x float32) uint8 {
	i := sort.Search(len(sorted), func(i int) bool { return code[sorted[i]] >= x })
	best := sorted[min(i, len(sorted)-1)]
	if i > 0 {
		lo := sorted[i-1]
		if math.Abs(float64(x-code[lo])) <= math.Abs(float64(code[best]-x)) {
			best = lo
		}
	}
	return uint8(best)
}

// DynamicMap is bitsandbytes' signed dynamic 8-bit map
// (functional.create_dynamic_map(signed=True), the table of double
// quantization): for i in 0..6, 2^i means of a linspace(0.1, 1, 2^i+1)
// scaled by 10^(i−6), with both signs, plus 0 and 1, sorted. The linspace
// is computed in f32 as torch does, up to its last-place rounding; a
// checkpoint's own table (state2.code) is authoritative.
func DynamicMap() [256]float32 {
	var data []float32
	for i := range 7 {
		n := 1<<i + 1
		step := float32(0.9) / float32(n-1)
		scale := float32(math.Pow(10, float64(i-6)))
		for j := range n - 1 {
			a := float32(0.1) + float32(j)*step
			b := float32(0.1) + float32(j+1)*step
			if j+1 == n-1 {
				b = 1
			}
			mean := (a + b) / 2
			data = append(data, scale*mean, -scale*mean)
		}
	}
	data = append(data, 0, 1)
	sort.Slice(data, func(i, j int) bool { return data[i] < data[j] })
	var out [256]float32
	copy(out[:], data)
	return out
}
