package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// TensorDataType is the element type of a tensor map
// (CUtensorMapDataType); the package uses the three below.
type TensorDataType int32

// Tensor map element types.
const (
	TensorUInt8    TensorDataType = 0 // CU_TENSOR_MAP_DATA_TYPE_UINT8
	TensorFloat16  TensorDataType = 6 // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
	TensorFloat32  TensorDataType = 7 // CU_TENSOR_MAP_DATA_TYPE_FLOAT32
	TensorBFloat16 TensorDataType = 9 // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
)

// CUtensorMapInterleave, CUtensorMapL2promotion and CUtensorMapFloatOOBfill
// values of every map the package encodes, and the CUtensorMapSwizzle
// values by span in bytes.
const (
	tensorInterleaveNone = 0 // CU_TENSOR_MAP_INTERLEAVE_NONE
	tensorL2Promotion128 = 2 // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
	tensorOOBFillNone    = 0 // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros
)

var tensorSwizzles = map[int]int32{
	0:   0, // CU_TENSOR_MAP_SWIZZLE_NONE
	32:  1, // CU_TENSOR_MAP_SWIZZLE_32B
	64:  2, // CU_TENSOR_MAP_SWIZZLE_64B
	128: 3, // CU_TENSOR_MAP_SWIZZLE_128B
}

// ErrNoTensorMap reports that the driver lacks cuTensorMapEncodeTiled
// (drivers before CUDA 12.0).
var ErrNoTensorMap = errors.New("driver has no cuTensorMapEncodeTiled (CUDA 12.0 or newer is needed for tensor maps)")

// TensorMapSpec is a tiled tensor map: a tensor of Dims elements at
// Global, innermost dimension first, whose dimension i > 0 starts every
// Strides[i-1] bytes, copied in boxes of Box elements, with a shared-memory
// swizzle of Swizzle bytes (0, 32, 64 or 128). Element strides are 1,
// interleave none, L2 promotion 128 bytes, and elements outside the
// tensor read as zero.
type TensorMapSpec struct {
	DataType TensorDataType
	Global   DevicePtr
	Dims     []uint64
	Strides  []uint64
	Box      []uint32
	Swizzle  int
}

// EncodeTensorMapTiled encodes s (cuTensorMapEncodeTiled). It checks only
// the spec's structure (rank 1 to 5, consistent lengths, a known swizzle);
// the driver checks the rest (alignments, limits) and its error names the
// spec. No context is needed.
func (d *Driver) EncodeTensorMapTiled(s TensorMapSpec) (TensorMap, error) {
	if d.api.cuTensorMapEncodeTiled == nil {
		return TensorMap{}, fmt.Errorf("cuda: EncodeTensorMapTiled: %w", ErrNoTensorMap)
	}
	rank := len(s.Dims)
	if rank < 1 || rank > 5 || len(s.Strides) != rank-1 || len(s.Box) != rank {
		return TensorMap{}, fmt.Errorf("cuda: EncodeTensorMapTiled: rank %d with %d strides and %d box extents (want rank 1 to 5, rank-1 strides, rank box extents)",
			rank, len(s.Strides), len(s.Box))
	}
	swizzle, ok := tensorSwizzles[s.Swizzle]
	if !ok {
		return TensorMap{}, fmt.Errorf("cuda: EncodeTensorMapTiled: swizzle %d bytes (want 0, 32, 64 or 128)", s.Swizzle)
	}
	ones := []uint32{1, 1, 1, 1, 1}
	// The map must be 64-byte aligned: write it into an aligned spot of a
	// larger heap buffer, which does not move.
	raw := make([]byte, len(TensorMap{})+tensorMapAlign)
	at := unsafe.Pointer(&raw[0])
	at = unsafe.Add(at, (tensorMapAlign-int(uintptr(at)%tensorMapAlign))%tensorMapAlign)
	strides := unsafe.Pointer(nil)
	if rank > 1 {
		strides = unsafe.Pointer(&s.Strides[0])
	}
	code := d.api.cuTensorMapEncodeTiled(at, int32(s.DataType), uint32(rank), uintptr(s.Global),
		unsafe.Pointer(&s.Dims[0]), strides, unsafe.Pointer(&s.Box[0]), unsafe.Pointer(&ones[0]),
		tensorInterleaveNone, swizzle, tensorL2Promotion128, tensorOOBFillNone)
	if err := d.check("cuTensorMapEncodeTiled", code); err != nil {
		return TensorMap{}, fmt.Errorf("%w (type %d, dims %v, strides %v, box %v, swizzle %d)", err, s.DataType, s.Dims, s.Strides, s.Box, s.Swizzle)
	}
	return *(*TensorMap)(at), nil
}

// HasTensorMap reports whether the driver provides cuTensorMapEncodeTiled,
// which [Driver.EncodeTensorMapTiled] needs.
func (d *Driver) HasTensorMap() bool { return d.api.cuTensorMapEncodeTiled != nil }
