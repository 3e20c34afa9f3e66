package nf4gemm_test

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// simShape is a shape spec and dtype for the interpreter.
type simShape struct {
	spec string
	dt   dtype.DType
}

// simRun validates the variants of a shape that keep accepts on the CPU
// interpreter (simtest.Run).
func simRun(t *testing.T, family, spec string, dt dtype.DType, keep func(variants.Params) bool) int {
	t.Helper()
	f, err := catalog.Lookup(family)
	if err != nil {
		t.Fatal(err)
	}
	return simtest.Run(t, f, spec, dt, keep)
}

// TestDequantOnInterpreter runs every nf4_dequant variant, bit for bit,
// on weights with f32 and double-quantized scales, blocks of 64 and 256,
// and a unit count that leaves the last CTA partly idle.
func TestDequantOnInterpreter(t *testing.T) {
	all := func(variants.Params) bool { return true }
	for _, c := range []simShape{
		{"n=3,k=64", dtype.BF16},
		{"n=5,k=256,scales=dq", dtype.BF16},
		{"n=6,k=512,block=256,scales=dq", dtype.F16},
		{"n=24,k=128,block=128", dtype.F16},
	} {
		n := simRun(t, "nf4_dequant", c.spec, c.dt, all)
		t.Logf("%s %v: %d variants", c.spec, c.dt, n)
	}
}

// gemmShapes are small nf4_gemm_bwd shapes for the interpreter: one row,
// a row tail (37, 70), a column tail of the 128-wide tiles (k=192), f32
// and double-quantized scales, blocks of 64 and 128, exact-integer
// reductions and a random one (n=576 > exactMaxN).
var gemmShapes = []simShape{
	{"m=1,n=128,k=64,scales=dq", dtype.BF16},
	{"m=37,n=64,k=192", dtype.BF16},
	{"m=20,n=256,k=256,block=128,scales=dq", dtype.F16},
	{"m=70,n=576,k=128", dtype.BF16},
}

// TestGEMMOnInterpreter runs every nf4_gemm_bwd variant of gemmShapes
// (a sample unless GRADTUNE_SWEEP=full).
func TestGEMMOnInterpreter(t *testing.T) {
	for i, c := range gemmShapes {
		j := 0
		keep := func(variants.Params) bool { j++; return sweep.Take(j+i, 3) }
		n := simRun(t, "nf4_gemm_bwd", c.spec, c.dt, keep)
		t.Logf("%s %v: %d variants", c.spec, c.dt, n)
	}
}

// TestWgmmaPersistentOnInterpreter runs the persistent wgmma variants of
// a shape past one wave (13 × 12 tiles of 128×128 over the interpreter's
// 132 CTAs, a row tail), double-quantized scales: each CTA walks tiles
// with its ring's phase carried over.
func TestWgmmaPersistentOnInterpreter(t *testing.T) {
	keep := func(p variants.Params) bool {
		s := p.String()
		return strings.Contains(s, "mma=wgmma") && strings.Contains(s, "persistent=1")
	}
	if n := simRun(t, "nf4_gemm_bwd", "m=1537,n=64,k=1536,scales=dq", dtype.BF16, keep); n == 0 {
		t.Fatal("no persistent wgmma variant in the space")
	} else {
		t.Logf("%d variants", n)
	}
}

// TestRegisterAOnInterpreter runs every register-A variant (dequant=
// consumer on wgmma) of shapes that cover its cases: one k-tile and a
// column tail (k=192 under 128- and 192-column tiles), a row tail, an odd
// number of k-tiles (the peeled first one), blocks of 128 and 256 with
// double-quantized scales, a random-input reduction, and a persistent
// grid whose tiles have 7 k-tiles (the three scale loaders' turns carry
// over from one tile to the next).
func TestRegisterAOnInterpreter(t *testing.T) {
	registerA := func(p variants.Params) bool {
		s := p.String()
		return strings.Contains(s, "mma=wgmma") && strings.Contains(s, "dequant=consumer")
	}
	for _, c := range []simShape{
		{"m=37,n=64,k=192", dtype.BF16},
		{"m=20,n=256,k=256,block=128,scales=dq", dtype.F16},
		{"m=33,n=1024,k=512,block=256,scales=dq", dtype.BF16},
		{"m=70,n=576,k=128", dtype.BF16},
		{"m=1537,n=448,k=1536,scales=dq", dtype.BF16},
	} {
		keep := registerA
		if strings.HasPrefix(c.spec, "m=1537") {
			keep = func(p variants.Params) bool { return registerA(p) && p["persistent"] == "1" }
		}
		if n := simRun(t, "nf4_gemm_bwd", c.spec, c.dt, keep); n == 0 {
			t.Fatalf("%s: no register-A variant", c.spec)
		} else {
			t.Logf("%s %v: %d variants", c.spec, c.dt, n)
		}
	}
}
