package nf4gemm_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/kernels/nf4gemm"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
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
// and double-quantized scales, blocks of 64 and 128, a reduction of 576
// rows; each validated on random and exact inputs.
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

// TestGEMMOnInterpreter runs the per-tile nf4_gemm_bwd variants of
// gemmShapes: a sample (simtest.Sample: one in 6; all with GRADTUNE_SWEEP=ci or full).
func TestGEMMOnInterpreter(t *testing.T) {
	simtest.Sample(t, nf4GEMM(t), gemmShapes, 3, fused)
}

// fused keeps the variants that dequantize per tile (the unfused and
// streamed paths have TestDenseOnInterpreter).
func fused(p variants.Params) bool { return p["dequant"] != "unfused" && p["dequant"] != "streamed" }

// TestWgmmaPersistentOnInterpreter runs the persistent per-tile wgmma
// variants (TestDenseOnInterpreter has the others) of
// a shape past one wave (13 × 12 tiles of 128×128 over the interpreter's
// 132 CTAs, a row tail), double-quantized scales: each CTA walks tiles
// with its ring's phase carried over. A sample: one in 12 (one in 2 with
// GRADTUNE_SWEEP=ci, all with full).
func TestWgmmaPersistentOnInterpreter(t *testing.T) {
	simtest.Sample(t, nf4GEMM(t), []simtest.Case{{Spec: "m=1537,n=64,k=1536,scales=dq", DType: dtype.BF16}}, 6, func(p variants.Params) bool {
		return p["mma"] == "wgmma" && p["persistent"] == "1" && fused(p)
	})
}

// TestRegisterAOnInterpreter runs the register-A variants (dequant=
// consumer on wgmma) of shapes that cover its cases: one k-tile and a
// column tail (k=192 under 128- and 192-column tiles), a row tail, an odd
// number of k-tiles (the peeled first one), blocks of 128 and 256 with
// double-quantized scales, a random-input reduction, and a persistent
// grid whose tiles have 7 k-tiles (the three scale loaders' turns carry
// over from one tile to the next): a sample (one in 4; all with
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

// rowsRun emits the variants of shape m=at,dims that keep accepts once
// and validates each program at every m of rows on the interpreter: the
// PTX takes m at run time, so that one program computes every token
// count (emitted at another m, the same variant must give the same PTX).
// It returns how many (variant, m) pairs ran.
func rowsRun(t *testing.T, dims string, dt dtype.DType, at int, rows []int, keep func(variants.Params) bool) int {
	t.Helper()
	f, err := catalog.Lookup("nf4_gemm_bwd")
	if err != nil {
		t.Fatal(err)
	}
	shape := func(m int) variants.Shape {
		sp, err := variants.ParseSpecs(fmt.Sprintf("m=%d,%s", m, dims))
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.Shape(sp[0], dt)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := shape(at)
	var ps []variants.Params
	var progs []kernels.Program
	for _, p := range simtest.Enumerate(f, s) {
		if !keep(p) {
			continue
		}
		prog, err := f.Emit(s, p)
		if err != nil {
			t.Fatalf("%s %s: %v", s.Key(), p, err)
		}
		if !slices.Contains(prog.RuntimeDims, "m") {
			t.Errorf("%s %s: m is not a runtime dim of the program", s.Key(), p)
			continue
		}
		ps, progs = append(ps, p), append(progs, prog)
	}
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	runs := 0
	for _, m := range rows {
		o := shape(m)
		if err := ss.Prepare(f, o, 1); err != nil {
			t.Fatal(err)
		}
		for i, prog := range progs {
			if again, err := f.Emit(o, ps[i]); err == nil && again.PTX != prog.PTX {
				t.Errorf("%s %s: the PTX differs from the one emitted at m=%d", o.Key(), ps[i], at)
			}
			runs++
			if err := simtest.ValidateSweep(ss, prog, runs); err != nil {
				t.Errorf("%s %s emitted at m=%d: %v", o.Key(), ps[i], at, err)
			}
		}
	}
	return runs
}

// withParams keeps the variants whose params include every one of want
// ("mma=sync", "dequant=consumer", ...).
func withParams(want ...string) func(variants.Params) bool {
	return func(p variants.Params) bool {
		for _, w := range want {
			k, v, _ := strings.Cut(w, "=")
			if p[k] != v {
				return false
			}
		}
		return true
	}
}

// TestRegisterARowsAtRunTime runs every register-A variant emitted at
// one m at token counts the tiles (128, 192, 256 rows) do not divide:
// one row, fewer rows than a tile, a tail of one row past a tile and
// one short of one, f32 and double-quantized scales, bf16 and f16, an
// odd k-tile count (the peeled first k-tile), blocks of 128, and column
// tails (k=256 under 192-column tiles, k=128 under either). The rows of
// dX are wgmma's N: a tail's dY rows come from TMA's zero fill and its
// stores are masked.
func TestRegisterARowsAtRunTime(t *testing.T) {
	registerA := withParams("mma=wgmma", "dequant=consumer")
	for _, c := range []struct {
		dims string
		dt   dtype.DType
	}{
		{"n=128,k=256,block=128", dtype.BF16},
		{"n=192,k=128,scales=dq", dtype.F16},
	} {
		n := rowsRun(t, c.dims, c.dt, 256, []int{1, 7, 127, 129, 191, 193, 255, 385}, registerA)
		if n == 0 {
			t.Fatalf("%s: no register-A variant", c.dims)
		}
		t.Logf("%s %v: %d runs", c.dims, c.dt, n)
	}
}

// TestRegisterASplitKOnInterpreter runs every register-A variant that
// splits the reduction (2 or 4 splits of 8 k-tiles, 3 of 9 with
// double-quantized scales and f16; with GRADTUNE_SWEEP=ci or full also 2
// of 4), emitted at 200 rows, at token counts with a row tail and one of
// a single row (and 200 under ci or full): each split's partial sums go
// to its slice of the workspace and the reduce adds them in split order.
func TestRegisterASplitKOnInterpreter(t *testing.T) {
	registerA := withParams("mma=wgmma", "dequant=consumer")
	split := func(p variants.Params) bool { return registerA(p) && p["splitk"] != "1" }
	cases := []struct {
		dims string
		dt   dtype.DType
	}{
		{"n=512,k=128", dtype.BF16},
		{"n=576,k=128,scales=dq", dtype.F16},
		{"n=256,k=256", dtype.BF16},
	}
	rows := []int{1, 37, 200}
	if sweep.Current() == sweep.Sample {
		cases, rows = cases[:2], rows[:2]
	}
	for _, c := range cases {
		n := rowsRun(t, c.dims, c.dt, 200, rows, split)
		if n == 0 {
			t.Fatalf("%s: no register-A variant with split-K", c.dims)
		}
		t.Logf("%s %v: %d runs", c.dims, c.dt, n)
	}
}

// TestPlantedDropPartial: a register-A variant with split-K whose last
// split's partial sums are never stored fails validation on both input
// sets (the workspace holds what the harness left there, zeros or a
// previous run's), and passes without the bug.
func TestPlantedDropPartial(t *testing.T) {
	f := nf4GEMM(t)
	const spec = "m=70,n=576,k=128"
	s := simtest.Shape(t, f, spec, dtype.BF16)
	_, all := simtest.Points(t, f, simtest.Case{Spec: spec, DType: dtype.BF16})
	i := slices.IndexFunc(all, withParams("mma=wgmma", "dequant=consumer", "splitk=3"))
	if i < 0 {
		t.Fatalf("no register-A variant with splitk=3 at %s", spec)
	}
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	if err := ss.Prepare(f, s, 1); err != nil {
		t.Fatal(err)
	}
	for _, plant := range []bool{false, true} {
		restore := func() {}
		if plant {
			restore = nf4gemm.PlantDropPartial()
		}
		prog, err := f.Emit(s, all[i])
		restore()
		if err != nil {
			t.Fatal(err)
		}
		chk := simtest.CheckBothSets(t, ss, prog)
		switch {
		case !plant && !chk.OK:
			t.Errorf("%s without the bug: %s", all[i], chk.Message)
		case plant && (chk.Sets[0].OK || chk.Sets[1].OK):
			t.Errorf("%s: the dropped partial passed (random ok %v, exact ok %v)", all[i], chk.Sets[0].OK, chk.Sets[1].OK)
		case plant:
			t.Logf("dropped partial: %s", chk.Message)
		}
	}
}

// TestSyncRowsAtRunTime: the same for the sync path (64- and 128-row
// tiles), a sample of its variants unless GRADTUNE_SWEEP=full.
func TestSyncRowsAtRunTime(t *testing.T) {
	var j int // the sync variants seen in this case: the first, then a sweep of one in 4
	sync := func(p variants.Params) bool {
		if p["mma"] != "sync" {
			return false
		}
		j++
		return j == 1 || sweep.Take(j-1, 4)
	}
	for _, c := range []struct {
		dims string
		dt   dtype.DType
	}{
		{"n=128,k=192", dtype.BF16},
		{"n=64,k=128,block=64,scales=dq", dtype.F16},
	} {
		j = 0
		n := rowsRun(t, c.dims, c.dt, 128, []int{1, 7, 63, 65, 127, 129, 200}, sync)
		if n == 0 {
			t.Fatalf("%s: no sync variant", c.dims)
		}
		t.Logf("%s %v: %d runs", c.dims, c.dt, n)
	}
}

// TestRegisterAPersistentRowsAtRunTime runs the persistent register-A
// variants emitted at m=1537 (past one wave of 128-row tiles) at one row
// and at m=2049, where the CTAs walk more tiles than at the m they were
// emitted for, tile rows ending in a tail of one row.
func TestRegisterAPersistentRowsAtRunTime(t *testing.T) {
	keep := withParams("mma=wgmma", "dequant=consumer", "persistent=1")
	if n := rowsRun(t, "n=128,k=1536,scales=dq", dtype.BF16, 1537, []int{1, 2049}, keep); n == 0 {
		t.Fatal("no persistent register-A variant")
	} else {
		t.Logf("%d runs", n)
	}
}

// denseShapes cover the unfused and streamed paths: one row, row and
// column tails, double-quantized scales, f16, split-K (m=130: up to 4
// splits), stream-K on a persistent grid (m=600), more chunks than a
// warp's claims.
var denseShapes = []simtest.Case{
	{Spec: "m=1,n=256,k=128", DType: dtype.BF16},
	{Spec: "m=37,n=128,k=192,scales=dq", DType: dtype.F16},
	{Spec: "m=130,n=512,k=320", DType: dtype.BF16},
	{Spec: "m=600,n=576,k=256,scales=dq", DType: dtype.BF16},
}

// TestDenseOnInterpreter runs the unfused and streamed variants of
// denseShapes: a sample (one in 32; one in 4 with GRADTUNE_SWEEP=ci, all
// with full), and the unfused path's second dequantization kernel
// (dkernel=4x128) with each lookup, f32 and double-quantized scales, a
// row tail and split-K.
func TestDenseOnInterpreter(t *testing.T) {
	f := nf4GEMM(t)
	simtest.Sample(t, f, denseShapes, 16, func(p variants.Params) bool {
		return p["dequant"] == "unfused" || p["dequant"] == "streamed"
	})
	const unfused = "bk=64,bm=128,bn=128,cluster=1,codes=tma,dequant=unfused,dkernel=4x128,mma=wgmma,order=m,persistent=0,"
	simtest.RunNamed(t, f, []simtest.Point{
		{Case: denseShapes[2], Params: unfused + "epilogue=tma,lookup=prmt,splitk=1,stages=6"},
		{Case: denseShapes[3], Params: unfused + "epilogue=direct,lookup=smem,splitk=2,stages=4"},
		// 128×160 tiles where they fill a wave better than the even widths
		// (oddColumnsFill), and 192×96, more tiles within one wave
		{Case: simtest.Case{Spec: "m=129,n=128,k=8512", DType: dtype.BF16},
			Params: "bk=64,bm=128,bn=160,cluster=1,codes=tma,dequant=unfused,dkernel=8x256,mma=wgmma,order=m,persistent=0,epilogue=tma,lookup=prmt,splitk=1,stages=2"},
		{Case: simtest.Case{Spec: "m=37,n=128,k=320,scales=dq", DType: dtype.F16}, Params: "bk=64,bm=192,bn=96,cluster=1,codes=tma,dequant=unfused,dkernel=8x256,mma=wgmma,order=m,persistent=0,epilogue=direct,lookup=smem,splitk=1,stages=2"},
	})
}

// TestOddColumnsFill: 96- and 160-column tiles are in the space only
// where their last wave is fuller than every even width's.
func TestOddColumnsFill(t *testing.T) {
	f := nf4GEMM(t)
	for _, c := range []struct {
		spec, params string
		in           bool
	}{
		{"m=512,n=1536,k=8960", "bm=128,bn=160", true},   // 224 tiles (85% of two waves), 128×128's 280 and 128×192's 188 fill 71%
		{"m=2048,n=1536,k=1536", "bm=128,bn=160", false}, // 120 tiles; 128×192 makes 128 (97%)
		{"m=37,n=128,k=320", "bm=192,bn=96", true},       // 4 tiles against 128×128's 3
		{"m=37,n=128,k=192", "bm=192,bn=96", false},      // 2 tiles, as 128×128's
		{"m=2048,n=1536,k=8960", "bm=192,bn=96", false},
	} {
		specs, err := variants.ParseSpecs(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.Shape(specs[0], dtype.BF16)
		if err != nil {
			t.Fatal(err)
		}
		fix, err := variants.ParseParams(c.params)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range simtest.Enumerate(f, s) {
			if p["dequant"] == "unfused" && p.Agrees(fix) {
				found = true
				break
			}
		}
		if found != c.in {
			t.Errorf("%s: unfused %s in the space: %v, want %v", c.spec, c.params, found, c.in)
		}
	}
}

// TestPlantedScaleBlockAtLongReduction plants, in one variant of every
// path (register-A and streamed; with GRADTUNE_SWEEP=ci or full also
// sync, producer-written B and unfused), a wrong
// scale for one block of W (row 4517, columns 64..127: its kernels read
// the next block's scale) at the qwen gate·up reduction n = 8960: the
// exact inputs must catch it in every path (the random inputs' bound is
// logged, whether or not it does).
func TestPlantedScaleBlockAtLongReduction(t *testing.T) {
	f := nf4GEMM(t)
	s := simtest.Shape(t, f, "m=64,n=8960,k=128", dtype.BF16)
	_, all := simtest.Points(t, f, simtest.Case{Spec: "m=64,n=8960,k=128", DType: dtype.BF16})
	var pts []variants.Params
	paths := []map[string]string{{"mma": "wgmma", "dequant": "consumer"}, {"dequant": "streamed"}}
	if sweep.Current() != sweep.Sample {
		paths = append(paths, map[string]string{"mma": "sync"}, map[string]string{"dequant": "producer"}, map[string]string{"dequant": "unfused"})
	}
	for _, want := range paths {
		for _, p := range all {
			match := true
			for k, v := range want {
				match = match && p[k] == v
			}
			if match {
				pts = append(pts, p)
				break
			}
		}
	}
	if len(pts) != len(paths) {
		t.Fatalf("%d of the %d paths have a variant at %s", len(pts), len(paths), s.Key())
	}
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	if err := ss.Prepare(f, s, 1); err != nil {
		t.Fatal(err)
	}
	const block = 4517*(128/64) + 1
	for _, p := range pts {
		for _, plant := range []bool{false, true} {
			restore := func() {}
			if plant {
				restore = nf4gemm.PlantScaleBlock(block)
			}
			prog, err := f.Emit(s, p)
			restore()
			if err != nil {
				t.Fatal(err)
			}
			chk := simtest.CheckBothSets(t, ss, prog)
			random, exact := chk.Sets[0], chk.Sets[1]
			switch {
			case !plant && !chk.OK:
				t.Errorf("%s without the bug: %s", p, chk.Message)
			case plant && exact.OK:
				t.Errorf("%s: block %d's wrong scale passed the exact inputs", p, block)
			case plant:
				t.Logf("%s %s: random inputs ok=%v (max abs error %.3g); exact inputs: %s", p["mma"], p["dequant"], random.OK, random.MaxAbs, exact.Message)
			}
		}
	}
}

// loraShapes are small lora=r shapes (dX = dY·dequant(W) + dh·A, the
// adapter's rank as one more k-tile that the producer thread loads by
// TMA): ranks 8 (a k-tile mostly zero-filled) and 64 (a whole one), one
// row, row tails, a column tail (k=192), f16 and bf16, double-quantized
// scales, clusters of 2 (m=130) and 4 (m=385) CTAs.
var loraShapes = []simtest.Case{
	{Spec: "m=1,n=64,k=128,lora=8", DType: dtype.BF16},
	{Spec: "m=37,n=128,k=192,scales=dq,lora=64", DType: dtype.F16},
	{Spec: "m=130,n=192,k=256,lora=16", DType: dtype.BF16},
	{Spec: "m=385,n=64,k=128,lora=32", DType: dtype.BF16},
}

// TestLoRAOnInterpreter runs the lora variants of loraShapes on the
// random and the exact inputs (alternately; both with GRADTUNE_SWEEP=ci
// or full): a sample (simtest.Sample: one in 32; one in 4 with
// GRADTUNE_SWEEP=ci, all with full); and a persistent point just past
// one wave (133 tiles of 128×128 over the interpreter's 132 CTAs, a row
// tail) whose tiles have 6 k-tiles over a 5-slot ring, so that the
// adapter's k-tile lands in another slot each tile: the slot's raw
// barrier (codes=tma), whose phase it does not wait for, must still
// complete one phase a lap.
func TestLoRAOnInterpreter(t *testing.T) {
	f := nf4GEMM(t)
	simtest.Sample(t, f, loraShapes, 16, func(variants.Params) bool { return true })
	simtest.RunNamed(t, f, []simtest.Point{{Case: simtest.Case{Spec: "m=769,n=320,k=2432,lora=8", DType: dtype.BF16},
		Params: "bk=64,bm=128,bn=128,cluster=1,codes=tma,dequant=producer,dkernel=8x256,epilogue=direct,lookup=smem,mma=wgmma,order=m,persistent=1,splitk=1,stages=5"}})
}
