package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrNoBLAS reports that no cuBLAS library could be loaded and initialized;
// [Context.OpenBLAS] wraps it with what each candidate said.
var ErrNoBLAS = errors.New("cuBLAS not found")

// blasVersions are the cuBLAS major versions tried, newest first.
var blasVersions = []string{"13", "12", "11"}

// blasCandidate is one library to try: the cuBLAS path and, when loading
// from a directory, the libcublasLt beside it, loaded first so that
// libcublas finds its dependency there too.
type blasCandidate struct{ lt, blas string }

// blasCandidates lists, in order: libcublas.so.13, .12, .11 by name (the
// dynamic loader's path), then each from /usr/local/cuda/lib64 (not in the
// ldconfig cache on every GPU host), then from $CUDA_HOME/lib64 when
// cudaHome is set and another directory.
func blasCandidates(cudaHome string) []blasCandidate {
	var out []blasCandidate
	for _, v := range blasVersions {
		out = append(out, blasCandidate{blas: "libcublas.so." + v})
	}
	dirs := []string{"/usr/local/cuda/lib64"}
	if cudaHome != "" && filepath.Clean(filepath.Join(cudaHome, "lib64")) != dirs[0] {
		dirs = append(dirs, filepath.Join(cudaHome, "lib64"))
	}
	for _, d := range dirs {
		for _, v := range blasVersions {
			out = append(out, blasCandidate{lt: filepath.Join(d, "libcublasLt.so."+v), blas: filepath.Join(d, "libcublas.so."+v)})
		}
	}
	return out
}

// blasAPI holds the cuBLAS entry points (cublas_api.h): statuses are
// int32, handles and streams uintptr, device pointers uint64, enums int32.
type blasAPI struct {
	cublasCreate     func(handle *uintptr) int32
	cublasDestroy    func(handle uintptr) int32
	cublasSetStream  func(handle, stream uintptr) int32
	cublasGetVersion func(handle uintptr, version *int32) int32
	cublasGemmEx     func(handle uintptr, transa, transb int32, m, n, k int32, alpha unsafe.Pointer,
		a uint64, atype, lda int32, b uint64, btype, ldb int32, beta unsafe.Pointer,
		c uint64, ctype, ldc int32, computeType, algo int32) int32
}

// symbols lists the entry points by their exported names.
func (a *blasAPI) symbols() []symbol {
	return []symbol{
		{"cublasCreate_v2", &a.cublasCreate},
		{"cublasDestroy_v2", &a.cublasDestroy},
		{"cublasSetStream_v2", &a.cublasSetStream},
		{"cublasGetVersion_v2", &a.cublasGetVersion},
		{"cublasGemmEx", &a.cublasGemmEx},
	}
}

// symbol is one entry point to bind: its exported name and the Go
// function variable that purego makes call it.
type symbol struct {
	name string
	fn   any
}

// dlopen opens a library by name (the dynamic loader's path) or by path;
// a path that does not exist is reported as "not found".
func dlopen(lib string) (uintptr, error) {
	if strings.Contains(lib, "/") {
		if _, err := os.Stat(lib); err != nil {
			return 0, fmt.Errorf("%s: not found", lib)
		}
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return 0, fmt.Errorf("dlopen %s: %v", lib, err)
	}
	return h, nil
}

// bindSymbols binds every symbol of syms from lib (the library at path);
// when one is missing it closes lib and says which.
func bindSymbols(lib uintptr, path string, syms []symbol) (err error) {
	defer func() {
		if r := recover(); r != nil {
			purego.Dlclose(lib)
			err = fmt.Errorf("binding %s: %v", path, r)
		}
	}()
	for _, s := range syms {
		p, err := purego.Dlsym(lib, s.name)
		if err != nil || p == 0 {
			purego.Dlclose(lib)
			return fmt.Errorf("%s has no %s", path, s.name)
		}
		purego.RegisterFunc(s.fn, p)
	}
	return nil
}

// bindBLAS dlopens one candidate and binds its entry points.
func bindBLAS(c blasCandidate) (*blasAPI, uintptr, error) {
	if c.lt != "" {
		if _, err := dlopen(c.lt); err != nil {
			return nil, 0, err
		}
	}
	lib, err := dlopen(c.blas)
	if err != nil {
		return nil, 0, err
	}
	a := &blasAPI{}
	if err := bindSymbols(lib, c.blas, a.symbols()); err != nil {
		return nil, 0, err
	}
	return a, lib, nil
}

// BLAS is a cuBLAS handle on a context's stream. Like the context it is
// used from one OS thread.
type BLAS struct {
	api     *blasAPI
	h       uintptr // cublasHandle_t
	path    string
	version int
}

// OpenBLAS loads cuBLAS (see blasCandidates: the newest of versions 13, 12
// and 11 from the loader path, /usr/local/cuda/lib64 or $CUDA_HOME/lib64
// whose handle initializes on this context) and makes a handle that
// enqueues on s. Without one the error wraps [ErrNoBLAS] and says what each
// candidate answered.
func (c *Context) OpenBLAS(s *Stream) (*BLAS, error) {
	return openBLAS(blasCandidates(os.Getenv("CUDA_HOME")), s)
}

// openBLAS does OpenBLAS's work over the given candidates.
func openBLAS(cands []blasCandidate, s *Stream) (*BLAS, error) {
	var why []string
	for _, c := range cands {
		api, lib, err := bindBLAS(c)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		b := &BLAS{api: api, path: c.blas}
		if err := b.init(s); err != nil {
			purego.Dlclose(lib)
			why = append(why, fmt.Sprintf("%s: %v", c.blas, err))
			continue
		}
		return b, nil
	}
	return nil, fmt.Errorf("cuda: %w (%s)", ErrNoBLAS, strings.Join(why, "; "))
}

// init creates the handle, binds it to s and reads the version.
func (b *BLAS) init(s *Stream) error {
	if err := blasCheck("cublasCreate", b.api.cublasCreate(&b.h)); err != nil {
		return err
	}
	if err := blasCheck("cublasSetStream", b.api.cublasSetStream(b.h, s.handle())); err != nil {
		b.api.cublasDestroy(b.h)
		return err
	}
	var v int32
	if err := blasCheck("cublasGetVersion", b.api.cublasGetVersion(b.h, &v)); err != nil {
		b.api.cublasDestroy(b.h)
		return err
	}
	b.version = int(v)
	return nil
}

// Path is the library file or name the handle comes from.
func (b *BLAS) Path() string { return b.path }

// Version is cuBLAS's version, e.g. 130100 for 13.1.0.
func (b *BLAS) Version() int { return b.version }

// Close destroys the handle. Closing twice is a no-op.
func (b *BLAS) Close() error {
	if b == nil || b.h == 0 {
		return nil
	}
	h := b.h
	b.h = 0
	return blasCheck("cublasDestroy", b.api.cublasDestroy(h))
}
