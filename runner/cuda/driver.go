package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// libName is the driver library Open loads.
const libName = "libcuda.so.1"

// cuGetProcAddress flags and CUdriverProcAddressQueryResult values.
const (
	procAddressDefault       = 0 // CU_GET_PROC_ADDRESS_DEFAULT
	procSymbolNotFound       = 1 // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
	procVersionNotSufficient = 2 // CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
	deviceNameBufferBytes    = 256
	defaultJITLogBytes       = 64 << 10
	eventDefaultFlags        = 0 // CU_EVENT_DEFAULT: timing enabled
	streamDefaultFlags       = 0 // CU_STREAM_DEFAULT
	initFlags                = 0 // cuInit's Flags must be 0
)

// CUdevice_attribute values used by Device.
const (
	attrMaxThreadsPerBlock     = 1  // CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	attrClockRate              = 13 // CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz)
	attrMultiprocessorCount    = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	attrMemoryClockRate        = 36 // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (kHz)
	attrGlobalMemoryBusWidth   = 37 // CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH (bits)
	attrL2CacheSize            = 38 // CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE (bytes)
	attrComputeCapabilityMajor = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeCapabilityMinor = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	attrMaxSharedPerBlockOptin = 97 // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
)

// api holds the driver entry points, bound with purego.RegisterFunc. CUresult
// is returned as int32, CUdevice is int32, handles (CUcontext, CUmodule,
// CUfunction, CUstream, CUevent) are uintptr, CUdeviceptr is uint64 and
// size_t is uintptr.
type api struct {
	cuInit             func(flags uint32) int32
	cuDriverGetVersion func(version *int32) int32
	cuGetProcAddress   func(symbol unsafe.Pointer, pfn *uintptr, cudaVersion int32, flags uint64, status *int32) int32

	cuGetErrorName   func(code int32, str **byte) int32
	cuGetErrorString func(code int32, str **byte) int32

	cuDeviceGetCount          func(count *int32) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetName           func(name unsafe.Pointer, length int32, dev int32) int32
	cuDeviceGetUuid           func(uuid *[16]byte, dev int32) int32
	cuDeviceTotalMem          func(bytes *uintptr, dev int32) int32
	cuDeviceGetAttribute      func(value *int32, attr int32, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuCtxSynchronize          func() int32
	cuMemGetInfo              func(free, total *uintptr) int32

	cuModuleLoadDataEx                          func(mod *uintptr, image unsafe.Pointer, numOptions uint32, options, values unsafe.Pointer) int32
	cuModuleLoadData                            func(mod *uintptr, image unsafe.Pointer) int32
	cuModuleUnload                              func(mod uintptr) int32
	cuLinkCreate                                func(numOptions uint32, options, values unsafe.Pointer, state *uintptr) int32
	cuLinkAddData                               func(state uintptr, typ int32, data unsafe.Pointer, size uintptr, name unsafe.Pointer, numOptions uint32, options, values unsafe.Pointer) int32
	cuLinkComplete                              func(state uintptr, cubin *unsafe.Pointer, size *uintptr) int32
	cuLinkDestroy                               func(state uintptr) int32
	cuModuleGetFunction                         func(fn *uintptr, mod uintptr, name unsafe.Pointer) int32
	cuFuncGetAttribute                          func(value *int32, attr int32, fn uintptr) int32
	cuFuncSetAttribute                          func(fn uintptr, attr int32, value int32) int32
	cuOccupancyMaxActiveBlocksPerMultiprocessor func(blocks *int32, fn uintptr, blockSize int32, dynSmem uintptr) int32

	cuMemAlloc        func(p *uint64, bytes uintptr) int32
	cuMemFree         func(p uint64) int32
	cuMemcpyHtoD      func(dst uint64, src unsafe.Pointer, bytes uintptr) int32
	cuMemcpyDtoH      func(dst unsafe.Pointer, src uint64, bytes uintptr) int32
	cuMemcpyDtoDAsync func(dst, src uint64, bytes uintptr, stream uintptr) int32
	cuMemsetD8Async   func(p uint64, v uint8, n uintptr, stream uintptr) int32
	cuMemsetD32Async  func(p uint64, v uint32, n uintptr, stream uintptr) int32

	cuStreamCreate      func(stream *uintptr, flags uint32) int32
	cuStreamSynchronize func(stream uintptr) int32
	cuStreamDestroy     func(stream uintptr) int32
	cuEventCreate       func(event *uintptr, flags uint32) int32
	cuEventRecord       func(event, stream uintptr) int32
	cuEventSynchronize  func(event uintptr) int32
	cuEventDestroy      func(event uintptr) int32
	cuEventElapsedTime  func(ms *float32, start, end uintptr) int32

	cuLaunchKernel func(fn uintptr, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes uint32,
		stream uintptr, params, extra unsafe.Pointer) int32
	// cuLaunchKernelEx takes a *launchConfig. It is optional: nil when the
	// driver does not provide it.
	cuLaunchKernelEx func(config unsafe.Pointer, fn uintptr, params, extra unsafe.Pointer) int32
	// cuTensorMapEncodeTiled writes a CUtensorMap (64-byte aligned) for
	// the tensor at global (a device address). Optional like
	// cuLaunchKernelEx.
	cuTensorMapEncodeTiled func(tensorMap unsafe.Pointer, dataType int32, rank uint32, global uintptr,
		globalDim, globalStrides, boxDim, elementStrides unsafe.Pointer,
		interleave, swizzle, l2Promotion, oobFill int32) int32
}

// binding names one entry point resolved through cuGetProcAddress: the base
// name, the api field it fills, the CUDA version whose ABI the field's
// signature follows (0: baseABI) and whether the driver may lack it. Open
// fails when a required entry point is missing; a missing optional one
// leaves its field nil, and the code using it must check.
type binding struct {
	name     string
	fn       any // pointer to a func field of api
	abi      int
	optional bool
}

// baseABI is the CUDA version the api signatures follow unless a binding
// names another. Asking cuGetProcAddress for it (or for the driver's version
// when that is older) returns the versioned function with that signature:
// cuMemAlloc -> cuMemAlloc_v2, cuDeviceGetUuid -> cuDeviceGetUuid_v2, ...
//
// Asking with the driver's own version instead returns the newest ABI, whose
// signature may differ from the one declared here: with driver 580 (CUDA
// 13.0) "cuCtxSynchronize" resolves to cuCtxSynchronize_v2(CUcontext), which
// takes an argument the plain cuCtxSynchronize() does not (observed on an
// H200). Pinning the ABI version keeps every binding's signature exact on
// newer drivers too.
const baseABI = 12000

// bindings lists every entry point resolved by base name.
func (a *api) bindings() []binding {
	return []binding{
		{"cuGetErrorName", &a.cuGetErrorName, 0, false},
		{"cuGetErrorString", &a.cuGetErrorString, 0, false},
		{"cuDeviceGetCount", &a.cuDeviceGetCount, 0, false},
		{"cuDeviceGet", &a.cuDeviceGet, 0, false},
		{"cuDeviceGetName", &a.cuDeviceGetName, 0, false},
		{"cuDeviceGetUuid", &a.cuDeviceGetUuid, 0, false},
		{"cuDeviceTotalMem", &a.cuDeviceTotalMem, 0, false},
		{"cuDeviceGetAttribute", &a.cuDeviceGetAttribute, 0, false},
		{"cuDevicePrimaryCtxRetain", &a.cuDevicePrimaryCtxRetain, 0, false},
		{"cuDevicePrimaryCtxRelease", &a.cuDevicePrimaryCtxRelease, 0, false},
		{"cuCtxSetCurrent", &a.cuCtxSetCurrent, 0, false},
		{"cuCtxSynchronize", &a.cuCtxSynchronize, 0, false},
		{"cuMemGetInfo", &a.cuMemGetInfo, 0, false},
		{"cuModuleLoadDataEx", &a.cuModuleLoadDataEx, 0, false},
		{"cuModuleLoadData", &a.cuModuleLoadData, 0, false},
		{"cuModuleUnload", &a.cuModuleUnload, 0, false},
		// The linker turns PTX into a cubin without loading it (the compile
		// helpers, LinkPTX); optional so that a driver without it still tunes.
		{"cuLinkCreate", &a.cuLinkCreate, 12000, true},
		{"cuLinkAddData", &a.cuLinkAddData, 12000, true},
		{"cuLinkComplete", &a.cuLinkComplete, 12000, true},
		{"cuLinkDestroy", &a.cuLinkDestroy, 12000, true},
		{"cuModuleGetFunction", &a.cuModuleGetFunction, 0, false},
		{"cuFuncGetAttribute", &a.cuFuncGetAttribute, 0, false},
		{"cuFuncSetAttribute", &a.cuFuncSetAttribute, 0, false},
		{"cuOccupancyMaxActiveBlocksPerMultiprocessor", &a.cuOccupancyMaxActiveBlocksPerMultiprocessor, 0, false},
		{"cuMemAlloc", &a.cuMemAlloc, 0, false},
		{"cuMemFree", &a.cuMemFree, 0, false},
		{"cuMemcpyHtoD", &a.cuMemcpyHtoD, 0, false},
		{"cuMemcpyDtoH", &a.cuMemcpyDtoH, 0, false},
		{"cuMemcpyDtoDAsync", &a.cuMemcpyDtoDAsync, 0, false},
		{"cuMemsetD8Async", &a.cuMemsetD8Async, 0, false},
		{"cuMemsetD32Async", &a.cuMemsetD32Async, 0, false},
		{"cuStreamCreate", &a.cuStreamCreate, 0, false},
		{"cuStreamSynchronize", &a.cuStreamSynchronize, 0, false},
		{"cuStreamDestroy", &a.cuStreamDestroy, 0, false},
		{"cuEventCreate", &a.cuEventCreate, 0, false},
		{"cuEventRecord", &a.cuEventRecord, 0, false},
		{"cuEventSynchronize", &a.cuEventSynchronize, 0, false},
		{"cuEventDestroy", &a.cuEventDestroy, 0, false},
		// cuEventElapsedTime_v2 (CUDA 12.8) has the signature of the original,
		// which CUDA 13 headers no longer declare; older drivers give the
		// original.
		{"cuEventElapsedTime", &a.cuEventElapsedTime, 12080, false},
		{"cuLaunchKernel", &a.cuLaunchKernel, 0, false},
		// Drivers before CUDA 12.0 lack cuLaunchKernelEx; only dependent
		// launches need it (Context.LaunchDependent).
		{"cuLaunchKernelEx", &a.cuLaunchKernelEx, 12000, true},
		// Likewise cuTensorMapEncodeTiled (CUDA 12.0); only tensor-map
		// arguments need it (Driver.EncodeTensorMapTiled).
		{"cuTensorMapEncodeTiled", &a.cuTensorMapEncodeTiled, 12000, true},
	}
}

// requestVersion returns the cudaVersion to pass to cuGetProcAddress for a
// binding with ABI version abi (0: baseABI) on a driver of version driver:
// abi, or the driver's version when that is older (asking beyond the
// driver's version is an error).
func requestVersion(abi, driver int) int {
	if abi == 0 {
		abi = baseABI
	}
	return min(abi, driver)
}

// Driver is the loaded CUDA driver. It is created once per process by Open.
type Driver struct {
	lib     uintptr
	version int
	api     api
	procs   map[string]uintptr // base name -> resolved function pointer
}

var (
	openOnce   sync.Once
	openDriver *Driver
	openErr    error
)

// Open loads libcuda.so.1, calls cuInit(0) and resolves every entry point the
// package uses. The first call does the work; later calls return the same
// Driver or the same error. Open never panics: when the library cannot be
// loaded the error wraps ErrNoDriver and includes the dynamic loader's
// message; a failing cuInit (no device, driver/library mismatch, ...) is an
// *Error with Op "cuInit".
func Open() (*Driver, error) {
	openOnce.Do(func() { openDriver, openErr = load(libName) })
	return openDriver, openErr
}

// load does Open's work for the library at path.
func load(path string) (d *Driver, err error) {
	defer func() {
		// purego panics on malformed bindings; turn that into an error
		// rather than taking the process down.
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("cuda: binding %s: %v", path, r)
		}
	}()
	lib, derr := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if derr != nil {
		return nil, fmt.Errorf("cuda: %w: dlopen %s: %v", ErrNoDriver, path, derr)
	}
	d = &Driver{lib: lib, procs: map[string]uintptr{}}
	for _, s := range []struct {
		name string
		fn   any
	}{
		{"cuInit", &d.api.cuInit},
		{"cuDriverGetVersion", &d.api.cuDriverGetVersion},
		{"cuGetProcAddress_v2", &d.api.cuGetProcAddress},
	} {
		p, serr := purego.Dlsym(lib, s.name)
		if serr != nil || p == 0 {
			return nil, fmt.Errorf("cuda: %s has no %s (a driver for CUDA 12.0 or newer is needed): %v", path, s.name, serr)
		}
		purego.RegisterFunc(s.fn, p)
	}

	var v int32
	if err := d.check("cuDriverGetVersion", d.api.cuDriverGetVersion(&v)); err != nil {
		return nil, err
	}
	d.version = int(v)
	for _, b := range d.api.bindings() {
		p, err := d.procAddress(b.name, requestVersion(b.abi, d.version))
		if err != nil {
			if b.optional && isMissingProc(err) {
				continue // the field stays nil
			}
			return nil, err
		}
		purego.RegisterFunc(b.fn, p)
		d.procs[b.name] = p
	}
	// cuInit after the error functions are bound, so its failure is named.
	if err := d.check("cuInit", d.api.cuInit(initFlags)); err != nil {
		return nil, err
	}
	return d, nil
}

// procAddress resolves one driver entry point by base name for the given
// CUDA (ABI) version.
func (d *Driver) procAddress(name string, version int) (uintptr, error) {
	cname := cstring(name)
	var (
		pfn    uintptr
		status int32
	)
	code := d.api.cuGetProcAddress(unsafe.Pointer(&cname[0]), &pfn, int32(version), procAddressDefault, &status)
	if err := d.check("cuGetProcAddress("+name+")", code); err != nil {
		return 0, err
	}
	if pfn == 0 {
		why := fmt.Sprintf("status %d", status)
		switch status {
		case procSymbolNotFound:
			why = "symbol not found"
		case procVersionNotSufficient:
			why = "version not sufficient"
		}
		return 0, fmt.Errorf("cuda: driver %s (CUDA %s) does not provide %s for CUDA %s: %s: %w",
			libName, versionString(d.version), name, versionString(version), why, errProcMissing)
	}
	return pfn, nil
}

// errProcMissing is wrapped by procAddress's error when the driver resolved
// the lookup but has no such entry point (for the version asked).
var errProcMissing = errors.New("entry point missing")

// isMissingProc reports whether err, from procAddress, says that the driver
// lacks the entry point, rather than that the lookup itself failed: a null
// function pointer, or cuGetProcAddress failing with CUDA_ERROR_NOT_FOUND.
func isMissingProc(err error) bool {
	var e *Error
	return errors.Is(err, errProcMissing) || errors.As(err, &e) && e.Code == cudaErrorNotFound
}

// HasLaunchKernelEx reports whether the driver provides cuLaunchKernelEx,
// which [Context.LaunchDependent] needs.
func (d *Driver) HasLaunchKernelEx() bool { return d.api.cuLaunchKernelEx != nil }

// errorText calls cuGetErrorName or cuGetErrorString (fn, which may be nil)
// for code and returns "" when the driver does not know it.
func (d *Driver) errorText(fn func(int32, **byte) int32, code int32) string {
	if fn == nil {
		return ""
	}
	var p *byte
	if fn(code, &p) != cudaSuccess || p == nil {
		return ""
	}
	return goString(p)
}

// Version returns the driver's CUDA version as 1000*major + 10*minor, e.g.
// 13000 for CUDA 13.0 (driver 580).
func (d *Driver) Version() int { return d.version }

// DeviceCount returns the number of CUDA devices.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := d.check("cuDeviceGetCount", d.api.cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device describes one GPU.
type Device struct {
	Ordinal int
	Name    string // e.g. "NVIDIA H200"
	UUID    string // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it

	Major, Minor           int // compute capability
	SMs                    int // multiprocessors
	L2Bytes                int
	MaxThreadsPerBlock     int
	MaxSharedPerBlockOptin int // bytes of shared memory a block may opt in to
	ClockKHz               int // peak SM clock; 0 where the driver no longer reports it
	MemClockKHz            int // peak memory clock; 0 where the driver no longer reports it
	BusWidth               int // global memory bus width in bits
	TotalMem               uint64
}

// Device queries the device with the given ordinal.
func (d *Driver) Device(ordinal int) (Device, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return Device{}, err
	}
	out := Device{Ordinal: ordinal}

	name := make([]byte, deviceNameBufferBytes)
	if err := d.check("cuDeviceGetName", d.api.cuDeviceGetName(unsafe.Pointer(&name[0]), int32(len(name)), dev)); err != nil {
		return Device{}, err
	}
	out.Name = cstringToGo(name)

	var uuid [16]byte
	if err := d.check("cuDeviceGetUuid", d.api.cuDeviceGetUuid(&uuid, dev)); err != nil {
		return Device{}, err
	}
	out.UUID = formatUUID(uuid)

	var total uintptr
	if err := d.check("cuDeviceTotalMem", d.api.cuDeviceTotalMem(&total, dev)); err != nil {
		return Device{}, err
	}
	out.TotalMem = uint64(total)

	for _, a := range []struct {
		attr     int32
		dst      *int
		optional bool // tolerate INVALID_VALUE / NOT_SUPPORTED: report 0
	}{
		{attrComputeCapabilityMajor, &out.Major, false},
		{attrComputeCapabilityMinor, &out.Minor, false},
		{attrMultiprocessorCount, &out.SMs, false},
		{attrL2CacheSize, &out.L2Bytes, false},
		{attrMaxThreadsPerBlock, &out.MaxThreadsPerBlock, false},
		{attrMaxSharedPerBlockOptin, &out.MaxSharedPerBlockOptin, false},
		{attrGlobalMemoryBusWidth, &out.BusWidth, false},
		{attrClockRate, &out.ClockKHz, true},
		{attrMemoryClockRate, &out.MemClockKHz, true},
	} {
		var v int32
		code := d.api.cuDeviceGetAttribute(&v, a.attr, dev)
		if a.optional && (code == cudaErrorInvalidValue || code == cudaErrorNotSupported) {
			continue
		}
		if err := d.check(fmt.Sprintf("cuDeviceGetAttribute(%d)", a.attr), code); err != nil {
			return Device{}, err
		}
		*a.dst = int(v)
	}
	return out, nil
}

// device returns the CUdevice for ordinal.
func (d *Driver) device(ordinal int) (int32, error) {
	var dev int32
	if err := d.check("cuDeviceGet", d.api.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return 0, err
	}
	return dev, nil
}

// formatUUID formats the 16 bytes of a CUuuid the way nvidia-smi and NVML do:
// "GPU-" and the bytes in order as 8-4-4-4-12 lowercase hex digits.
func formatUUID(b [16]byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// versionString renders a CUDA version number such as 13000 as "13.0".
func versionString(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// cstring returns s as a NUL-terminated byte slice on the heap.
func cstring(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// cstringToGo returns the bytes of b before the first NUL.
func cstringToGo(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// goString copies the NUL-terminated C string at p (driver-owned memory).
func goString(p *byte) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
