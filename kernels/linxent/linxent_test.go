package linxent_test

import (
	"fmt"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
	"slices"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/linxent"
)

var fam = linxent.Families()[0]

// TestNamedOnInterpreter validates chosen variants on the interpreter.
func TestNamedOnInterpreter(t *testing.T) {
	simtest.RunNamed(t, fam, []simtest.Point{
		{Case: simtest.Case{Spec: "t=70,h=128,v=300", DType: dtype.BF16}, Params: "softmax=kernel,pdl=0,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simtest.Case{Spec: "t=70,h=128,v=300", DType: dtype.BF16}, Params: "softmax=epilogue,pdl=1,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simtest.Case{Spec: "t=70,h=128,v=300", DType: dtype.BF16}, Params: "softmax=epilogue,ref=fixed,pdl=1,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128"},
	})
}

// TestValidationCatchesBugs: accumulators overwritten by each chunk
// instead of rescaled and added (dx wrong), z[label] read one class late
// (loss wrong), the dW pass's gradient without −g at the label (dw
// wrong), dx without label smoothing's column sums or without z-loss's
// factor: each fails validation naming that buffer.
//
// The epilogue path (softmax=epilogue), with either reference: the same
// bugs (ref=fixed: each chunk's atomic adds replaced by stores), and rows
// clamped half a bit over their reference without the flag that sends
// them to the repair kernel (dx wrong); with the flag the program is
// valid.
func TestValidationCatchesBugs(t *testing.T) {
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	const rest = "pdl=0,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128"
	// smoothing's term g·ε/v·Σ_c w_c is visible past the probabilities'
	// rounding only where ε/v is large: a short vocabulary, ε = 0.9
	for _, c := range []struct {
		spec, softmax string
		bugs          map[string]string
	}{
		{"t=70,h=128,v=300,dw=1,smooth=0.1,zloss=1", "kernel", map[string]string{"noRescale": "dx", "labelOff": "loss", "noOneHot": "dw", "noZFactor": "dx"}},
		{"t=70,h=128,v=40,smooth=0.9", "kernel", map[string]string{"noWSum": "dx"}},
		{"t=70,h=128,v=600,smooth=0.1,zloss=1", "epilogue", map[string]string{"noRescale": "dx", "labelOff": "loss", "noZFactor": "dx",
			"lowClamp": "", "lowClampNoFlag": "dx"}},
		{"t=70,h=128,v=40,smooth=0.9", "epilogue", map[string]string{"noWSum": "dx"}},
		{"t=45,h=64,v=600,labels=i64,f16", "epilogue", map[string]string{"lowClamp": "", "lowClampNoFlag": "dx"}},
		{"t=70,h=128,v=600,smooth=0.1,zloss=1", "epilogue,ref=fixed,pstore=quad", map[string]string{"noRescale": "dx", "labelOff": "loss", "noZFactor": "dx",
			"lowClamp": "", "lowClampNoFlag": "dx"}},
	} {
		spec, dt := c.spec, dtype.BF16
		if f, ok := strings.CutSuffix(spec, ",f16"); ok {
			spec, dt = f, dtype.F16
		}
		s := simtest.Shape(t, fam, spec, dt)
		p, err := fam.Space(s).ParseRecorded("softmax=" + c.softmax + "," + rest)
		if err != nil {
			t.Fatal(err)
		}
		if err := ss.Prepare(fam, s, 1); err != nil {
			t.Fatal(err)
		}
		good, err := fam.Emit(s, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := simtest.ValidateProgram(ss, good); err != nil {
			t.Fatalf("%s: the unbroken program: %v", c.spec, err)
		}
		for bug, buffer := range c.bugs {
			prog, err := linxent.EmitBuggy(s, p, bug)
			if err != nil {
				t.Fatal(err)
			}
			if prog.PTX == good.PTX {
				t.Fatalf("%s: the bug was not planted", bug)
			}
			err = simtest.ValidateProgram(ss, prog)
			if buffer == "" {
				if err != nil {
					t.Errorf("%s %s: %v", c.spec, bug, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), buffer) {
				t.Errorf("%s %s: validation says %v, want a failure of %s", c.spec, bug, err, buffer)
			}
			t.Logf("%s: %v", bug, err)
		}
	}
}

// TestSpace: the qwen1.5b head's space, without and with dW, and its
// programs' launches (three per chunk and the finishing one; with dW three
// more per chunk but the last chunk's logits, still in z) and runtime dim.
func TestSpace(t *testing.T) {
	for _, dw := range []int{0, 1} {
		s := simtest.Shape(t, fam, fmt.Sprintf("t=2048,h=1536,v=151936,dw=%d", dw), dtype.BF16)
		pts := fam.Space(s).Enumerate()
		t.Logf("%s: %d points", s.Key(), len(pts))
		if len(pts) < 50 {
			t.Fatalf("%d points", len(pts))
		}
		for _, pt := range sweep.Pick(pts, 4) {
			prog, err := fam.Emit(s, pt)
			if err != nil {
				t.Fatalf("%s: %v", pt, err)
			}
			chunk, _ := pt.Int("chunk")
			nc := (151936 + chunk - 1) / chunk
			want := 3*nc + 1 + dw*(3*nc-1)
			if pt["softmax"] == "epilogue" { // the probe, two per chunk, repair and finish
				want = 2*nc + 3
			}
			if len(prog.Launches) != want || !slices.Equal(prog.RuntimeDims, []string{"t"}) {
				t.Errorf("%s: %d launches (want %d), runtime %v", pt, len(prog.Launches), want, prog.RuntimeDims)
			}
		}
	}
}

// TestTwoAnSM: at the LM head, zctas=2 gives the probe and the logits
// GEMMs one consumer warpgroup (256 threads) and at most half an SM's
// shared memory, and the gradient GEMMs keep theirs.
func TestTwoAnSM(t *testing.T) {
	s := simtest.Shape(t, fam, "t=2048,h=1536,v=151936", dtype.BF16)
	pt, err := fam.Space(s).ParseRecorded("softmax=epilogue,ref=fixed,probe=2048,pstore=quad,pdl=1,chunk=8192,zbm=128,zbn=128,zctas=2,zpers=0,dbm=128,dbn=192,dpers=0,sblock=128,wbm=128,wbn=128")
	if err != nil {
		t.Fatal(err)
	}
	if err := fam.Space(s).Check(pt); err != nil {
		t.Fatal(err)
	}
	prog, err := fam.Emit(s, pt)
	if err != nil {
		t.Fatal(err)
	}
	half := hopper.SharedPerSM/2 - hopper.CTASharedReserved
	var z, dx int
	for _, l := range prog.Launches {
		switch {
		case strings.Contains(l.Entry, "_zs") || strings.Contains(l.Entry, "_zp"):
			z++
			if l.Block[0] != 256 || l.SharedBytes > half {
				t.Errorf("%s: %d threads, %d bytes of shared memory: want 256 and at most %d", l.Entry, l.Block[0], l.SharedBytes, half)
			}
		case strings.Contains(l.Entry, "_dx"):
			dx++
			if l.SharedBytes <= half {
				t.Errorf("%s: %d bytes of shared memory: the gradient GEMM keeps one CTA an SM", l.Entry, l.SharedBytes)
			}
		}
	}
	if z != 20 || dx != 19 {
		t.Errorf("%d logits launches and %d gradient launches, want 20 and 19", z, dx)
	}
}

// simCases: one token; odd t and an odd v whose last chunk is 44 classes
// (a padded row of 48); one chunk that is also the last; f16 with i64
// labels; rows past two tiles of 128 and chunks of 512; dW written, and
// added to a given dw in f16; label smoothing with z-loss, without and
// with dW.
var simCases = []simtest.Case{
	{Spec: "t=1,h=64,v=300", DType: dtype.BF16},
	{Spec: "t=70,h=128,v=300", DType: dtype.BF16},
	{Spec: "t=33,h=64,v=250", DType: dtype.BF16},
	{Spec: "t=45,h=192,v=520,labels=i64", DType: dtype.F16},
	{Spec: "t=300,h=64,v=1100", DType: dtype.BF16},
	{Spec: "t=45,h=64,v=300,dw=1", DType: dtype.BF16},
	{Spec: "t=70,h=128,v=520,dw=2,labels=i64", DType: dtype.F16},
	{Spec: "t=37,h=64,v=1003,smooth=0.1,zloss=1", DType: dtype.BF16},
	{Spec: "t=45,h=64,v=300,smooth=0.05,zloss=1,dw=2", DType: dtype.F16},
}

// TestVariantsOnInterpreter validates a sample of each case's variants
// and, by name, a persistent logits GEMM (160 tiles), 256-row tiles, a
// 192-wide tile and the widest softmax CTA.
func TestVariantsOnInterpreter(t *testing.T) {
	// kernels' TestVariantsOnInterpreter samples the family at the small
	// shapes of the preset; here the cases it does not reach, once
	simtest.Sample(t, fam, simCases[:5], 96, func(variants.Params) bool { return true })
	// with dW, the logits and gradient GEMMs at 128×128: the dW GEMM's
	// tiles, the chunk and the softmax CTA vary
	simtest.Sample(t, fam, simCases[5:], 8, func(p variants.Params) bool {
		for _, a := range []string{"zbm", "zbn", "dbm", "dbn"} {
			if v, _ := p.Int(a); v != 128 {
				return false
			}
		}
		return true
	})
	simtest.RunNamed(t, fam, []simtest.Point{
		{Case: simtest.Case{Spec: "t=600,h=64,v=2100", DType: dtype.BF16}, Params: "softmax=kernel,pdl=0,chunk=1024,zbm=64,zbn=64,zpers=1,dbm=64,dbn=64,dpers=0,sblock=256,wbm=128,wbn=128"},
		{Case: simCases[4], Params: "softmax=kernel,pdl=0,chunk=512,zbm=256,zbn=128,zpers=0,dbm=128,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[6], Params: "softmax=kernel,pdl=0,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=256,wbn=128"},
		{Case: simCases[3], Params: "softmax=kernel,pdl=0,chunk=256,zbm=64,zbn=64,zpers=0,dbm=64,dbn=192,dpers=0,sblock=128,wbm=128,wbn=128"},
		// the epilogue path: persistent 64×64 logits tiles, 256-row tiles,
		// f16 with i64 labels, one token, smoothing with z-loss
		{Case: simtest.Case{Spec: "t=600,h=64,v=2100", DType: dtype.BF16}, Params: "softmax=epilogue,pdl=1,chunk=1024,zbm=64,zbn=64,zpers=1,dbm=64,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[4], Params: "softmax=epilogue,pdl=1,chunk=512,zbm=256,zbn=128,zpers=0,dbm=128,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[3], Params: "softmax=epilogue,pdl=0,chunk=256,zbm=64,zbn=64,zpers=0,dbm=64,dbn=192,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[0], Params: "softmax=epilogue,pdl=1,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[7], Params: "softmax=epilogue,pdl=1,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128"},
		// ref=fixed: the same tilings but f16's; pstore=quad at the tile
		// widths it takes (64, 128), with 256-row tiles and a last chunk's
		// tail
		{Case: simtest.Case{Spec: "t=600,h=64,v=2100", DType: dtype.BF16}, Params: "softmax=epilogue,ref=fixed,pstore=quad,pdl=1,chunk=1024,zbm=64,zbn=64,zpers=1,dbm=64,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[4], Params: "softmax=epilogue,ref=fixed,pdl=1,chunk=512,zbm=256,zbn=128,zpers=0,dbm=128,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[0], Params: "softmax=epilogue,ref=fixed,pstore=quad,pdl=1,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[7], Params: "softmax=epilogue,ref=fixed,pdl=0,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=192,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[4], Params: "softmax=epilogue,ref=fixed,pstore=quad,pdl=1,chunk=512,zbm=256,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128"},
		// probe=2048 on a chunk of 4096: ref_0 from the first 2048 classes;
		// with the running reference (and pdl=2); a 192-column probe tile
		// past them (v = 3000, one chunk)
		{Case: simtest.Case{Spec: "t=130,h=64,v=9000", DType: dtype.BF16}, Params: "softmax=epilogue,ref=fixed,probe=2048,pstore=quad,pdl=1,chunk=4096,zbm=128,zbn=128,zpers=0,dbm=128,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simtest.Case{Spec: "t=130,h=64,v=9000", DType: dtype.BF16}, Params: "softmax=epilogue,probe=2048,pdl=2,chunk=4096,zbm=128,zbn=128,zpers=0,dbm=128,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simtest.Case{Spec: "t=70,h=64,v=3000", DType: dtype.BF16}, Params: "softmax=epilogue,ref=fixed,probe=2048,pdl=0,chunk=4096,zbm=128,zbn=192,zpers=0,dbm=128,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[3], Params: "softmax=epilogue,pstore=quad,pdl=0,chunk=256,zbm=64,zbn=128,zpers=0,dbm=64,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		// zctas=2: one consumer warpgroup over a 128-row tile's two m64
		// blocks (the running reference at one token, smoothing with
		// z-loss and pdl=2, the fixed reference with quads and the probe)
		{Case: simCases[0], Params: "softmax=epilogue,zctas=2,pdl=1,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simCases[7], Params: "softmax=epilogue,zctas=2,pdl=2,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		{Case: simtest.Case{Spec: "t=130,h=64,v=9000", DType: dtype.BF16}, Params: "softmax=epilogue,zctas=2,ref=fixed,probe=2048,pstore=quad,pdl=1,chunk=4096,zbm=128,zbn=128,zpers=0,dbm=128,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
		// tblock=2048 at 2100 tokens: a pass of 2048 rows and one of 52
		{Case: simtest.Case{Spec: "t=2100,h=64,v=600", DType: dtype.BF16}, Params: "softmax=epilogue,tblock=2048,ref=fixed,pstore=quad,pdl=1,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128"},
	})
}

// TestPasses: passes over blocks of rows (tblock, here 64 rows so that
// the interpreter's shapes have several) emitted at t = 200 compute t =
// 200 (the fourth pass takes 8 rows), 300 (it takes the 108 past the
// third block), 100 (the third and fourth are left out, the second
// takes 36 rows) and 192 (the fourth's rows fold to 0); with every pass adding into the first pass's rows of
// the accumulator, dx fails.
func TestPasses(t *testing.T) {
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	s := simtest.Shape(t, fam, "t=200,h=64,v=600", dtype.BF16)
	p, err := fam.Space(s).ParseRecorded("softmax=epilogue,ref=fixed,pstore=quad,probe=0,pdl=1,chunk=256,zbm=64,zbn=64,zpers=0,dbm=64,dbn=64,dpers=0,sblock=128,wbm=128,wbn=128")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := linxent.EmitPasses(s, p, 64, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tokens := range []int{200, 300, 100, 192} {
		o, err := kernels.WithDim(fam, s, "t", tokens)
		if err != nil {
			t.Fatal(err)
		}
		if err := ss.Prepare(fam, o, 1); err != nil {
			t.Fatal(err)
		}
		if err := simtest.ValidateProgram(ss, prog); err != nil {
			t.Errorf("t=%d: %v", tokens, err)
		}
	}
	buggy, err := linxent.EmitPasses(s, p, 64, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := simtest.ValidateProgram(ss, buggy); err == nil || !strings.Contains(err.Error(), "dx") {
		t.Errorf("every pass adding into the first pass's rows: validation says %v, want a failure of dx", err)
	}
}

// TestRuntimeTokens: a program emitted at t=70 is the program emitted at
// other t, and computes t = 1, 16 and 200 on the interpreter.
func TestRuntimeTokens(t *testing.T) {
	simtest.RuntimeDim(t, fam, simCases[1], "t", []int{1, 16, 200},
		"softmax=kernel,pdl=0,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128")
}

// TestAssemble assembles a sample of the qwen1.5b head's variants, in
// bf16 with dW (every kernel a program may have) and in f16 without, for
// sm_90a: ptxas must accept them with no spill, no stack frame and no
// warning.
func TestAssemble(t *testing.T) {
	ptxas.RequireOrSkip(t)
	var jobs []ptxtest.Job
	for _, c := range []struct {
		dw, n int
		dt    dtype.DType
	}{{1, 1000, dtype.BF16}, {0, 1000, dtype.F16}} {
		s := simtest.Shape(t, fam, fmt.Sprintf("t=2048,h=1536,v=151936,dw=%d", c.dw), c.dt)
		for _, p := range sweep.Pick(fam.Space(s).Enumerate(), c.n) { // every axis value once
			prog, err := fam.Emit(s, p)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, ptxtest.Job{What: s.Key() + " " + p.String(), Module: ptxas.Module{PTX: prog.PTX, Arch: "sm_90a"}})
		}
	}
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, true), 20)
}
