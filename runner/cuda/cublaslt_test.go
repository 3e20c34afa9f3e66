package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

func TestLtCandidates(t *testing.T) {
	got := strings.Join(ltCandidates("/opt/cuda-13"), "\n")
	want := strings.Join([]string{
		"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11",
		"/usr/local/cuda/lib64/libcublasLt.so.13", "/usr/local/cuda/lib64/libcublasLt.so.12", "/usr/local/cuda/lib64/libcublasLt.so.11",
		"/opt/cuda-13/lib64/libcublasLt.so.13", "/opt/cuda-13/lib64/libcublasLt.so.12", "/opt/cuda-13/lib64/libcublasLt.so.11",
	}, "\n")
	if got != want {
		t.Errorf("candidates:\n%s\nwant:\n%s", got, want)
	}
}

// TestLtHeuristicResultLayout: the Go struct is
// cublasLtMatmulHeuristicResult_t byte for byte.
func TestLtHeuristicResultLayout(t *testing.T) {
	var r ltHeuristicResult
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"size", unsafe.Sizeof(r), 96},
		{"algo", unsafe.Offsetof(r.algo), 0},
		{"workspaceSize", unsafe.Offsetof(r.workspace), 64},
		{"state", unsafe.Offsetof(r.state), 72},
		{"wavesCount", unsafe.Offsetof(r.waves), 76},
	} {
		if f.got != f.want {
			t.Errorf("%s at %d, want %d", f.name, f.got, f.want)
		}
	}
}

// fakeLt stands in for libcublasLt: it hands out descriptor handles,
// remembers what was set on them, answers the heuristic with results and
// records the matmuls.
type fakeLt struct {
	t        *testing.T
	next     uintptr
	live     map[uintptr]string // descriptor handle → what it is
	attrs    map[string]uint64  // "desc/3" → value set
	layouts  []string           // "type rows×cols ld"
	prefWS   uint64
	results  []ltHeuristicResult
	asked    int32
	cd       [2]uintptr // the C and D layouts the heuristic got
	configs  map[int32]uint64
	refuse   map[int32]bool // config attributes answered CUBLAS_STATUS_INVALID_VALUE
	fail     map[string]int32
	matmuls  []string
	algoSeen [8]uint64
}

func newFakeLt(t *testing.T) *fakeLt {
	return &fakeLt{t: t, next: 0x100, live: map[uintptr]string{}, attrs: map[string]uint64{},
		configs: map[int32]uint64{}, refuse: map[int32]bool{}, fail: map[string]int32{}}
}

func (f *fakeLt) handle(kind string) uintptr {
	f.next += 0x10
	f.live[f.next] = kind
	return f.next
}

func (f *fakeLt) destroy(kind string, h uintptr) int32 {
	if f.live[h] != kind {
		f.t.Errorf("destroying %#x as a %s, it is %q", h, kind, f.live[h])
	}
	delete(f.live, h)
	return 0
}

func (f *fakeLt) api() *ltAPI {
	return &ltAPI{
		cublasLtCreate:     func(h *uintptr) int32 { *h = f.handle("handle"); return f.fail["create"] },
		cublasLtDestroy:    func(h uintptr) int32 { return f.destroy("handle", h) },
		cublasLtGetVersion: func() uint64 { return 130100 },
		cublasLtMatmulDescCreate: func(d *uintptr, compute, scale int32) int32 {
			if compute != 68 || scale != 0 {
				f.t.Errorf("matmul desc compute %d scale %d, want CUBLAS_COMPUTE_32F (68) and CUDA_R_32F (0)", compute, scale)
			}
			*d = f.handle("desc")
			return 0
		},
		cublasLtMatmulDescDestroy: func(d uintptr) int32 { return f.destroy("desc", d) },
		cublasLtMatmulDescSetAttribute: func(d uintptr, attr int32, buf unsafe.Pointer, size uint64) int32 {
			if size != 4 {
				f.t.Errorf("desc attribute %d of %d bytes, want 4 (int32)", attr, size)
			}
			f.attrs[fmt.Sprintf("desc/%d", attr)] = uint64(*(*int32)(buf))
			return 0
		},
		cublasLtMatrixLayoutCreate: func(l *uintptr, dt int32, rows, cols uint64, ld int64) int32 {
			if code := f.fail["layout"]; code != 0 && len(f.layouts) == 1 {
				return code
			}
			f.layouts = append(f.layouts, fmt.Sprintf("%d %d×%d ld %d", dt, rows, cols, ld))
			*l = f.handle("layout")
			return 0
		},
		cublasLtMatrixLayoutDestroy:    func(l uintptr) int32 { return f.destroy("layout", l) },
		cublasLtMatmulPreferenceCreate: func(p *uintptr) int32 { *p = f.handle("pref"); return 0 },
		cublasLtMatmulPreferenceDestroy: func(p uintptr) int32 {
			return f.destroy("pref", p)
		},
		cublasLtMatmulPreferenceSetAttribute: func(p uintptr, attr int32, buf unsafe.Pointer, size uint64) int32 {
			if attr != 1 || size != 8 {
				f.t.Errorf("preference attribute %d of %d bytes, want MAX_WORKSPACE_BYTES (1) as uint64", attr, size)
			}
			f.prefWS = *(*uint64)(buf)
			return 0
		},
		cublasLtMatmulAlgoGetHeuristic: func(h, d, a, b, c, dd, p uintptr, requested int32, results unsafe.Pointer, returned *int32) int32 {
			if code := f.fail["heuristic"]; code != 0 {
				return code
			}
			if f.live[h] != "handle" || f.live[d] != "desc" || f.live[a] != "layout" || f.live[b] != "layout" || f.live[p] != "pref" {
				f.t.Errorf("heuristic got handles %#x %#x %#x %#x %#x: %q %q %q %q %q", h, d, a, b, p, f.live[h], f.live[d], f.live[a], f.live[b], f.live[p])
			}
			f.asked, f.cd = requested, [2]uintptr{c, dd}
			out := unsafe.Slice((*ltHeuristicResult)(results), requested)
			n := copy(out, f.results)
			*returned = int32(n)
			return 0
		},
		cublasLtMatmulAlgoConfigGetAttribute: func(algo unsafe.Pointer, attr int32, buf unsafe.Pointer, size uint64, written *uint64) int32 {
			if f.refuse[attr] {
				return 7
			}
			want := uint64(4)
			if attr >= 7 {
				want = 2
			}
			if size != want {
				f.t.Errorf("config attribute %d read with %d bytes, want %d", attr, size, want)
			}
			// The value is the algorithm's first word plus the attribute.
			v := (*[8]uint64)(algo)[0] + f.configs[attr]
			switch size {
			case 2:
				*(*uint16)(buf) = uint16(v)
			case 4:
				*(*uint32)(buf) = uint32(v)
			}
			*written = size
			return 0
		},
		cublasLtMatmul: func(h, d uintptr, alpha unsafe.Pointer, a uint64, ad uintptr, b uint64, bd uintptr, beta unsafe.Pointer,
			c uint64, cd uintptr, dp uint64, dd uintptr, algo unsafe.Pointer, ws, wsBytes uint64, stream uintptr) int32 {
			if code := f.fail["matmul"]; code != 0 {
				return code
			}
			f.algoSeen = *(*[8]uint64)(algo)
			f.matmuls = append(f.matmuls, fmt.Sprintf("alpha %g beta %g A %#x B %#x C %#x D %#x C=D layout %v ws %#x+%d stream %#x layouts %q %q %q",
				*(*float32)(alpha), *(*float32)(beta), a, b, c, dp, cd == dd, ws, wsBytes, stream, f.live[ad], f.live[bd], f.live[cd]))
			return 0
		},
	}
}

// testLt is a BLASLt over the stand-in, with a workspace at 0x9000.
func testLt(f *fakeLt) *BLASLt {
	l := &BLASLt{api: f.api(), stream: 0x55, ws: 0x9000, wsBytes: LtWorkspaceBytes, plans: map[Gemm]*ltPlan{}}
	if err := blasCheck("cublasLtCreate", l.api.cublasLtCreate(&l.h)); err != nil {
		f.t.Fatal(err)
	}
	return l
}

// ltGemm is column-major C[64×32] = A[16×64]ᵀ·B[16×32] in bf16 → f32.
var ltGemm = Gemm{TransA: true, M: 64, N: 32, K: 16, A: 0x1000, B: 0x2000, C: 0x3000, LDA: 16, LDB: 16, LDC: 64,
	AType: BLASBFloat16, BType: BLASBFloat16, CType: BLASFloat32}

// TestLtAlgorithms: the descriptors the heuristic sees, the preference,
// the filtering of unusable results, and each algorithm's configuration.
func TestLtAlgorithms(t *testing.T) {
	f := newFakeLt(t)
	f.results = []ltHeuristicResult{
		{algo: [8]uint64{10}, workspace: 1 << 20, waves: 0.9},
		{algo: [8]uint64{20}, state: 15}, // CUBLAS_STATUS_NOT_SUPPORTED: not offered
		{algo: [8]uint64{30}, waves: 1.5},
	}
	f.configs = map[int32]uint64{0: 56, 1: 3, 2: 1, 3: 2, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8}
	l := testLt(f)
	algos, err := l.Algorithms(ltGemm, 8)
	if err != nil {
		t.Fatal(err)
	}
	if f.asked != 8 || f.prefWS != LtWorkspaceBytes {
		t.Errorf("heuristic asked for %d algorithms with %d bytes of workspace, want 8 and %d", f.asked, f.prefWS, LtWorkspaceBytes)
	}
	if got := strings.Join(f.layouts, "; "); got != "14 16×64 ld 16; 14 16×32 ld 16; 0 64×32 ld 64" {
		t.Errorf("layouts %s, want A stored K×M (transposed), B K×N, C M×N", got)
	}
	if f.attrs["desc/3"] != 1 || f.attrs["desc/4"] != 0 {
		t.Errorf("transposes %v, want TRANSA = CUBLAS_OP_T (1), TRANSB = CUBLAS_OP_N (0)", f.attrs)
	}
	if f.cd[0] != f.cd[1] || f.live[f.cd[0]] != "layout" {
		t.Errorf("C and D layouts %#x, %#x: want the same", f.cd[0], f.cd[1])
	}
	if len(algos) != 2 || algos[0].algo[0] != 10 || algos[1].algo[0] != 30 || algos[0].Workspace != 1<<20 || algos[1].Waves != 1.5 {
		t.Fatalf("algorithms %+v, want the two usable ones in the heuristic's order", algos)
	}
	want := LtConfig{ID: 66, Tile: 13, SplitK: 11, Reduction: 12, Swizzle: 14, Custom: 15, Stages: 16, InnerShape: 17, ClusterShape: 18}
	if algos[0].Config != want {
		t.Errorf("config %+v, want %+v", algos[0].Config, want)
	}
	if live := len(f.live); live != 5 { // handle, desc, three layouts; the preference is gone
		t.Errorf("%d live handles after the heuristic: %v", live, f.live)
	}
	// Another call of the same form, on other buffers, makes no descriptors.
	g := ltGemm
	g.A, g.B, g.C = 0x4000, 0x5000, 0x6000
	if _, err := l.Algorithms(g, 8); err != nil || len(f.layouts) != 3 {
		t.Errorf("second heuristic call: %v, %d layouts made", err, len(f.layouts))
	}
	l.ws = 0 // not the context's: nothing to free
	if err := l.Close(); err != nil || len(f.live) != 0 || l.Close() != nil {
		t.Errorf("Close: %v, live handles left %v", err, f.live)
	}
}

// TestLtMatmulArgs: what cublasLtMatmul receives.
func TestLtMatmulArgs(t *testing.T) {
	f := newFakeLt(t)
	f.results = []ltHeuristicResult{{algo: [8]uint64{7, 1, 2, 3, 4, 5, 6, 8}}}
	l := testLt(f)
	algos, err := l.Algorithms(ltGemm, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Matmul(ltGemm, algos[0]); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("alpha 1 beta 0 A 0x1000 B 0x2000 C 0x3000 D 0x3000 C=D layout true ws 0x9000+%d stream 0x55 layouts \"layout\" \"layout\" \"layout\"", LtWorkspaceBytes)
	if len(f.matmuls) != 1 || f.matmuls[0] != want {
		t.Errorf("matmul %q\nwant %q", f.matmuls, want)
	}
	if f.algoSeen != [8]uint64{7, 1, 2, 3, 4, 5, 6, 8} {
		t.Errorf("algorithm %v, not the heuristic's", f.algoSeen)
	}
	big := algos[0]
	big.Workspace = LtWorkspaceBytes + 1
	if err := l.Matmul(ltGemm, big); err == nil || !strings.Contains(err.Error(), "needs 33554433 bytes of workspace") {
		t.Errorf("an algorithm needing more workspace than the handle has: %v", err)
	}
	f.fail["matmul"] = 13
	var be *BLASError
	if err := l.Matmul(ltGemm, algos[0]); !errors.As(err, &be) || be.Op != "cublasLtMatmul" || be.Status != 13 {
		t.Errorf("a failing matmul: %v", err)
	}
	l.ws = 0 // not the context's: nothing to free
	l.Close()
}

// TestLtErrors: statuses become errors that name the call, descriptors
// of a failed plan are destroyed, bad arguments reach no library call.
func TestLtErrors(t *testing.T) {
	f := newFakeLt(t)
	f.results = []ltHeuristicResult{{algo: [8]uint64{1}}}
	l := testLt(f)
	var be *BLASError

	f.fail["heuristic"] = 15
	if _, err := l.Algorithms(ltGemm, 8); !errors.As(err, &be) || be.Op != "cublasLtMatmulAlgoGetHeuristic" || be.Status != 15 {
		t.Errorf("a refusing heuristic: %v", err)
	}
	f.fail["heuristic"] = 0

	f.results = []ltHeuristicResult{{state: 15}}
	if _, err := l.Algorithms(ltGemm, 8); err == nil || !strings.Contains(err.Error(), "offers no algorithm") {
		t.Errorf("no usable algorithm: %v", err)
	}
	f.results = []ltHeuristicResult{{algo: [8]uint64{1}}}

	f.refuse = map[int32]bool{7: true, 8: true} // a cuBLASLt 11: no inner or cluster shape
	if algos, err := l.Algorithms(ltGemm, 8); err != nil || algos[0].Config.InnerShape != 0 || algos[0].Config.Tile != 1 {
		t.Errorf("without inner and cluster shapes: %+v, %v", algos, err)
	}
	f.refuse = map[int32]bool{1: true}
	if _, err := l.Algorithms(ltGemm, 8); !errors.As(err, &be) || be.Op != "cublasLtMatmulAlgoConfigGetAttribute(1)" {
		t.Errorf("a refused tile id: %v", err)
	}
	f.refuse = nil

	// The second layout fails: the plan's descriptors made so far go.
	g := ltGemm
	g.K = 32
	g.LDA, g.LDB = 32, 32
	before := len(f.live)
	f.fail["layout"] = 3
	f.layouts = f.layouts[:0]
	if _, err := l.Algorithms(g, 8); !errors.As(err, &be) || be.Op != "cublasLtMatrixLayoutCreate" || be.Status != 3 {
		t.Errorf("a failing layout: %v", err)
	}
	if len(f.live) != before {
		t.Errorf("a failed plan left %d handles behind", len(f.live)-before)
	}
	f.fail["layout"] = 0

	calls := len(f.layouts)
	bad := ltGemm
	bad.LDC = 63
	if _, err := l.Algorithms(bad, 8); err == nil {
		t.Error("a leading dimension below M accepted")
	}
	if err := l.Matmul(bad, LtAlgo{}); err == nil {
		t.Error("Matmul accepted a leading dimension below M")
	}
	if _, err := l.Algorithms(ltGemm, 0); err == nil || !strings.Contains(err.Error(), "0 algorithms asked for") {
		t.Errorf("n = 0: %v", err)
	}
	if len(f.layouts) != calls || len(f.matmuls) != 0 {
		t.Errorf("bad arguments reached the library: %d layouts, %d matmuls", len(f.layouts)-calls, len(f.matmuls))
	}
	l.ws = 0 // not the context's: nothing to free
	if err := l.Close(); err != nil || len(f.live) != 0 {
		t.Errorf("Close: %v, left %v", err, f.live)
	}
}

func TestLtConfigString(t *testing.T) {
	c := LtConfig{ID: 66, Tile: 23, Stages: 16, SplitK: 1, Reduction: 2, ClusterShape: 2}
	if got, want := c.String(), "algo 66, tile 128x256, stages 64x4, split-K 1, reduction compute-type, swizzle 0, custom 0, inner shape 0, cluster shape 2"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	c = LtConfig{Tile: 900, Stages: 31, Reduction: 9}
	if got := c.String(); !strings.Contains(got, "tile id 900, stages id 31") || !strings.Contains(got, "reduction id 9") {
		t.Errorf("ids past the tables: %q", got)
	}
}
