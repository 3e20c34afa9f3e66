package cuda

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// ErrNoBLASLt reports that no cuBLASLt library could be loaded and
// initialized; [Context.OpenBLASLt] wraps it with what each candidate
// said.
var ErrNoBLASLt = errors.New("cuBLASLt not found")

// ltCandidates lists libcublasLt.so in blasCandidates's order: versions
// 13, 12 and 11 by name, then from /usr/local/cuda/lib64 and
// $CUDA_HOME/lib64.
func ltCandidates(cudaHome string) []string {
	var out []string
	for _, c := range blasCandidates(cudaHome) {
		out = append(out, strings.Replace(c.blas, "libcublas.so.", "libcublasLt.so.", 1))
	}
	return out
}

// ltAPI holds the cuBLASLt entry points (cublasLt.h): statuses are int32
// (cublasStatus_t), handles and descriptors uintptr, device pointers
// uint64, enums int32, size_t uint64.
type ltAPI struct {
	cublasLtCreate                       func(handle *uintptr) int32
	cublasLtDestroy                      func(handle uintptr) int32
	cublasLtGetVersion                   func() uint64
	cublasLtMatmulDescCreate             func(desc *uintptr, computeType, scaleType int32) int32
	cublasLtMatmulDescDestroy            func(desc uintptr) int32
	cublasLtMatmulDescSetAttribute       func(desc uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	cublasLtMatrixLayoutCreate           func(layout *uintptr, dataType int32, rows, cols uint64, ld int64) int32
	cublasLtMatrixLayoutDestroy          func(layout uintptr) int32
	cublasLtMatmulPreferenceCreate       func(pref *uintptr) int32
	cublasLtMatmulPreferenceDestroy      func(pref uintptr) int32
	cublasLtMatmulPreferenceSetAttribute func(pref uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	cublasLtMatmulAlgoGetHeuristic       func(handle, desc, a, b, c, d, pref uintptr, requested int32,
		results unsafe.Pointer, returned *int32) int32
	cublasLtMatmulAlgoConfigGetAttribute func(algo unsafe.Pointer, attr int32, buf unsafe.Pointer, size uint64, written *uint64) int32
	cublasLtMatmul                       func(handle, desc uintptr, alpha unsafe.Pointer, a uint64, adesc uintptr,
		b uint64, bdesc uintptr, beta unsafe.Pointer, c uint64, cdesc uintptr, d uint64, ddesc uintptr,
		algo unsafe.Pointer, workspace, workspaceBytes uint64, stream uintptr) int32
}

func (a *ltAPI) symbols() []symbol {
	return []symbol{
		{"cublasLtCreate", &a.cublasLtCreate},
		{"cublasLtDestroy", &a.cublasLtDestroy},
		{"cublasLtGetVersion", &a.cublasLtGetVersion},
		{"cublasLtMatmulDescCreate", &a.cublasLtMatmulDescCreate},
		{"cublasLtMatmulDescDestroy", &a.cublasLtMatmulDescDestroy},
		{"cublasLtMatmulDescSetAttribute", &a.cublasLtMatmulDescSetAttribute},
		{"cublasLtMatrixLayoutCreate", &a.cublasLtMatrixLayoutCreate},
		{"cublasLtMatrixLayoutDestroy", &a.cublasLtMatrixLayoutDestroy},
		{"cublasLtMatmulPreferenceCreate", &a.cublasLtMatmulPreferenceCreate},
		{"cublasLtMatmulPreferenceDestroy", &a.cublasLtMatmulPreferenceDestroy},
		{"cublasLtMatmulPreferenceSetAttribute", &a.cublasLtMatmulPreferenceSetAttribute},
		{"cublasLtMatmulAlgoGetHeuristic", &a.cublasLtMatmulAlgoGetHeuristic},
		{"cublasLtMatmulAlgoConfigGetAttribute", &a.cublasLtMatmulAlgoConfigGetAttribute},
		{"cublasLtMatmul", &a.cublasLtMatmul},
	}
}

// cuBLASLt enum values (cublasLt.h, unchanged from CUDA 11 to 13).
const (
	ltDescTransA         = 3 // CUBLASLT_MATMUL_DESC_TRANSA, int32
	ltDescTransB         = 4 // CUBLASLT_MATMUL_DESC_TRANSB, int32
	ltPrefMaxWorkspace   = 1 // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64
	ltConfigID           = 0 // CUBLASLT_ALGO_CONFIG_ID, int32
	ltConfigTile         = 1 // CUBLASLT_ALGO_CONFIG_TILE_ID, uint32
	ltConfigSplitK       = 2 // CUBLASLT_ALGO_CONFIG_SPLITK_NUM, uint32
	ltConfigReduction    = 3 // CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, uint32
	ltConfigSwizzle      = 4 // CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, uint32
	ltConfigCustom       = 5 // CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, uint32
	ltConfigStages       = 6 // CUBLASLT_ALGO_CONFIG_STAGES_ID, uint32
	ltConfigInnerShape   = 7 // CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, uint16 (CUDA 12+)
	ltConfigClusterShape = 8 // CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, uint16 (CUDA 12+)
)

// ltScaleFloat32 is the scale type (of alpha and beta): CUDA_R_32F.
const ltScaleFloat32 = int32(BLASFloat32)

// LtWorkspaceBytes is the workspace a cuBLASLt handle owns and offers
// every algorithm: 32 MiB, what NVIDIA recommends for Hopper
// (cublasSetWorkspace).
const LtWorkspaceBytes = 32 << 20

// ltHeuristicResult is cublasLtMatmulHeuristicResult_t: the algorithm
// (cublasLtMatmulAlgo_t, 8 uint64), size_t workspaceSize, cublasStatus_t
// state, float wavesCount and int reserved[4]: 96 bytes.
type ltHeuristicResult struct {
	algo      [8]uint64
	workspace uint64
	state     int32
	waves     float32
	_         [4]int32
}

// LtAlgo is one algorithm the heuristic offered for a GEMM. It holds the
// cublasLtMatmulAlgo_t itself, which cuBLASLt allows to be copied and
// used again with the same library version.
type LtAlgo struct {
	algo [8]uint64
	// Workspace is the bytes of workspace it needs; Waves the heuristic's
	// waves count (1: the GPU is fully occupied once).
	Workspace int
	Waves     float32
	Config    LtConfig
}

// LtConfig is what cublasLtMatmulAlgoConfigGetAttribute says an
// algorithm is. Tile and Stages are cublasLtMatmulTile_t and
// cublasLtMatmulStages_t ids; InnerShape and ClusterShape are 0 from a
// library older than CUDA 12, which has no such attributes.
type LtConfig struct {
	ID                                               int32
	Tile, Stages, SplitK, Reduction, Swizzle, Custom uint32
	InnerShape, ClusterShape                         uint16
}

// String names every attribute, tiles and stages by their enum names
// where cublasLt.h gives one ("tile 128x256, stages 64x4").
func (c LtConfig) String() string {
	return fmt.Sprintf("algo %d, tile %s, stages %s, split-K %d, reduction %s, swizzle %d, custom %d, inner shape %d, cluster shape %d",
		c.ID, enumName(ltTiles, c.Tile), enumName(ltStages, c.Stages), c.SplitK, reductionName(c.Reduction),
		c.Swizzle, c.Custom, c.InnerShape, c.ClusterShape)
}

// ltTiles names cublasLtMatmulTile_t ids 0 to 35 (rows×columns of C).
var ltTiles = []string{"undefined", "8x8", "8x16", "16x8", "8x32", "16x16", "32x8", "8x64", "16x32", "32x16",
	"64x8", "32x32", "32x64", "64x32", "32x128", "64x64", "128x32", "64x128", "128x64", "64x256",
	"128x128", "256x64", "64x512", "128x256", "256x128", "512x64", "64x96", "96x64", "96x128", "128x160",
	"160x128", "192x128", "128x192", "128x96", "32x256", "256x32"}

// ltStages names cublasLtMatmulStages_t ids 0 to 30 (k elements per
// stage × stages).
var ltStages = []string{"undefined", "16x1", "16x2", "16x3", "16x4", "16x5", "16x6", "32x1", "32x2", "32x3",
	"32x4", "32x5", "32x6", "64x1", "64x2", "64x3", "64x4", "64x5", "64x6", "128x1",
	"128x2", "128x3", "128x4", "128x5", "128x6", "32x10", "8x4", "16x10", "8x5", "16x80", "64x80"}

// enumName is names[id], or "id N" past the table.
func enumName(names []string, id uint32) string {
	if int(id) < len(names) {
		return names[id]
	}
	return fmt.Sprintf("id %d", id)
}

// reductionName names a cublasLtReductionScheme_t.
func reductionName(r uint32) string {
	switch r {
	case 0:
		return "none"
	case 1:
		return "in-place"
	case 2:
		return "compute-type"
	case 4:
		return "output-type"
	}
	return fmt.Sprintf("id %d", r)
}

// BLASLt is a cuBLASLt handle that enqueues on a context's stream, with a
// device workspace of LtWorkspaceBytes. Like the context it is used from
// one OS thread.
type BLASLt struct {
	api     *ltAPI
	h       uintptr // cublasLtHandle_t
	path    string
	version int
	stream  uintptr
	ctx     *Context // owns the workspace
	ws      DevicePtr
	wsBytes int
	// plans are the descriptors of each GEMM form, by the Gemm with its
	// pointers zeroed: descriptors hold no pointers, so one serves every
	// buffer, and a timed Matmul makes none.
	plans map[Gemm]*ltPlan
}

// ltPlan is the descriptors of one GEMM form: the operation (f32
// compute and scale, the transposes) and the layouts of A, B and C,
// which is also D.
type ltPlan struct{ desc, a, b, c uintptr }

// OpenBLASLt loads cuBLASLt (libcublasLt.so.13, .12 or .11 from the
// places OpenBLAS looks), makes a handle whose matmuls enqueue on s, and
// allocates its workspace. Without one the error wraps [ErrNoBLASLt] and
// says what each candidate answered.
func (c *Context) OpenBLASLt(s *Stream) (*BLASLt, error) {
	return openBLASLt(c, ltCandidates(os.Getenv("CUDA_HOME")), s)
}

// openBLASLt does OpenBLASLt's work over the given candidates.
func openBLASLt(ctx *Context, cands []string, s *Stream) (*BLASLt, error) {
	var why []string
	for _, path := range cands {
		lib, err := dlopen(path)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		api := &ltAPI{}
		if err := bindSymbols(lib, path, api.symbols()); err != nil {
			why = append(why, err.Error())
			continue
		}
		l := &BLASLt{api: api, path: path, stream: s.handle(), ctx: ctx, plans: map[Gemm]*ltPlan{}}
		if err := l.init(); err != nil {
			purego.Dlclose(lib)
			why = append(why, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		return l, nil
	}
	return nil, fmt.Errorf("cuda: %w (%s)", ErrNoBLASLt, strings.Join(why, "; "))
}

// init creates the handle, reads the version and allocates the
// workspace.
func (l *BLASLt) init() error {
	if err := blasCheck("cublasLtCreate", l.api.cublasLtCreate(&l.h)); err != nil {
		return err
	}
	l.version = int(l.api.cublasLtGetVersion())
	ws, err := l.ctx.Alloc(LtWorkspaceBytes)
	if err != nil {
		l.api.cublasLtDestroy(l.h)
		return fmt.Errorf("allocating the %d-byte cuBLASLt workspace: %w", LtWorkspaceBytes, err)
	}
	l.ws, l.wsBytes = ws, LtWorkspaceBytes
	return nil
}

// Path is the library file or name the handle comes from.
func (l *BLASLt) Path() string { return l.path }

// Version is cuBLASLt's version, e.g. 130100 for 13.1.0.
func (l *BLASLt) Version() int { return l.version }

// Close destroys the descriptors and the handle and frees the workspace.
// Closing twice is a no-op.
func (l *BLASLt) Close() error {
	if l == nil || l.h == 0 {
		return nil
	}
	var errs []error
	for _, p := range l.plans {
		errs = append(errs, p.destroy(l.api))
	}
	l.plans = map[Gemm]*ltPlan{}
	if l.ws != 0 {
		errs = append(errs, l.ctx.Free(l.ws))
		l.ws = 0
	}
	h := l.h
	l.h = 0
	errs = append(errs, blasCheck("cublasLtDestroy", l.api.cublasLtDestroy(h)))
	return errors.Join(errs...)
}

// plan returns the descriptors of g's form, creating them the first time.
func (l *BLASLt) plan(g Gemm) (*ltPlan, error) {
	form := g
	form.A, form.B, form.C = 0, 0, 0
	if p, ok := l.plans[form]; ok {
		return p, nil
	}
	p := &ltPlan{}
	err := p.create(l.api, g)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%w (%+v)", err, form), p.destroy(l.api))
	}
	l.plans[form] = p
	return p, nil
}

// create makes the descriptors of g: stored A is rows×cols = M×K (K×M
// with TransA), B K×N (N×K with TransB), C and D M×N, all column-major.
func (p *ltPlan) create(api *ltAPI, g Gemm) error {
	if err := blasCheck("cublasLtMatmulDescCreate", api.cublasLtMatmulDescCreate(&p.desc, blasCompute32F, ltScaleFloat32)); err != nil {
		return err
	}
	for _, t := range []struct {
		attr  int32
		trans bool
	}{{ltDescTransA, g.TransA}, {ltDescTransB, g.TransB}} {
		op := blasOp(t.trans)
		if err := blasCheck("cublasLtMatmulDescSetAttribute", api.cublasLtMatmulDescSetAttribute(p.desc, t.attr, unsafe.Pointer(&op), 4)); err != nil {
			return err
		}
	}
	rowsA, colsA, rowsB, colsB := g.M, g.K, g.K, g.N
	if g.TransA {
		rowsA, colsA = g.K, g.M
	}
	if g.TransB {
		rowsB, colsB = g.N, g.K
	}
	for _, m := range []struct {
		layout         *uintptr
		dt             BLASType
		rows, cols, ld int
	}{{&p.a, g.AType, rowsA, colsA, g.LDA}, {&p.b, g.BType, rowsB, colsB, g.LDB}, {&p.c, g.CType, g.M, g.N, g.LDC}} {
		code := api.cublasLtMatrixLayoutCreate(m.layout, int32(m.dt), uint64(m.rows), uint64(m.cols), int64(m.ld))
		if err := blasCheck("cublasLtMatrixLayoutCreate", code); err != nil {
			return err
		}
	}
	return nil
}

// destroy destroys the descriptors that exist.
func (p *ltPlan) destroy(api *ltAPI) error {
	var errs []error
	for _, h := range []uintptr{p.a, p.b, p.c} {
		if h != 0 {
			errs = append(errs, blasCheck("cublasLtMatrixLayoutDestroy", api.cublasLtMatrixLayoutDestroy(h)))
		}
	}
	if p.desc != 0 {
		errs = append(errs, blasCheck("cublasLtMatmulDescDestroy", api.cublasLtMatmulDescDestroy(p.desc)))
	}
	*p = ltPlan{}
	return errors.Join(errs...)
}

// Algorithms asks cuBLASLt's heuristic (cublasLtMatmulAlgoGetHeuristic,
// best fit) for up to n algorithms of g that need at most the handle's
// workspace, and returns those it reports usable, in its order (best
// first), each with its configuration. None is an error.
func (l *BLASLt) Algorithms(g Gemm, n int) ([]LtAlgo, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("cuda: cuBLASLt heuristic: %d algorithms asked for, want at least 1", n)
	}
	p, err := l.plan(g)
	if err != nil {
		return nil, err
	}
	var pref uintptr
	if err := blasCheck("cublasLtMatmulPreferenceCreate", l.api.cublasLtMatmulPreferenceCreate(&pref)); err != nil {
		return nil, err
	}
	defer l.api.cublasLtMatmulPreferenceDestroy(pref)
	ws := uint64(l.wsBytes)
	if err := blasCheck("cublasLtMatmulPreferenceSetAttribute", l.api.cublasLtMatmulPreferenceSetAttribute(pref, ltPrefMaxWorkspace, unsafe.Pointer(&ws), 8)); err != nil {
		return nil, err
	}
	results := make([]ltHeuristicResult, n)
	var got int32
	code := l.api.cublasLtMatmulAlgoGetHeuristic(l.h, p.desc, p.a, p.b, p.c, p.c, pref, int32(n), unsafe.Pointer(&results[0]), &got)
	if err := blasCheck("cublasLtMatmulAlgoGetHeuristic", code); err != nil {
		return nil, fmt.Errorf("%w (%+v)", err, g)
	}
	var out []LtAlgo
	for _, r := range results[:min(max(int(got), 0), n)] {
		if r.state != 0 {
			continue
		}
		a := LtAlgo{algo: r.algo, Workspace: int(r.workspace), Waves: r.waves}
		if a.Config, err = l.config(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cuda: cuBLASLt heuristic offers no algorithm for %+v (%d returned)", g, got)
	}
	return out, nil
}

// config reads a's configuration attributes; the inner and cluster
// shapes, which libraries before CUDA 12 lack, read as 0 when the library
// refuses them.
func (l *BLASLt) config(a *LtAlgo) (LtConfig, error) {
	var c LtConfig
	for _, f := range []struct {
		attr     int32
		dst      unsafe.Pointer
		size     uint64
		optional bool
	}{
		{ltConfigID, unsafe.Pointer(&c.ID), 4, false},
		{ltConfigTile, unsafe.Pointer(&c.Tile), 4, false},
		{ltConfigStages, unsafe.Pointer(&c.Stages), 4, false},
		{ltConfigSplitK, unsafe.Pointer(&c.SplitK), 4, false},
		{ltConfigReduction, unsafe.Pointer(&c.Reduction), 4, false},
		{ltConfigSwizzle, unsafe.Pointer(&c.Swizzle), 4, false},
		{ltConfigCustom, unsafe.Pointer(&c.Custom), 4, false},
		{ltConfigInnerShape, unsafe.Pointer(&c.InnerShape), 2, true},
		{ltConfigClusterShape, unsafe.Pointer(&c.ClusterShape), 2, true},
	} {
		var written uint64
		code := l.api.cublasLtMatmulAlgoConfigGetAttribute(unsafe.Pointer(&a.algo), f.attr, f.dst, f.size, &written)
		if code != 0 && f.optional {
			continue
		}
		if err := blasCheck(fmt.Sprintf("cublasLtMatmulAlgoConfigGetAttribute(%d)", f.attr), code); err != nil {
			return LtConfig{}, err
		}
	}
	return c, nil
}

// Matmul enqueues g with algorithm a on the handle's stream
// (cublasLtMatmul: alpha 1 and beta 0 on the host, D = C, the handle's
// workspace).
func (l *BLASLt) Matmul(g Gemm, a LtAlgo) error {
	if err := g.Check(); err != nil {
		return err
	}
	if a.Workspace > l.wsBytes {
		return fmt.Errorf("cuda: cuBLASLt %s needs %d bytes of workspace, the handle has %d", a.Config, a.Workspace, l.wsBytes)
	}
	p, err := l.plan(g)
	if err != nil {
		return err
	}
	alpha, beta := float32(1), float32(0)
	code := l.api.cublasLtMatmul(l.h, p.desc, unsafe.Pointer(&alpha), uint64(g.A), p.a, uint64(g.B), p.b,
		unsafe.Pointer(&beta), uint64(g.C), p.c, uint64(g.C), p.c, unsafe.Pointer(&a.algo), uint64(l.ws), uint64(l.wsBytes), l.stream)
	if err := blasCheck("cublasLtMatmul", code); err != nil {
		return fmt.Errorf("%w (%+v, %s)", err, g, a.Config)
	}
	return nil
}
