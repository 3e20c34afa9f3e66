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

// Launch attribute values for dependent launches (cuda.h).
const (
	// launchAttributeProgrammaticStreamSerialization is
	// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
	launchAttributeProgrammaticStreamSerialization = 6
	// programmaticStreamSerializationAllowed is the value of the union
	// member programmaticStreamSerializationAllowed that allows it.
	programmaticStreamSerializationAllowed = 1
)

// launchConfig mirrors CUlaunchConfig (x86-64 layout, 56 bytes).
type launchConfig struct {
	gridDimX, gridDimY, gridDimZ    uint32
	blockDimX, blockDimY, blockDimZ uint32
	sharedMemBytes                  uint32
	_                               [4]byte
	hStream                         uintptr          // CUstream, offset 32
	attrs                           *launchAttribute // CUlaunchAttribute*, offset 40
	numAttrs                        uint32           // offset 48
	_                               [4]byte
}

// launchAttribute mirrors CUlaunchAttribute (72 bytes): a
// CUlaunchAttributeID and, at offset 8, the 64-byte, 8-byte aligned union
// CUlaunchAttributeValue.
type launchAttribute struct {
	id    int32 // CUlaunchAttributeID
	_     [4]byte
	value [8]uint64 // CUlaunchAttributeValue
}

// setInt32 stores v in the first 4 bytes of the attribute's value, the
// union member of int-valued attributes.
func (a *launchAttribute) setInt32(v int32) {
	*(*int32)(unsafe.Pointer(&a.value)) = v
}

// dependentConfig returns the cuLaunchKernelEx configuration of a launch
// with programmatic stream serialization allowed. Its attribute array is
// Go memory the caller must pin along with the configuration.
func dependentConfig(grid, block [3]int, sharedBytes int, stream uintptr) *launchConfig {
	attr := &launchAttribute{id: launchAttributeProgrammaticStreamSerialization}
	attr.setInt32(programmaticStreamSerializationAllowed)
	return &launchConfig{
		gridDimX: uint32(grid[0]), gridDimY: uint32(grid[1]), gridDimZ: uint32(grid[2]),
		blockDimX: uint32(block[0]), blockDimY: uint32(block[1]), blockDimZ: uint32(block[2]),
		sharedMemBytes: uint32(sharedBytes),
		hStream:        stream,
		attrs:          attr,
		numAttrs:       1,
	}
}

// Launch launches f on a grid of grid blocks of block threads with
// sharedBytes of dynamic shared memory on s (nil: the default stream)
// (cuLaunchKernel). args are the kernel's parameters in order, each a
// DevicePtr, uint64, int64, uint32, int32, float32 or float64 matching the
// width of the .param it fills. Launch returns once the launch is queued;
// errors of the kernel's execution show up at the next synchronization.
func (c *Context) Launch(f *Function, grid, block [3]int, sharedBytes int, s *Stream, args ...any) error {
	return c.launch("Launch", f, grid, block, sharedBytes, s, false, args)
}

// LaunchDependent is Launch with programmatic stream serialization allowed
// (cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
// programmatic dependent launch on sm_90 and newer): the kernel may start
// while the work queued on s before it is still running, and must execute
// griddepcontrol.wait before it touches memory that work uses. On a driver
// without cuLaunchKernelEx it queues nothing and returns an error wrapping
// [ErrNoLaunchKernelEx]; the caller may then use Launch, whose plain stream
// order is what griddepcontrol.wait waits for anyway.
func (c *Context) LaunchDependent(f *Function, grid, block [3]int, sharedBytes int, s *Stream, args ...any) error {
	return c.launch("LaunchDependent", f, grid, block, sharedBytes, s, true, args)
}

// launch does the work of Launch (cuLaunchKernel) and, when dependent, of
// LaunchDependent (cuLaunchKernelEx); op names the method in errors.
func (c *Context) launch(op string, f *Function, grid, block [3]int, sharedBytes int, s *Stream, dependent bool, args []any) error {
	if f == nil {
		return fmt.Errorf("cuda: %s: nil function", op)
	}
	if dependent && c.d.api.cuLaunchKernelEx == nil {
		return fmt.Errorf("cuda: %s %s: %w", op, f.name, ErrNoLaunchKernelEx)
	}
	for i := range 3 {
		if grid[i] <= 0 || uint64(grid[i]) > math.MaxUint32 || block[i] <= 0 || uint64(block[i]) > math.MaxUint32 {
			return fmt.Errorf("cuda: %s %s: grid %v and block %v must have dimensions from 1 to 2^32-1", op, f.name, grid, block)
		}
	}
	if sharedBytes < 0 || sharedBytes > math.MaxInt32 {
		return fmt.Errorf("cuda: %s %s: dynamic shared memory %d bytes out of range", op, f.name, sharedBytes)
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
	call := "cuLaunchKernel"
	var code int32
	if dependent {
		// The configuration holds the address of its attribute array:
		// both are pinned for the call, like the argument arrays.
		call = "cuLaunchKernelEx"
		cfg := dependentConfig(grid, block, sharedBytes, s.handle())
		pin.Pin(cfg.attrs)
		pin.Pin(cfg)
		code = c.d.api.cuLaunchKernelEx(unsafe.Pointer(cfg), f.h, params, nil)
		runtime.KeepAlive(cfg)
	} else {
		code = c.d.api.cuLaunchKernel(f.h,
			uint32(grid[0]), uint32(grid[1]), uint32(grid[2]),
			uint32(block[0]), uint32(block[1]), uint32(block[2]),
			uint32(sharedBytes), s.handle(), params, nil)
	}
	runtime.KeepAlive(slots)
	if err := c.d.check(call, code); err != nil {
		return fmt.Errorf("%w (kernel %s, grid %v, block %v, shared %d)", err, f.name, grid, block, sharedBytes)
	}
	return nil
}
