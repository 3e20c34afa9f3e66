package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// packArgs stores each kernel argument by value in its own 8-byte, 8-byte
// aligned slot, enough for every accepted type. A 4-byte argument occupies
// the first 4 bytes of its slot: the driver reads the parameter's size from
// the slot's address. Accepted
// types: DevicePtr, uint64, int64, uint32, int32, float32, float64; anything
// else is an error naming the argument's position and type.
func packArgs(args []any) ([]uint64, error) {
	// []uint64 guarantees the 8-byte alignment of every slot.
	slots := make([]uint64, len(args))
	for i, a := range args {
		p := unsafe.Pointer(&slots[i])
		switch v := a.(type) {
		case DevicePtr:
			*(*uint64)(p) = uint64(v)
		case uint64:
			*(*uint64)(p) = v
		case int64:
			*(*int64)(p) = v
		case uint32:
			*(*uint32)(p) = v
		case int32:
			*(*int32)(p) = v
		case float32:
			*(*float32)(p) = v
		case float64:
			*(*float64)(p) = v
		case int, uint, uintptr:
			return nil, fmt.Errorf("cuda: kernel argument %d: %T has no fixed width; use int32, uint32, int64, uint64 or DevicePtr", i, a)
		default:
			return nil, fmt.Errorf("cuda: kernel argument %d: unsupported type %T (want DevicePtr, uint64, int64, uint32, int32, float32 or float64)", i, a)
		}
	}
	return slots, nil
}

// Launch launches f on a grid of grid blocks of block threads with
// sharedBytes of dynamic shared memory on s (nil: the default stream)
// (cuLaunchKernel). args are the kernel's parameters in order, each a
// DevicePtr, uint64, int64, uint32, int32, float32 or float64 matching the
// width of the .param it fills. Launch returns once the launch is queued;
// errors of the kernel's execution show up at the next synchronization.
func (c *Context) Launch(f *Function, grid, block [3]int, sharedBytes int, s *Stream, args ...any) error {
	if f == nil {
		return fmt.Errorf("cuda: Launch: nil function")
	}
	for i := range 3 {
		if grid[i] <= 0 || uint64(grid[i]) > math.MaxUint32 || block[i] <= 0 || uint64(block[i]) > math.MaxUint32 {
			return fmt.Errorf("cuda: Launch %s: grid %v and block %v must have dimensions from 1 to 2^32-1", f.name, grid, block)
		}
	}
	if sharedBytes < 0 || sharedBytes > math.MaxInt32 {
		return fmt.Errorf("cuda: Launch %s: dynamic shared memory %d bytes out of range", f.name, sharedBytes)
	}
	slots, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("%w (launching %s)", err, f.name)
	}

	// kernelParams is a void*[] whose entries point at the slots. Both are Go
	// heap memory, pinned for the call (the slots' addresses are stored
	// inside another array the driver reads).
	var params unsafe.Pointer
	var pin runtime.Pinner
	defer pin.Unpin()
	if len(slots) > 0 {
		ptrs := make([]unsafe.Pointer, len(slots))
		pin.Pin(&slots[0])
		for i := range slots {
			ptrs[i] = unsafe.Pointer(&slots[i])
		}
		pin.Pin(&ptrs[0])
		params = unsafe.Pointer(&ptrs[0])
		defer runtime.KeepAlive(ptrs)
	}
	code := c.d.api.cuLaunchKernel(f.h,
		uint32(grid[0]), uint32(grid[1]), uint32(grid[2]),
		uint32(block[0]), uint32(block[1]), uint32(block[2]),
		uint32(sharedBytes), s.handle(), params, nil)
	runtime.KeepAlive(slots)
	if err := c.d.check("cuLaunchKernel", code); err != nil {
		return fmt.Errorf("%w (kernel %s, grid %v, block %v, shared %d)", err, f.name, grid, block, sharedBytes)
	}
	return nil
}
