package gemm_test

import (
	"fmt"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/variants"
)

// simRun validates the variants of spec that keep returns true on the
// CPU interpreter (simtest.Run).
func simRun(t *testing.T, spec string, dt dtype.DType, keep func(gemm.Params) bool) int {
	t.Helper()
	return simtest.Run(t, gemm.Families()[0], spec, dt, func(p variants.Params) bool {
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
// more tiles than SMs (orders m and n), and reductions longer than
// exactMaxL (random inputs) in both grads.
var syncShapes = []struct {
	spec string
	dt   dtype.DType
}{
	{"m=1,n=64,k=64,grad=dx", dtype.BF16},
	{"m=1,n=64,k=64,grad=dw", dtype.F16},
	{"m=100,n=72,k=136,grad=dx", dtype.BF16},
	{"m=100,n=72,k=136,grad=dw", dtype.F16},
	{"m=100,n=72,k=136,grad=dw,out=f32", dtype.BF16},
	{"m=256,n=256,k=200,grad=dw", dtype.BF16},
	{"m=770,n=16,k=776,grad=dx", dtype.F16},
	{"m=1040,n=40,k=48,grad=dw", dtype.BF16},
	{"m=130,n=1040,k=24,grad=dx", dtype.F16},
}

// TestSyncOnInterpreter runs every sync variant of syncShapes; every
// shape has some.
func TestSyncOnInterpreter(t *testing.T) {
	all := func(p gemm.Params) bool { return p.MMA == gemm.Sync }
	for _, c := range syncShapes {
		n := simRun(t, c.spec, c.dt, all)
		if n == 0 {
			t.Errorf("%s %v: no sync variant ran", c.spec, c.dt)
		}
		t.Logf("%s %v: %d variants", c.spec, c.dt, n)
	}
}

// wgmmaShapes add to syncShapes more 128×128 tiles than the interpreter's
// 132 SMs in both grads (orders m and n, and persistent grids that walk
// two tiles per CTA, the ring carrying over), with row, column and k
// tails.
var wgmmaShapes = append(syncShapes[:len(syncShapes):len(syncShapes)], []struct {
	spec string
	dt   dtype.DType
}{
	{"m=1100,n=72,k=2056,grad=dx", dtype.BF16},
	{"m=72,n=1096,k=2056,grad=dw", dtype.F16},
}...)

// TestWgmmaOnInterpreter runs the wgmma variants of wgmmaShapes on the
// interpreter, which executes TMA with the 128B swizzle, mbarrier phases
// and wgmma from descriptors: a deterministic sample (sampler: one in
// eight, one in thirty-two of the persistent ones; all of them with
// GRADTUNE_SWEEP=full).
func TestWgmmaOnInterpreter(t *testing.T) {
	for _, c := range wgmmaShapes {
		keep := sampler(c.spec, 8, func(p gemm.Params) bool { return p.MMA == gemm.WGMMA && p.Order != gemm.StreamK })
		n := simRun(t, c.spec, c.dt, keep)
		if n == 0 {
			t.Errorf("%s %v: no wgmma variant ran", c.spec, c.dt)
		}
		t.Logf("%s %v: %d variants, %s", c.spec, c.dt, n, sweep.Describe(8))
	}
}

// TestWgmmaTMAStoreOnInterpreter runs the epilogue=tma variants of
// wgmmaShapes: staging tile in the 128B swizzle, named barriers per
// consumer warpgroup, TMA stores clipped at the tails (bf16, f16 and f32
// outputs), persistent grids reusing the staging tile: a sample
// (sampler: one in six, one in twenty-four of the persistent ones; all with
// GRADTUNE_SWEEP=full).
func TestWgmmaTMAStoreOnInterpreter(t *testing.T) {
	for _, c := range wgmmaShapes {
		keep := sampler(c.spec+"/tma", 6, func(p gemm.Params) bool {
			return p.MMA == gemm.WGMMA && p.Epilogue == gemm.TMAStore && p.Order != gemm.StreamK
		})
		n := simRun(t, c.spec, c.dt, keep)
		if n == 0 {
			t.Errorf("%s %v: no epilogue=tma variant ran", c.spec, c.dt)
		}
		t.Logf("%s %v: %d variants, %s", c.spec, c.dt, n, sweep.Describe(6))
	}
}

// clusterShapes have an even number of tile rows and reductions past 8
// k-tiles, so that cluster=2 points exist: 10×17 tiles of 128×128 (more
// than a wave) and 10×9 (within one), and 64-row tiles of a skinny C,
// with row, column and k tails, in both grads, bf16, f16 and an f32 dW.
var clusterShapes = []struct {
	spec string
	dt   dtype.DType
}{
	{"m=1160,n=584,k=2056,grad=dx", dtype.BF16},
	{"m=584,n=1160,k=2056,grad=dw", dtype.F16},
	{"m=520,n=1160,k=1096,grad=dw,out=f32", dtype.BF16},
	{"m=1100,n=128,k=200,grad=dw", dtype.F16}, // 64-row tiles (a skinny C), 18 k-tiles
}

// TestWgmmaClusterOnInterpreter runs the cluster=2 variants of
// clusterShapes: B multicast by both CTAs of the cluster (each its half
// of the k-rows), empty barriers released in both CTAs, the cluster
// barriers at the start and the end, persistent grids of 132 CTAs in
// clusters walking 170 tiles: a sample (sampler: one in six, one in
// twenty-four of the persistent ones; all with GRADTUNE_SWEEP=full).
func TestWgmmaClusterOnInterpreter(t *testing.T) {
	for _, c := range clusterShapes {
		n := simRun(t, c.spec, c.dt, sampler(c.spec, 6, func(p gemm.Params) bool { return p.Cluster == 2 }))
		if n == 0 {
			t.Errorf("%s: no cluster variant", c.spec)
		}
		t.Logf("%s %v: %d variants", c.spec, c.dt, n)
	}
}

// TestDSMEMOnInterpreter runs reduce=dsmem variants: clusters of 2 to 8
// splits, each storing its partial in shared memory and summing a share
// of the tile from all of them through distributed shared memory, with
// tails in every dimension, both grads, bf16, f16 and an f32 dW: a
// sample (one in four; all with GRADTUNE_SWEEP=full).
func TestDSMEMOnInterpreter(t *testing.T) {
	for _, c := range []struct {
		spec string
		dt   dtype.DType
	}{
		{"m=1100,n=128,k=200,grad=dw", dtype.BF16},
		{"m=600,n=136,k=72,grad=dw,out=f32", dtype.F16},
		{"m=300,n=600,k=136,grad=dx", dtype.BF16},
	} {
		n := simRun(t, c.spec, c.dt, sampler(c.spec+"/dsmem", 4, func(p gemm.Params) bool { return p.Reduce == gemm.ReduceDSMEM }))
		if n == 0 {
			t.Errorf("%s: no reduce=dsmem variant", c.spec)
		}
		t.Logf("%s %v: %d variants, %s", c.spec, c.dt, n, sweep.Describe(4))
	}
}

// sampler keeps one in every n of the variants that want accepts, and one
// in every 4n of the persistent ones (132 CTAs each on the interpreter),
// counting the two kinds apart and keeping the first of each, so that a
// sample always holds both where the space has them.
func sampler(key string, n int, want func(gemm.Params) bool) func(gemm.Params) bool {
	seen := map[bool]int{}
	return func(p gemm.Params) bool {
		if !want(p) {
			return false
		}
		seen[p.Persistent]++
		every := n
		if p.Persistent {
			every = 4 * n
		}
		return seen[p.Persistent] == 1 || sweep.TakeKeyed(fmt.Sprint(key, p.Persistent), seen[p.Persistent]-1, every)
	}
}
