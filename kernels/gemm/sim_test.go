package gemm_test

import (
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/variants"
)

// simSample validates a sweep of one in n (simtest.Sample: every axis
// value the shapes' variants hold, a variant of every shape, then one in
// n of each shape's) of the variants keep accepts at cases on the CPU
// interpreter; cases are listed cheapest first, which the sample favours.
func simSample(t *testing.T, cases []simtest.Case, n int, keep func(gemm.Params) bool) {
	t.Helper()
	simtest.Sample(t, gemm.Families()[0], cases, n, func(p variants.Params) bool {
		pv, err := variants.Decode[gemm.Params](p)
		if err != nil {
			t.Fatal(err)
		}
		return keep(pv)
	})
}

// syncShapes are small shapes for the interpreter: M = 1 (a one-row dX,
// a one-term reduction for dW), row, column and k tails of every tile
// (100, 72, 136), a skinny dW whose few tiles take split-K, an f32 dW,
// more tiles than SMs (orders m and n), and reductions past 1024 in both
// grads. Every variant is validated on the random and the exact inputs
// (the runner's Session: the exact ones with zero tolerance).
var syncShapes = []simtest.Case{
	{Spec: "m=1,n=64,k=64,grad=dx", DType: dtype.BF16},
	{Spec: "m=1,n=64,k=64,grad=dw", DType: dtype.F16},
	{Spec: "m=100,n=72,k=136,grad=dx", DType: dtype.BF16},
	{Spec: "m=100,n=72,k=136,grad=dw", DType: dtype.F16},
	{Spec: "m=100,n=72,k=136,grad=dw,out=f32", DType: dtype.BF16},
	{Spec: "m=256,n=256,k=200,grad=dw", DType: dtype.BF16},
	{Spec: "m=770,n=16,k=776,grad=dx", DType: dtype.F16},
	{Spec: "m=1040,n=40,k=48,grad=dw", DType: dtype.BF16},
	{Spec: "m=130,n=1040,k=24,grad=dx", DType: dtype.F16},
}

// TestSyncOnInterpreter runs the sync variants of syncShapes: a sample
// (one in 16; one in 2 with GRADTUNE_SWEEP=ci, all with full).
func TestSyncOnInterpreter(t *testing.T) {
	simSample(t, syncShapes, 8, func(p gemm.Params) bool { return p.MMA == gemm.Sync })
}

// wgmmaShapes add to syncShapes more 128×128 tiles than the interpreter's
// 132 SMs in both grads (orders m and n, and persistent grids that walk
// two tiles per CTA, the ring carrying over), with row, column and k
// tails.
var wgmmaShapes = append(syncShapes[:len(syncShapes):len(syncShapes)], []simtest.Case{
	{Spec: "m=1100,n=72,k=2056,grad=dx", DType: dtype.BF16},
	{Spec: "m=72,n=1096,k=2056,grad=dw", DType: dtype.F16},
}...)

// TestWgmmaOnInterpreter runs the wgmma variants of wgmmaShapes on the
// interpreter, which executes TMA with the 128B swizzle, mbarrier phases
// and wgmma from descriptors: a sample (one in 64; one in 8 with
// GRADTUNE_SWEEP=ci, all with full).
func TestWgmmaOnInterpreter(t *testing.T) {
	simSample(t, wgmmaShapes, 32, func(p gemm.Params) bool { return p.MMA == gemm.WGMMA && p.Order != gemm.StreamK })
}

// TestWgmmaTMAStoreOnInterpreter runs the epilogue=tma variants of
// wgmmaShapes: staging tile in the 128B swizzle, named barriers per
// consumer warpgroup, TMA stores clipped at the tails (bf16, f16 and f32
// outputs), persistent grids reusing the staging tile: a sample (one in
// 32; one in 4 with GRADTUNE_SWEEP=ci, all with full).
func TestWgmmaTMAStoreOnInterpreter(t *testing.T) {
	simSample(t, wgmmaShapes, 16, func(p gemm.Params) bool {
		return p.MMA == gemm.WGMMA && p.Epilogue == gemm.TMAStore && p.Order != gemm.StreamK
	})
}

// clusterShapes have an even number of tile rows and reductions past 8
// k-tiles, so that cluster=2 points exist: 64-row tiles of a skinny C and,
// with GRADTUNE_SWEEP=ci or full, 10×9 tiles of 128×128 (within one wave)
// and 10×17 (more than a wave; 0.7 and 1.4·10⁹ multiply-adds a variant,
// 10 to 20 s of the interpreter), with row, column and k tails, in both
// grads, bf16, f16 and an f32 dW; cheapest first.
func clusterShapes() []simtest.Case {
	cases := []simtest.Case{{Spec: "m=1100,n=128,k=200,grad=dw", DType: dtype.F16}}
	if sweep.Current() >= sweep.CI {
		cases = append(cases,
			simtest.Case{Spec: "m=520,n=1160,k=1096,grad=dw,out=f32", DType: dtype.BF16},
			simtest.Case{Spec: "m=1160,n=584,k=2056,grad=dx", DType: dtype.BF16},
			simtest.Case{Spec: "m=584,n=1160,k=2056,grad=dw", DType: dtype.F16})
	}
	return cases
}

// TestWgmmaClusterOnInterpreter runs the cluster=2 variants of
// clusterShapes: B multicast by both CTAs of the cluster (each its half
// of the k-rows), empty barriers released in both CTAs, the cluster
// barriers at the start and the end, and with GRADTUNE_SWEEP=ci or full
// 128×128 tiles and persistent grids of 132 CTAs in clusters walking 170
// tiles: a sample (one in 16; one in 2 with ci, all with full).
func TestWgmmaClusterOnInterpreter(t *testing.T) {
	simSample(t, clusterShapes(), 8, func(p gemm.Params) bool { return p.Cluster == 2 })
}

// TestDSMEMOnInterpreter runs reduce=dsmem variants: clusters of 2 to 8
// splits, each storing its partial in shared memory and summing a share
// of the tile from all of them through distributed shared memory, with
// tails in every dimension, both grads, bf16, f16 and an f32 dW: a
// sample (one in 32; one in 4 with GRADTUNE_SWEEP=ci, all with full).
func TestDSMEMOnInterpreter(t *testing.T) {
	simSample(t, []simtest.Case{
		{Spec: "m=600,n=136,k=72,grad=dw,out=f32", DType: dtype.F16},
		{Spec: "m=300,n=600,k=136,grad=dx", DType: dtype.BF16},
		{Spec: "m=1100,n=128,k=200,grad=dw", DType: dtype.BF16},
	}, 16, func(p gemm.Params) bool { return p.Reduce == gemm.ReduceDSMEM })
}

// TestLoRAOnInterpreter runs lora=r variants (dX = dY·W + dh·A, the
// adapter's rank as one more k-tile loaded from its own tensor maps) on
// the random and the exact inputs: ranks 8 (a k-tile mostly zero-filled)
// and 64 (a whole one), a base reduction that ends mid k-tile (n = 72),
// one row, split-K summed by a launch or in distributed shared memory
// (the adapter's k-tile in the last split) and TMA stores: a sample (one in 16; one in 2 with GRADTUNE_SWEEP=ci, all with
// full), and named points.
func TestLoRAOnInterpreter(t *testing.T) {
	cases := []simtest.Case{
		{Spec: "m=1,n=64,k=64,grad=dx,lora=8", DType: dtype.BF16},
		{Spec: "m=100,n=72,k=136,grad=dx,lora=16", DType: dtype.F16},
		{Spec: "m=300,n=200,k=264,grad=dx,lora=64", DType: dtype.BF16},
	}
	simSample(t, cases, 8, func(p gemm.Params) bool { return true })
	simtest.RunNamed(t, gemm.Families()[0], []simtest.Point{
		{Case: cases[2], Params: "mma=wgmma,bm=128,bn=64,bk=64,stages=2,consumers=2,cluster=1,multicast=0,splitk=2,reduce=launch,order=m,persistent=0,epilogue=direct,regsplit=1"},
		{Case: cases[2], Params: "mma=wgmma,bm=64,bn=128,bk=64,stages=2,consumers=1,cluster=1,multicast=0,splitk=2,reduce=dsmem,order=m,persistent=0,epilogue=direct,regsplit=1"},
		{Case: cases[2], Params: "mma=wgmma,bm=128,bn=64,bk=64,stages=5,consumers=2,cluster=1,multicast=0,splitk=1,reduce=launch,order=m,persistent=0,epilogue=tma,regsplit=1"},
	})
}
