package cuda

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"unsafe"
)

// CUjit_option values.
const (
	jitMaxRegisters            = 0  // CU_JIT_MAX_REGISTERS
	jitWallTime                = 2  // CU_JIT_WALL_TIME
	jitInfoLogBuffer           = 3  // CU_JIT_INFO_LOG_BUFFER
	jitInfoLogBufferSizeBytes  = 4  // CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
	jitErrorLogBuffer          = 5  // CU_JIT_ERROR_LOG_BUFFER
	jitErrorLogBufferSizeBytes = 6  // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
	jitOptimizationLevel       = 7  // CU_JIT_OPTIMIZATION_LEVEL
	jitLogVerbose              = 12 // CU_JIT_LOG_VERBOSE
)

// CUfunction_attribute values.
const (
	funcMaxThreadsPerBlock   = 0 // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	funcSharedSizeBytes      = 1 // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
	funcConstSizeBytes       = 2 // CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES
	funcLocalSizeBytes       = 3 // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
	funcNumRegs              = 4 // CU_FUNC_ATTRIBUTE_NUM_REGS
	funcPTXVersion           = 5 // CU_FUNC_ATTRIBUTE_PTX_VERSION
	funcBinaryVersion        = 6 // CU_FUNC_ATTRIBUTE_BINARY_VERSION
	funcMaxDynamicSharedSize = 8 // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
	// funcPreferredSharedCarveout is
	// CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT.
	funcPreferredSharedCarveout = 9
	// funcNonPortableClusterSizeAllowed is
	// CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED.
	funcNonPortableClusterSizeAllowed = 14
)

// JITOptions are the options of a PTX JIT compilation.
type JITOptions struct {
	// MaxRegisters caps registers per thread (CU_JIT_MAX_REGISTERS);
	// 0 leaves it to the compiler (and to .maxnreg in the PTX).
	MaxRegisters int
	// OptLevel is CU_JIT_OPTIMIZATION_LEVEL, 0 to 4; -1 leaves the driver's
	// default (4). Note that the zero value asks for level 0.
	OptLevel int
	// LogSize is the size in bytes of each of the info and error log
	// buffers; 0 means 64 KiB.
	LogSize int
}

// JITLog is what the JIT compiler reported. When the driver's JIT cache
// (~/.nv/ComputeCache, unless CUDA_CACHE_DISABLE=1) already holds the
// compiled module no compiler runs: Info is empty and WallTime is 0. Read a
// kernel's resources from Function.Attributes, not from the log.
type JITLog struct {
	Info, Error string
	WallTime    float32 // compilation wall time in milliseconds (CU_JIT_WALL_TIME)
}

// Module is a loaded CUDA module.
type Module struct {
	d *Driver
	h uintptr // CUmodule
}

// LoadPTX JIT-compiles and loads PTX text for the context's device
// (cuModuleLoadDataEx) with verbose info and error logs, the wall time, and
// the registers cap and optimization level when set. The log is returned
// also on failure, and the error then includes the error log text.
func (c *Context) LoadPTX(ptx string, o JITOptions) (*Module, JITLog, error) {
	if o.MaxRegisters < 0 {
		return nil, JITLog{}, fmt.Errorf("cuda: LoadPTX: MaxRegisters %d, want >= 0 (0: unset)", o.MaxRegisters)
	}
	if o.OptLevel < -1 || o.OptLevel > 4 {
		return nil, JITLog{}, fmt.Errorf("cuda: LoadPTX: OptLevel %d, want 0..4 or -1 (driver default)", o.OptLevel)
	}
	logSize := o.LogSize
	if logSize == 0 {
		logSize = defaultJITLogBytes
	}
	if logSize < 0 || uint64(logSize) > math.MaxUint32 {
		return nil, JITLog{}, fmt.Errorf("cuda: LoadPTX: LogSize %d, want 1..%d (0: 64 KiB)", o.LogSize, uint32(math.MaxUint32))
	}

	image := cstring(ptx)
	infoLog := make([]byte, logSize)
	errLog := make([]byte, logSize)

	// options[i] is a CUjit_option; values[i] the matching void* slot, which
	// holds a pointer, or a scalar in its low bits, and into which the driver
	// writes outputs (log sizes, wall time).
	opts := make([]int32, 0, 8)
	vals := make([]uintptr, 0, 8)
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&infoLog[0])
	pin.Pin(&errLog[0])
	add := func(opt int32, v uintptr) int {
		opts = append(opts, opt)
		vals = append(vals, v)
		return len(opts) - 1
	}
	add(jitInfoLogBuffer, uintptr(unsafe.Pointer(&infoLog[0])))
	infoSize := add(jitInfoLogBufferSizeBytes, uintptr(logSize))
	add(jitErrorLogBuffer, uintptr(unsafe.Pointer(&errLog[0])))
	errSize := add(jitErrorLogBufferSizeBytes, uintptr(logSize))
	add(jitLogVerbose, 1)
	wall := add(jitWallTime, 0)
	if o.MaxRegisters > 0 {
		add(jitMaxRegisters, uintptr(o.MaxRegisters))
	}
	if o.OptLevel >= 0 {
		add(jitOptimizationLevel, uintptr(o.OptLevel))
	}
	pin.Pin(&opts[0])
	pin.Pin(&vals[0])

	var h uintptr
	code := c.d.api.cuModuleLoadDataEx(&h, unsafe.Pointer(&image[0]), uint32(len(opts)),
		unsafe.Pointer(&opts[0]), unsafe.Pointer(&vals[0]))
	runtime.KeepAlive(image)

	log := JITLog{
		Info:     logText(infoLog, uint32(vals[infoSize])),
		Error:    logText(errLog, uint32(vals[errSize])),
		WallTime: math.Float32frombits(uint32(vals[wall])),
	}
	if err := c.d.check("cuModuleLoadDataEx", code); err != nil {
		if msg := strings.TrimSpace(log.Error); msg != "" {
			err = fmt.Errorf("%w\n%s", err, msg)
		}
		return nil, log, err
	}
	return &Module{d: c.d, h: h}, log, nil
}

// logText returns the log the driver wrote into buf; n is the size slot the
// driver updated (bytes written, including the terminating NUL).
func logText(buf []byte, n uint32) string {
	if uint64(n) > uint64(len(buf)) {
		n = uint32(len(buf))
	}
	return strings.TrimRight(cstringToGo(buf[:n]), "\n")
}

// LoadImage loads a module from a cubin (or fatbin, or NUL-terminated PTX)
// image (cuModuleLoadData).
func (c *Context) LoadImage(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: LoadImage: empty image")
	}
	var h uintptr
	if err := c.d.check("cuModuleLoadData", c.d.api.cuModuleLoadData(&h, unsafe.Pointer(&image[0]))); err != nil {
		return nil, err
	}
	return &Module{d: c.d, h: h}, nil
}

// Function returns the kernel with the given (mangled, .entry) name
// (cuModuleGetFunction).
func (m *Module) Function(name string) (*Function, error) {
	cname := cstring(name)
	var h uintptr
	if err := m.d.check("cuModuleGetFunction", m.d.api.cuModuleGetFunction(&h, m.h, unsafe.Pointer(&cname[0]))); err != nil {
		return nil, fmt.Errorf("%w (function %q)", err, name)
	}
	return &Function{d: m.d, h: h, name: name}, nil
}

// Unload unloads the module (cuModuleUnload); its functions become invalid.
// Unloading twice is a no-op.
func (m *Module) Unload() error {
	if m == nil || m.h == 0 {
		return nil
	}
	h := m.h
	m.h = 0
	return m.d.check("cuModuleUnload", m.d.api.cuModuleUnload(h))
}

// Function is a kernel in a loaded module.
type Function struct {
	d    *Driver
	h    uintptr // CUfunction
	name string
	// nonPortable is set once launches may use clusters of more than
	// MaxPortableClusterSize blocks.
	nonPortable bool
}

// Name returns the kernel's name.
func (f *Function) Name() string { return f.name }

// FuncAttrs are a compiled kernel's resources (cuFuncGetAttribute).
type FuncAttrs struct {
	Registers          int // per thread
	LocalBytes         int // local memory per thread (spills, local arrays)
	SharedBytes        int // static shared memory per block
	ConstBytes         int // user constant memory
	MaxThreadsPerBlock int // the most threads per block a launch may use
	PTXVersion         int // 10*major + minor of the PTX virtual architecture, e.g. 80
	BinaryVersion      int // 10*major + minor of the SASS, e.g. 90
}

// Attributes returns the kernel's resources.
func (f *Function) Attributes() (FuncAttrs, error) {
	var a FuncAttrs
	for _, q := range []struct {
		attr int32
		dst  *int
	}{
		{funcNumRegs, &a.Registers},
		{funcLocalSizeBytes, &a.LocalBytes},
		{funcSharedSizeBytes, &a.SharedBytes},
		{funcConstSizeBytes, &a.ConstBytes},
		{funcMaxThreadsPerBlock, &a.MaxThreadsPerBlock},
		{funcPTXVersion, &a.PTXVersion},
		{funcBinaryVersion, &a.BinaryVersion},
	} {
		var v int32
		if err := f.d.check(fmt.Sprintf("cuFuncGetAttribute(%d)", q.attr), f.d.api.cuFuncGetAttribute(&v, q.attr, f.h)); err != nil {
			return FuncAttrs{}, err
		}
		*q.dst = int(v)
	}
	return a, nil
}

// SetMaxDynamicShared sets how many bytes of dynamic shared memory launches
// of f may request (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). Above
// 48 KiB this opt-in is required; static plus dynamic shared memory must stay
// within Device.MaxSharedPerBlockOptin.
func (f *Function) SetMaxDynamicShared(bytes int) error {
	if bytes < 0 || bytes > math.MaxInt32 {
		return fmt.Errorf("cuda: SetMaxDynamicShared: %d bytes out of range", bytes)
	}
	return f.d.check("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
		f.d.api.cuFuncSetAttribute(f.h, funcMaxDynamicSharedSize, int32(bytes)))
}

// PreferMaxShared sets f's preferred shared-memory carveout to the
// largest the device has (CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
// = 100, CU_SHAREDMEM_CARVEOUT_MAX_SHARED), so that CTAs built to share an
// SM find its shared memory configured for all of them.
func (f *Function) PreferMaxShared() error {
	return f.d.check("cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT)",
		f.d.api.cuFuncSetAttribute(f.h, funcPreferredSharedCarveout, 100))
}

// MaxActiveBlocksPerSM returns how many blocks of blockSize threads, each
// with dynSmem bytes of dynamic shared memory, fit on one multiprocessor
// (cuOccupancyMaxActiveBlocksPerMultiprocessor).
func (f *Function) MaxActiveBlocksPerSM(blockSize, dynSmem int) (int, error) {
	if blockSize <= 0 || blockSize > math.MaxInt32 || dynSmem < 0 {
		return 0, fmt.Errorf("cuda: MaxActiveBlocksPerSM: block size %d, dynamic shared %d out of range", blockSize, dynSmem)
	}
	var n int32
	if err := f.d.check("cuOccupancyMaxActiveBlocksPerMultiprocessor",
		f.d.api.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f.h, int32(blockSize), uintptr(dynSmem))); err != nil {
		return 0, err
	}
	return int(n), nil
}

// allowNonPortableCluster lets launches of f use clusters of up to
// MaxClusterSize blocks (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED),
// once per function.
func (f *Function) allowNonPortableCluster() error {
	if f.nonPortable {
		return nil
	}
	if err := f.d.check("cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)",
		f.d.api.cuFuncSetAttribute(f.h, funcNonPortableClusterSizeAllowed, 1)); err != nil {
		return fmt.Errorf("%w (kernel %s)", err, f.name)
	}
	f.nonPortable = true
	return nil
}

// jitInputPTX is CU_JIT_INPUT_PTX.
const jitInputPTX = 1

// LinkPTX compiles PTX text into a cubin for the context's device with the
// driver's linker (cuLinkCreate, cuLinkAddData, cuLinkComplete), without
// loading it: the cubin loads later with LoadImage, in this process or
// another on the same GPU model and driver. Options as for LoadPTX; the
// error includes the error log.
func (c *Context) LinkPTX(ptx string, o JITOptions) ([]byte, error) {
	a := &c.d.api
	if a.cuLinkCreate == nil || a.cuLinkAddData == nil || a.cuLinkComplete == nil || a.cuLinkDestroy == nil {
		return nil, fmt.Errorf("cuda: LinkPTX: this driver has no linker entry points")
	}
	errLog := make([]byte, defaultJITLogBytes)
	opts := []int32{jitErrorLogBuffer, jitErrorLogBufferSizeBytes}
	vals := []uintptr{uintptr(unsafe.Pointer(&errLog[0])), uintptr(len(errLog))}
	if o.MaxRegisters > 0 {
		opts, vals = append(opts, jitMaxRegisters), append(vals, uintptr(o.MaxRegisters))
	}
	if o.OptLevel >= 0 {
		opts, vals = append(opts, jitOptimizationLevel), append(vals, uintptr(o.OptLevel))
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&errLog[0])
	pin.Pin(&opts[0])
	pin.Pin(&vals[0])
	var state uintptr
	if err := c.d.check("cuLinkCreate", a.cuLinkCreate(uint32(len(opts)), unsafe.Pointer(&opts[0]), unsafe.Pointer(&vals[0]), &state)); err != nil {
		return nil, err
	}
	defer a.cuLinkDestroy(state)
	image := cstring(ptx)
	name := cstring("variant.ptx")
	code := a.cuLinkAddData(state, jitInputPTX, unsafe.Pointer(&image[0]), uintptr(len(image)), unsafe.Pointer(&name[0]), 0, nil, nil)
	if err := c.d.check("cuLinkAddData", code); err != nil {
		return nil, linkErr(err, errLog, vals[1])
	}
	var cubin unsafe.Pointer
	var size uintptr
	if err := c.d.check("cuLinkComplete", a.cuLinkComplete(state, &cubin, &size)); err != nil {
		return nil, linkErr(err, errLog, vals[1])
	}
	// The cubin belongs to the link state: copy it before destroying that.
	return append([]byte(nil), unsafe.Slice((*byte)(cubin), size)...), nil
}

func linkErr(err error, log []byte, n uintptr) error {
	if msg := strings.TrimSpace(logText(log, uint32(n))); msg != "" {
		return fmt.Errorf("%w\n%s", err, msg)
	}
	return err
}
