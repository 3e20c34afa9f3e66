package nf4gemm_test

import (
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// TestDequantOnInterpreter runs every nf4_dequant variant, bit for bit,
// on weights with f32 and double-quantized scales, blocks of 64 and 256,
// and a unit count that leaves the last CTA partly idle.
func TestDequantOnInterpreter(t *testing.T) {
	f, err := catalog.Lookup("nf4_dequant")
	if err != nil {
		t.Fatal(err)
	}
	simtest.Sample(t, f, []simtest.Case{
		{Spec: "n=3,k=64", DType: dtype.BF16},
		{Spec: "n=5,k=256,scales=dq", DType: dtype.BF16},
		{Spec: "n=6,k=512,block=256,scales=dq", DType: dtype.F16},
		{Spec: "n=24,k=128,block=128", DType: dtype.F16},
	}, 1, func(variants.Params) bool { return true })
}

// gemmShapes are small nf4_gemm_bwd shapes for the interpreter: one row,
// a row tail (37, 70), a column tail of the 128-wide tiles (k=192), f32
// and double-quantized scales, blocks of 64 and 128, exact-integer
// reductions and a random one (n=576 > exactMaxN).
var gemmShapes = []simtest.Case{
	{Spec: "m=1,n=128,k=64,scales=dq", DType: dtype.BF16},
	{Spec: "m=37,n=64,k=192", DType: dtype.BF16},
	{Spec: "m=20,n=256,k=256,block=128,scales=dq", DType: dtype.F16},
	{Spec: "m=70,n=576,k=128", DType: dtype.BF16},
}

func nf4GEMM(t *testing.T) kernels.Family {
	t.Helper()
	f, err := catalog.Lookup("nf4_gemm_bwd")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGEMMOnInterpreter runs the nf4_gemm_bwd variants of gemmShapes: a
// sample (simtest.Sample: one in 3; all with GRADTUNE_SWEEP=ci or full).
func TestGEMMOnInterpreter(t *testing.T) {
	simtest.Sample(t, nf4GEMM(t), gemmShapes, 3, func(variants.Params) bool { return true })
}

// TestWgmmaPersistentOnInterpreter runs the persistent wgmma variants of
// a shape past one wave (13 × 12 tiles of 128×128 over the interpreter's
// 132 CTAs, a row tail), double-quantized scales: each CTA walks tiles
// with its ring's phase carried over. A sample: one in 6 (one in 2 with
// GRADTUNE_SWEEP=ci, all with full).
func TestWgmmaPersistentOnInterpreter(t *testing.T) {
	simtest.Sample(t, nf4GEMM(t), []simtest.Case{{Spec: "m=1537,n=64,k=1536,scales=dq", DType: dtype.BF16}}, 6, func(p variants.Params) bool {
		return p["mma"] == "wgmma" && p["persistent"] == "1"
	})
}

// TestRegisterAOnInterpreter runs the register-A variants (dequant=
// consumer on wgmma) of shapes that cover its cases: one k-tile and a
// column tail (k=192 under 128- and 192-column tiles), a row tail, an odd
// number of k-tiles (the peeled first one), blocks of 128 and 256 with
// double-quantized scales, a random-input reduction, and a persistent
// grid whose tiles have 7 k-tiles (the three scale loaders' turns carry
// over from one tile to the next): a sample (one in 2; all with
// GRADTUNE_SWEEP=ci or full).
func TestRegisterAOnInterpreter(t *testing.T) {
	registerA := func(p variants.Params) bool { return p["mma"] == "wgmma" && p["dequant"] == "consumer" }
	f := nf4GEMM(t)
	simtest.Sample(t, f, []simtest.Case{
		{Spec: "m=37,n=64,k=192", DType: dtype.BF16},
		{Spec: "m=20,n=256,k=256,block=128,scales=dq", DType: dtype.F16},
		{Spec: "m=33,n=1024,k=512,block=256,scales=dq", DType: dtype.BF16},
		{Spec: "m=70,n=576,k=128", DType: dtype.BF16},
	}, 2, registerA)
	simtest.Sample(t, f, []simtest.Case{{Spec: "m=1537,n=448,k=1536,scales=dq", DType: dtype.BF16}}, 2, func(p variants.Params) bool {
		return registerA(p) && p["persistent"] == "1"
	})
}
