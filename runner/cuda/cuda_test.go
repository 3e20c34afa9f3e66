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

// slotBytes returns the 8 bytes of a packed slot in memory order.
func slotBytes(s uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&s)), 8)
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
	slots, err := packArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != len(args) {
		t.Fatalf("packArgs returned %d slots for %d args", len(slots), len(args))
	}
	for i, w := range want {
		got := slotBytes(slots[i])[:len(w)]
		if string(got) != string(w) {
			t.Errorf("arg %d (%T %v): slot bytes % x, want % x", i, args[i], args[i], got, w)
		}
	}
	if got := slotBytes(slots[5])[:4]; string(got) != "\x00\x00\xc0\x3f" {
		t.Errorf("float32 1.5 packed as % x", got)
	}

	if slots, err := packArgs(nil); err != nil || len(slots) != 0 {
		t.Errorf("packArgs(nil) = %v, %v", slots, err)
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
	cfg := dependentConfig([3]int{132, 2, 1}, [3]int{256, 1, 1}, 4096, 0x1234)
	if cfg.gridDimX != 132 || cfg.gridDimY != 2 || cfg.gridDimZ != 1 ||
		cfg.blockDimX != 256 || cfg.blockDimY != 1 || cfg.blockDimZ != 1 ||
		cfg.sharedMemBytes != 4096 || cfg.hStream != 0x1234 {
		t.Errorf("config = %+v", *cfg)
	}
	if cfg.numAttrs != 1 || cfg.attrs == nil {
		t.Fatalf("config has %d attributes at %p, want 1", cfg.numAttrs, cfg.attrs)
	}
	a := cfg.attrs
	if a.id != 6 { // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
		t.Errorf("attribute id = %d, want 6", a.id)
	}
	// programmaticStreamSerializationAllowed: an int in the union's first
	// 4 bytes; the rest stays zero.
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&a.value)), unsafe.Sizeof(a.value))
	if got := *(*int32)(unsafe.Pointer(&raw[0])); got != 1 {
		t.Errorf("programmaticStreamSerializationAllowed = %d, want 1", got)
	}
	for i, b := range raw[4:] {
		if b != 0 {
			t.Errorf("attribute value byte %d = %#x, want 0", 4+i, b)
		}
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
	optional := 0
	for _, b := range new(api).bindings() {
		if b.optional {
			optional++
			if b.name != "cuLaunchKernelEx" || b.abi != 12000 {
				t.Errorf("unexpected optional binding %s (ABI %d)", b.name, b.abi)
			}
		}
	}
	if optional != 1 {
		t.Errorf("%d optional bindings, want 1 (cuLaunchKernelEx)", optional)
	}
}
