package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driverPresent reports whether this machine can load libcuda.so.1.
func driverPresent() bool {
	h, err := purego.Dlopen(libName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return false
	}
	_ = purego.Dlclose(h)
	return true
}

func TestOpenWithoutDriver(t *testing.T) {
	if driverPresent() {
		t.Skip("libcuda.so.1 is present on this machine")
	}
	for range 2 { // the cached second answer must be the same
		d, err := Open()
		if err == nil {
			t.Fatalf("Open() = %v, nil; want an error", d)
		}
		if d != nil {
			t.Errorf("Open() returned a driver with error %v", err)
		}
		t.Logf("Open() error: %v", err)
		if !errors.Is(err, ErrNoDriver) {
			t.Errorf("Open() error %q does not wrap ErrNoDriver", err)
		}
		if !strings.Contains(err.Error(), "libcuda.so.1") {
			t.Errorf("Open() error %q does not name libcuda.so.1", err)
		}
		if IsSticky(err) {
			t.Errorf("IsSticky(%q) = true", err)
		}
	}
}

func TestLoadMissingLibrary(t *testing.T) {
	_, err := load("/nonexistent/libcuda.so.1")
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("load(nonexistent) = %v, want ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), "/nonexistent/libcuda.so.1") {
		t.Errorf("error %q does not name the path", err)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{
			&Error{Op: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"},
			"cuda: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory",
		},
		{
			&Error{Op: "cuInit", Code: 12345},
			"cuda: cuInit: CUDA_ERROR (12345)",
		},
		// The fallback table fills name and message without a driver.
		{newError(nil, "cuMemAlloc", 2), "cuda: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{newError(nil, "cuCtxSynchronize", 700), "cuda: cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"},
		{newError(nil, "cuModuleLoadDataEx", 218), "cuda: cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed"},
		{newError(nil, "cuX", 4242), "cuda: cuX: CUDA_ERROR (4242)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorTableNames(t *testing.T) {
	for code, v := range errorTable {
		if !strings.HasPrefix(v[0], "CUDA_") || v[1] == "" {
			t.Errorf("errorTable[%d] = %q", code, v)
		}
	}
	// A few values the package relies on, from cuda.h.
	for code, name := range map[int]string{
		1: "CUDA_ERROR_INVALID_VALUE", 100: "CUDA_ERROR_NO_DEVICE", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
		700: "CUDA_ERROR_ILLEGAL_ADDRESS", 716: "CUDA_ERROR_MISALIGNED_ADDRESS", 719: "CUDA_ERROR_LAUNCH_FAILED",
		801: "CUDA_ERROR_NOT_SUPPORTED",
	} {
		if got := errorTable[code][0]; got != name {
			t.Errorf("errorTable[%d] = %q, want %q", code, got, name)
		}
	}
}

func TestIsSticky(t *testing.T) {
	tests := []struct {
		code int
		want bool
	}{
		{1, false},   // INVALID_VALUE
		{2, false},   // OUT_OF_MEMORY
		{200, false}, // INVALID_IMAGE
		{218, false}, // INVALID_PTX
		{500, false}, // NOT_FOUND
		{600, false}, // NOT_READY
		{701, false}, // LAUNCH_OUT_OF_RESOURCES: the launch is refused, the context is fine
		{999, false}, // UNKNOWN
		{214, true},  // ECC_UNCORRECTABLE
		{220, true},  // NVLINK_UNCORRECTABLE
		{226, true},  // CONTAINED
		{700, true},  // ILLEGAL_ADDRESS
		{702, true},  // LAUNCH_TIMEOUT
		{709, true},  // CONTEXT_IS_DESTROYED
		{710, true},  // ASSERT
		{714, true},  // HARDWARE_STACK_ERROR
		{715, true},  // ILLEGAL_INSTRUCTION
		{716, true},  // MISALIGNED_ADDRESS
		{717, true},  // INVALID_ADDRESS_SPACE
		{718, true},  // INVALID_PC
		{719, true},  // LAUNCH_FAILED
	}
	for _, tt := range tests {
		err := newError(nil, "cuCtxSynchronize", int32(tt.code))
		if got := IsSticky(err); got != tt.want {
			t.Errorf("IsSticky(%v) = %v, want %v", err, got, tt.want)
		}
		wrapped := fmt.Errorf("validate variant: %w", err)
		if got := IsSticky(wrapped); got != tt.want {
			t.Errorf("IsSticky(wrapped %v) = %v, want %v", err, got, tt.want)
		}
	}
	if IsSticky(nil) || IsSticky(errors.New("cuda: other")) {
		t.Error("IsSticky is true for a non-CUDA error")
	}
}

func TestFormatUUID(t *testing.T) {
	tests := []struct {
		b    [16]byte
		want string
	}{
		{[16]byte{}, "GPU-00000000-0000-0000-0000-000000000000"},
		{
			[16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10},
			"GPU-01234567-89ab-cdef-fedc-ba9876543210",
		},
		{
			[16]byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
			"GPU-deadbeef-0001-0203-0405-060708090a0b",
		},
	}
	for _, tt := range tests {
		if got := formatUUID(tt.b); got != tt.want {
			t.Errorf("formatUUID(% x) = %q, want %q", tt.b, got, tt.want)
		}
	}
}

func TestVersionString(t *testing.T) {
	for v, want := range map[int]string{13000: "13.0", 12080: "12.8", 11020: "11.2", 13010: "13.1"} {
		if got := versionString(v); got != want {
			t.Errorf("versionString(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestRequestVersion(t *testing.T) {
	tests := []struct{ abi, driver, want int }{
		{0, 13000, baseABI},
		{0, 12000, 12000},
		{12080, 13000, 12080},
		{12080, 12040, 12040}, // older drivers give the original cuEventElapsedTime
		{0, 13010, baseABI},
	}
	for _, tt := range tests {
		if got := requestVersion(tt.abi, tt.driver); got != tt.want {
			t.Errorf("requestVersion(%d, %d) = %d, want %d", tt.abi, tt.driver, got, tt.want)
		}
	}
	seen := map[string]bool{}
	for _, b := range new(api).bindings() {
		if seen[b.name] {
			t.Errorf("binding %s listed twice", b.name)
		}
		seen[b.name] = true
		if strings.Contains(b.name, "_v") {
			t.Errorf("binding %s is not a base name", b.name)
		}
	}
}

func TestCStrings(t *testing.T) {
	b := cstring("cuMemAlloc")
	if len(b) != len("cuMemAlloc")+1 || b[len(b)-1] != 0 || string(b[:len(b)-1]) != "cuMemAlloc" {
		t.Errorf("cstring = %q", b)
	}
	if got := cstringToGo([]byte("NVIDIA H200\x00junk")); got != "NVIDIA H200" {
		t.Errorf("cstringToGo = %q", got)
	}
	if got := cstringToGo([]byte("no terminator")); got != "no terminator" {
		t.Errorf("cstringToGo = %q", got)
	}
	if got := goString(&b[0]); got != "cuMemAlloc" {
		t.Errorf("goString = %q", got)
	}
	if got := logText([]byte("line 1\nline 2\n\x00\x00\x00"), 15); got != "line 1\nline 2" {
		t.Errorf("logText = %q", got)
	}
	if got := logText([]byte("abc"), 99); got != "abc" {
		t.Errorf("logText with oversize count = %q", got)
	}
}

// argBytes returns the n bytes of packed argument i.
func argBytes(p *packedArgs, i, n int) []byte {
	return unsafe.Slice((*byte)(p.ptrs[i]), n)
}

func TestPackArgs(t *testing.T) {
	le := binary.LittleEndian
	u32 := func(v uint32) []byte { return le.AppendUint32(nil, v) }
	u64 := func(v uint64) []byte { return le.AppendUint64(nil, v) }
	args := []any{
		DevicePtr(0x7f0012345600),
		uint64(0x0102030405060708),
		int64(-2),
		uint32(0xdeadbeef),
		int32(-1),
		float32(1.5),
		float64(-0.25),
		uint32(7),
	}
	want := [][]byte{
		u64(0x7f0012345600),
		u64(0x0102030405060708),
		u64(0xfffffffffffffffe),
		u32(0xdeadbeef),
		u32(0xffffffff),
		u32(math.Float32bits(1.5)), // 0x3fc00000
		u64(math.Float64bits(-0.25)),
		u32(7),
	}
	// The tests compare little-endian encodings, the byte order of every
	// platform CUDA runs on.
	if one := uint16(1); *(*byte)(unsafe.Pointer(&one)) != 1 {
		t.Skip("big-endian host")
	}
	p, err := packArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ptrs) != len(args) {
		t.Fatalf("packArgs returned %d pointers for %d args", len(p.ptrs), len(args))
	}
	for i, w := range want {
		if got := argBytes(p, i, len(w)); string(got) != string(w) {
			t.Errorf("arg %d (%T %v): slot bytes % x, want % x", i, args[i], args[i], got, w)
		}
		if uintptr(p.ptrs[i])%8 != 0 {
			t.Errorf("arg %d at %p: not 8-byte aligned", i, p.ptrs[i])
		}
		if i > 0 && uintptr(p.ptrs[i])-uintptr(p.ptrs[i-1]) != 8 {
			t.Errorf("arg %d is %d bytes after arg %d, want 8", i, uintptr(p.ptrs[i])-uintptr(p.ptrs[i-1]), i-1)
		}
	}
	if got := argBytes(p, 5, 4); string(got) != "\x00\x00\xc0\x3f" {
		t.Errorf("float32 1.5 packed as % x", got)
	}

	if p, err := packArgs(nil); err != nil || len(p.ptrs) != 0 {
		t.Errorf("packArgs(nil) = %v, %v", p, err)
	}
}

// TestPackArgsTensorMap: a TensorMap is passed by value, all 128 bytes,
// 64-byte aligned, between scalars that keep their values.
func TestPackArgsTensorMap(t *testing.T) {
	var m1, m2 TensorMap
	for i := range m1 {
		m1[i], m2[i] = byte(i+1), byte(255-i)
	}
	args := []any{uint32(0xabcdef01), m1, DevicePtr(0x1234), m2, float32(2)}
	for range 20 { // heap addresses vary: align from several starts
		p, err := packArgs(args)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{1, 3} {
			if uintptr(p.ptrs[i])%64 != 0 {
				t.Errorf("tensor map %d at %p: not 64-byte aligned", i, p.ptrs[i])
			}
			if got := *(*TensorMap)(p.ptrs[i]); got != args[i].(TensorMap) {
				t.Errorf("tensor map %d packed as % x", i, got[:16])
			}
		}
		if *(*uint32)(p.ptrs[0]) != 0xabcdef01 || *(*DevicePtr)(p.ptrs[2]) != 0x1234 || *(*float32)(p.ptrs[4]) != 2 {
			t.Error("scalars around tensor maps changed")
		}
		for i := 1; i < len(args); i++ {
			if d := uintptr(p.ptrs[i]) - uintptr(p.ptrs[i-1]); d < 8 || (i == 2 || i == 4) && d != 128 {
				t.Errorf("arg %d starts %d bytes after arg %d", i, d, i-1)
			}
		}
		_ = make([]byte, 8*(1+len(p.buf)%7)) // move the next allocation
	}
}

func TestPackArgsRejects(t *testing.T) {
	var p DevicePtr
	for _, bad := range []any{
		int(1), uint(1), uintptr(1), int16(1), uint8(1), "x", nil, &p, []float32{1}, true,
		struct{ A int32 }{1}, complex64(1),
	} {
		_, err := packArgs([]any{float32(0), bad})
		if err == nil {
			t.Errorf("packArgs accepted %T", bad)
			continue
		}
		if !strings.Contains(err.Error(), "argument 1") || !strings.Contains(err.Error(), fmt.Sprintf("%T", bad)) {
			t.Errorf("packArgs(%T) error %q does not name the position and type", bad, err)
		}
	}
}

// TestLaunchStructLayout checks the Go mirrors of CUlaunchConfig and
// CUlaunchAttribute against the x86-64 C layouts in cuda.h.
func TestLaunchStructLayout(t *testing.T) {
	var c launchConfig
	var a launchAttribute
	for _, tt := range []struct {
		what      string
		got, want uintptr
	}{
		{"sizeof(CUlaunchConfig)", unsafe.Sizeof(c), 56},
		{"alignof(CUlaunchConfig)", unsafe.Alignof(c), 8},
		{"offsetof(CUlaunchConfig, sharedMemBytes)", unsafe.Offsetof(c.sharedMemBytes), 24},
		{"offsetof(CUlaunchConfig, hStream)", unsafe.Offsetof(c.hStream), 32},
		{"offsetof(CUlaunchConfig, attrs)", unsafe.Offsetof(c.attrs), 40},
		{"offsetof(CUlaunchConfig, numAttrs)", unsafe.Offsetof(c.numAttrs), 48},
		{"sizeof(CUlaunchAttribute)", unsafe.Sizeof(a), 72},
		{"alignof(CUlaunchAttribute)", unsafe.Alignof(a), 8},
		{"offsetof(CUlaunchAttribute, value)", unsafe.Offsetof(a.value), 8},
		{"sizeof(CUlaunchAttributeValue)", unsafe.Sizeof(a.value), 64},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.what, tt.got, tt.want)
		}
	}
}

func TestDependentConfig(t *testing.T) {
	cfg := LaunchConfig{Grid: [3]int{132, 2, 1}, Block: [3]int{256, 1, 1}, SharedBytes: 4096, Dependent: true}
	attrs := cfg.attributes()
	ex := exConfig(cfg, 0x1234, attrs)
	if ex.gridDimX != 132 || ex.gridDimY != 2 || ex.gridDimZ != 1 ||
		ex.blockDimX != 256 || ex.blockDimY != 1 || ex.blockDimZ != 1 ||
		ex.sharedMemBytes != 4096 || ex.hStream != 0x1234 {
		t.Errorf("config = %+v", *ex)
	}
	if ex.numAttrs != 1 || ex.attrs != &attrs[0] {
		t.Fatalf("config has %d attributes at %p, want 1", ex.numAttrs, ex.attrs)
	}
	// programmaticStreamSerializationAllowed: an int in the union's first
	// 4 bytes; the rest stays zero.
	checkAttr(t, attrs[0], 6, 1) // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
}

// checkAttr checks a launch attribute's id and the int32 values at the
// start of its value; the rest of the value must be zero.
func checkAttr(t *testing.T, a launchAttribute, id int32, vals ...int32) {
	t.Helper()
	if a.id != id {
		t.Errorf("attribute id = %d, want %d", a.id, id)
	}
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&a.value)), unsafe.Sizeof(a.value))
	for i, v := range vals {
		if got := *(*int32)(unsafe.Pointer(&raw[4*i])); got != v {
			t.Errorf("attribute %d value[%d] = %d, want %d", id, i, got, v)
		}
	}
	for i, b := range raw[4*len(vals):] {
		if b != 0 {
			t.Errorf("attribute %d value byte %d = %#x, want 0", id, 4*len(vals)+i, b)
		}
	}
}

func TestClusterConfig(t *testing.T) {
	cfg := LaunchConfig{Grid: [3]int{132, 4, 1}, Block: [3]int{384, 1, 1}, SharedBytes: 200 << 10,
		Cluster: [3]int{2, 2, 1}, Dependent: true}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	attrs := cfg.attributes()
	if len(attrs) != 2 {
		t.Fatalf("%d attributes, want cluster and dependent", len(attrs))
	}
	checkAttr(t, attrs[0], 4, 2, 2, 1) // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {x, y, z}
	checkAttr(t, attrs[1], 6, 1)
	if ex := exConfig(cfg, 0, attrs); ex.numAttrs != 2 || ex.sharedMemBytes != 200<<10 {
		t.Errorf("config = %+v", *ex)
	}
	plain := LaunchConfig{Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}}
	if a := plain.attributes(); len(a) != 0 {
		t.Errorf("a plain launch has attributes %+v", a)
	}
	if ex := exConfig(plain, 0, nil); ex.numAttrs != 0 || ex.attrs != nil {
		t.Errorf("plain config = %+v", *ex)
	}
}

func TestClusterConfigRejects(t *testing.T) {
	for _, tt := range []struct {
		grid, cluster [3]int
		want          string
	}{
		{[3]int{6, 1, 1}, [3]int{4, 1, 1}, "divide"},
		{[3]int{8, 1, 1}, [3]int{2, 0, 1}, "at least 1"},
		{[3]int{8, 1, 1}, [3]int{-2, 1, 1}, "at least 1"},
		{[3]int{32, 2, 1}, [3]int{16, 2, 1}, "32 blocks"},
		{[3]int{34, 1, 1}, [3]int{17, 1, 1}, "at least 1"},
	} {
		cfg := LaunchConfig{Grid: tt.grid, Block: [3]int{128, 1, 1}, Cluster: tt.cluster}
		err := cfg.check()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("grid %v cluster %v: error %v, want one saying %q", tt.grid, tt.cluster, err, tt.want)
		}
	}
	ok := LaunchConfig{Grid: [3]int{32, 1, 1}, Block: [3]int{128, 1, 1}, Cluster: [3]int{16, 1, 1}}
	if err := ok.check(); err != nil || ok.clusterSize() != 16 {
		t.Errorf("a 16-block cluster: %v (size %d)", err, ok.clusterSize())
	}
}

func TestClusterLaunchWithoutLaunchKernelEx(t *testing.T) {
	c := &Context{d: &Driver{}}
	f := &Function{name: "k"}
	cfg := LaunchConfig{Grid: [3]int{2, 1, 1}, Block: [3]int{32, 1, 1}, Cluster: [3]int{2, 1, 1}}
	if err := c.LaunchEx(f, cfg, nil); !errors.Is(err, ErrNoLaunchKernelEx) {
		t.Fatalf("LaunchEx with a cluster = %v, want ErrNoLaunchKernelEx", err)
	}
}

func TestEncodeTensorMapChecks(t *testing.T) {
	if _, err := new(Driver).EncodeTensorMapTiled(TensorMapSpec{}); !errors.Is(err, ErrNoTensorMap) {
		t.Errorf("without cuTensorMapEncodeTiled: %v, want ErrNoTensorMap", err)
	}
	called := 0
	d := &Driver{}
	d.api.cuTensorMapEncodeTiled = func(unsafe.Pointer, int32, uint32, uintptr, unsafe.Pointer, unsafe.Pointer, unsafe.Pointer, unsafe.Pointer, int32, int32, int32, int32) int32 {
		called++
		return 0
	}
	for _, s := range []TensorMapSpec{
		{Dims: nil},
		{Dims: []uint64{1, 2, 3, 4, 5, 6}, Strides: make([]uint64, 5), Box: make([]uint32, 6)},
		{Dims: []uint64{64, 64}, Strides: nil, Box: []uint32{64, 64}},
		{Dims: []uint64{64, 64}, Strides: []uint64{128}, Box: []uint32{64}},
		{Dims: []uint64{64}, Box: []uint32{64}, Swizzle: 16},
	} {
		if _, err := d.EncodeTensorMapTiled(s); err == nil {
			t.Errorf("spec %+v accepted", s)
		}
	}
	if called != 0 {
		t.Errorf("the driver was called %d times for malformed specs", called)
	}
}

// TestEncodeTensorMapArgs: what the driver receives, through a stand-in
// for cuTensorMapEncodeTiled.
func TestEncodeTensorMapArgs(t *testing.T) {
	d := &Driver{}
	d.api.cuTensorMapEncodeTiled = func(tm unsafe.Pointer, dt int32, rank uint32, global uintptr, dims, strides, box, elem unsafe.Pointer,
		interleave, swizzle, l2, oob int32) int32 {
		if uintptr(tm)%64 != 0 {
			t.Errorf("tensor map at %p: not 64-byte aligned", tm)
		}
		if dt != 9 || rank != 3 || global != 0x7000 || interleave != 0 || swizzle != 3 || l2 != 2 || oob != 0 {
			t.Errorf("type %d rank %d global %#x interleave %d swizzle %d l2 %d oob %d", dt, rank, global, interleave, swizzle, l2, oob)
		}
		if got := unsafe.Slice((*uint64)(dims), 3); got[0] != 64 || got[1] != 128 || got[2] != 4 {
			t.Errorf("dims %v", got)
		}
		if got := unsafe.Slice((*uint64)(strides), 2); got[0] != 8192 || got[1] != 128 {
			t.Errorf("strides %v", got)
		}
		if got := unsafe.Slice((*uint32)(box), 3); got[0] != 64 || got[1] != 32 || got[2] != 1 {
			t.Errorf("box %v", got)
		}
		if got := unsafe.Slice((*uint32)(elem), 3); got[0] != 1 || got[1] != 1 || got[2] != 1 {
			t.Errorf("element strides %v", got)
		}
		*(*byte)(tm), *(*byte)(unsafe.Add(tm, 127)) = 0xaa, 0xbb
		return 0
	}
	m, err := d.EncodeTensorMapTiled(TensorMapSpec{DataType: TensorBFloat16, Global: 0x7000,
		Dims: []uint64{64, 128, 4}, Strides: []uint64{8192, 128}, Box: []uint32{64, 32, 1}, Swizzle: 128})
	if err != nil {
		t.Fatal(err)
	}
	if m[0] != 0xaa || m[127] != 0xbb {
		t.Errorf("map bytes % x … % x: not what the driver wrote", m[:4], m[124:])
	}
}

func TestLaunchDependentWithoutLaunchKernelEx(t *testing.T) {
	// A driver whose cuLaunchKernelEx did not resolve: nothing is called,
	// and the error says why so the caller can fall back to Launch.
	c := &Context{d: &Driver{}}
	f := &Function{name: "k"}
	err := c.LaunchDependent(f, [3]int{1, 1, 1}, [3]int{32, 1, 1}, 0, nil, uint32(1))
	if !errors.Is(err, ErrNoLaunchKernelEx) {
		t.Fatalf("LaunchDependent = %v, want ErrNoLaunchKernelEx", err)
	}
	if !strings.Contains(err.Error(), "LaunchDependent k") {
		t.Errorf("error %q does not name the method and kernel", err)
	}
	if c.d.HasLaunchKernelEx() {
		t.Error("HasLaunchKernelEx = true without the entry point")
	}
}

func TestMissingProc(t *testing.T) {
	if !isMissingProc(fmt.Errorf("cuda: driver does not provide X: symbol not found: %w", errProcMissing)) {
		t.Error("a null function pointer is not a missing entry point")
	}
	if !isMissingProc(newError(nil, "cuGetProcAddress(X)", 500)) {
		t.Error("CUDA_ERROR_NOT_FOUND is not a missing entry point")
	}
	if isMissingProc(newError(nil, "cuGetProcAddress(X)", 1)) {
		t.Error("CUDA_ERROR_INVALID_VALUE counts as a missing entry point")
	}
	var optional []string
	for _, b := range new(api).bindings() {
		if b.optional {
			optional = append(optional, b.name)
			if b.abi != 12000 {
				t.Errorf("optional binding %s has ABI %d, want 12000", b.name, b.abi)
			}
		}
	}
	if got := strings.Join(optional, ","); got != "cuLinkCreate,cuLinkAddData,cuLinkComplete,cuLinkDestroy,cuLaunchKernelEx,cuTensorMapEncodeTiled" {
		t.Errorf("optional bindings %s, want the linker's four, cuLaunchKernelEx and cuTensorMapEncodeTiled", got)
	}
}
