package cuda

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// Launch attribute IDs and values (cuda.h, CUlaunchAttributeID).
const (
	// launchAttributeClusterDimension is CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	// its value is the union member clusterDim {x, y, z unsigned int}.
	launchAttributeClusterDimension = 4
	// launchAttributeProgrammaticStreamSerialization is
	// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
	launchAttributeProgrammaticStreamSerialization = 6
	// programmaticStreamSerializationAllowed is the value of the union
	// member programmaticStreamSerializationAllowed that allows it.
	programmaticStreamSerializationAllowed = 1
)

// Cluster sizes (blocks per cluster) on sm_90: up to 8 is portable; up to
// 16 needs CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED.
const (
	MaxPortableClusterSize = 8
	MaxClusterSize         = 16
)

// LaunchConfig is the geometry and attributes of one kernel launch.
type LaunchConfig struct {
	Grid, Block [3]int
	SharedBytes int // dynamic shared memory per block
	// Cluster, when not all zero, launches the grid in thread-block
	// clusters of this shape (sm_90, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION):
	// every dimension at least 1 and dividing the grid's, at most
	// MaxClusterSize blocks in all.
	Cluster [3]int
	// Dependent allows programmatic stream serialization
	// (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).
	Dependent bool
}

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

// setInt32s stores vs in the first 4·len(vs) bytes of the attribute's
// value: one int for int-valued attributes, three for clusterDim.
func (a *launchAttribute) setInt32s(vs ...int32) {
	for i, v := range vs {
		*(*int32)(unsafe.Add(unsafe.Pointer(&a.value), 4*i)) = v
	}
}

// attributes returns the launch attributes cfg needs: the cluster shape
// and programmatic stream serialization, each when asked for.
func (cfg LaunchConfig) attributes() []launchAttribute {
	var attrs []launchAttribute
	if cfg.Cluster != [3]int{} {
		a := launchAttribute{id: launchAttributeClusterDimension}
		a.setInt32s(int32(cfg.Cluster[0]), int32(cfg.Cluster[1]), int32(cfg.Cluster[2]))
		attrs = append(attrs, a)
	}
	if cfg.Dependent {
		a := launchAttribute{id: launchAttributeProgrammaticStreamSerialization}
		a.setInt32s(programmaticStreamSerializationAllowed)
		attrs = append(attrs, a)
	}
	return attrs
}

// exConfig returns the cuLaunchKernelEx configuration of cfg on stream
// with attrs (from cfg.attributes). attrs is Go memory the caller must pin
// along with the configuration.
func exConfig(cfg LaunchConfig, stream uintptr, attrs []launchAttribute) *launchConfig {
	c := &launchConfig{
		gridDimX: uint32(cfg.Grid[0]), gridDimY: uint32(cfg.Grid[1]), gridDimZ: uint32(cfg.Grid[2]),
		blockDimX: uint32(cfg.Block[0]), blockDimY: uint32(cfg.Block[1]), blockDimZ: uint32(cfg.Block[2]),
		sharedMemBytes: uint32(cfg.SharedBytes),
		hStream:        stream,
		numAttrs:       uint32(len(attrs)),
	}
	if len(attrs) > 0 {
		c.attrs = &attrs[0]
	}
	return c
}

// check validates cfg's geometry.
func (cfg LaunchConfig) check() error {
	for i := range 3 {
		if cfg.Grid[i] <= 0 || uint64(cfg.Grid[i]) > math.MaxUint32 || cfg.Block[i] <= 0 || uint64(cfg.Block[i]) > math.MaxUint32 {
			return fmt.Errorf("grid %v and block %v must have dimensions from 1 to 2^32-1", cfg.Grid, cfg.Block)
		}
	}
	if cfg.SharedBytes < 0 || cfg.SharedBytes > math.MaxInt32 {
		return fmt.Errorf("dynamic shared memory %d bytes out of range", cfg.SharedBytes)
	}
	if cfg.Cluster == [3]int{} {
		return nil
	}
	size := 1
	for i, c := range cfg.Cluster {
		if c < 1 || c > MaxClusterSize || cfg.Grid[i]%c != 0 {
			return fmt.Errorf("cluster %v: every dimension must be at least 1 and divide the grid's (grid %v)", cfg.Cluster, cfg.Grid)
		}
		size *= c
	}
	if size > MaxClusterSize {
		return fmt.Errorf("cluster %v has %d blocks; at most %d are possible (%d portably)", cfg.Cluster, size, MaxClusterSize, MaxPortableClusterSize)
	}
	return nil
}

// clusterSize is the number of blocks in cfg's cluster, 1 without one.
func (cfg LaunchConfig) clusterSize() int {
	if cfg.Cluster == [3]int{} {
		return 1
	}
	return cfg.Cluster[0] * cfg.Cluster[1] * cfg.Cluster[2]
}

// Launch launches f on a grid of grid blocks of block threads with
// sharedBytes of dynamic shared memory on s (nil: the default stream)
// (cuLaunchKernel). args are the kernel's parameters in order, each a
// DevicePtr, uint64, int64, uint32, int32, float32, float64 or TensorMap
// matching the width of the .param it fills. Launch returns once the
// launch is queued; errors of the kernel's execution show up at the next
// synchronization.
func (c *Context) Launch(f *Function, grid, block [3]int, sharedBytes int, s *Stream, args ...any) error {
	return c.launch("Launch", f, LaunchConfig{Grid: grid, Block: block, SharedBytes: sharedBytes}, s, args)
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
	return c.launch("LaunchDependent", f, LaunchConfig{Grid: grid, Block: block, SharedBytes: sharedBytes, Dependent: true}, s, args)
}

// LaunchEx launches f as cfg says on s (nil: the default stream): with
// cuLaunchKernel when cfg asks for no attribute, else with
// cuLaunchKernelEx and the attributes (cluster shape, programmatic stream
// serialization). Arguments as for Launch. A cluster of more than
// MaxPortableClusterSize blocks first allows f non-portable cluster
// sizes. Without cuLaunchKernelEx a launch with attributes queues nothing
// and returns an error wrapping [ErrNoLaunchKernelEx].
func (c *Context) LaunchEx(f *Function, cfg LaunchConfig, s *Stream, args ...any) error {
	return c.launch("LaunchEx", f, cfg, s, args)
}

// launch does the work of every launch method; op names the method in
// errors.
func (c *Context) launch(op string, f *Function, cfg LaunchConfig, s *Stream, args []any) error {
	if f == nil {
		return fmt.Errorf("cuda: %s: nil function", op)
	}
	attrs := cfg.attributes()
	if len(attrs) > 0 && c.d.api.cuLaunchKernelEx == nil {
		return fmt.Errorf("cuda: %s %s: %w", op, f.name, ErrNoLaunchKernelEx)
	}
	if err := cfg.check(); err != nil {
		return fmt.Errorf("cuda: %s %s: %w", op, f.name, err)
	}
	if cfg.clusterSize() > MaxPortableClusterSize {
		if err := f.allowNonPortableCluster(); err != nil {
			return err
		}
	}
	packed, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("%w (launching %s)", err, f.name)
	}
	code, call := c.enqueue(f, cfg, attrs, s, packed)
	if err := c.d.check(call, code); err != nil {
		return fmt.Errorf("%w (kernel %s, grid %v, block %v, cluster %v, shared %d)", err, f.name, cfg.Grid, cfg.Block, cfg.Cluster, cfg.SharedBytes)
	}
	return nil
}

// enqueue makes the driver call of a checked launch and returns its
// result and the entry point's name. kernelParams is a void*[] whose
// entries point into the argument storage; both are Go heap memory,
// pinned for the call (the storage's addresses are stored inside another
// array the driver reads), like the configuration and its attributes.
func (c *Context) enqueue(f *Function, cfg LaunchConfig, attrs []launchAttribute, s *Stream, packed *packedArgs) (int32, string) {
	var pin runtime.Pinner
	defer pin.Unpin()
	var params unsafe.Pointer
	if len(packed.ptrs) > 0 {
		pin.Pin(&packed.buf[0])
		pin.Pin(&packed.ptrs[0])
		params = unsafe.Pointer(&packed.ptrs[0])
	}
	defer runtime.KeepAlive(packed)
	if len(attrs) == 0 {
		return c.d.api.cuLaunchKernel(f.h,
			uint32(cfg.Grid[0]), uint32(cfg.Grid[1]), uint32(cfg.Grid[2]),
			uint32(cfg.Block[0]), uint32(cfg.Block[1]), uint32(cfg.Block[2]),
			uint32(cfg.SharedBytes), s.handle(), params, nil), "cuLaunchKernel"
	}
	ex := exConfig(cfg, s.handle(), attrs)
	pin.Pin(&attrs[0])
	pin.Pin(ex)
	defer runtime.KeepAlive(ex)
	return c.d.api.cuLaunchKernelEx(unsafe.Pointer(ex), f.h, params, nil), "cuLaunchKernelEx"
}
