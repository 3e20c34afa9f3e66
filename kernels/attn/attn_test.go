package attn_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/attn"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

var fam = attn.Families()[0]

// qwen is Qwen2.5-1.5B's attention at 2048 tokens, causal.
const qwen = "s=2048,hq=12,hk=2,d=128,causal=1"

// TestShapesAndSpace: the preset's shape, qwen's space (every point
// emits three launches, five where a KV head's query heads are split over
// CTAs), the cost and the shape limits.
func TestShapesAndSpace(t *testing.T) {
	p, err := variants.LookupPreset("qwen1.5b", 2048)
	if err != nil {
		t.Fatal(err)
	}
	got := fam.Shapes(p, []dtype.DType{dtype.BF16})
	if len(got) != 1 || got[0].Key() != qwen+",dtype=bf16" {
		t.Fatalf("Shapes = %v", got)
	}
	s := simtest.Shape(t, fam, qwen, dtype.BF16)
	pts := fam.Space(s).Enumerate()
	t.Logf("%s: %d points", s.Key(), len(pts))
	if len(pts) != 32 {
		t.Errorf("%d points, want bm=64 × (bn, warps) ∈ {(64, 4), (128, 8)} × 2 stages (sync) and bm=64 × (bn, warps) ∈ {(64, 8), (128, 12)} × 2 stages × heads 0, 1, 2, 3 × dq red, tma but for the staging past 227 KB at bn=128, stages=3 (wgmma)", len(pts))
	}
	for _, pt := range pts {
		prog, err := fam.Emit(s, pt)
		if err != nil {
			t.Fatalf("%s: %v", pt, err)
		}
		want := 3 // the preprocess, the main kernel, dQ's conversion
		if pt["heads"] != "0" {
			want = 5 // and dK's and dV's
		}
		if _, err := kernels.PlanAt(fam, s, prog, 132); err != nil || len(prog.Launches) != want {
			t.Errorf("%s: %d launches, %v", pt, len(prog.Launches), err)
		}
	}
	if n := len(fam.Space(simtest.Shape(t, fam, "s=300,hq=2,hk=1,d=64", dtype.F16)).Enumerate()); n != 16 {
		t.Errorf("d=64: %d points, want 8 sync and 8 wgmma (bn=64, heads 0 and 1, dq red and tma)", n)
	}
	c := fam.Cost(s)
	if c.Flops != 10*2048*2048*128*12/2 || c.Bytes != 2*(2048*128*(2*(3*12+2*2)+12+2*2))+4*12*2048 {
		t.Errorf("Cost = %+v", c)
	}
	for _, bad := range []string{"s=8,hq=3,hk=2,d=64", "s=8,hq=2,hk=1,d=96", "s=8,hq=2,hk=1,d=64,causal=2", "s=100000,b=4096,hq=8,hk=1,d=128"} {
		sp, _ := variants.ParseSpecs(bad)
		if _, err := fam.Shape(sp[0], dtype.BF16); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// simCases: one token; odd lengths of a part block (37) and past two
// blocks (130), at both head dims, GQA groups of 3 and 2, causal and
// not, both dtypes, two sequences.
var simCases = []simtest.Case{
	{Spec: "s=1,hq=1,hk=1,d=64", DType: dtype.BF16},
	{Spec: "s=1,hq=4,hk=2,d=128,causal=1", DType: dtype.F16},
	{Spec: "s=37,hq=3,hk=1,d=64,causal=1", DType: dtype.BF16},
	{Spec: "s=37,hq=4,hk=2,d=128", DType: dtype.F16},
	{Spec: "s=130,hq=3,hk=1,d=128,causal=1", DType: dtype.BF16},
	{Spec: "s=130,hq=4,hk=2,d=64", DType: dtype.F16},
	{Spec: "s=130,b=2,hq=4,hk=2,d=64,causal=1", DType: dtype.BF16},
}

// TestVariantsOnInterpreter validates a sample of each case's variants
// and, by name, the largest blocks, the deepest ring and eight warps, and
// the wgmma kernel with one and two consumers over two sequences, GQA,
// tails, causal and not, a KV head's query heads in one CTA and split
// over CTAs.
func TestVariantsOnInterpreter(t *testing.T) {
	simtest.Sample(t, fam, simCases, 4, func(variants.Params) bool { return true })
	simtest.RunNamed(t, fam, []simtest.Point{
		{Case: simCases[6], Params: "mma=sync,bm=128,bn=128,warps=8,stages=3,heads=0,dq=red"},
		{Case: simCases[4], Params: "mma=sync,bm=64,bn=128,warps=8,stages=3,heads=0,dq=red"},
		{Case: simtest.Case{Spec: "s=200,hq=2,hk=2,d=128,causal=1", DType: dtype.F16}, Params: "mma=sync,bm=64,bn=64,warps=4,stages=2,heads=0,dq=red"},
		{Case: simtest.Case{Spec: "s=130,b=2,hq=4,hk=2,d=128,causal=1", DType: dtype.BF16}, Params: "mma=wgmma,bm=64,bn=128,warps=12,stages=2,heads=0,dq=red"},
		{Case: simCases[3], Params: "mma=wgmma,bm=64,bn=128,warps=12,stages=3,heads=0,dq=red"},
		{Case: simtest.Case{Spec: "s=130,b=2,hq=4,hk=2,d=128,causal=1", DType: dtype.BF16}, Params: "mma=wgmma,bm=64,bn=128,warps=12,stages=2,heads=1,dq=red"},
		{Case: simtest.Case{Spec: "s=100,hq=6,hk=1,d=64", DType: dtype.F16}, Params: "mma=wgmma,bm=64,bn=64,warps=8,stages=2,heads=2,dq=red"},
		{Case: simtest.Case{Spec: "s=130,b=2,hq=4,hk=2,d=128,causal=1", DType: dtype.BF16}, Params: "mma=wgmma,bm=64,bn=128,warps=12,stages=2,heads=1,dq=tma"},
		{Case: simCases[6], Params: "mma=wgmma,bm=64,bn=64,warps=8,stages=2,heads=1,dq=tma"},
	})
}

// TestErrors runs six variants and logs each output's largest error
// against its tolerance (Atol + Rtol·|ref|): at most half of it.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		spec, p string
		dt      dtype.DType
	}{
		{"s=130,hq=3,hk=1,d=64,causal=1", "mma=sync,bm=64,bn=64,warps=4,stages=2,heads=0,dq=red", dtype.BF16},
		{"s=130,hq=4,hk=2,d=128", "mma=sync,bm=64,bn=128,warps=8,stages=2,heads=0,dq=red", dtype.BF16},
		{"s=130,hq=4,hk=2,d=128,causal=1", "mma=sync,bm=64,bn=64,warps=4,stages=3,heads=0,dq=red", dtype.F16},
		{"s=130,hq=4,hk=2,d=128,causal=1", "mma=wgmma,bm=64,bn=128,warps=12,stages=2,heads=0,dq=red", dtype.BF16},
		{"s=130,hq=4,hk=2,d=128,causal=1", "mma=wgmma,bm=64,bn=128,warps=12,stages=2,heads=1,dq=red", dtype.BF16},
		{"s=130,hq=4,hk=2,d=128,causal=1", "mma=wgmma,bm=64,bn=128,warps=12,stages=2,heads=1,dq=tma", dtype.BF16},
	} {
		s := simtest.Shape(t, fam, c.spec, c.dt)
		ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
		if err := ss.Prepare(fam, s, 1); err != nil {
			t.Fatal(err)
		}
		p, _ := variants.ParseParams(c.p)
		prog, err := fam.Emit(s, p)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ss.Load(prog)
		if err != nil {
			t.Fatal(err)
		}
		if err := ss.Run(l); err != nil {
			t.Fatal(err)
		}
		ref := fam.Reference(s, fam.Inputs(s, 1))
		for _, b := range []string{"dq", "dk", "dv"} {
			got, err := ss.Output(b)
			if err != nil {
				t.Fatal(err)
			}
			tol := fam.Tolerance(s, b)
			var worst, maxErr float64
			for i, r := range ref[b] {
				e := math.Abs(got[i] - r)
				maxErr = max(maxErr, e)
				worst = max(worst, e/(tol.Atol+tol.Rtol*math.Abs(r)))
			}
			t.Logf("%s %v %s: %s max error %.3g, atol %.3g, worst error/tolerance %.2f", c.spec, c.dt, c.p, b, maxErr, tol.Atol, worst)
			if worst > 0.5 {
				t.Errorf("%s %s: %s at %.2f of its tolerance", c.spec, c.p, b, worst)
			}
		}
		l.Unload()
		ss.Release()
	}
}

// TestValidationCatchesBugs plants bugs in a variant of each main kernel
// (and of the wgmma kernel with two consumer warpgroups, heads split and
// dQ by TMA): the causal
// mask's edge moved (j < i: each query loses its own key), key block 0's
// dQ partials not added, and no barrier between the dS tile's stores and
// dQ's reads of it. Validation must reject each: the first two for the
// buffers they break, the third as a shared-memory race (sync) or a
// wrong dQ (wgmma).
func TestValidationCatchesBugs(t *testing.T) {
	s := simtest.Shape(t, fam, "s=130,hq=3,hk=1,d=128,causal=1", dtype.BF16)
	ss := simtest.Session(t, fam, s, 2)
	for _, ps := range []string{"mma=sync,bm=64,bn=64,warps=4,stages=2,heads=0,dq=red", "mma=wgmma,bm=64,bn=64,warps=8,stages=2,heads=0,dq=red", "mma=wgmma,bm=64,bn=128,warps=12,stages=2,heads=1,dq=tma"} {
		p, err := variants.ParseParams(ps)
		if err != nil {
			t.Fatal(err)
		}
		good, err := fam.Emit(s, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := simtest.ValidateProgram(ss, good); err != nil {
			t.Fatalf("%s, the unbroken program: %v", ps, err)
		}
		// The interpreter runs a wgmma when it is issued: without the
		// barrier it reads a dS tile not yet written, and dQ is wrong.
		noBar := map[string]string{attn.Sync: "race", attn.WGMMA: "dq["}[p["mma"]]
		for bug, want := range map[string]string{"maskEdge": "d", "dropDQ": "dq[", "noDSBar": noBar} {
			prog, err := attn.EmitBuggy(s, p, bug)
			if err != nil {
				t.Fatal(err)
			}
			if prog.PTX == good.PTX {
				t.Fatalf("%s %s: the bug was not planted", ps, bug)
			}
			err = simtest.ValidateProgram(ss, prog)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s %s: validation says %v, want a failure naming %q", ps, bug, err, want)
			}
			t.Logf("%s %s: %v", ps, bug, err)
		}
	}
}

// TestAssemble assembles the variants at qwen's shape in both dtypes (a
// sample covering every axis value; all with GRADTUNE_SWEEP=ci) for sm_90
// (sm_90a: wgmma): ptxas
// must accept them with no spill, no stack frame and no warning.
func TestAssemble(t *testing.T) {
	ptxas.RequireOrSkip(t)
	var shapes []variants.Shape
	var groups [][]variants.Params
	for _, dt := range fam.DTypes() {
		s := simtest.Shape(t, fam, qwen, dt)
		shapes, groups = append(shapes, s), append(groups, fam.Space(s).Enumerate())
	}
	var jobs []ptxtest.Job
	for i, pts := range sweep.PickGroups(groups, 1) { // 32 a dtype: all with GRADTUNE_SWEEP=ci
		for _, p := range pts {
			prog, err := fam.Emit(shapes[i], p)
			if err != nil {
				t.Fatal(err)
			}
			arch := "sm_90"
			if p["mma"] == attn.WGMMA {
				arch = "sm_90a"
			}
			jobs = append(jobs, ptxtest.Job{What: shapes[i].Key() + " " + p.String(), Module: ptxas.Module{PTX: prog.PTX, Arch: arch}})
		}
	}
	t.Logf("%d modules, %s", len(jobs), sweep.Describe(1))
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, true), 20)
}
