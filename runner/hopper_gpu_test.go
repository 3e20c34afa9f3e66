//go:build gpu

package runner

// The H200 self-check of issue 10's runner paths: tensor maps through
// cuTensorMapEncodeTiled passed by value, cluster launches (portable and
// 16-block), dynamic shared memory above 48 KiB with a cluster, and cuBLAS
// baselines validated and timed by the worker's own code. Run by
// bench/issue10_h200.sh:
//
//	go test -c -tags gpu -o bin/runner-gpu.test ./runner/
//	./bin/runner-gpu.test -test.run Hopper -test.v

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/variants"
)

// hopperBackend opens GPU 0 on a locked thread; it skips below sm_90.
func hopperBackend(t *testing.T) *cudaBackend {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	be, err := openCUDA(0)
	if err != nil {
		t.Fatalf("opening GPU 0: %v", err)
	}
	t.Cleanup(be.close)
	if major, _, _ := strings.Cut(be.info.CC, "."); len(major) < 2 && major < "9" {
		t.Skipf("%s is sm_%s: the Hopper paths need sm_90", be.info.Name, strings.ReplaceAll(be.info.CC, ".", ""))
	}
	return be
}

// tmaPTX: see tma_copy's comment.
const tmaPTX = `
.version 8.0
.target sm_90
.address_size 64

.extern .shared .align 1024 .b8 dsmem[];
.shared .align 8 .b64 mbar;

// tma_copy: block (bx, by) loads the 32x8 f32 box at column 32*bx, row
// 8*by of the map's tensor into dynamic shared memory with TMA, then its
// 256 threads copy it to y (64 columns) and thread 0 writes
// ctarank + 10*nctarank of its cluster to r[by*gridDim.x + bx].
.visible .entry tma_copy(
	.param .align 64 .b8 p_map[128],
	.param .u64 p_y,
	.param .u64 p_r
)
.reqntid 256, 1, 1
{
	.reg .pred  %p<3>;
	.reg .b32   %r<24>;
	.reg .b64   %rd<12>;
	.reg .f32   %f<3>;

	mov.u32          %r1, %tid.x;
	mov.u32          %r2, %ctaid.x;
	mov.u32          %r3, %ctaid.y;
	mov.u64          %rd1, p_map;
	cvta.param.u64   %rd2, %rd1;
	mov.u32          %r4, dsmem;
	mov.u32          %r5, mbar;
	setp.eq.u32      %p1, %r1, 0;
	@!%p1 bra        SYNC;
	mbarrier.init.shared::cta.b64 [%r5], 1;
	fence.mbarrier_init.release.cluster;
	fence.proxy.async.shared::cta;
SYNC:
	bar.sync         0;
	@!%p1 bra        WAIT;
	shl.b32          %r6, %r2, 5;
	shl.b32          %r7, %r3, 3;
	mbarrier.arrive.expect_tx.shared::cta.b64 %rd3, [%r5], 1024;
	cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd2, {%r6, %r7}], [%r5];
WAIT:
	mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r5], 0;
	@!%p2 bra        WAIT;
	// y[(8*by + tid/32)*64 + 32*bx + tid%32] = smem[tid]
	shl.b32          %r8, %r1, 2;
	add.u32          %r9, %r4, %r8;
	ld.shared.f32    %f1, [%r9];
	shr.u32          %r10, %r1, 5;
	shl.b32          %r11, %r3, 3;
	add.u32          %r12, %r11, %r10;
	and.b32          %r13, %r1, 31;
	shl.b32          %r14, %r2, 5;
	add.u32          %r15, %r14, %r13;
	shl.b32          %r16, %r12, 6;
	add.u32          %r17, %r16, %r15;
	ld.param.u64     %rd4, [p_y];
	cvta.to.global.u64 %rd5, %rd4;
	mul.wide.u32     %rd6, %r17, 4;
	add.s64          %rd7, %rd5, %rd6;
	st.global.f32    [%rd7], %f1;
	@!%p1 bra        DONE;
	mov.u32          %r18, %cluster_ctarank;
	mov.u32          %r19, %cluster_nctarank;
	mad.lo.u32       %r20, %r19, 10, %r18;
	cvt.rn.f32.u32   %f2, %r20;
	mov.u32          %r21, %nctaid.x;
	mad.lo.u32       %r22, %r3, %r21, %r2;
	ld.param.u64     %rd8, [p_r];
	cvta.to.global.u64 %rd9, %rd8;
	mul.wide.u32     %rd10, %r22, 4;
	add.s64          %rd11, %rd9, %rd10;
	st.global.f32    [%rd11], %f2;
DONE:
	ret;
}
`

// clusterPTX: see cluster_rank's comment.
const clusterPTX = `
.version 8.0
.target sm_90
.address_size 64

// cluster_rank: r[ctaid.x] = %cluster_ctarank + 100*%cluster_nctarank.
.visible .entry cluster_rank(
	.param .u64 p_r
)
{
	.reg .pred  %p<2>;
	.reg .b32   %r<8>;
	.reg .b64   %rd<5>;
	.reg .f32   %f<2>;

	mov.u32          %r1, %tid.x;
	setp.ne.u32      %p1, %r1, 0;
	@%p1 bra         DONE;
	mov.u32          %r2, %cluster_ctarank;
	mov.u32          %r3, %cluster_nctarank;
	mad.lo.u32       %r4, %r3, 100, %r2;
	cvt.rn.f32.u32   %f1, %r4;
	mov.u32          %r5, %ctaid.x;
	ld.param.u64     %rd1, [p_r];
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32     %rd3, %r5, 4;
	add.s64          %rd4, %rd2, %rd3;
	st.global.f32    [%rd4], %f1;
DONE:
	ret;
}
`

// tmaFamily is a 32×64 f32 matrix x that tma_copy copies to y, and r,
// what each block of its 2×4 grid says of its cluster.
type tmaFamily struct{ kernels.Family }

func (tmaFamily) Name() string { return "tma_toy" }
func (tmaFamily) Buffers(variants.Shape) []kernels.Buffer {
	return []kernels.Buffer{
		{Name: "x", DType: dtype.F32, Elems: configs.Int(32 * 64), Role: kernels.Input},
		{Name: "y", DType: dtype.F32, Elems: configs.Int(32 * 64), Role: kernels.Output},
		{Name: "r", DType: dtype.F32, Elems: configs.Int(8), Role: kernels.Output},
	}
}
func (tmaFamily) Inputs(variants.Shape, uint64) map[string][]float64 {
	x := make([]float64, 32*64)
	for i := range x {
		x[i] = float64(i)
	}
	return map[string][]float64{"x": x}
}
func (tmaFamily) Reference(_ variants.Shape, in map[string][]float64) map[string][]float64 {
	r := make([]float64, 8)
	for i := range r {
		r[i] = float64(i%2 + 20) // rank bx%2 in a cluster of 2
	}
	return map[string][]float64{"y": in["x"], "r": r}
}
func (tmaFamily) Tolerance(variants.Shape, string) kernels.Tolerance { return kernels.Tolerance{} }

// tmaProgram launches tma_copy in 2-block clusters with 100 KiB of dynamic
// shared memory (so the opt-in above 48 KiB precedes a cluster launch).
var tmaProgram = kernels.Program{PTX: tmaPTX, Launches: []kernels.Launch{{
	Entry: "tma_copy", Grid: configs.Grid(2, 4, 1), Block: [3]int{256, 1, 1}, SharedBytes: 100 << 10, Cluster: [3]int{2, 1, 1},
	Args: []kernels.Arg{
		{TensorMap: &kernels.TensorMap{Buffer: "x", DType: dtype.F32, Dims: configs.Ints(64, 32), Strides: configs.Ints(256), Box: []int{32, 8}}},
		{Buffer: "y"}, {Buffer: "r"},
	},
}}}

// TestHopperTensorMapCluster: a TMA load through a tensor map encoded by
// the driver and passed by value, in a clustered launch, through Session
// exactly as tune runs programs.
func TestHopperTensorMapCluster(t *testing.T) {
	be := hopperBackend(t)
	ss := NewSession(be)
	defer ss.Release()
	if err := ss.Prepare(tmaFamily{}, toyShape, 1); err != nil {
		t.Fatal(err)
	}
	l, err := ss.Load(tmaProgram)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unload()
	c, err := ss.Validate(l)
	if err != nil {
		t.Fatal(err)
	}
	if !c.OK {
		t.Fatalf("TMA copy in clusters of 2: %s", c.Message)
	}
	t.Logf("%s: TMA 2-D f32 box 32×8 by value, clusters of 2, 100 KiB dynamic shared memory: valid (%d registers)", be.info.Name, l.Res.Registers)
}

// TestHopperClusterNonPortable: clusters of 16 blocks (non-portable, the
// function attribute set by the launch) report their rank and size.
func TestHopperClusterNonPortable(t *testing.T) {
	be := hopperBackend(t)
	mod, err := be.Load(clusterPTX)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	fn, err := mod.Function("cluster_rank")
	if err != nil {
		t.Fatal(err)
	}
	const blocks = 64
	r, err := be.Alloc(4 * blocks)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Free(r)
	for _, size := range []int{2, 8, 16} {
		if err := be.Memset(r, 0xff, 4*blocks); err != nil {
			t.Fatal(err)
		}
		err := be.LaunchCluster(fn, [3]int{blocks, 1, 1}, [3]int{32, 1, 1}, [3]int{size, 1, 1}, 0, []any{r})
		if err == nil {
			err = be.Sync()
		}
		if err != nil {
			t.Fatalf("clusters of %d: %v", size, err)
		}
		buf := make([]byte, 4*blocks)
		if err := be.Download(buf, r); err != nil {
			t.Fatal(err)
		}
		got := dtype.F32.Decode(buf)
		for i, v := range got {
			if want := float64(i%size + 100*size); v != want {
				t.Fatalf("clusters of %d: block %d says %v, want rank %d of %d (%v)", size, i, v, i%size, size, want)
			}
		}
		t.Logf("clusters of %d blocks: every block has its rank and cluster size", size)
	}
	if err := be.LaunchCluster(fn, [3]int{32, 1, 1}, [3]int{32, 1, 1}, [3]int{32, 1, 1}, 0, []any{r}); err == nil {
		t.Error("a 32-block cluster was launched")
	}
}

// TestHopperTensorMapEncode: the maps the GEMMs use encode, and the driver
// refuses what configs.TensorMapSpec.Check refuses.
func TestHopperTensorMapEncode(t *testing.T) {
	be := hopperBackend(t)
	const m, k = 2048, 1536
	p, err := be.Alloc(m * k * 2)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Free(p)
	for _, tm := range []kernels.TensorMap{
		{Buffer: "a", DType: dtype.BF16, Dims: configs.Ints(k, m), Strides: configs.Ints(2 * k), Box: []int{64, 128}, Swizzle: 128},
		{Buffer: "a", DType: dtype.BF16, Dims: configs.Ints(64, m, k/64), Strides: configs.Ints(2*k, 128), Box: []int{64, 128, 2}, Swizzle: 128},
		{Buffer: "a", DType: dtype.F16, Dims: configs.Ints(k, m), Strides: configs.Ints(2 * k), Box: []int{32, 64}, Swizzle: 64},
		{Buffer: "a", DType: dtype.F32, Dims: configs.Ints(k/2, m), Strides: configs.Ints(2 * k), Box: []int{8, 256}, Swizzle: 32},
		// the second half of the rows, a map of its own
		{Buffer: "a", Offset: configs.Int(k * m), DType: dtype.BF16, Dims: configs.Ints(k, m/2), Strides: configs.Ints(2 * k), Box: []int{64, 128}, Swizzle: 128},
	} {
		spec, err := tm.Resolve(nil)
		if err == nil {
			err = spec.CheckAt(uint64(p), m*k*2)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := be.EncodeTensorMap(spec, Ptr(spec.Global(uint64(p))))
		if err != nil {
			t.Fatalf("%+v: %v", tm, err)
		}
		if got == (TensorMapArg{}) {
			t.Errorf("%+v: the driver wrote nothing", tm)
		}
	}
	// Straight to the driver, past the Go checks: a stride that is not a
	// multiple of 16 bytes.
	_, err = be.ctx.Driver().EncodeTensorMapTiled(cuda.TensorMapSpec{DataType: cuda.TensorBFloat16, Global: cuda.DevicePtr(p),
		Dims: []uint64{k, m}, Strides: []uint64{2*k + 8}, Box: []uint32{64, 128}, Swizzle: 128})
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Code != 1 {
		t.Errorf("stride 3080 bytes: driver said %v, want CUDA_ERROR_INVALID_VALUE", err)
	}
	t.Logf("tensor maps: bf16 2-D/3-D 128B swizzle (and at an offset), f16 64B, f32 32B encoded; the driver refuses a stride of 3080 bytes too")
}

// TestHopperCublasBaseline: cuBLAS baselines through the worker's own
// stages (bind, NaN-poisoned validation, warm-up, L2 flush, adaptive
// sampling), on the GEMM forms the gemm_bwd family needs.
func TestHopperCublasBaseline(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w := &gpuWorker{ordinal: 0}
	if err := w.open(); err != nil {
		t.Fatal(err)
	}
	defer w.close()
	for _, f := range []gemmFamily{
		{m: 2048, n: 2048, k: 2048, out: dtype.F32},                           // A·Bᵀ (dX = dY·W with W [n×k])
		{m: 2048, n: 1536, k: 8960, out: dtype.BF16},                          // a Qwen down projection's shape
		{m: 1536, n: 1024, k: 2048, out: dtype.F32, transA: true, notB: true}, // Aᵀ·B (dW = Xᵀ·dY)
		{m: 512, n: 768, k: 256, out: dtype.BF16, notB: true},                 // A·B
	} {
		b := f.Baselines(toyShape)[0]
		w.ss.Release() // the toy families share a name and shape: prepare each anew
		req := &evalRequest{Kernel: f.Name(), Dims: toyShape.Dims, DType: "bf16", Baseline: &b, Seed: 1}
		res := evaluate(w.ss, Families{f}, req, DefaultMeasure, w.measure)
		what := fmt.Sprintf("%d×%d×%d transA=%v transB=%v bf16→%v", f.m, f.n, f.k, b.GEMM.TransA, b.GEMM.TransB, f.out)
		if res.Status != eval.OK {
			t.Fatalf("%s: %s: %s", what, res.Status, res.Message)
		}
		st := Summarize(res.Samples)
		tflops := 2 * float64(f.m) * float64(f.n) * float64(f.k) / (st.Median * 1e-6) / 1e12
		t.Logf("cublas %s (version %d) %s: valid (max abs err %g), median %.2f µs [%.2f, %.2f], %d samples, %.0f TFLOP/s",
			w.be.blas.Path(), w.be.blas.Version(), what, res.MaxAbsErr, st.Median, st.Lo, st.Hi, st.N, tflops)
	}
}
