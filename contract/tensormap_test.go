package contract

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
)

// goodMap is a 2-D bf16 map of a 256×512 row-major matrix in 64×128 boxes
// with the 128-byte swizzle: 262144 bytes.
func goodMap() TensorMapSpec {
	return TensorMap{Buffer: "a", DType: dtype.BF16, Dims: Ints(512, 256), Strides: Ints(1024), Box: []int{64, 128}, Swizzle: 128}.mustResolve()
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
		{"dtype", func(m *TensorMapSpec) { m.DType = dtype.F64; m.Box[0] = 16 }, "element type f64"},
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
	m := TensorMap{DType: dtype.F32, Dims: Ints(10, 3, 2), Strides: Ints(48, 160), Box: []int{4, 1, 1}}.mustResolve()
	if got, want := m.End(), int64(160+2*48+40); got != want {
		t.Errorf("end = %d, want %d", got, want)
	}
}
