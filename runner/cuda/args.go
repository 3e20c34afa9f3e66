package cuda

import (
	"fmt"
	"unsafe"
)

// TensorMap is a CUtensorMap: the opaque 128-byte TMA descriptor that
// [Driver.EncodeTensorMapTiled] writes. As a kernel argument it is passed
// by value, filling a `.param .align 64 .b8 name[128]`.
type TensorMap [128]byte

// tensorMapAlign is the alignment of a CUtensorMap (CU_TENSOR_MAP_ALIGN)
// in host memory, where the driver writes it and reads it at launch.
const tensorMapAlign = 64

// packedArgs is the argument storage of one launch: every argument by
// value in buf, at an offset aligned for its type, and ptrs, the
// kernelParams array: the address of each argument's bytes.
type packedArgs struct {
	buf  []uint64 // []uint64 makes every offset 8-byte aligned
	ptrs []unsafe.Pointer
}

// argSize returns the bytes and alignment an argument takes in the
// storage: an 8-byte slot for scalars (a 4-byte one fills its first 4
// bytes: the driver reads the parameter's size from the slot's address)
// and 128 bytes, 64-byte aligned, for a TensorMap.
func argSize(i int, a any) (size, align int, err error) {
	switch a.(type) {
	case DevicePtr, uint64, int64, uint32, int32, float32, float64:
		return 8, 8, nil
	case TensorMap:
		return len(TensorMap{}), tensorMapAlign, nil
	case int, uint, uintptr:
		return 0, 0, fmt.Errorf("cuda: kernel argument %d: %T has no fixed width; use int32, uint32, int64, uint64 or DevicePtr", i, a)
	}
	return 0, 0, fmt.Errorf("cuda: kernel argument %d: unsupported type %T (want DevicePtr, uint64, int64, uint32, int32, float32, float64 or TensorMap)", i, a)
}

// packArgs stores each kernel argument by value. Accepted types:
// DevicePtr, uint64, int64, uint32, int32, float32, float64 and TensorMap;
// anything else is an error naming the argument's position and type.
func packArgs(args []any) (*packedArgs, error) {
	offs := make([]int, len(args))
	end := 0
	for i, a := range args {
		size, align, err := argSize(i, a)
		if err != nil {
			return nil, err
		}
		offs[i] = (end + align - 1) / align * align
		end = offs[i] + size
	}
	// Spare room to move the whole layout up to a 64-byte boundary: Go
	// heap memory does not move, so the address computed now stays valid.
	p := &packedArgs{buf: make([]uint64, (end+tensorMapAlign)/8+1), ptrs: make([]unsafe.Pointer, len(args))}
	base := unsafe.Pointer(&p.buf[0])
	base = unsafe.Add(base, (tensorMapAlign-int(uintptr(base)%tensorMapAlign))%tensorMapAlign)
	for i, a := range args {
		at := unsafe.Add(base, offs[i])
		p.ptrs[i] = at
		switch v := a.(type) {
		case DevicePtr:
			*(*uint64)(at) = uint64(v)
		case uint64:
			*(*uint64)(at) = v
		case int64:
			*(*int64)(at) = v
		case uint32:
			*(*uint32)(at) = v
		case int32:
			*(*int32)(at) = v
		case float32:
			*(*float32)(at) = v
		case float64:
			*(*float64)(at) = v
		case TensorMap:
			*(*TensorMap)(at) = v
		}
	}
	return p, nil
}
