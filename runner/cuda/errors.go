package cuda

import (
	"errors"
	"fmt"
)

// ErrNoDriver reports that the NVIDIA driver library could not be loaded.
// [Open] wraps it together with the dynamic loader's message.
var ErrNoDriver = errors.New("NVIDIA driver (libcuda.so.1) not found")

// ErrNoLaunchKernelEx reports that the driver lacks cuLaunchKernelEx
// (drivers before CUDA 12.0), so [Context.LaunchDependent] cannot launch.
// Nothing was queued: the caller may fall back to [Context.Launch], which
// runs the kernel in plain stream order.
var ErrNoLaunchKernelEx = errors.New("driver has no cuLaunchKernelEx (CUDA 12.0 or newer is needed for dependent launches)")

// Error is a failed CUDA driver call.
type Error struct {
	Op   string // the driver function, e.g. "cuMemAlloc"
	Code int    // the CUresult value
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Msg  string // the driver's description, e.g. "out of memory"
}

// Error formats the error as "cuda: OP: NAME (CODE): MSG".
func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = "CUDA_ERROR"
	}
	s := fmt.Sprintf("cuda: %s: %s (%d)", e.Op, name, e.Code)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// CUresult values the package refers to by name.
const (
	cudaSuccess                = 0
	cudaErrorInvalidValue      = 1
	cudaErrorNotFound          = 500
	cudaErrorNotSupported      = 801
	cudaErrorIllegalAddress    = 700
	cudaErrorLaunchTimeout     = 702
	cudaErrorContextDestroyed  = 709
	cudaErrorAssert            = 710
	cudaErrorHardwareStack     = 714
	cudaErrorIllegalInstr      = 715
	cudaErrorMisalignedAddress = 716
	cudaErrorInvalidAddrSpace  = 717
	cudaErrorInvalidPC         = 718
	cudaErrorLaunchFailed      = 719
	cudaErrorECCUncorrectable  = 214
	cudaErrorNVLinkUncorrect   = 220
	cudaErrorContained         = 226
)

// stickyCodes are the CUresults after which the CUDA context is corrupt and
// every later call in the process fails: the driver documents that "the
// context cannot be used anymore, and must be destroyed", and with a
// primary context in practice the process must exit.
var stickyCodes = map[int]bool{
	cudaErrorIllegalAddress:    true,
	cudaErrorLaunchTimeout:     true,
	cudaErrorContextDestroyed:  true,
	cudaErrorAssert:            true,
	cudaErrorHardwareStack:     true,
	cudaErrorIllegalInstr:      true,
	cudaErrorMisalignedAddress: true,
	cudaErrorInvalidAddrSpace:  true,
	cudaErrorInvalidPC:         true,
	cudaErrorLaunchFailed:      true,
	cudaErrorECCUncorrectable:  true,
	cudaErrorNVLinkUncorrect:   true,
	cudaErrorContained:         true,
}

// IsSticky reports whether err is (or wraps) a CUDA error after which the
// context is unusable: an illegal address, a launch failure or timeout, a
// misaligned address, an illegal instruction or PC, a hardware stack error,
// a device-side assert, an uncorrectable ECC or NVLink error, or a contained
// exception. After such an error the process should stop using CUDA and exit.
func IsSticky(err error) bool {
	var e *Error
	return errors.As(err, &e) && stickyCodes[e.Code]
}

// errorTable is the fallback for names and descriptions of common CUresults,
// used when cuGetErrorName/cuGetErrorString are unavailable.
var errorTable = map[int][2]string{
	0:   {"CUDA_SUCCESS", "no error"},
	1:   {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	2:   {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	3:   {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	4:   {"CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
	34:  {"CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	46:  {"CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
	100: {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	101: {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	200: {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	201: {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	209: {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	214: {"CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
	218: {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	220: {"CUDA_ERROR_NVLINK_UNCORRECTABLE", "uncorrectable NVLink error detected during the execution"},
	221: {"CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
	222: {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain"},
	223: {"CUDA_ERROR_JIT_COMPILATION_DISABLED", "PTX JIT compilation was disabled"},
	226: {"CUDA_ERROR_CONTAINED", "an exception occurred on the device that is now contained by the GPU's error containment capability"},
	300: {"CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
	301: {"CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
	400: {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	401: {"CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
	500: {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	600: {"CUDA_ERROR_NOT_READY", "device not ready"},
	700: {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	701: {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	702: {"CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	708: {"CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "primary context active"},
	709: {"CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
	710: {"CUDA_ERROR_ASSERT", "device-side assert triggered"},
	714: {"CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
	715: {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
	716: {"CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
	717: {"CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
	718: {"CUDA_ERROR_INVALID_PC", "invalid program counter"},
	719: {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	720: {"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
	800: {"CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
	801: {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	802: {"CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
	803: {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
	804: {"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
	909: {"CUDA_ERROR_TIMEOUT", "wait operation timed out"},
	999: {"CUDA_ERROR_UNKNOWN", "unknown error"},
}

// newError builds an *Error for code, asking the driver (d may be nil or
// partly loaded) for the name and description and falling back to
// errorTable.
func newError(d *Driver, op string, code int32) *Error {
	e := &Error{Op: op, Code: int(code)}
	if d != nil {
		e.Name = d.errorText(d.api.cuGetErrorName, code)
		e.Msg = d.errorText(d.api.cuGetErrorString, code)
	}
	if t, ok := errorTable[e.Code]; ok {
		if e.Name == "" {
			e.Name = t[0]
		}
		if e.Msg == "" {
			e.Msg = t[1]
		}
	}
	return e
}

// check turns a CUresult into nil or an *Error for op.
func (d *Driver) check(op string, code int32) error {
	if code == cudaSuccess {
		return nil
	}
	return newError(d, op, code)
}
