package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestLtOnGPU is the cuBLASLt self-check on a GPU (it skips without an
// NVIDIA driver): go test ./runner/cuda -run TestLtOnGPU -v. It asks the
// heuristic for its top 8 algorithms of one bf16 GEMM of 2048×8960×1536
// (row-major C[2048×8960] = A[2048×1536]·B[1536×8960], the form a
// down-projection's dX takes), runs each on NaN-poisoned outputs and
// compares rows of C with a CPU reference: the inputs are small integers,
// so an f32 C must be exact and a bf16 C the exact sum rounded to bf16
// (within one bf16 unit of it). It logs each algorithm's configuration and
// median time (hot L2, 20 runs) beside cublasGemmEx's default.
func TestLtOnGPU(t *testing.T) {
	if !driverPresent() {
		t.Skip("no NVIDIA driver (libcuda.so.1): the cuBLASLt self-check needs a GPU")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := d.Context(0)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	lt, err := ctx.OpenBLASLt(s)
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Close()
	blas, err := ctx.OpenBLAS(s)
	if err != nil {
		t.Fatal(err)
	}
	defer blas.Close()
	t.Logf("cuBLASLt %s (version %d), cuBLAS %s (version %d)", lt.Path(), lt.Version(), blas.Path(), blas.Version())

	const m, n, k = 2048, 8960, 1536
	rng := rand.New(rand.NewPCG(1, 2))
	a, b := smallInts(rng, m*k), smallInts(rng, k*n)
	pa, pb := uploadBF16(t, ctx, a), uploadBF16(t, ctx, b)
	defer ctx.Free(pa)
	defer ctx.Free(pb)
	rows := []int{0, 1, m / 2, m - 1}
	want := referenceRows(a, b, rows, n, k)
	for _, out := range []BLASType{BLASFloat32, BLASBFloat16} {
		size := 4
		if out == BLASBFloat16 {
			size = 2
		}
		pc, err := ctx.Alloc(m * n * size)
		if err != nil {
			t.Fatal(err)
		}
		defer ctx.Free(pc)
		// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLAS's A is B
		// (8960×1536, ld 8960), its B is A (1536×2048, ld 1536).
		g := Gemm{M: n, N: m, K: k, A: pb, LDA: n, B: pa, LDB: k, C: pc, LDC: n,
			AType: BLASBFloat16, BType: BLASBFloat16, CType: out}
		check := func(what string, run func() error) {
			t.Helper()
			if err := ctx.MemsetD8Async(pc, 0xff, m*n*size, s); err != nil {
				t.Fatal(err)
			}
			if err := run(); err != nil {
				t.Errorf("%s: %v", what, err)
				return
			}
			worst, err := checkRows(ctx, s, pc, out, rows, want, m, n)
			if err != nil {
				t.Errorf("%s: %v", what, err)
				return
			}
			med, err := medianRun(ctx, s, run)
			if err != nil {
				t.Errorf("%s: timing: %v", what, err)
				return
			}
			t.Logf("bf16→%s %s: %.2f µs (%.0f TFLOP/s), rows checked, largest error %g", typeName(out), what, med,
				2*float64(m)*float64(n)*float64(k)/(med*1e-6)/1e12, worst)
		}
		check("cublasGemmEx default", func() error { return blas.GemmEx(g) })
		algos, err := lt.Algorithms(g, 8)
		if err != nil {
			t.Fatal(err)
		}
		if len(algos) < 2 {
			t.Errorf("the heuristic offers %d algorithms, want several", len(algos))
		}
		for i, al := range algos {
			check(fmt.Sprintf("cuBLASLt rank %d (%s, workspace %d B, waves %.2f)", i+1, al.Config, al.Workspace, al.Waves),
				func() error { return lt.Matmul(g, al) })
		}
	}
}

// smallInts is n integers from -3 to 3: exact in bf16, and every partial
// sum of 1536 products exact in f32.
func smallInts(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.IntN(7) - 3)
	}
	return x
}

// uploadBF16 copies x, exact in bf16, to a new device buffer.
func uploadBF16(t *testing.T, ctx *Context, x []float32) DevicePtr {
	t.Helper()
	buf := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(buf[2*i:], uint16(math.Float32bits(v)>>16))
	}
	p, err := ctx.Alloc(len(buf))
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.CopyHtoD(p, buf); err != nil {
		t.Fatal(err)
	}
	return p
}

// referenceRows is rows of row-major C[·×n] = A·B, exactly.
func referenceRows(a, b []float32, rows []int, n, k int) [][]float64 {
	out := make([][]float64, len(rows))
	for r, i := range rows {
		out[r] = make([]float64, n)
		for j := range n {
			for l := range k {
				out[r][j] += float64(a[i*k+l]) * float64(b[l*n+j])
			}
		}
	}
	return out
}

// checkRows compares rows of row-major C[m×n] with their exact values
// want: an f32 C must equal them, a bf16 C be within one bf16 unit
// (2^(e-7) for a value in [2^e, 2^(e+1))). It returns the largest error.
func checkRows(ctx *Context, s *Stream, c DevicePtr, out BLASType, rows []int, want [][]float64, m, n int) (float64, error) {
	if err := s.Synchronize(); err != nil {
		return 0, err
	}
	size := 4
	if out == BLASBFloat16 {
		size = 2
	}
	host := make([]byte, m*n*size)
	if err := ctx.CopyDtoH(host, c); err != nil {
		return 0, err
	}
	worst := 0.0
	for r, i := range rows {
		for j, w := range want[r] {
			var got, tol float64
			if out == BLASBFloat16 {
				got = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(host[2*(i*n+j):])) << 16))
				if w != 0 {
					tol = math.Ldexp(1, math.Ilogb(w)-7)
				}
			} else {
				got = float64(math.Float32frombits(binary.LittleEndian.Uint32(host[4*(i*n+j):])))
			}
			e := math.Abs(got - w)
			if !(e <= tol) {
				return 0, fmt.Errorf("C[%d][%d] = %g, want %g (tolerance %g)", i, j, got, w, tol)
			}
			worst = max(worst, e)
		}
	}
	return worst, nil
}

// medianRun is the median of 20 timed runs after 3 untimed ones, µs.
func medianRun(ctx *Context, s *Stream, run func() error) (float64, error) {
	for range 3 {
		if err := run(); err != nil {
			return 0, err
		}
	}
	var times []float64
	for range 20 {
		start, err := ctx.NewEvent()
		if err != nil {
			return 0, err
		}
		end, err := ctx.NewEvent()
		if err != nil {
			return 0, err
		}
		err = start.Record(s)
		if err == nil {
			err = run()
		}
		if err == nil {
			err = end.Record(s)
		}
		if err == nil {
			err = end.Synchronize()
		}
		var ms float32
		if err == nil {
			ms, err = Elapsed(start, end)
		}
		start.Destroy()
		end.Destroy()
		if err != nil {
			return 0, err
		}
		times = append(times, float64(ms)*1e3)
	}
	slices.Sort(times)
	return (times[9] + times[10]) / 2, nil
}

func typeName(t BLASType) string {
	switch t {
	case BLASFloat32:
		return "f32"
	case BLASBFloat16:
		return "bf16"
	}
	return fmt.Sprintf("type %d", t)
}
