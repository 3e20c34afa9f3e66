package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner/cuda"
)

// The baselines the runner knows, by the kernels.Baseline name that
// selects them; both run a kernels.GEMMCall.
const (
	// BaselineCuBLAS is cublasGemmEx with the library's default
	// algorithm (CUBLAS_GEMM_DEFAULT): one heuristic pick.
	BaselineCuBLAS = eval.BaselineCuBLAS
	// BaselineLtBest is the fastest valid of cuBLASLt's heuristic top
	// LtCandidates algorithms, each validated and timed like a variant.
	BaselineLtBest = eval.BaselineLtBest
)

// LtCandidates is how many of cuBLASLt's heuristic algorithms the
// BaselineLtBest baseline evaluates.
const LtCandidates = 8

// GEMMBaseliner is implemented by backends that run vendor GEMMs for
// baselines (kernels.GEMMCall): CUDA through cuBLAS.
type GEMMBaseliner interface {
	// GEMM enqueues call on the buffers at a, b and c. An error wrapping
	// ErrNoBaselineLibrary means that the library is absent and nothing
	// was enqueued.
	GEMM(call kernels.GEMMCall, a, b, c Ptr) error
}

// GEMMSearcher is implemented by backends whose vendor library offers
// several algorithms for one GEMM and ranks them: CUDA through cuBLASLt.
type GEMMSearcher interface {
	// GEMMAlgorithms returns up to n algorithms for call on the buffers
	// at a, b and c, in the library heuristic's order (its best guess
	// first). An error wrapping ErrNoBaselineLibrary means that the
	// library is absent.
	GEMMAlgorithms(call kernels.GEMMCall, a, b, c Ptr, n int) ([]GEMMAlgorithm, error)
}

// GEMMAlgorithm is one algorithm of a GEMM call, bound to its buffers.
type GEMMAlgorithm struct {
	// Config is the library's description of the algorithm; it tells
	// one algorithm of a call from another.
	Config string
	// Run enqueues the call with this algorithm.
	Run func() error
}

// ErrNoBaselineLibrary is wrapped by a backend's error when the vendor
// library a baseline needs (cuBLAS) is not there: the baseline is not
// measured, and the tuning goes on without it.
var ErrNoBaselineLibrary = errors.New("baseline library not available")

// LoadBaseline binds baseline b, a BaselineCuBLAS, to the session's
// buffers as a Loaded that Run, Validate and the worker's timing treat
// like a program. Validation compares only the buffers the baseline
// writes (a GEMM's C) with the reference. A backend without GEMMBaseliner
// fails with an error wrapping ErrNoBaselineLibrary. (A BaselineLtBest is
// one Loaded per algorithm: see evaluateBest.)
func (ss *Session) LoadBaseline(b kernels.Baseline) (*Loaded, error) {
	if b.Lib() != BaselineCuBLAS {
		return nil, fmt.Errorf("baseline %q: LoadBaseline binds %s (cublasGemmEx) only", b.Name, BaselineCuBLAS)
	}
	gb, ok := ss.be.(GEMMBaseliner)
	if !ok {
		return nil, fmt.Errorf("baseline %s: the %s backend runs no vendor GEMMs: %w", b.Name, ss.be.Name(), ErrNoBaselineLibrary)
	}
	pre, err := ss.loadBefore(b)
	if err != nil {
		return nil, err
	}
	c, err := ss.baselineCall(b, pre)
	if err != nil {
		pre.Unload()
		return nil, err
	}
	a, bp, cp := ss.callBuffer(pre, c.A), ss.callBuffer(pre, c.B), ss.callBuffer(pre, c.C)
	return pre.asBaseline(ss, func() error { return gb.GEMM(c, a, bp, cp) }, c.C), nil
}

// loadBefore loads baseline b's program that runs ahead of its call (an
// empty Loaded when it has none).
func (ss *Session) loadBefore(b kernels.Baseline) (*Loaded, error) {
	if b.Before == nil {
		return &Loaded{be: ss.be}, nil
	}
	pre, err := ss.Load(*b.Before)
	if err != nil {
		return nil, fmt.Errorf("baseline %s, the program before its call: %w", b.Name, err)
	}
	return pre, nil
}

// asBaseline makes pre (a baseline's program before its call, loaded, or
// an empty Loaded) the baseline: a run is pre's launches, then call, and
// Validate compares the buffer written alone, on the random inputs (a
// vendor library's arithmetic is not the family's to hold exact).
func (pre *Loaded) asBaseline(ss *Session, call func() error, written string) *Loaded {
	l := *pre
	bound := pre.bound
	l.exact, l.checks = nil, []string{written}
	l.call = func() error {
		if bound != nil {
			if err := bound.Run(sessionDevice{ss.be}); err != nil {
				return err
			}
		}
		return call()
	}
	return &l
}

// callBuffer is the address of buffer name for a baseline's call: one of
// the program before it (pre), else the session's.
func (ss *Session) callBuffer(pre *Loaded, name string) Ptr {
	if p, ok := pre.ownPtrs[name]; ok {
		return p
	}
	return ss.bufs[name]
}

// baselineCall is b's GEMM call, checked against the session's buffers
// and those of the program before it (pre).
func (ss *Session) baselineCall(b kernels.Baseline, pre *Loaded) (kernels.GEMMCall, error) {
	if b.GEMM == nil {
		return kernels.GEMMCall{}, fmt.Errorf("baseline %s has no call", b.Name)
	}
	if err := checkGEMM(*b.GEMM, append(slices.Clone(ss.specs), pre.own...)); err != nil {
		return kernels.GEMMCall{}, fmt.Errorf("baseline %s: %w", b.Name, err)
	}
	return *b.GEMM, nil
}

// loadedAlgorithm is one algorithm of a best-of baseline, loaded: its
// rank in the heuristic's order (1 first) and its configuration.
type loadedAlgorithm struct {
	*Loaded
	rank   int
	config string
}

// loadAlgorithms binds best-of baseline b to the session's buffers once
// per algorithm of the backend's top LtCandidates, in the heuristic's
// order. A backend without GEMMSearcher fails with an error wrapping
// ErrNoBaselineLibrary.
// The algorithms share one load of the program before the call, which
// release unloads (their own Unload leaves it).
func (ss *Session) loadAlgorithms(b kernels.Baseline) (algos []loadedAlgorithm, release func(), err error) {
	gs, ok := ss.be.(GEMMSearcher)
	if !ok {
		return nil, nil, fmt.Errorf("baseline %s: the %s backend ranks no vendor GEMM algorithms: %w", b.Name, ss.be.Name(), ErrNoBaselineLibrary)
	}
	pre, err := ss.loadBefore(b)
	if err != nil {
		return nil, nil, err
	}
	release = func() { pre.Unload() }
	c, err := ss.baselineCall(b, pre)
	if err != nil {
		release()
		return nil, nil, err
	}
	found, err := gs.GEMMAlgorithms(c, ss.callBuffer(pre, c.A), ss.callBuffer(pre, c.B), ss.callBuffer(pre, c.C), LtCandidates)
	if err == nil && len(found) == 0 {
		err = fmt.Errorf("the %s backend offers no algorithm for %+v", ss.be.Name(), c)
	}
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("baseline %s: %w", b.Name, err)
	}
	for i, al := range found {
		l := pre.asBaseline(ss, al.Run, c.C)
		l.mod, l.ownPtrs = nil, nil // release's to unload
		algos = append(algos, loadedAlgorithm{Loaded: l, rank: i + 1, config: al.Config})
	}
	return algos, release, nil
}

// evaluateBest evaluates best-of baseline b: each algorithm of the
// heuristic's top LtCandidates (only the one whose configuration is pin,
// when pin is set) goes through a program's stages, and the fastest valid
// one by median is the outcome. Its Algorithm is that algorithm's
// configuration and its Message says which rank it has and how every
// other algorithm did. With none valid, the outcome is the first
// algorithm's failure, its Message listing them all.
func evaluateBest(ss *Session, b kernels.Baseline, pin string, mo MeasureOpts, measure measureFunc) *evalResponse {
	t0 := time.Now()
	algos, release, err := ss.loadAlgorithms(b)
	if err == nil {
		defer release()
	}
	loadMS := ms(time.Since(t0))
	if err == nil && pin != "" {
		algos, err = pinned(algos, pin)
	}
	if err != nil {
		res := failure(eval.CompileError, err)
		res.CompileMS = loadMS
		return res
	}
	var best, first *evalResponse
	var bestRank, firstRank int
	var bestMedian, validateMS float64
	var tried []string
	for _, al := range algos {
		res := stages(ss, al.Loaded, 0, mo, measure)
		al.Unload()
		res.Algorithm = al.config
		validateMS += res.ValidateMS
		if res.Fatal {
			res.Message = fmt.Sprintf("cuBLASLt heuristic rank %d (%s): %s", al.rank, al.config, res.Message)
			return res
		}
		if first == nil {
			first, firstRank = res, al.rank
		}
		if res.Status != eval.OK {
			tried = append(tried, fmt.Sprintf("%d %s", al.rank, res.Status))
			continue
		}
		med := SummarizeKept(res.Samples, res.Throttled).Median
		tried = append(tried, fmt.Sprintf("%d %.2f µs", al.rank, med))
		if best == nil || med < bestMedian {
			best, bestRank, bestMedian = res, al.rank, med
		}
	}
	if best == nil {
		first.Message = fmt.Sprintf("no valid algorithm among cuBLASLt's heuristic top %d (by rank: %s); rank %d: %s",
			len(algos), strings.Join(tried, ", "), firstRank, first.Message)
		first.CompileMS, first.ValidateMS = loadMS, validateMS
		return first
	}
	best.Message = fmt.Sprintf("cuBLASLt heuristic rank %d: %s; medians by rank: %s", bestRank, best.Algorithm, strings.Join(tried, ", "))
	best.CompileMS, best.ValidateMS = loadMS, validateMS
	return best
}

// pinned keeps the algorithm of algos whose configuration is pin.
func pinned(algos []loadedAlgorithm, pin string) ([]loadedAlgorithm, error) {
	for _, al := range algos {
		if al.config == pin {
			return []loadedAlgorithm{al}, nil
		}
	}
	return nil, fmt.Errorf("cuBLASLt's heuristic top %d no longer has the algorithm chosen before (%s)", LtCandidates, pin)
}

// evaluations is how many programs the worker evaluates for r: every
// algorithm of the heuristic's top LtCandidates for a best-of baseline
// that pins none, else one. The watchdog gives each its deadline.
func (r *evalRequest) evaluations() int {
	if r.Baseline != nil && r.Baseline.Lib() == BaselineLtBest && r.Algorithm == "" {
		return LtCandidates
	}
	return 1
}

// checkGEMM checks a GEMMCall against the session's buffers: A and B of
// type In (f16 or bf16), C of type Out (f32 or In), C an output or
// accumulate buffer, positive sizes, leading dimensions at least a row,
// and every matrix inside its buffer.
func checkGEMM(c kernels.GEMMCall, specs []configs.BufferSpec) error {
	if c.In != dtype.F16 && c.In != dtype.BF16 {
		return fmt.Errorf("GEMM inputs of type %v: want f16 or bf16", c.In)
	}
	if c.Out != dtype.F32 && c.Out != c.In {
		return fmt.Errorf("GEMM output of type %v: want f32 or the input type %v", c.Out, c.In)
	}
	if c.M < 1 || c.N < 1 || c.K < 1 {
		return fmt.Errorf("GEMM %d×%d×%d: sizes must be positive", c.M, c.N, c.K)
	}
	rowsA, colsA := c.M, c.K
	if c.TransA {
		rowsA, colsA = c.K, c.M
	}
	rowsB, colsB := c.K, c.N
	if c.TransB {
		rowsB, colsB = c.N, c.K
	}
	for _, m := range []struct {
		role           string
		name           string
		dt             dtype.DType
		rows, cols, ld int
		writes         bool
	}{
		{"A", c.A, c.In, rowsA, colsA, c.LDA, false},
		{"B", c.B, c.In, rowsB, colsB, c.LDB, false},
		{"C", c.C, c.Out, c.M, c.N, c.LDC, true},
	} {
		if err := checkMatrix(specs, m.role, m.name, m.dt, m.rows, m.cols, m.ld, m.writes); err != nil {
			return err
		}
	}
	return nil
}

// checkMatrix checks one row-major rows×cols operand with rows ld elements
// apart against its buffer in specs.
func checkMatrix(specs []configs.BufferSpec, role, name string, dt dtype.DType, rows, cols, ld int, writes bool) error {
	i := -1
	for j, b := range specs {
		if b.Name == name {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("GEMM %s names unknown buffer %q", role, name)
	}
	b := specs[i]
	if b.DType != dt {
		return fmt.Errorf("GEMM %s: buffer %s is %v, want %v", role, name, b.DType, dt)
	}
	if writes && b.Role != kernels.Output && b.Role != kernels.Accumulate {
		return fmt.Errorf("GEMM %s: buffer %s is an %v buffer, want an output or accumulate one", role, name, b.Role)
	}
	if ld < cols {
		return fmt.Errorf("GEMM %s (%s, %d×%d row-major): leading dimension %d is below a row of %d", role, name, rows, cols, ld, cols)
	}
	if need := (rows-1)*ld + cols; need > b.Elems {
		return fmt.Errorf("GEMM %s (%s, %d×%d, rows %d apart) needs %d elements, the buffer has %d", role, name, rows, cols, ld, need, b.Elems)
	}
	return nil
}

// columnMajor maps a row-major GEMMCall on the buffers at a, b and c to
// cuBLAS's column-major GemmEx. A row-major matrix with rows ld apart is
// the column-major transpose with the same leading dimension, so
// C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS's A is our B,
// its B our A, its M our N and its N our M; the transpose flags stay with
// their matrices.
func columnMajor(c kernels.GEMMCall, a, b, cp Ptr) cuda.Gemm {
	return cuda.Gemm{
		TransA: c.TransB, TransB: c.TransA,
		M: c.N, N: c.M, K: c.K,
		A: cuda.DevicePtr(b), LDA: c.LDB, AType: blasTypes[c.In],
		B: cuda.DevicePtr(a), LDB: c.LDA, BType: blasTypes[c.In],
		C: cuda.DevicePtr(cp), LDC: c.LDC, CType: blasTypes[c.Out],
	}
}

// blasTypes maps element types to cuBLAS's.
var blasTypes = map[dtype.DType]cuda.BLASType{
	dtype.F16: cuda.BLASFloat16, dtype.BF16: cuda.BLASBFloat16, dtype.F32: cuda.BLASFloat32,
}

// GEMM implements GEMMBaseliner with cublasGemmEx, opening cuBLAS on the
// backend's stream at the first call. An absent library is reported once,
// as an error wrapping ErrNoBaselineLibrary, and every later call returns
// the same error without looking again.
func (b *cudaBackend) GEMM(call kernels.GEMMCall, a, bp, c Ptr) error {
	if b.blas == nil && b.blasErr == nil {
		b.blas, b.blasErr = b.ctx.OpenBLAS(b.stream)
		if b.blasErr != nil {
			b.blasErr = fmt.Errorf("%w: %w", ErrNoBaselineLibrary, b.blasErr)
		}
	}
	if b.blasErr != nil {
		return b.blasErr
	}
	return b.blas.GemmEx(columnMajor(call, a, bp, c))
}

// GEMMAlgorithms implements GEMMSearcher with cuBLASLt's heuristic,
// opening cuBLASLt on the backend's stream at the first call. An absent
// library is reported once, as an error wrapping ErrNoBaselineLibrary,
// and every later call returns the same error without looking again.
func (b *cudaBackend) GEMMAlgorithms(call kernels.GEMMCall, a, bp, c Ptr, n int) ([]GEMMAlgorithm, error) {
	if b.lt == nil && b.ltErr == nil {
		b.lt, b.ltErr = b.ctx.OpenBLASLt(b.stream)
		if b.ltErr != nil {
			b.ltErr = fmt.Errorf("%w: %w", ErrNoBaselineLibrary, b.ltErr)
		}
	}
	if b.ltErr != nil {
		return nil, b.ltErr
	}
	g := columnMajor(call, a, bp, c)
	algos, err := b.lt.Algorithms(g, n)
	if err != nil {
		return nil, err
	}
	out := make([]GEMMAlgorithm, len(algos))
	for i, al := range algos {
		out[i] = GEMMAlgorithm{Config: al.Config.String(), Run: func() error { return b.lt.Matmul(g, al) }}
	}
	return out, nil
}

var (
	_ GEMMBaseliner = (*cudaBackend)(nil)
	_ GEMMSearcher  = (*cudaBackend)(nil)
)
