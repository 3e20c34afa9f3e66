package runner

import (
	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/launch"
)

// Ptr is a device address in a backend's address space.
type Ptr uint64

// Backend is what validation needs from a device: memory, compilation and
// launches, in one stream order. The CUDA driver (real GPUs) and the CPU
// interpreter (runner/sim) implement it, so the validation code is shared;
// only the CUDA backend can time.
type Backend interface {
	// Name says which backend this is ("cuda", "sim").
	Name() string
	// Device describes the device; SMs sizes GridPerSM launches.
	Device() DeviceInfo
	Alloc(bytes int) (Ptr, error)
	Free(p Ptr) error
	Upload(dst Ptr, src []byte) error
	Download(dst []byte, src Ptr) error
	// Memset sets bytes bytes at p to v, in stream order.
	Memset(p Ptr, v byte, bytes int) error
	// Load compiles a PTX module.
	Load(ptx string) (Module, error)
	// Launch enqueues a kernel; args are Ptr or uint64 values.
	Launch(fn Function, grid, block [3]int, sharedBytes int, args []any) error
	// Sync waits for all enqueued work and reports its first error.
	Sync() error
}

// DependentLauncher is implemented by backends that can launch a kernel
// with programmatic dependent launch (kernels.Launch.Dependent): the kernel
// may start before the work enqueued ahead of it has finished, and waits for
// it with griddepcontrol.wait. Session.Run uses it for dependent launches
// when the backend implements it, and Launch otherwise: plain stream order
// gives what griddepcontrol.wait waits for.
type DependentLauncher interface {
	// LaunchDependent enqueues a dependent launch; arguments as for
	// Backend.Launch. An error wrapping ErrNoDependentLaunch means that
	// nothing was enqueued because this device or driver cannot launch
	// dependently; the caller should use Launch instead.
	LaunchDependent(fn Function, grid, block [3]int, sharedBytes int, args []any) error
}

// ErrNoDependentLaunch is wrapped by a DependentLauncher's error when the
// device or driver cannot launch dependently (a CUDA driver without
// cuLaunchKernelEx) and nothing was enqueued.
var ErrNoDependentLaunch = launch.ErrNoDependentLaunch

// Module is a loaded PTX module.
type Module interface {
	Function(entry string) (Function, error)
	Unload() error
}

// Function is a kernel entry of a loaded module.
type Function interface {
	// Resources reports what a launch of threads threads per block with
	// dynSmem bytes of dynamic shared memory uses.
	Resources(threads, dynSmem int) (Resources, error)
}

// CarveoutSetter is a Function whose preferred shared-memory carveout can
// be set to the largest, as a launch built for several CTAs an SM asks
// (configs.Launch.MaxCarveout). The simulator's functions have no
// carveout.
type CarveoutSetter interface {
	PreferMaxShared() error
}

// Resources of a compiled kernel.
type Resources struct {
	Registers   int
	LocalBytes  int // local memory per thread (spills and local arrays)
	SharedBytes int // static shared memory
	Occupancy   float64
}

// TensorMapArg is a kernel argument passed by value: the 128 bytes of a
// TMA tensor map (kernels.TensorMap), as the backend encodes it.
type TensorMapArg [128]byte

// TensorMapEncoder is implemented by backends whose kernels can take TMA
// tensor maps: EncodeTensorMap returns the map of m over global, the
// address of the tensor's element (0, …, 0): its buffer's address plus
// m.Offset (m.Global), which the caller has added; the encoder does not
// add it again. The CUDA backend calls cuTensorMapEncodeTiled; the
// interpreter uses an encoding of its own that its TMA instructions
// decode.
type TensorMapEncoder interface {
	EncodeTensorMap(m configs.TensorMapSpec, global Ptr) (TensorMapArg, error)
}

// ClusterLauncher is implemented by backends that launch grids in
// thread-block clusters (kernels.Launch.Cluster, sm_90). The cluster
// shape divides the grid.
type ClusterLauncher interface {
	LaunchCluster(fn Function, grid, block, cluster [3]int, sharedBytes int, args []any) error
}

// CubinLoader is implemented by backends that load modules compiled ahead
// of time (cuModuleLoadData of a cubin: no JIT on the worker's thread).
type CubinLoader interface {
	LoadCubin(cubin []byte) (Module, error)
}

// Copier is implemented by backends that copy device memory to device
// memory in stream order.
type Copier interface {
	Copy(dst, src Ptr, bytes int) error
}

// copyDevice copies bytes from src to dst on be: in stream order where be
// is a Copier, else through the host.
func copyDevice(be Backend, dst, src Ptr, bytes int) error {
	if c, ok := be.(Copier); ok {
		return c.Copy(dst, src, bytes)
	}
	buf := make([]byte, bytes)
	if err := be.Download(buf, src); err != nil {
		return err
	}
	return be.Upload(dst, buf)
}
