package configs

import (
	"math"
	"testing"
)

func TestF16RoundTrip(t *testing.T) {
	// Every finite half value must survive widen → narrow unchanged.
	for h := 0; h < 0x10000; h++ {
		v := F16ToFloat(uint16(h))
		if math.IsNaN(v) {
			continue
		}
		if got := FloatToF16(float32(v)); got != uint16(h) {
			t.Fatalf("f16 %#04x -> %v -> %#04x", h, v, got)
		}
	}
}

func TestF16Rounding(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00},
		{65504, 0x7bff},
		{65520, 0x7c00},         // rounds up to infinity
		{1 + 0x1p-11, 0x3c00},   // tie, even stays
		{1 + 3*0x1p-11, 0x3c02}, // tie, odd rounds up
		{0x1p-24, 0x0001},       // smallest subnormal
		{0x1p-25, 0x0000},       // tie to even zero
		{0x1.8p-25, 0x0001},     // above tie
		{-2, 0xc000},
	}
	for _, c := range cases {
		if got := FloatToF16(c.in); got != c.want {
			t.Errorf("FloatToF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestBF16Rounding(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80},
		{1 + 0x1p-8, 0x3f80},   // tie to even
		{1 + 3*0x1p-8, 0x3f82}, // tie to even (up)
		{1 + 0x1.2p-8, 0x3f81}, // above tie
		{float32(math.Inf(-1)), 0xff80},
	}
	for _, c := range cases {
		if got := FloatToBF16(c.in); got != c.want {
			t.Errorf("FloatToBF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if !math.IsNaN(BF16ToFloat(FloatToBF16(float32(math.NaN())))) {
		t.Error("NaN lost in bf16")
	}
}

func TestEncodeDecode(t *testing.T) {
	vals := []float64{0, 1.5, -3.25, 1e-3, 100}
	for _, d := range DTypes() {
		got := d.Decode(d.Encode(vals))
		for i, v := range vals {
			if got[i] != d.Round(v) {
				t.Errorf("%v: element %d = %v, want %v", d, i, got[i], d.Round(v))
			}
		}
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"f32", "bf16", "half", "float64"} {
		if _, err := ParseDType(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
	if _, err := ParseDType("int8"); err == nil {
		t.Error("Parse(int8) succeeded")
	}
	if l, err := ParseDTypes("f32,bf16,f32"); err != nil || len(l) != 2 {
		t.Errorf("ParseList = %v, %v", l, err)
	}
}

// TestU8: bytes round to the nearest integer and clamp to 0..255, encode
// as one byte each and decode back; u8 is parsed by name but not listed.
func TestU8(t *testing.T) {
	vals := []float64{0, 1, 2.5, 3.5, 254.6, 255, 300, -4}
	want := []byte{0, 1, 2, 4, 255, 255, 255, 0}
	b := U8.Encode(vals)
	if string(b) != string(want) {
		t.Fatalf("Encode = %v, want %v", b, want)
	}
	for i, v := range U8.Decode(b) {
		if v != float64(want[i]) || U8.Round(vals[i]) != v {
			t.Errorf("element %d: decoded %v, rounded %v, want %d", i, v, U8.Round(vals[i]), want[i])
		}
	}
	if d, err := ParseDType("u8"); err != nil || d != U8 || U8.Size() != 1 || U8.String() != "u8" {
		t.Errorf("Parse(u8) = %v, %v", d, err)
	}
	for _, d := range DTypes() {
		if d == U8 {
			t.Errorf("All lists u8")
		}
	}
}

// TestI32: values round to the nearest integer and clamp to the int32
// range, encode as four little-endian bytes of two's complement each and
// decode back (−100, ignore_index, included); i32 is parsed by name but
// not listed.
func TestI32(t *testing.T) {
	vals := []float64{0, 1, -100, 2.5, 151935, -2.5, 3e9, -3e9, math.NaN()}
	want := []int32{0, 1, -100, 2, 151935, -2, math.MaxInt32, math.MinInt32, 0}
	b := I32.Encode(vals)
	if len(b) != 4*len(vals) || b[8] != 0x9c || b[11] != 0xff {
		t.Fatalf("Encode = % x", b)
	}
	for i, v := range I32.Decode(b) {
		if v != float64(want[i]) || I32.Round(vals[i]) != v {
			t.Errorf("element %d: decoded %v, rounded %v, want %d", i, v, I32.Round(vals[i]), want[i])
		}
	}
	if d, err := ParseDType("i32"); err != nil || d != I32 || I32.Size() != 4 || I32.String() != "i32" {
		t.Errorf("Parse(i32) = %v, %v", d, err)
	}
	for _, d := range DTypes() {
		if d == I32 {
			t.Errorf("All lists i32")
		}
	}
}

// TestI64: values round to the nearest integer and clamp to the int64
// range, encode as eight little-endian bytes of two's complement each
// and decode back (−100, ignore_index, included: its low word is i32's
// −100); i64 is parsed by name but not listed.
func TestI64(t *testing.T) {
	vals := []float64{0, 1, -100, 2.5, 151935, -2.5, 3e9, 1e19, -1e19, math.NaN()}
	want := []int64{0, 1, -100, 2, 151935, -2, 3e9, math.MaxInt64, math.MinInt64, 0}
	b := I64.Encode(vals)
	if len(b) != 8*len(vals) || b[16] != 0x9c || b[19] != 0xff || b[23] != 0xff || b[48] != 0x00 || b[51] != 0xb2 {
		t.Fatalf("Encode = % x", b)
	}
	for i, v := range I64.Decode(b) {
		if v != float64(want[i]) || I64.Round(vals[i]) != v {
			t.Errorf("element %d: decoded %v, rounded %v, want %d", i, v, I64.Round(vals[i]), want[i])
		}
	}
	if d, err := ParseDType("i64"); err != nil || d != I64 || I64.Size() != 8 || I64.String() != "i64" {
		t.Errorf("Parse(i64) = %v, %v", d, err)
	}
	for _, name := range []string{"int64", "long"} {
		if _, err := ParseDType(name); err == nil {
			t.Errorf("Parse(%s) accepted", name)
		}
	}
	for _, d := range DTypes() {
		if d == I64 {
			t.Errorf("All lists i64")
		}
	}
}
