package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/variants"
)

// rowMajorGEMM is C = op(A)·op(B) as kernels.GEMMCall defines it, on
// row-major float64 matrices; rows of C in parallel (the GPU self-check
// validates GEMMs of 2048³).
func rowMajorGEMM(c kernels.GEMMCall, a, b []float64) []float64 {
	out := make([]float64, (c.M-1)*c.LDC+c.N)
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), c.M)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < c.M; i += workers {
				gemmRow(c, a, b, i, out[i*c.LDC:i*c.LDC+c.N])
			}
		})
	}
	wg.Wait()
	return out
}

// gemmRow computes row i of C into row.
func gemmRow(c kernels.GEMMCall, a, b []float64, i int, row []float64) {
	for j := range c.N {
		sum := 0.0
		for l := range c.K {
			ia, ib := i*c.LDA+l, l*c.LDB+j
			if c.TransA {
				ia = l*c.LDA + i
			}
			if c.TransB {
				ib = j*c.LDB + l
			}
			sum += a[ia] * b[ib]
		}
		row[j] = sum
	}
}

// columnMajorGEMM is what cublasGemmEx computes for g: column-major
// C = op(A)·op(B), with mem holding each operand by address.
func columnMajorGEMM(g cuda.Gemm, mem map[cuda.DevicePtr][]float64) {
	a, b, c := mem[g.A], mem[g.B], mem[g.C]
	for i := range g.M {
		for j := range g.N {
			sum := 0.0
			for l := range g.K {
				ia, ib := i+l*g.LDA, l+j*g.LDB // A is M×K, B K×N
				if g.TransA {
					ia = l + i*g.LDA // A is K×M
				}
				if g.TransB {
					ib = j + l*g.LDB // B is N×K
				}
				x, y := a[ia], b[ib]
				sum += x * y
			}
			c[i+j*g.LDC] = sum
		}
	}
}

// TestColumnMajorMapping: cuBLAS's column-major GEMM on the mapped
// arguments computes the row-major GEMM the call asks for, for every
// transpose combination and padded leading dimensions.
func TestColumnMajorMapping(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range []int{1, 3, 5} {
		for _, n := range []int{1, 4, 7} {
			for _, k := range []int{1, 2, 6} {
				for tr := range 4 {
					c := kernels.GEMMCall{A: "a", B: "b", C: "c", M: m, N: n, K: k, TransA: tr&1 != 0, TransB: tr&2 != 0,
						In: dtype.BF16, Out: dtype.F32}
					rowsA, colsA, rowsB, colsB := m, k, k, n
					if c.TransA {
						rowsA, colsA = k, m
					}
					if c.TransB {
						rowsB, colsB = n, k
					}
					c.LDA, c.LDB, c.LDC = colsA+rng.IntN(3), colsB+rng.IntN(3), n+rng.IntN(3)
					a := randMatrix(rng, (rowsA-1)*c.LDA+colsA)
					b := randMatrix(rng, (rowsB-1)*c.LDB+colsB)
					want := rowMajorGEMM(c, a, b)

					g := columnMajor(c, 0x1000, 0x2000, 0x3000)
					if err := g.Check(); err != nil {
						t.Fatalf("%+v maps to %+v: %v", c, g, err)
					}
					got := make([]float64, len(want))
					columnMajorGEMM(g, map[cuda.DevicePtr][]float64{0x1000: a, 0x2000: b, 0x3000: got})
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%+v (mapped %+v): C[%d] = %g, want %g", c, g, i, got[i], want[i])
						}
					}
					if g.AType != cuda.BLASBFloat16 || g.BType != cuda.BLASBFloat16 || g.CType != cuda.BLASFloat32 {
						t.Fatalf("types %d %d %d, want bf16 bf16 f32", g.AType, g.BType, g.CType)
					}
				}
			}
		}
	}
}

// randMatrix is n small integers, exact in every type.
func randMatrix(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(rng.IntN(7) - 3)
	}
	return x
}

// gemmFamily is C[m×n] = op(A)·op(B) with bf16 inputs, dense, by default
// A[m×k]·B[n×k]ᵀ (transB is then true: set notB for B[k×n]); it has a
// cuBLAS baseline, and variants that only the fake worker sees.
type gemmFamily struct {
	kernels.Family
	m, n, k      int
	out          dtype.DType
	transA, notB bool
	withLt       bool // a cublaslt-best baseline beside cublas
}

func (gemmFamily) Name() string { return "gemm_toy" }
func (f gemmFamily) Buffers(variants.Shape) []kernels.Buffer {
	return []kernels.Buffer{
		{Name: "a", DType: dtype.BF16, Elems: configs.Int(f.m * f.k), Role: kernels.Input},
		{Name: "b", DType: dtype.BF16, Elems: configs.Int(f.n * f.k), Role: kernels.Input},
		{Name: "c", DType: f.out, Elems: configs.Int(f.m * f.n), Role: kernels.Output},
		{Name: "d", DType: dtype.F32, Elems: configs.Int(4), Role: kernels.Output}, // no baseline writes it
	}
}
func (f gemmFamily) call() kernels.GEMMCall {
	c := kernels.GEMMCall{A: "a", B: "b", C: "c", M: f.m, N: f.n, K: f.k, TransA: f.transA, TransB: !f.notB,
		LDA: f.k, LDB: f.k, LDC: f.n, In: dtype.BF16, Out: f.out}
	if c.TransA {
		c.LDA = f.m
	}
	if !c.TransB {
		c.LDB = f.n
	}
	return c
}
func (f gemmFamily) Inputs(_ variants.Shape, seed uint64) map[string][]float64 {
	rng := rand.New(rand.NewPCG(seed, 0))
	return map[string][]float64{"a": randMatrix(rng, f.m*f.k), "b": randMatrix(rng, f.n*f.k)}
}
func (f gemmFamily) Reference(_ variants.Shape, in map[string][]float64) map[string][]float64 {
	return map[string][]float64{"c": rowMajorGEMM(f.call(), in["a"], in["b"]), "d": make([]float64, 4)}
}

// Tolerance: the inputs are small integers, so f32 sums are exact; a bf16
// C is the exact sum rounded once.
func (f gemmFamily) Tolerance(variants.Shape, string) kernels.Tolerance {
	if f.out == dtype.BF16 {
		return kernels.Tolerance{Atol: 1e-6, Rtol: 1.0 / 256}
	}
	return kernels.Tolerance{Atol: 1e-6}
}
func (f gemmFamily) Baselines(variants.Shape) []kernels.Baseline {
	c := f.call()
	if f.withLt {
		return []kernels.Baseline{{Name: "cublas", GEMM: &c}, f.ltBest()}
	}
	return []kernels.Baseline{{Name: "cublas", GEMM: &c}}
}

// ltBest is the cublaslt-best baseline of the family's call.
func (f gemmFamily) ltBest() kernels.Baseline {
	c := f.call()
	return kernels.Baseline{Name: BaselineLtBest, GEMM: &c}
}
func (f gemmFamily) Space(variants.Shape) variants.Space {
	return variants.Space{Axes: []variants.Axis{variants.IntAxis("v", "", 1, 2)}}
}
func (gemmFamily) Emit(s variants.Shape, p variants.Params) (kernels.Program, error) {
	return kernels.Program{PTX: "// params " + p.String() + "\n", Launches: []kernels.Launch{{Entry: "gemm"}}}, nil
}
func (gemmFamily) Cost(variants.Shape) kernels.Cost { return kernels.Cost{Flops: 2e9} }

// memBackend keeps buffers in host memory; with gemm set it runs GEMMs
// the way cuBLAS would, through columnMajor.
type memBackend struct {
	fakeBackend
	mem   map[Ptr][]byte
	types map[Ptr]dtype.DType // the element type of each GEMM operand
	gemm  bool
	wrong bool // off by one in C[0]
}

func newMemBackend() *memBackend {
	return &memBackend{mem: map[Ptr][]byte{}, types: map[Ptr]dtype.DType{}}
}

func (b *memBackend) Alloc(n int) (Ptr, error) {
	p, _ := b.fakeBackend.Alloc(n)
	b.mem[p] = make([]byte, n)
	return p, nil
}
func (b *memBackend) Upload(p Ptr, src []byte) error   { copy(b.mem[p], src); return nil }
func (b *memBackend) Download(dst []byte, p Ptr) error { copy(dst, b.mem[p]); return nil }
func (b *memBackend) Memset(p Ptr, v byte, n int) error {
	for i := range n {
		b.mem[p][i] = v
	}
	return nil
}

// noGEMM hides memBackend's GEMM: a backend without vendor GEMMs.
type noGEMM struct{ Backend }

func (b *memBackend) GEMM(call kernels.GEMMCall, a, bp, c Ptr) error {
	if !b.gemm {
		return fmt.Errorf("fake: no libcublas: %w", ErrNoBaselineLibrary)
	}
	g := columnMajor(call, a, bp, c)
	ops := map[cuda.DevicePtr][]float64{}
	for p, dt := range map[Ptr]dtype.DType{a: call.In, bp: call.In, c: call.Out} {
		ops[cuda.DevicePtr(p)] = dt.Decode(b.mem[p])
	}
	columnMajorGEMM(g, ops)
	out := ops[cuda.DevicePtr(c)]
	if b.wrong {
		out[0]++
	}
	copy(b.mem[c], call.Out.Encode(out))
	return nil
}

func TestBaselineValidates(t *testing.T) {
	for i, f := range []gemmFamily{
		{m: 5, n: 7, k: 9, out: dtype.F32},
		{m: 5, n: 7, k: 9, out: dtype.BF16},
		{m: 6, n: 3, k: 4, out: dtype.F32, transA: true},
		{m: 6, n: 3, k: 4, out: dtype.BF16, transA: true, notB: true},
	} {
		out := fmt.Sprint(i, f.out)
		be := newMemBackend()
		be.gemm = true
		ss := NewSession(be)
		if err := ss.Prepare(f, toyShape, 1); err != nil {
			t.Fatal(err)
		}
		l, err := ss.LoadBaseline(f.Baselines(toyShape)[0])
		if err != nil {
			t.Fatal(err)
		}
		c, err := ss.Validate(l)
		if err != nil || !c.OK {
			t.Fatalf("C %v: Validate = %+v, %v", out, c, err)
		}
		// d, which the baseline does not write, stays poisoned: not compared.
		if got := be.mem[ss.bufs["d"]][0]; got != 0xff {
			t.Errorf("d was written (%#x)", got)
		}
		be.wrong = true
		if c, err := ss.Validate(l); err != nil || c.OK || !strings.HasPrefix(c.Message, "c[0] = ") {
			t.Errorf("a wrong C[0]: Validate = %+v, %v", c, err)
		}
		if err := l.Unload(); err != nil {
			t.Error(err)
		}
	}
}

func TestBaselineLibraryAbsent(t *testing.T) {
	f := gemmFamily{m: 2, n: 2, k: 2, out: dtype.F32}
	be := newMemBackend() // implements GEMMBaseliner, but has no library
	ss := NewSession(be)
	if err := ss.Prepare(f, toyShape, 1); err != nil {
		t.Fatal(err)
	}
	l, err := ss.LoadBaseline(f.Baselines(toyShape)[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Validate(l); !errors.Is(err, ErrNoBaselineLibrary) {
		t.Errorf("Validate without the library = %v, want ErrNoBaselineLibrary", err)
	}
	ss2 := NewSession(noGEMM{newMemBackend()})
	if err := ss2.Prepare(f, toyShape, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := ss2.LoadBaseline(f.Baselines(toyShape)[0]); !errors.Is(err, ErrNoBaselineLibrary) || !strings.Contains(err.Error(), "fake backend runs no vendor GEMMs") {
		t.Errorf("LoadBaseline on a backend without GEMMs = %v", err)
	}
}

func TestCheckGEMM(t *testing.T) {
	f := gemmFamily{m: 4, n: 8, k: 16, out: dtype.F32}
	plan, err := configs.Resolve(nil, f.Buffers(toyShape), configs.Env{})
	if err != nil {
		t.Fatal(err)
	}
	specs := plan.Buffers
	if err := checkGEMM(f.call(), specs); err != nil {
		t.Fatalf("a good call: %v", err)
	}
	for _, tt := range []struct {
		edit func(c *kernels.GEMMCall)
		want string
	}{
		{func(c *kernels.GEMMCall) { c.In = dtype.F32 }, "inputs of type f32"},
		{func(c *kernels.GEMMCall) { c.Out = dtype.F16 }, "output of type f16: want f32 or the input type bf16"},
		{func(c *kernels.GEMMCall) { c.K = 0 }, "sizes must be positive"},
		{func(c *kernels.GEMMCall) { c.A = "x" }, `GEMM A names unknown buffer "x"`},
		{func(c *kernels.GEMMCall) { c.C = "a" }, "GEMM C: buffer a is bf16, want f32"},
		{func(c *kernels.GEMMCall) { c.C, c.Out, c.In, c.A, c.B = "a", dtype.BF16, dtype.BF16, "b", "b" }, "an input buffer, want an output"},
		{func(c *kernels.GEMMCall) { c.LDA = 15 }, "leading dimension 15 is below a row of 16"},
		{func(c *kernels.GEMMCall) { c.LDC = 9 }, "needs 35 elements, the buffer has 32"},
		{func(c *kernels.GEMMCall) { c.TransB = false }, "GEMM B (b, 16×8, rows 16 apart) needs 248 elements"},
	} {
		c := f.call()
		tt.edit(&c)
		err := checkGEMM(c, specs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want one saying %q", c, err, tt.want)
		}
	}
}

func TestBaselineHashStable(t *testing.T) {
	f := gemmFamily{m: 4, n: 8, k: 16, out: dtype.F32}
	b := f.Baselines(toyShape)[0]
	h := BaselineHash(b)
	if len(h) != 64 || h != BaselineHash(f.Baselines(toyShape)[0]) {
		t.Errorf("hash %q not stable", h)
	}
	c := *b.GEMM
	c.LDC++
	if BaselineHash(kernels.Baseline{Name: "cublas", GEMM: &c}) == h {
		t.Error("a different call has the same hash")
	}
}

func TestTuneMeasuresBaselineOnce(t *testing.T) {
	answer := func(p string) (*evalResponse, error) {
		switch p {
		case "v=1":
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(10)}}, nil
		case "v=2":
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(12)}}, nil
		case "baseline=cublas":
			return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(11)}}, nil
		}
		return nil, fmt.Errorf("unexpected request %q", p)
	}
	var starts, evals int
	r := newRunner(t, answer, &starts, &evals)
	rec := newMem()
	f := gemmFamily{m: 4, n: 8, k: 16, out: dtype.F32}
	jobs := []Job{{Family: f, Shapes: []variants.Shape{toyShape}}}
	sums, err := r.Tune(context.Background(), jobs, rec)
	if err != nil {
		t.Fatal(err)
	}
	b := sums[0].Baseline
	if b == nil || b.Key.Params != "baseline=cublas" || b.Key.PTXSHA256 != BaselineHash(f.Baselines(toyShape)[0]) {
		t.Fatalf("baseline = %+v", b)
	}
	if m := b.Stats.Median; m < 11 || m > 11.02 || b.TFLOPs < 180 || b.TFLOPs > 182 { // 2e9 flops in 11 µs
		t.Errorf("baseline median %v µs, %v TFLOP/s", m, b.TFLOPs)
	}
	if evals != 3 || len(rec.records) != 3 || rec.records[2].Key != b.Key {
		t.Errorf("evals %d, records %+v", evals, rec.records)
	}
	if len(rec.winners) != 1 || rec.winners[0].Key.Params != "v=1" || rec.bases[0] == nil || rec.bases[0].Key != b.Key {
		t.Errorf("winner %+v with baseline %+v", rec.winners, rec.bases)
	}
	// A re-run reuses the baseline like the variants, and still gives it
	// with the winner.
	sums, err = r.Tune(context.Background(), jobs, rec)
	if err != nil {
		t.Fatal(err)
	}
	if evals != 3 || len(rec.records) != 3 || sums[0].Baseline == nil || !sums[0].Baseline.Reused || rec.bases[1] == nil {
		t.Errorf("re-run: evals %d, records %d, baseline %+v", evals, len(rec.records), sums[0].Baseline)
	}
}

func TestTuneWithoutBaselineLibrary(t *testing.T) {
	answer := func(p string) (*evalResponse, error) {
		if p == "baseline=cublas" {
			return &evalResponse{Outcome: Outcome{Status: "skipped", Unavailable: true,
				Message: "baseline library not available: cuda: cuBLAS not found (dlopen libcublas.so.13: …)"}}, nil
		}
		return &evalResponse{Outcome: Outcome{Status: "ok", Samples: samples(10)}}, nil
	}
	var starts, evals int
	r := newRunner(t, answer, &starts, &evals)
	var progress strings.Builder
	r.opt.Progress = &progress
	rec := newMem()
	f := gemmFamily{m: 4, n: 8, k: 16, out: dtype.F32}
	shape2 := variants.Shape{Dims: []variants.Dim{{Name: "n", Value: 2000}}, DType: dtype.F32}
	sums, err := r.Tune(context.Background(), []Job{{Family: f, Shapes: []variants.Shape{toyShape, shape2}}}, rec)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(progress.String(), "cublas baseline: not measured (baseline library not available"); n != 1 {
		t.Errorf("the absent library was reported %d times, want once:\n%s", n, progress.String())
	}
	if evals != 5 || len(rec.records) != 4 {
		t.Errorf("evals %d (want 2×2 variants and one baseline), records %d (want the variants only)", evals, len(rec.records))
	}
	for _, s := range sums {
		if s.Baseline != nil || s.Best == nil {
			t.Errorf("summary %+v", s)
		}
	}
	if len(rec.bases) != 2 || rec.bases[0] != nil || rec.bases[1] != nil {
		t.Errorf("winners given baselines %+v", rec.bases)
	}
}
