package cuda

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

// TestLtABI binds the cuBLASLt entry points from a stand-in C library
// (testdata/fake_cublaslt.c, compiled with gcc) through purego, as
// OpenBLASLt binds the real one, and checks what the C side received:
// every integer width, the size_t and pointer arguments, the heuristic's
// 96-byte results and cublasLtMatmul's sixteen arguments, ten of them on
// the stack.
func TestLtABI(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: the stand-in cuBLASLt is not built")
	}
	so := filepath.Join(t.TempDir(), "libcublasLt.so.13")
	if out, err := exec.Command(cc, "-std=c99", "-Wall", "-Werror", "-shared", "-fPIC", "-o", so, "testdata/fake_cublaslt.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	lib, err := dlopen(so)
	if err != nil {
		t.Fatal(err)
	}
	api := &ltAPI{}
	if err := bindSymbols(lib, so, api.symbols()); err != nil {
		t.Fatal(err)
	}
	var fakeLog func() string
	var fakeReset func()
	purego.RegisterLibFunc(&fakeLog, lib, "fake_log")
	purego.RegisterLibFunc(&fakeReset, lib, "fake_reset")

	l := &BLASLt{api: api, stream: 0x5500, ws: 0x9000, wsBytes: LtWorkspaceBytes, plans: map[Gemm]*ltPlan{}}
	if err := blasCheck("cublasLtCreate", api.cublasLtCreate(&l.h)); err != nil {
		t.Fatal(err)
	}
	if v := api.cublasLtGetVersion(); v != 130100 {
		t.Errorf("version %d", v)
	}
	fakeReset()
	algos, err := l.Algorithms(ltGemm, 8)
	if err != nil {
		t.Fatal(err)
	}
	wantLog := "desc 68 0;desc attr 3 = 1 (4 bytes);desc attr 4 = 0 (4 bytes);" +
		"layout 14 16x64 ld 16;layout 14 16x32 ld 16;layout 0 64x32 ld 64;" +
		fmt.Sprintf("pref attr 1 = %d (8 bytes);heuristic 8 c==d 1;pref destroy;", LtWorkspaceBytes)
	if got := fakeLog(); got != wantLog {
		t.Errorf("the library received\n%s\nwant\n%s", strings.ReplaceAll(got, ";", ";\n"), strings.ReplaceAll(wantLog, ";", ";\n"))
	}
	if len(algos) != 1 || algos[0].algo[0] != 100 || algos[0].algo[7] != 0xabc || algos[0].Workspace != 4096 || algos[0].Waves != 0.75 {
		t.Fatalf("algorithms %+v: want the first (the second is not supported)", algos)
	}
	want := LtConfig{ID: 1000, Tile: 1001, SplitK: 1002, Reduction: 1003, Swizzle: 1004, Custom: 1005, Stages: 1006, InnerShape: 1007, ClusterShape: 1008}
	if algos[0].Config != want {
		t.Errorf("config %+v, want %+v", algos[0].Config, want)
	}

	fakeReset()
	if err := l.Matmul(ltGemm, algos[0]); err != nil {
		t.Fatal(err)
	}
	p := l.plans[Gemm{TransA: true, M: 64, N: 32, K: 16, LDA: 16, LDB: 16, LDC: 64, AType: BLASBFloat16, BType: BLASBFloat16, CType: BLASFloat32}]
	if p == nil {
		t.Fatal("no plan kept for the GEMM's form")
	}
	wantMatmul := fmt.Sprintf("matmul h %#x desc %#x alpha 1 beta 0 A 0x1000/%#x B 0x2000/%#x C 0x3000/%#x D 0x3000/%#x algo 100..abc ws 0x9000+%d stream 0x5500;",
		l.h, p.desc, p.a, p.b, p.c, p.c, LtWorkspaceBytes)
	if got := fakeLog(); got != wantMatmul {
		t.Errorf("cublasLtMatmul received\n%s\nwant\n%s", got, wantMatmul)
	}

	fakeReset()
	h := l.h
	l.ws = 0 // not a context's: nothing to free
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := fakeLog(), fmt.Sprintf("layout destroy;layout destroy;layout destroy;desc destroy;destroy %#x;", h); got != want {
		t.Errorf("Close: the library received %s, want %s", got, want)
	}
}
