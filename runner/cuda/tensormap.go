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

// CUtensorMapInterleave values by name, CUtensorMapL2promotion values by
// bytes (-1: none; 0 is taken as the default, 128), and the
// CUtensorMapFloatOOBfill values.
var (
	tensorInterleaves = map[string]int32{"": 0, "none": 0, "16b": 1, "32b": 2}
	tensorL2Promotion = map[int]int32{-1: 0, 64: 1, 0: 2, 128: 2, 256: 3}
)

const (
	tensorOOBFillNone = 0 // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros
	tensorOOBFillNaN  = 1 // CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
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
// swizzle of Swizzle bytes (0, 32, 64 or 128). The zero values of the
// other fields are the defaults: element strides 1, interleave none, L2
// promotion 128 bytes, elements outside the tensor read as zero.
type TensorMapSpec struct {
	DataType    TensorDataType
	Global      DevicePtr
	Dims        []uint64
	Strides     []uint64
	Box         []uint32
	ElemStrides []uint32 // nil: all 1
	Swizzle     int
	Interleave  string // "none", "16b" or "32b"
	L2Promotion int    // bytes: -1 (none), 64, 128 or 256
	OOBNaN      bool   // elements outside the tensor read as NaN
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
	interleave, ok := tensorInterleaves[s.Interleave]
	if !ok {
		return TensorMap{}, fmt.Errorf("cuda: EncodeTensorMapTiled: interleave %q (want none, 16b or 32b)", s.Interleave)
	}
	l2, ok := tensorL2Promotion[s.L2Promotion]
	if !ok {
		return TensorMap{}, fmt.Errorf("cuda: EncodeTensorMapTiled: L2 promotion %d bytes (want -1, 64, 128 or 256)", s.L2Promotion)
	}
	oob := int32(tensorOOBFillNone)
	if s.OOBNaN {
		oob = tensorOOBFillNaN
	}
	elem := s.ElemStrides
	if elem == nil {
		elem = []uint32{1, 1, 1, 1, 1}[:rank]
	}
	if len(elem) != rank {
		return TensorMap{}, fmt.Errorf("cuda: EncodeTensorMapTiled: %d element strides for rank %d", len(elem), rank)
	}
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
		unsafe.Pointer(&s.Dims[0]), strides, unsafe.Pointer(&s.Box[0]), unsafe.Pointer(&elem[0]),
		interleave, swizzle, l2, oob)
	if err := d.check("cuTensorMapEncodeTiled", code); err != nil {
		return TensorMap{}, fmt.Errorf("%w (type %d, dims %v, strides %v, box %v, swizzle %d)", err, s.DataType, s.Dims, s.Strides, s.Box, s.Swizzle)
	}
	return *(*TensorMap)(at), nil
}

// HasTensorMap reports whether the driver provides cuTensorMapEncodeTiled,
// which [Driver.EncodeTensorMapTiled] needs.
func (d *Driver) HasTensorMap() bool { return d.api.cuTensorMapEncodeTiled != nil }
