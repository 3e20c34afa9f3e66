package runner

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
)

// TMA limits (cuTensorMapEncodeTiled).
const (
	tensorMapMaxRank   = 5
	tensorMapMaxBox    = 256
	tensorMapAlign     = 16      // global address and strides, bytes
	tensorMapMaxStride = 1 << 40 // bytes, exclusive
	tensorMapMaxDim    = 1 << 32 // elements, inclusive
)

// CheckTensorMap checks m, the tensor map of a buffer of bufBytes bytes at
// base, against what cuTensorMapEncodeTiled accepts and against the
// buffer: rank 1 to 5; f16, bf16 or f32 elements; base 16-byte aligned;
// byte strides positive multiples of 16 below 2^40; box extents 1 to 256
// with a row (Box[0] elements) a multiple of 16 bytes and, with a swizzle,
// within its span (32, 64 or 128 bytes); and the whole tensor inside the
// buffer. Backends call it before encoding, so a bad spec fails with a
// message naming the field rather than the driver's CUDA_ERROR_INVALID_VALUE.
func CheckTensorMap(m kernels.TensorMap, base Ptr, bufBytes int) error {
	if err := checkTensorMapShape(m); err != nil {
		return fmt.Errorf("tensor map of %s: %w", m.Buffer, err)
	}
	if base%tensorMapAlign != 0 {
		return fmt.Errorf("tensor map of %s: base address %#x is not %d-byte aligned", m.Buffer, uint64(base), tensorMapAlign)
	}
	if end := tensorMapEnd(m); end > int64(bufBytes) {
		return fmt.Errorf("tensor map of %s: dims %v with strides %v span %d bytes, but the buffer has %d", m.Buffer, m.Dims, m.Strides, end, bufBytes)
	}
	return nil
}

// checkTensorMapShape checks m's fields on their own.
func checkTensorMapShape(m kernels.TensorMap) error {
	rank := len(m.Dims)
	if rank < 1 || rank > tensorMapMaxRank {
		return fmt.Errorf("rank %d (dims %v): want 1 to %d", rank, m.Dims, tensorMapMaxRank)
	}
	if len(m.Strides) != rank-1 || len(m.Box) != rank {
		return fmt.Errorf("rank %d with %d strides and %d box extents: want %d and %d", rank, len(m.Strides), len(m.Box), rank-1, rank)
	}
	switch m.DType {
	case dtype.F16, dtype.BF16, dtype.F32, dtype.U8:
	default:
		return fmt.Errorf("element type %v: want f16, bf16, f32 or u8", m.DType)
	}
	for i, d := range m.Dims {
		if d < 1 || d > tensorMapMaxDim {
			return fmt.Errorf("dims[%d] = %d: want 1 to 2^32", i, d)
		}
	}
	for i, s := range m.Strides {
		if s <= 0 || s%tensorMapAlign != 0 || s >= tensorMapMaxStride {
			return fmt.Errorf("strides[%d] = %d bytes: want a positive multiple of %d below 2^40", i, s, tensorMapAlign)
		}
	}
	for i, b := range m.Box {
		if b < 1 || b > tensorMapMaxBox {
			return fmt.Errorf("box[%d] = %d: want 1 to %d", i, b, tensorMapMaxBox)
		}
	}
	row := m.Box[0] * m.DType.Size()
	if row%tensorMapAlign != 0 {
		return fmt.Errorf("box[0] = %d %v elements = %d bytes: want a multiple of %d bytes", m.Box[0], m.DType, row, tensorMapAlign)
	}
	switch m.Swizzle {
	case 0:
	case 32, 64, 128:
		if row > m.Swizzle {
			return fmt.Errorf("box[0] = %d %v elements = %d bytes: more than the %d-byte swizzle span", m.Box[0], m.DType, row, m.Swizzle)
		}
	default:
		return fmt.Errorf("swizzle %d: want 0 (none), 32, 64 or 128 bytes", m.Swizzle)
	}
	return nil
}

// tensorMapEnd is one past the last byte of m's tensor, relative to its
// base (m's shape already checked).
func tensorMapEnd(m kernels.TensorMap) int64 {
	size := int64(m.DType.Size())
	end := int64(m.Dims[0]-1)*size + size
	for i, s := range m.Strides {
		end += int64(m.Dims[i+1]-1) * int64(s)
	}
	return end
}
