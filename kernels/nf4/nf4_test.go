package nf4

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestHandBytes: a 1×4 weight in one block of 4, computed by hand.
// absmax = 1; 0.5 is below the midpoint of 0.4407 and 0.5626 (0.5017):
// code 12; −1 → 0; 0 → 7; 0.36 is below the midpoint of 0.3379 and
// 0.4407 (0.3893): code 11. bitsandbytes puts element 0 in the high
// nibble: bytes C0 7B; the seed order gives 0C B7.
func TestHandBytes(t *testing.T) {
	q, err := Quantize([]float32{0.5, -1, 0, 0.36}, 1, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Data; len(got) != 2 || got[0] != 0xC0 || got[1] != 0x7B {
		t.Errorf("high-first bytes % X, want C0 7B", got)
	}
	if q.Absmax[0] != 1 {
		t.Errorf("absmax %v, want 1", q.Absmax[0])
	}
	low := q.WithOrder(LowFirst)
	if got := low.Data; got[0] != 0x0C || got[1] != 0xB7 {
		t.Errorf("low-first bytes % X, want 0C B7", got)
	}
	want := []float32{0.44070982933044434, -1, 0, 0.33791524171829224}
	for i, w := range want {
		if q.Value(i) != w || low.Value(i) != w {
			t.Errorf("element %d: %v (high-first), %v (low-first), want %v", i, q.Value(i), low.Value(i), w)
		}
	}
	if back := low.WithOrder(HighFirst); string(back.Data) != string(q.Data) {
		t.Errorf("converting back gives % X", back.Data)
	}
}

// TestScaledValues: dequantization is one f32 multiply of the code's value
// by the block's absmax.
func TestScaledValues(t *testing.T) {
	codes := []uint8{0, 15, 7, 9, 3, 12, 14, 1}
	q, err := FromCodes(1, 8, 4, codes, []float32{2.5, 0.375}, HighFirst)
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Data; got[0] != 0x0F || got[1] != 0x79 || got[2] != 0x3C || got[3] != 0xE1 {
		t.Errorf("bytes % X, want 0F 79 3C E1", got)
	}
	for i, c := range codes {
		if want := Codebook[c] * []float32{2.5, 0.375}[i/4]; q.Value(i) != want {
			t.Errorf("element %d = %v, want %v", i, q.Value(i), want)
		}
	}
}

// TestRoundTrip: quantizing dequantized values gives the codes and scales
// back when every block holds a ±1 code (so absmax is exact), and
// Quantize keeps every value within half a codebook gap of its input.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n, k, block := 6, 256, 64
	codes := make([]uint8, n*k)
	absmax := make([]float32, n*k/block)
	for i := range codes {
		codes[i] = uint8(r.IntN(16))
	}
	for b := range absmax {
		absmax[b] = float32(0.01 + r.Float64())
		codes[b*block+r.IntN(block)] = []uint8{0, 15}[r.IntN(2)]
	}
	q, err := FromCodes(n, k, block, codes, absmax, HighFirst)
	if err != nil {
		t.Fatal(err)
	}
	w := q.Dequantize()
	back, err := Quantize(w, n, k, block)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Data) != string(q.Data) {
		t.Errorf("codes differ after a round trip")
	}
	for b := range absmax {
		if back.Absmax[b] != absmax[b] {
			t.Errorf("block %d: absmax %v, want %v", b, back.Absmax[b], absmax[b])
		}
	}
	// Arbitrary values: within half the widest gap (0.1520 of absmax, between −1 and −0.6962).
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	q2, _ := Quantize(w, n, k, block)
	for i, v := range q2.Dequantize() {
		if d := math.Abs(float64(v - w[i])); d > 0.1520*float64(q2.Absmax[i/block])+1e-6 {
			t.Fatalf("element %d: %v quantized to %v", i, w[i], v)
		}
	}
	if got := Unpack(q.Data, HighFirst); string(got) != string(codes) {
		t.Errorf("Unpack does not invert Pack")
	}
}

// TestZeroBlock: a block of zeros keeps absmax 0 and code 7.
func TestZeroBlock(t *testing.T) {
	q, _ := Quantize(make([]float32, 4), 1, 4, 4)
	if q.Absmax[0] != 0 || q.Data[0] != 0x77 || q.Data[1] != 0x77 {
		t.Errorf("absmax %v, bytes % X", q.Absmax[0], q.Data)
	}
}

// TestLayoutErrors: k must be a multiple of an even block.
func TestLayoutErrors(t *testing.T) {
	for _, c := range [][3]int{{1, 96, 64}, {1, 64, 3}, {0, 64, 64}} {
		if _, err := Quantize(make([]float32, c[0]*c[1]), c[0], c[1], c[2]); !errors.Is(err, ErrLayout) {
			t.Errorf("%v: error %v", c, err)
		}
	}
}

// TestDynamicMap: 256 ascending values in (−1, 1] holding 0 and 1, the
// smallest magnitude 10⁻⁶·0.55 (the mean of linspace(0.1, 1, 2)).
func TestDynamicMap(t *testing.T) {
	m := DynamicMap()
	zero, one := false, false
	for i, v := range m {
		if i > 0 && !(v > m[i-1]) {
			t.Fatalf("entry %d (%v) not above %v", i, v, m[i-1])
		}
		zero = zero || v == 0
		one = one || v == 1
	}
	if !zero || !one || m[0] <= -1 || m[0] > -0.99 {
		t.Errorf("zero %v one %v first %v", zero, one, m[0])
	}
	if got := m[128]; math.Abs(float64(got)-0.55e-6) > 1e-12 {
		t.Errorf("smallest positive %v, want 5.5e-7", got)
	}
}

// TestDoubleQuant: scales become fma32(code2[q], absmax2, offset), each
// within half a table gap (≤ 0.0071·absmax2 near ±1) of the original;
// absmax2 covers 256 blocks; the hand case absmax [1, 3] gives offset 2,
// absmax2 1 and the extreme codes.
func TestDoubleQuant(t *testing.T) {
	code := DynamicMap()
	q, _ := FromCodes(1, 8, 4, make([]uint8, 8), []float32{1, 3}, HighFirst)
	q.DoubleQuantize(code)
	d := q.Nested
	if d.Offset != 2 || len(d.Absmax2) != 1 || d.Absmax2[0] != 1 || d.Codes[0] != 0 || d.Codes[1] != 255 {
		t.Fatalf("nested %+v", d)
	}
	if want := FMA32(code[0], 1, 2); q.Absmax[0] != want || q.Absmax[1] != 3 {
		t.Errorf("scales %v, want %v and 3", q.Absmax, want)
	}
	r := rand.New(rand.NewPCG(3, 4))
	nb := 600
	absmax := make([]float32, nb)
	for i := range absmax {
		absmax[i] = float32(0.02 + 0.05*r.Float64())
	}
	q, _ = FromCodes(1, 4*nb, 4, make([]uint8, 4*nb), absmax, HighFirst)
	q.DoubleQuantize(code)
	if len(q.Nested.Absmax2) != 3 {
		t.Fatalf("%d second-level scales for %d blocks", len(q.Nested.Absmax2), nb)
	}
	for b, a := range absmax {
		s := q.Nested.Scale(b)
		if q.Absmax[b] != s {
			t.Errorf("block %d: absmax %v, nested scale %v", b, q.Absmax[b], s)
		}
		if math.Abs(float64(s-a)) > 0.0071*float64(q.Nested.Absmax2[b/NestedBlock])+1e-7 {
			t.Errorf("block %d: %v double-quantized to %v", b, a, s)
		}
	}
}

// TestFMA32 rounds once: (1+2⁻¹²)² − (1+2⁻¹¹) is exactly 2⁻²⁴, while an
// f32 multiply then add gives 0 (the product's 2⁻²⁴ is a tie, to even).
func TestFMA32(t *testing.T) {
	a, c := float32(1+0x1p-12), float32(-(1 + 0x1p-11))
	if got := FMA32(a, a, c); got != 0x1p-24 {
		t.Errorf("FMA32 = %v, want 2^-24", got)
	}
	if p := a * a; p+c != 0 {
		t.Errorf("f32 multiply then add = %v; the case no longer tells fma apart", p+c)
	}
}
