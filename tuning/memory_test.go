package tuning

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/runner"
)

func TestInterpreterBytes(t *testing.T) {
	fs, _ := mustShape(t, "relu_bwd", "n=1000", dtype.F32)
	// dy, x, dx: 4000 bytes each; twice the bytes and 8 bytes per element.
	if got, want := InterpreterBytes(fs.F, fs.S), uint64(3*(2*4000+8*1000)); got != want {
		t.Errorf("InterpreterBytes = %d, want %d", got, want)
	}
	info := runner.DeviceInfo{Name: "GPU", L2Bytes: 50 << 20, MemBytes: 1 << 30}
	if got, want := DeviceBytes(fs.F, fs.S, info), uint64(3*4000+128<<20); got != want {
		t.Errorf("DeviceBytes = %d, want %d", got, want)
	}
}

// TestExactBytes: gemm_bwd's exact inputs (kernels.Exacter) count a
// second time, its output's reference once more on the host.
func TestExactBytes(t *testing.T) {
	fs, _ := mustShape(t, "gemm_bwd", "m=8,n=16,k=24,grad=dx", dtype.BF16)
	// dy 8×16, w 16×24, dx 8×24, bf16.
	dy, w, dx := uint64(8*16), uint64(16*24), uint64(8*24)
	in := 2*(2*2*dy+8*dy) + 2*(2*2*w+8*w)
	if got, want := InterpreterBytes(fs.F, fs.S), in+2*2*dx+2*8*dx; got != want {
		t.Errorf("InterpreterBytes = %d, want %d", got, want)
	}
	info := runner.DeviceInfo{Name: "GPU", L2Bytes: 50 << 20, MemBytes: 1 << 30}
	if got, want := DeviceBytes(fs.F, fs.S, info), 2*2*(dy+w)+2*dx+128<<20; got != want {
		t.Errorf("DeviceBytes = %d, want %d", got, want)
	}
}

func TestCheckHostAndDevice(t *testing.T) {
	big, err := Resolve(Request{Kernels: "softmax_bwd", Shapes: "m=40000,n=50000", DTypes: "f32"})
	if err != nil {
		t.Fatal(err)
	}
	lim := Limit{Bytes: 8 << 30, Source: "test memory"}
	err = CheckHost(big, lim)
	if err == nil || !IsInput(err) {
		t.Fatalf("CheckHost: %v", err)
	}
	for _, want := range []string{"softmax_bwd m=40000,n=50000,dtype=f32", "89.4 GiB", "8.0 GiB of test memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	small, err := Resolve(Request{Kernels: "softmax_bwd", Shapes: "m=4,n=50", DTypes: "f32"})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHost(small, lim); err != nil {
		t.Errorf("small shape refused: %v", err)
	}
	h200 := runner.DeviceInfo{Name: "NVIDIA H200", L2Bytes: 60 << 20, MemBytes: 141 << 30}
	if err := CheckDevice(big, h200); err != nil {
		t.Errorf("22 GiB of buffers refused on an H200: %v", err)
	}
	small16 := runner.DeviceInfo{Name: "small GPU", L2Bytes: 4 << 20, MemBytes: 16 << 30}
	if err := CheckDevice(big, small16); err == nil || !strings.Contains(err.Error(), "16.0 GiB of memory of small GPU") {
		t.Errorf("CheckDevice on 16 GiB: %v", err)
	}
}

func TestHostLimit(t *testing.T) {
	lim, err := HostLimit()
	if err != nil {
		t.Skipf("no /proc/meminfo: %v", err)
	}
	if lim.Bytes < 1<<20 || !strings.Contains(lim.Source, "MemAvailable") {
		t.Errorf("HostLimit = %+v", lim)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 bytes", 1023: "1023 bytes", 1536: "1.5 KiB", 3 << 30: "3.0 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
