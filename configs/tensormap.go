package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// TensorMap describes the tiled TMA tensor map (cuTensorMapEncodeTiled)
// of a buffer: a tensor of Dims elements, innermost first, whose element
// (0, …, 0) lies Offset bytes into the buffer and whose dimension i > 0
// starts every Strides[i-1] bytes, copied in boxes of Box elements. The
// map is encoded over the global address buffer + Offset, so a sub-tensor
// (rows j·C to j·C+C−1 of a matrix) is a map of its own whose elements
// outside it read as out of bounds. The fields after Box may be left zero
// for their defaults: element strides 1, no interleave, L2 promotion of
// 128 bytes, and elements outside the tensor read as zero (and are not
// written).
type TensorMap struct {
	Buffer string
	// Offset is the bytes from the start of the buffer to the tensor's
	// element (0, …, 0): at least 0 and a multiple of 16, so that the
	// global address stays 16-byte aligned. The zero Expr is 0.
	Offset  Expr
	DType   DType
	Dims    []Expr // extents, innermost first (1 to 5)
	Strides []Expr // byte strides of Dims[1:], multiples of 16
	Box     []int  // box extents, innermost first, each ≤ 256
	// ElemStrides are the traversal strides of each dimension (1 when
	// nil).
	ElemStrides []int
	// Swizzle is 0 (none) or the span in bytes of the shared-memory
	// swizzle: 32, 64 or 128. With a swizzle, Box[0]·size ≤ Swizzle.
	Swizzle int
	// Interleave is "none" (the default) or "16b" or "32b".
	Interleave string
	// L2Promotion is the L2 promotion in bytes: -1 for none, or 64, 128
	// (the default, 0) or 256.
	L2Promotion int
	// OOBFill is "zero" (the default) or "nan": what elements outside the
	// tensor read as.
	OOBFill string
}

// withDefaults is m with every defaulted field spelled out.
func (m TensorMap) withDefaults() TensorMap {
	if m.ElemStrides == nil {
		m.ElemStrides = make([]int, len(m.Dims))
		for i := range m.ElemStrides {
			m.ElemStrides[i] = 1
		}
	}
	if m.Interleave == "" {
		m.Interleave = "none"
	}
	if m.L2Promotion == 0 {
		m.L2Promotion = 128
	}
	if m.OOBFill == "" {
		m.OOBFill = "zero"
	}
	return m
}

type tensorMapJSON struct {
	Buffer      string `json:"buffer"`
	Offset      *Expr  `json:"offset,omitempty"`
	DType       string `json:"dtype"`
	Rank        int    `json:"rank"`
	Dims        []Expr `json:"dims"`
	Strides     []Expr `json:"strides"`
	Box         []int  `json:"box"`
	ElemStrides []int  `json:"element_strides"`
	Interleave  string `json:"interleave"`
	Swizzle     int    `json:"swizzle"`
	L2Promotion int    `json:"l2_promotion"`
	OOBFill     string `json:"oob_fill"`
}

// MarshalJSON writes every field, defaults spelled out, and the rank;
// the offset only when it is not the constant 0 (key "offset"), so that
// maps at the start of their buffer read as before it existed.
func (m TensorMap) MarshalJSON() ([]byte, error) {
	d := m.withDefaults()
	strides := d.Strides
	if strides == nil {
		strides = []Expr{}
	}
	var off *Expr
	if !isZero(d.Offset) {
		off = &d.Offset
	}
	return json.Marshal(tensorMapJSON{d.Buffer, off, d.DType.String(), len(d.Dims), d.Dims, strides, d.Box, d.ElemStrides,
		d.Interleave, d.Swizzle, d.L2Promotion, d.OOBFill})
}

// UnmarshalJSON reads what MarshalJSON writes; the rank must agree with
// the dims, strides, box and element strides, and a missing offset is 0.
func (m *TensorMap) UnmarshalJSON(data []byte) error {
	var j tensorMapJSON
	if err := strictUnmarshal(data, &j); err != nil {
		return fmt.Errorf("tensor map: %w", err)
	}
	dt, err := ParseDType(j.DType)
	if err != nil {
		return fmt.Errorf("tensor map of %s: %w", j.Buffer, err)
	}
	if len(j.Dims) != j.Rank || len(j.Strides) != j.Rank-1 || len(j.Box) != j.Rank || len(j.ElemStrides) != j.Rank {
		return fmt.Errorf("tensor map of %s: rank %d with %d dims, %d strides, %d box extents and %d element strides (want rank, rank-1, rank and rank)",
			j.Buffer, j.Rank, len(j.Dims), len(j.Strides), len(j.Box), len(j.ElemStrides))
	}
	*m = TensorMap{Buffer: j.Buffer, DType: dt, Dims: j.Dims, Strides: j.Strides, Box: j.Box, ElemStrides: j.ElemStrides,
		Swizzle: j.Swizzle, Interleave: j.Interleave, L2Promotion: j.L2Promotion, OOBFill: j.OOBFill}
	if j.Offset != nil {
		m.Offset = *j.Offset
	}
	return nil
}

// TensorMapSpec is a TensorMap resolved at one shape: every extent,
// stride and the offset a number, every default spelled out.
type TensorMapSpec struct {
	Buffer      string
	Offset      int // bytes from the buffer's start to element (0, …, 0)
	DType       DType
	Dims        []int
	Strides     []int
	Box         []int
	ElemStrides []int
	Swizzle     int
	Interleave  string
	L2Promotion int
	OOBFill     string
}

// TMA limits (cuTensorMapEncodeTiled).
const (
	tensorMapMaxRank   = 5
	tensorMapMaxBox    = 256
	tensorMapAlign     = 16      // global address and strides, bytes
	tensorMapMaxStride = 1 << 40 // bytes, exclusive
	tensorMapMaxDim    = 1 << 32 // elements, inclusive
)

// Resolve evaluates m in env, defaults spelled out, and checks the result.
func (m TensorMap) Resolve(env Env) (TensorMapSpec, error) {
	d := m.withDefaults()
	s := TensorMapSpec{Buffer: d.Buffer, DType: d.DType, Box: d.Box, ElemStrides: d.ElemStrides, Swizzle: d.Swizzle,
		Interleave: d.Interleave, L2Promotion: d.L2Promotion, OOBFill: d.OOBFill}
	off, err := d.Offset.Eval(env)
	if err != nil {
		return TensorMapSpec{}, fmt.Errorf("offset: %w", err)
	}
	s.Offset = int(off)
	for i, e := range d.Dims {
		v, err := e.EvalInt(env)
		if err != nil {
			return TensorMapSpec{}, fmt.Errorf("dims[%d]: %w", i, err)
		}
		s.Dims = append(s.Dims, v)
	}
	for i, e := range d.Strides {
		v, err := e.EvalInt(env)
		if err != nil {
			return TensorMapSpec{}, fmt.Errorf("strides[%d]: %w", i, err)
		}
		s.Strides = append(s.Strides, v)
	}
	return s, s.Check()
}

// Check checks s's fields against what cuTensorMapEncodeTiled accepts:
// rank 1 to 5; f16, bf16, f32 or u8 elements; byte strides positive
// multiples of 16 below 2^40; box extents 1 to 256 with a row (Box[0]
// elements) a multiple of 16 bytes and, with a swizzle, within its span
// (32, 64 or 128 bytes); element strides 1 to 8; a known interleave, L2
// promotion and fill; an offset that keeps the global address 16-byte
// aligned (at least 0, a multiple of 16).
func (s TensorMapSpec) Check() error {
	rank := len(s.Dims)
	if rank < 1 || rank > tensorMapMaxRank {
		return fmt.Errorf("rank %d (dims %v): want 1 to %d", rank, s.Dims, tensorMapMaxRank)
	}
	if len(s.Strides) != rank-1 || len(s.Box) != rank || len(s.ElemStrides) != rank {
		return fmt.Errorf("rank %d with %d strides, %d box extents and %d element strides: want %d, %d and %d",
			rank, len(s.Strides), len(s.Box), len(s.ElemStrides), rank-1, rank, rank)
	}
	switch s.DType {
	case F16, BF16, F32, U8:
	default:
		return fmt.Errorf("element type %v: want f16, bf16, f32 or u8", s.DType)
	}
	for i, d := range s.Dims {
		if d < 1 || d > tensorMapMaxDim {
			return fmt.Errorf("dims[%d] = %d: want 1 to 2^32", i, d)
		}
	}
	for i, st := range s.Strides {
		if st <= 0 || st%tensorMapAlign != 0 || st >= tensorMapMaxStride {
			return fmt.Errorf("strides[%d] = %d bytes: want a positive multiple of %d below 2^40", i, st, tensorMapAlign)
		}
	}
	for i, b := range s.Box {
		if b < 1 || b > tensorMapMaxBox {
			return fmt.Errorf("box[%d] = %d: want 1 to %d", i, b, tensorMapMaxBox)
		}
	}
	for i, e := range s.ElemStrides {
		if e < 1 || e > 8 {
			return fmt.Errorf("element_strides[%d] = %d: want 1 to 8", i, e)
		}
	}
	row := s.Box[0] * s.DType.Size()
	if row%tensorMapAlign != 0 {
		return fmt.Errorf("box[0] = %d %v elements = %d bytes: want a multiple of %d bytes", s.Box[0], s.DType, row, tensorMapAlign)
	}
	switch s.Swizzle {
	case 0:
	case 32, 64, 128:
		if row > s.Swizzle {
			return fmt.Errorf("box[0] = %d %v elements = %d bytes: more than the %d-byte swizzle span", s.Box[0], s.DType, row, s.Swizzle)
		}
	default:
		return fmt.Errorf("swizzle %d: want 0 (none), 32, 64 or 128 bytes", s.Swizzle)
	}
	switch s.Interleave {
	case "none", "16b", "32b":
	default:
		return fmt.Errorf("interleave %q: want none, 16b or 32b", s.Interleave)
	}
	switch s.L2Promotion {
	case -1, 64, 128, 256:
	default:
		return fmt.Errorf("l2_promotion %d: want -1 (none), 64, 128 or 256 bytes", s.L2Promotion)
	}
	if s.OOBFill != "zero" && s.OOBFill != "nan" {
		return fmt.Errorf("oob_fill %q: want zero or nan", s.OOBFill)
	}
	return s.checkOffset()
}

// checkOffset refuses an offset below 0 or not a multiple of 16 bytes:
// the global address (buffer + offset) must stay 16-byte aligned.
func (s TensorMapSpec) checkOffset() error {
	if s.Offset < 0 || s.Offset%tensorMapAlign != 0 {
		return fmt.Errorf("offset %d bytes: want a multiple of %d bytes, at least 0 (the tensor's global address, buffer + offset, must be %d-byte aligned)",
			s.Offset, tensorMapAlign, tensorMapAlign)
	}
	return nil
}

// End is one past the last byte of the tensor, relative to its element
// (0, …, 0); the tensor ends at byte Offset + End of its buffer.
func (s TensorMapSpec) End() int64 {
	size := int64(s.DType.Size())
	end := int64(s.Dims[0]-1)*size + size
	for i, st := range s.Strides {
		end += int64(s.Dims[i+1]-1) * int64(st)
	}
	return end
}

// Global is the address the map is encoded over: that of the tensor's
// element (0, …, 0) in the buffer at base, base + Offset.
func (s TensorMapSpec) Global(base uint64) uint64 { return base + uint64(s.Offset) }

// Inside checks that the tensor lies inside its buffer of bufBytes bytes:
// Offset + End ≤ bufBytes, where End is one past its last byte.
func (s TensorMapSpec) Inside(bufBytes int) error {
	end := s.End()
	if s.Offset <= bufBytes && end <= int64(bufBytes-s.Offset) {
		return nil
	}
	at := ""
	if s.Offset != 0 {
		at = fmt.Sprintf(" from offset %d (to byte %d)", s.Offset, int64(s.Offset)+end)
	}
	return fmt.Errorf("tensor map of %s: dims %v with strides %v span %d bytes%s, but the buffer has %d",
		s.Buffer, s.Dims, s.Strides, end, at, bufBytes)
}

// CheckAt checks s against its buffer at base: base 16-byte aligned, the
// offset too (so the global address base + Offset is), and the whole
// tensor inside the buffer's bufBytes.
func (s TensorMapSpec) CheckAt(base uint64, bufBytes int) error {
	if base%tensorMapAlign != 0 {
		return fmt.Errorf("tensor map of %s: base address %#x is not %d-byte aligned", s.Buffer, base, tensorMapAlign)
	}
	if err := s.checkOffset(); err != nil {
		return fmt.Errorf("tensor map of %s: %w", s.Buffer, err)
	}
	return s.Inside(bufBytes)
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
