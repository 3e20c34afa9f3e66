package sim

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactRound32 rounds the exact value a·b + c to f32 with mode through
// math/big, for results in the normal range of f32.
func exactRound32(a, b, c float32, m big.RoundingMode) float32 {
	x := new(big.Float).SetPrec(400).Mul(new(big.Float).SetFloat64(float64(a)), new(big.Float).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetFloat64(float64(c)))
	r, _ := new(big.Float).SetPrec(24).SetMode(m).Set(x).Float32()
	return r
}

func TestFmaF32(t *testing.T) {
	one := float32(1 + 0x1p-12)
	cases := []struct {
		name    string
		a, b, c float32
		want    float32
	}{
		// a·b = 1 + 2^-11 + 2^-24 is a midpoint of f32; the tiny c decides
		// the rounding. math.FMA in float64 then a conversion to f32 rounds
		// twice and gets 1 + 2^-11.
		{"midpoint above", one, one, 0x1p-80, 1 + 0x1p-11 + 0x1p-23},
		{"midpoint below", one, one, -0x1p-80, 1 + 0x1p-11},
		{"midpoint exact", one, one, 0, 1 + 0x1p-11},
		{"negative midpoint", -one, one, 0x1p-80, -(1 + 0x1p-11)},
		{"cancellation", 3, 1.0 / 3, -1, exactRound32(3, 1.0/3, -1, big.ToNearestEven)},
		{"inf", float32(math.Inf(1)), 2, -1, float32(math.Inf(1))},
		{"zero sign", -0.0, 1, 0, 0},
	}
	for _, c := range cases {
		if got := fmaF32(c.a, c.b, c.c); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("%s: fmaF32(%g, %g, %g) = %g (%#x), want %g (%#x)", c.name, c.a, c.b, c.c, got, math.Float32bits(got), c.want, math.Float32bits(c.want))
		}
	}
	// The double-rounding case really is one for math.FMA.
	if float32(math.FMA(float64(one), float64(one), 0x1p-80)) == cases[0].want {
		t.Error("math.FMA then float32 should round twice here")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		a := math.Float32frombits(r.Uint32()&0x3fffffff | 0x30000000)
		b := math.Float32frombits(r.Uint32()&0x3fffffff | 0x30000000)
		c := math.Float32frombits(r.Uint32())
		if i%2 == 0 {
			// Near-cancellation: c close to -a·b.
			c = -a * b * (1 + float32(r.IntN(16)-8)*0x1p-23)
		}
		if c != c || math.IsInf(float64(c), 0) {
			continue
		}
		want := exactRound32(a, b, c, big.ToNearestEven)
		if math.Abs(float64(want)) < 0x1p-126 {
			continue // big.Float has no subnormals
		}
		if got := fmaF32(a, b, c); got != want {
			t.Fatalf("fmaF32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
}

func TestDirectedRounding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	modes := map[uint8]big.RoundingMode{rndRN: big.ToNearestEven, rndRZ: big.ToZero, rndRM: big.ToNegativeInf, rndRP: big.ToPositiveInf}
	for i := 0; i < 100000; i++ {
		x := float64(math.Float32frombits(r.Uint32()&0x8fffffff|0x38000000)) * (1 + float64(r.IntN(1000))*0x1p-40)
		for mode, bm := range modes {
			// f32
			w32, _ := new(big.Float).SetPrec(24).SetMode(bm).SetFloat64(x).Float32()
			if got := fmtF32.round(x, mode); uint32(got) != math.Float32bits(w32) {
				t.Fatalf("round f32 %v mode %d: %#x, want %#x", x, mode, got, math.Float32bits(w32))
			}
			// f16 in its normal range
			if a := math.Abs(x); a > 0x1p-14 && a < 65000 {
				w, _ := new(big.Float).SetPrec(11).SetMode(bm).SetFloat64(x).Float64()
				if got := fmtF16.decode(fmtF16.round(x, mode)); got != w {
					t.Fatalf("round f16 %v mode %d: %v, want %v", x, mode, got, w)
				}
			}
			w, _ := new(big.Float).SetPrec(8).SetMode(bm).SetFloat64(x).Float64()
			if got := fmtBF16.decode(fmtBF16.round(x, mode)); got != w {
				t.Fatalf("round bf16 %v mode %d: %v, want %v", x, mode, got, w)
			}
		}
	}
	// Overflow and underflow edges.
	edges := []struct {
		f    *format
		x    float64
		mode uint8
		want uint64
	}{
		{fmtF16, 70000, rndRZ, 0x7bff},
		{fmtF16, 70000, rndRN, 0x7c00},
		{fmtF16, -70000, rndRP, 0xfbff},
		{fmtF16, 1e-9, rndRP, 0x0001},
		{fmtF16, -1e-9, rndRM, 0x8001},
		{fmtF16, 1e-9, rndRZ, 0x0000},
		{fmtF32, 1e39, rndRZ, 0x7f7fffff},
		{fmtF32, 1e-50, rndRP, 0x00000001},
	}
	for _, e := range edges {
		if got := e.f.round(e.x, e.mode); got != e.want {
			t.Errorf("round(%g, mode %d) = %#x, want %#x", e.x, e.mode, got, e.want)
		}
	}
}

func TestHalfConversions(t *testing.T) {
	// Every f16 and bf16 value round-trips through f32.
	for h := 0; h < 1<<16; h++ {
		f := f16ToF32(uint16(h))
		if f == f {
			if got := f32ToF16(f); got != uint16(h) {
				t.Fatalf("f16 %#x -> %g -> %#x", h, f, got)
			}
		} else if f32ToF16(f) != nanHalf {
			t.Fatalf("f16 NaN %#x does not give the canonical NaN", h)
		}
		b := bf16ToF32(uint16(h))
		if b == b && f32ToBF16(b) != uint16(h) {
			t.Fatalf("bf16 %#x -> %g -> %#x", h, b, f32ToBF16(b))
		}
	}
	if f32ToF16(65520) != 0x7c00 || f32ToF16(65519) != 0x7bff {
		t.Error("f16 overflow threshold")
	}
	// f64 -> f16 must not round twice through f32.
	x := 1 + 0x1p-11 + 0x1p-40 // just above a midpoint of f16
	if got := fmtF16.round(x, rndRN); got != 0x3c01 {
		t.Errorf("f64 %v -> f16 %#x, want 0x3c01", x, got)
	}
}

func TestMinMax(t *testing.T) {
	nan := math.NaN()
	neg0 := math.Copysign(0, -1)
	cases := []struct{ a, b, min, max float64 }{
		{1, 2, 1, 2},
		{nan, 2, 2, 2},
		{2, nan, 2, 2},
		{neg0, 0, neg0, 0},
		{0, neg0, neg0, 0},
	}
	for _, c := range cases {
		if got := minF(c.a, c.b); math.Float64bits(got) != math.Float64bits(c.min) {
			t.Errorf("min(%v, %v) = %v", c.a, c.b, got)
		}
		if got := maxF(c.a, c.b); math.Float64bits(got) != math.Float64bits(c.max) {
			t.Errorf("max(%v, %v) = %v", c.a, c.b, got)
		}
	}
	if r := minF(nan, nan); r == r {
		t.Error("min(NaN, NaN) is not NaN")
	}
}
