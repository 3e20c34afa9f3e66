package cuda

import (
	"errors"
	"strings"
	"testing"
)

func TestBLASCandidates(t *testing.T) {
	var got []string
	for _, c := range blasCandidates("/opt/cuda-13/") {
		got = append(got, c.lt+"|"+c.blas)
	}
	want := []string{
		"|libcublas.so.13", "|libcublas.so.12", "|libcublas.so.11",
		"/usr/local/cuda/lib64/libcublasLt.so.13|/usr/local/cuda/lib64/libcublas.so.13",
		"/usr/local/cuda/lib64/libcublasLt.so.12|/usr/local/cuda/lib64/libcublas.so.12",
		"/usr/local/cuda/lib64/libcublasLt.so.11|/usr/local/cuda/lib64/libcublas.so.11",
		"/opt/cuda-13/lib64/libcublasLt.so.13|/opt/cuda-13/lib64/libcublas.so.13",
		"/opt/cuda-13/lib64/libcublasLt.so.12|/opt/cuda-13/lib64/libcublas.so.12",
		"/opt/cuda-13/lib64/libcublasLt.so.11|/opt/cuda-13/lib64/libcublas.so.11",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("candidates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// CUDA_HOME unset or the default directory adds nothing.
	for _, home := range []string{"", "/usr/local/cuda", "/usr/local/cuda/"} {
		if n := len(blasCandidates(home)); n != 6 {
			t.Errorf("CUDA_HOME=%q: %d candidates, want 6", home, n)
		}
	}
}

// TestOpenBLASAbsent: without a library, OpenBLAS's and OpenBLASLt's
// errors wrap ErrNoBLAS and ErrNoBLASLt and say what each candidate
// answered.
func TestOpenBLASAbsent(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		lib      string
		sentinel error
		open     func(absent bool) error
		want     []string
	}{
		{"cuBLAS", ErrNoBLAS, func(absent bool) error {
			cands := blasCandidates("")
			if absent {
				cands = []blasCandidate{{blas: "libcublas-absent.so.99"}, {lt: dir + "/libcublasLt.so.13", blas: dir + "/libcublas.so.13"}}
			}
			_, err := openBLAS(cands, nil)
			return err
		}, []string{"dlopen libcublas-absent.so.99", dir + "/libcublasLt.so.13: not found"}},
		{"cuBLASLt", ErrNoBLASLt, func(absent bool) error {
			cands := ltCandidates("")
			if absent {
				cands = []string{"libcublasLt-absent.so.99", dir + "/libcublasLt.so.13"}
			}
			_, err := openBLASLt(nil, cands, nil)
			return err
		}, []string{"dlopen libcublasLt-absent.so.99", dir + "/libcublasLt.so.13: not found"}},
	} {
		err := tt.open(true)
		if !errors.Is(err, tt.sentinel) {
			t.Fatalf("%s: %v, want %v", tt.lib, err, tt.sentinel)
		}
		for _, want := range tt.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", tt.lib, err, want)
			}
		}
		if driverPresent() {
			continue // a GPU host may well have the library
		}
		if err := tt.open(false); !errors.Is(err, tt.sentinel) {
			t.Errorf("without a GPU, %s's candidates gave %v, want %v", tt.lib, err, tt.sentinel)
		}
	}
}

func TestGemmCheck(t *testing.T) {
	ok := Gemm{M: 64, N: 32, K: 16, LDA: 64, LDB: 16, LDC: 64}
	if err := ok.Check(); err != nil {
		t.Errorf("%+v: %v", ok, err)
	}
	trans := Gemm{TransA: true, TransB: true, M: 64, N: 32, K: 16, LDA: 16, LDB: 32, LDC: 64}
	if err := trans.Check(); err != nil {
		t.Errorf("%+v: %v", trans, err)
	}
	for _, g := range []Gemm{
		{M: 0, N: 32, K: 16, LDA: 64, LDB: 16, LDC: 64},
		{M: 64, N: 32, K: 1 << 31, LDA: 64, LDB: 1 << 31, LDC: 64},
		{M: 64, N: 32, K: 16, LDA: 63, LDB: 16, LDC: 64},
		{TransA: true, M: 64, N: 32, K: 16, LDA: 15, LDB: 16, LDC: 64},
		{TransB: true, M: 64, N: 32, K: 16, LDA: 64, LDB: 16, LDC: 64},
		{M: 64, N: 32, K: 16, LDA: 64, LDB: 16, LDC: 32},
	} {
		if err := g.Check(); err == nil {
			t.Errorf("%+v accepted", g)
		}
	}
}

func TestBLASError(t *testing.T) {
	if blasCheck("x", 0) != nil {
		t.Error("status 0 is an error")
	}
	err := blasCheck("cublasGemmEx", 15)
	if err == nil || err.Error() != "cublas: cublasGemmEx: CUBLAS_STATUS_NOT_SUPPORTED (15)" {
		t.Errorf("error = %v", err)
	}
	var e *BLASError
	if !errors.As(err, &e) || e.Status != 15 {
		t.Errorf("%v is not a *BLASError with status 15", err)
	}
}
