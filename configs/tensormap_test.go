package configs

import (
	"encoding/json"
	"strings"
	"testing"
)

// goodMap is a 2-D bf16 map of a 256×512 row-major matrix in 64×128 boxes
// with the 128-byte swizzle: 262144 bytes.
func goodMap() TensorMapSpec {
	return TensorMap{Buffer: "a", DType: BF16, Dims: Ints(512, 256), Strides: Ints(1024), Box: []int{64, 128}, Swizzle: 128}.mustResolve()
}

func (m TensorMap) mustResolve() TensorMapSpec {
	s, err := m.Resolve(Env{})
	if err != nil {
		panic(err)
	}
	return s
}

func TestTensorMapCheck(t *testing.T) {
	good := goodMap()
	if err := good.Check(); err != nil {
		t.Fatalf("a good map: %v", err)
	}
	if good.Interleave != "none" || good.L2Promotion != 128 || good.OOBFill != "zero" || len(good.ElemStrides) != 2 {
		t.Errorf("defaults not spelled out: %+v", good)
	}
	for _, tt := range []struct {
		name string
		edit func(m *TensorMapSpec)
		want string
	}{
		{"rank 0", func(m *TensorMapSpec) { m.Dims, m.Strides, m.Box, m.ElemStrides = nil, nil, nil, nil }, "rank 0"},
		{"rank 6", func(m *TensorMapSpec) {
			m.Dims, m.Strides, m.Box, m.ElemStrides = []int{8, 1, 1, 1, 1, 1}, []int{16, 16, 16, 16, 16}, []int{8, 1, 1, 1, 1, 1}, []int{1, 1, 1, 1, 1, 1}
		}, "rank 6"},
		{"strides count", func(m *TensorMapSpec) { m.Strides = nil }, "0 strides"},
		{"box count", func(m *TensorMapSpec) { m.Box = m.Box[:1] }, "1 box extents"},
		{"dtype", func(m *TensorMapSpec) { m.DType = F64; m.Box[0] = 16 }, "element type f64"},
		{"zero dim", func(m *TensorMapSpec) { m.Dims[1] = 0 }, "dims[1] = 0"},
		{"stride not multiple of 16", func(m *TensorMapSpec) { m.Strides[0] = 1000 }, "strides[0] = 1000"},
		{"stride too large", func(m *TensorMapSpec) { m.Strides[0] = 1 << 40 }, "below 2^40"},
		{"box too large", func(m *TensorMapSpec) { m.Box[1] = 512 }, "box[1] = 512"},
		{"box zero", func(m *TensorMapSpec) { m.Box[1] = 0 }, "box[1] = 0"},
		{"row not multiple of 16 bytes", func(m *TensorMapSpec) { m.Box[0] = 4; m.Swizzle = 0 }, "8 bytes"},
		{"row beyond swizzle span", func(m *TensorMapSpec) { m.Box[0] = 128 }, "256 bytes: more than the 128-byte swizzle"},
		{"row beyond 32B swizzle", func(m *TensorMapSpec) { m.Swizzle = 32 }, "more than the 32-byte swizzle"},
		{"odd swizzle", func(m *TensorMapSpec) { m.Swizzle = 256 }, "swizzle 256"},
		{"element stride", func(m *TensorMapSpec) { m.ElemStrides[0] = 9 }, "element_strides[0] = 9"},
		{"interleave", func(m *TensorMapSpec) { m.Interleave = "8b" }, `interleave "8b"`},
		{"l2 promotion", func(m *TensorMapSpec) { m.L2Promotion = 32 }, "l2_promotion 32"},
		{"fill", func(m *TensorMapSpec) { m.OOBFill = "one" }, `oob_fill "one"`},
	} {
		m := goodMap()
		tt.edit(&m)
		if err := m.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
	if err := good.CheckAt(0x10008, 1<<30); err == nil || !strings.Contains(err.Error(), "not 16-byte aligned") {
		t.Errorf("unaligned base: %v", err)
	}
	if err := good.CheckAt(0x10000, 512*256*2-2); err == nil || !strings.Contains(err.Error(), "span 262144 bytes, but the buffer has 262142") {
		t.Errorf("beyond the buffer: %v", err)
	}
}

func TestTensorMapEnd(t *testing.T) {
	// A 3-D f32 map whose middle dimension is padded: rows of 10 elements
	// 48 bytes apart, 3 rows per plane, planes 160 bytes apart.
	m := TensorMap{DType: F32, Dims: Ints(10, 3, 2), Strides: Ints(48, 160), Box: []int{4, 1, 1}}.mustResolve()
	if got, want := m.End(), int64(160+2*48+40); got != want {
		t.Errorf("end = %d, want %d", got, want)
	}
}

// rowBlock is a map of rows j·c to j·c+c−1 of an f32 weight [v×h] (rows
// h·4 bytes apart): the offset j·c·h·4 bytes, c rows of h elements.
func rowBlock() TensorMap {
	j, c, h := Var("j"), Var("c"), Var("h")
	return TensorMap{Buffer: "w", Offset: j.Times(c).Times(h).TimesInt(4), DType: F32,
		Dims: []Expr{h, c}, Strides: []Expr{h.TimesInt(4)}, Box: []int{32, 8}}
}

// TestTensorMapOffsetJSON: a map at the start of its buffer writes no
// "offset" (what was written before offsets existed); one with an
// offset writes it as an expression, and both read back the same.
func TestTensorMapOffsetJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		m    TensorMap
		want string // "" for no offset key
	}{
		{"no offset", TensorMap{Buffer: "w", DType: F32, Dims: Ints(64, 8), Strides: Ints(256), Box: []int{32, 8}}, ""},
		{"offset 0", TensorMap{Buffer: "w", Offset: Int(0), DType: F32, Dims: Ints(64, 8), Strides: Ints(256), Box: []int{32, 8}}, ""},
		{"constant offset", TensorMap{Buffer: "w", Offset: Int(2048), DType: F32, Dims: Ints(64, 8), Strides: Ints(256), Box: []int{32, 8}}, `"offset":2048`},
		{"expression", rowBlock(), `"offset":"j*c*h*4"`},
	} {
		data, err := json.Marshal(c.m)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if has := strings.Contains(string(data), `"offset"`); has != (c.want != "") || !strings.Contains(string(data), c.want) {
			t.Errorf("%s: JSON %s, want offset %q", c.name, data, c.want)
		}
		var back TensorMap
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !back.Offset.Equal(c.m.Offset) {
			t.Errorf("%s: offset %s read back as %s", c.name, c.m.Offset, back.Offset)
		}
		if again, _ := json.Marshal(back); string(again) != string(data) {
			t.Errorf("%s: round trip changed the map:\n%s\n%s", c.name, data, again)
		}
	}
	var m TensorMap
	if err := json.Unmarshal([]byte(`{"buffer":"w","offset":"j +","dtype":"f32","rank":1,"dims":[8],"strides":[],"box":[8],"element_strides":[1],"interleave":"none","swizzle":0,"l2_promotion":128,"oob_fill":"zero"}`), &m); err == nil {
		t.Error("a malformed offset was accepted")
	}
}

// TestTensorMapOffset: the offset is evaluated with the map, refused
// unless a multiple of 16 of at least 0, and the tensor must end inside
// its buffer counting from it.
func TestTensorMapOffset(t *testing.T) {
	s, err := rowBlock().Resolve(Env{"j": 2, "c": 8, "h": 64})
	if err != nil {
		t.Fatal(err)
	}
	if s.Offset != 2*8*64*4 || s.Global(0x10000) != 0x10000+4096 || s.End() != 8*64*4 {
		t.Errorf("offset %d, global %#x, end %d", s.Offset, s.Global(0x10000), s.End())
	}
	v := 4 * 8 * 64 * 4 // 4 blocks of rows: the block at j = 2 ends at 3 of 4
	if err := s.CheckAt(0x10000, v); err != nil {
		t.Errorf("block 2 of 4: %v", err)
	}
	if err := s.CheckAt(0x10000, 2*8*64*4+8*64*4-4); err == nil || !strings.Contains(err.Error(),
		"tensor map of w: dims [64 8] with strides [256] span 2048 bytes from offset 4096 (to byte 6144), but the buffer has 6140") {
		t.Errorf("past the buffer by its offset: %v", err)
	}
	for _, c := range []struct {
		off  int
		want string
	}{
		{8, "offset 8 bytes: want a multiple of 16 bytes, at least 0"},
		{4100, "offset 4100 bytes"},
		{-16, "offset -16 bytes: want a multiple of 16 bytes, at least 0"},
	} {
		m := s
		m.Offset = c.off
		if err := m.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check of offset %d: %v, want %q", c.off, err, c.want)
		}
		if err := m.CheckAt(0x10000, 1<<20); err == nil || !strings.Contains(err.Error(), "tensor map of w: "+c.want) {
			t.Errorf("CheckAt of offset %d: %v, want %q", c.off, err, c.want)
		}
	}
	neg := rowBlock()
	neg.Offset = Int(-32)
	if _, err := neg.Resolve(Env{"c": 8, "h": 64}); err == nil || !strings.Contains(err.Error(), "offset -32 bytes") {
		t.Errorf("a negative offset resolved: %v", err)
	}
	if _, err := rowBlock().Resolve(Env{"c": 8, "h": 64}); err == nil || !strings.Contains(err.Error(), `offset: variable "j" has no value`) {
		t.Errorf("an offset of an unknown variable: %v", err)
	}
}
