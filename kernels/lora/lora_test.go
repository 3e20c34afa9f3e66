package lora_test

import (
	"hash/fnv"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/ptxas"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/kernels/lora"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

var fam = lora.Families()[0]

// gateUp is qwen1.5b's gate·up projection at rank 16 and 2048 tokens.
const gateUp = "t=2048,in=1536,out=8960,r=16"

// TestShapesAndSpace: the preset's shapes (four projections at ranks 16
// and 64, dx here and base), the gate·up space (every sampled point emits a program whose
// launches and buffers are expressions of t), the cost and the shape
// limits.
func TestShapesAndSpace(t *testing.T) {
	p, err := variants.LookupPreset("qwen1.5b", 2048)
	if err != nil {
		t.Fatal(err)
	}
	got := fam.Shapes(p, fam.DTypes())
	if len(got) != 32 || got[0].Key() != "t=2048,in=1536,out=1536,r=16,dtype=bf16" || got[1].Key() != "t=2048,in=1536,out=1536,r=16,dx=base,dtype=bf16" {
		t.Fatalf("Shapes = %v", got)
	}
	s := simtest.Shape(t, fam, gateUp, dtype.BF16)
	pts := fam.Space(s).Enumerate()
	t.Logf("%s: %d points", s.Key(), len(pts))
	if len(pts) < 50 {
		t.Errorf("%d points", len(pts))
	}
	for _, pt := range sweep.Pick(pts, 9) {
		prog, err := fam.Emit(s, pt)
		if err != nil {
			t.Fatalf("%s: %v", pt, err)
		}
		plan, err := kernels.PlanAt(fam, s, prog, 132)
		if err != nil {
			t.Fatal(err)
		}
		want := 3 // dY, x, finalize
		if pt["fold"] == "1" {
			want = 2 // the x kernel finalizes
		}
		if len(plan.Launches) != want || !slices.Equal(prog.RuntimeDims, []string{"t"}) {
			t.Errorf("%s: %d launches (want %d), runtime %v", pt, len(plan.Launches), want, prog.RuntimeDims)
		}
		// the dY kernel: ⌈t/bt⌉·osplit dh CTAs, then ⌈out/64⌉·dbsplit dB CTAs
		var v [3]int
		for i, axis := range []string{"bt", "osplit", "dbsplit"} {
			if v[i], err = pt.Int(axis); err != nil {
				t.Fatal(err)
			}
		}
		bt, osplit, dbsplit := v[0], v[1], v[2]
		if g, want := plan.Launches[0].Grid[0], (2048+bt-1)/bt*osplit+140*dbsplit; g != want {
			t.Errorf("%s: the dY kernel's grid %d, want %d", pt, g, want)
		}
	}
	c := fam.Cost(s)
	if want := int64(2*(2048*8960+2*2048*1536+2*2048*16+2*16*1536+2*8960*16) + 4); c.Bytes != want || c.Flops != 2*2048*16*(2*8960+2*1536) {
		t.Errorf("Cost = %+v, want %d bytes", c, want)
	}
	for _, bad := range []string{"t=1,in=64,out=64,r=12", "t=1,in=64,out=64,r=72", "t=1,in=60,out=64,r=8", "t=300000,in=8192,out=8192,r=8"} {
		sp, _ := variants.ParseSpecs(bad)
		if _, err := fam.Shape(sp[0], dtype.BF16); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := fam.Shape(variants.Spec{Dims: s.Dims}, dtype.F32); err == nil {
		t.Error("f32 accepted")
	}
}

// simCases: one token; odd t over out = 72 (a chunk and a ninth) at ranks
// 8 and 64; a rank of one and a half k16 steps (24) in f16 with in = 136;
// rows past one block at rank 16.
var simCases = []simtest.Case{
	{Spec: "t=1,in=64,out=72,r=8", DType: dtype.BF16},
	{Spec: "t=37,in=64,out=72,r=8", DType: dtype.BF16},
	{Spec: "t=37,in=64,out=72,r=64", DType: dtype.BF16},
	{Spec: "t=37,in=136,out=72,r=24", DType: dtype.F16},
	{Spec: "t=130,in=64,out=200,r=16", DType: dtype.BF16},
}

// TestVariantsOnInterpreter validates a sample of each case's variants on
// the interpreter, and by name the points that matter: eight warps,
// 256-row blocks, splits of both kernels, the deepest ring.
func TestVariantsOnInterpreter(t *testing.T) {
	simtest.Sample(t, fam, simCases, 3, sampledNewAxes)
	simtest.RunNamed(t, fam, []simtest.Point{
		{Case: simCases[2], Params: "bt=64,warps=4,stages=2,osplit=2,isplit=1"},
		{Case: simCases[4], Params: "bt=256,warps=8,stages=2,osplit=4,isplit=1"},
		{Case: simtest.Case{Spec: "t=300,in=200,out=520,r=32", DType: dtype.BF16}, Params: "bt=256,warps=8,stages=4,osplit=2,isplit=1"},
		{Case: simCases[4], Params: "bt=128,warps=8,stages=2,osplit=1,isplit=1"},
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=3,osplit=2,isplit=4"},
		{Case: simtest.Case{Spec: "t=70,in=136,out=72,r=40", DType: dtype.F16}, Params: "bt=64,warps=4,stages=3,osplit=2,isplit=2"},
		// dx=base: the base GEMM adds dh·A; no A read, no dX written
		{Case: simtest.Case{Spec: "t=130,in=200,out=136,r=24,dx=base", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=3,osplit=2,isplit=2"},
		{Case: simtest.Case{Spec: "t=137,in=64,out=72,r=64,dx=base", DType: dtype.F16}, Params: "bt=128,warps=8,stages=2,osplit=1,isplit=1"},
		// dA's warps split by rank blocks (4 and 2 groups), A fragments
		// held in registers
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=2,osplit=2,isplit=2"},
		{Case: simtest.Case{Spec: "t=300,in=200,out=136,r=32,dx=base", DType: dtype.F16}, Params: "bt=128,warps=4,stages=3,osplit=1,isplit=2"},
		// pdl: dh's finalize, the x kernel whose tiles come before its
		// wait, with and without dX and row groups; the register cap (no
		// fragments held)
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=3,osplit=2,isplit=4,pdl=1"},
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=3,osplit=2,isplit=4,pdl=1,maxnreg=128"},
		{Case: simtest.Case{Spec: "t=300,in=192,out=256,r=16,dx=base", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=2,osplit=1,isplit=1,rg=2,pdl=1"},
		{Case: simtest.Case{Spec: "t=70,in=136,out=72,r=40", DType: dtype.F16}, Params: "bt=64,warps=4,stages=3,osplit=2,isplit=2,pdl=1"},
		// the wgmma x kernel: rank 64, a rank padded to 64 (40: dX's
		// third k16 step half zero), row groups, dx=base, pdl
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=128,warps=4,stages=3,osplit=2,isplit=2,mma=wgmma"},
		{Case: simtest.Case{Spec: "t=70,in=136,out=72,r=40", DType: dtype.F16}, Params: "bt=64,warps=4,stages=2,osplit=1,isplit=1,pdl=1,mma=wgmma"},
		{Case: simtest.Case{Spec: "t=300,in=192,out=256,r=16,dx=base", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=2,osplit=1,isplit=1,rg=2,pdl=1,mma=wgmma"},
		{Case: simtest.Case{Spec: "t=137,in=64,out=72,r=64,dx=base", DType: dtype.F16}, Params: "bt=128,warps=4,stages=2,osplit=1,isplit=1,rg=1,mma=wgmma"},
		// dh32's rows streamed (tparts): dh stored by chunk 0's CTAs
		// (osplit 2), a padded rank with pdl, uneven parts without dX
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=3,osplit=2,isplit=1,mma=wgmma,tparts=2"},
		{Case: simtest.Case{Spec: "t=70,in=136,out=72,r=40", DType: dtype.F16}, Params: "bt=64,warps=4,stages=2,osplit=1,isplit=1,pdl=1,mma=wgmma,tparts=1"},
		{Case: simtest.Case{Spec: "t=300,in=192,out=256,r=16,dx=base", DType: dtype.BF16}, Params: "bt=128,warps=4,stages=2,osplit=1,isplit=1,mma=wgmma,tparts=2"},
		// a warpgroup of x kernel beside an 8-warp dY kernel
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=3,osplit=2,isplit=1,mma=wgmma,tparts=2"},
		{Case: simtest.Case{Spec: "t=600,in=192,out=256,r=32", DType: dtype.F16}, Params: "bt=128,warps=8,stages=2,osplit=2,isplit=2,rg=2,mma=wgmma"},
		// the ring filled by TMA: dX with A's boxes, row groups with pdl,
		// a padded rank (A's rows past r read as zeros)
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=3,osplit=2,isplit=2,mma=wgmma,xload=tma"},
		{Case: simtest.Case{Spec: "t=300,in=192,out=256,r=16,dx=base", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=2,osplit=1,isplit=1,rg=2,pdl=1,mma=wgmma,xload=tma"},
		{Case: simtest.Case{Spec: "t=70,in=136,out=72,r=40", DType: dtype.F16}, Params: "bt=64,warps=4,stages=3,osplit=2,isplit=1,pdl=1,mma=wgmma,xload=tma"},
		// the TMA x kernel's 512-row groups (split by both warpgroups)
		{Case: simtest.Case{Spec: "t=1000,in=136,out=72,r=40", DType: dtype.BF16}, Params: "bt=128,warps=4,stages=2,osplit=1,isplit=1,rg=4,pdl=1,mma=wgmma,xload=tma"},
		// without dX: two-slot rings over 512- and 256-row groups of
		// several chunks, a group's last block short of t
		{Case: simtest.Case{Spec: "t=1000,in=200,out=136,r=64,dx=base", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=2,osplit=2,isplit=1,rg=4,pdl=1,mma=wgmma,xload=tma,dyload=tma,dbsplit=8"},
		{Case: simtest.Case{Spec: "t=700,in=264,out=72,r=24,dx=base", DType: dtype.F16}, Params: "bt=64,warps=4,stages=2,osplit=1,isplit=1,rg=4,pdl=1,mma=wgmma,xload=tma"},
		// the group's steps split evenly: CTAs that begin and end inside
		// a chunk (16 steps over 12, 12 over 8), with and without dX
		{Case: simtest.Case{Spec: "t=1000,in=200,out=136,r=64,dx=base", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=2,osplit=2,isplit=12,rg=4,pdl=1,mma=wgmma,xload=tma,dyload=tma,dbsplit=8"},
		{Case: simtest.Case{Spec: "t=600,in=136,out=72,r=40", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=3,osplit=1,isplit=8,rg=4,pdl=1,mma=wgmma,xload=tma"},
		// one block a group without dX (every step flushes), and
		// isplit = 33 over a group's 34 steps
		{Case: simtest.Case{Spec: "t=300,in=264,out=136,r=64,dx=base", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=3,osplit=2,isplit=2,rg=1,pdl=1,mma=wgmma,xload=tma,dyload=tma,dbsplit=8"},
		{Case: simtest.Case{Spec: "t=300,in=1088,out=72,r=40,dx=base", DType: dtype.F16}, Params: "bt=64,warps=4,stages=3,osplit=1,isplit=33,rg=2,pdl=1,mma=wgmma,xload=tma"},
		// fold: no finalize, the TMA x kernel's tickets (dA over 2 and 3
		// row groups, dh32 over isplit 2), beside either dY kernel
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=3,osplit=2,isplit=2,mma=wgmma,xload=tma,fold=1"},
		{Case: simtest.Case{Spec: "t=300,in=192,out=256,r=16,dx=base", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=2,osplit=1,isplit=1,rg=2,pdl=1,mma=wgmma,xload=tma,fold=1"},
		{Case: simtest.Case{Spec: "t=1000,in=136,out=72,r=40", DType: dtype.F16}, Params: "bt=128,warps=4,stages=2,osplit=2,isplit=2,rg=4,pdl=1,mma=wgmma,xload=tma,dyload=tma,fold=1"},
		// the TMA dY kernel: dh's partials by red.add and stored whole,
		// 256-row blocks over a tail, a padded rank (40, 16: B's and h's
		// columns past r read as zeros), out's last chunk part empty, with
		// either x kernel
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=3,osplit=2,isplit=2,dyload=tma"},
		{Case: simtest.Case{Spec: "t=300,in=192,out=520,r=16,dx=base", DType: dtype.BF16}, Params: "bt=256,warps=8,stages=2,osplit=1,isplit=1,pdl=1,dyload=tma"},
		{Case: simtest.Case{Spec: "t=70,in=136,out=72,r=40", DType: dtype.F16}, Params: "bt=64,warps=4,stages=3,osplit=1,isplit=2,pdl=1,dyload=tma"},
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=128,warps=8,stages=3,osplit=2,isplit=2,mma=wgmma,xload=tma,dyload=tma"},
		// dB's own CTAs (dbsplit 8, what shapes this small take): parts
		// of one block (three empty at t = 137, 300), of two (t = 1000),
		// out's last chunk part empty, dh whole or by red.add, a padded
		// rank, with fold
		{Case: simtest.Case{Spec: "t=137,in=200,out=136,r=64", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=3,osplit=2,isplit=2,dyload=tma,dbsplit=8"},
		{Case: simtest.Case{Spec: "t=1000,in=192,out=520,r=16,dx=base", DType: dtype.BF16}, Params: "bt=64,warps=4,stages=2,osplit=1,isplit=1,pdl=1,dyload=tma,dbsplit=8"},
		{Case: simtest.Case{Spec: "t=300,in=136,out=72,r=40", DType: dtype.F16}, Params: "bt=128,warps=4,stages=2,osplit=1,isplit=2,pdl=1,mma=wgmma,xload=tma,dyload=tma,dbsplit=8,fold=1"},
	})
}

// sampledNewAxes keeps the sample's cost near what it was before the TMA
// dY kernel, fold and dbsplit joined the space: dyload=tma is sampled
// beside the cp.async x kernels at one point in four (by a hash of the
// point), fold=1 and dbsplit > 0 not at all; the named points and the
// planted bugs cover them.
func sampledNewAxes(p variants.Params) bool {
	if p["fold"] == "1" || p["dbsplit"] != "0" {
		return false
	}
	if p["dyload"] != "tma" {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(p.String()))
	return p["xload"] != "tma" && h.Sum32()%4 == 0
}

// TestDependentLaunches: with pdl=1 every launch but the first is
// dependent; every kernel lets the next one launch before it reads or
// writes global memory, and a dependent kernel waits before its first
// load that is not a cp.async of x (dh32, the accumulators) and before
// its first store or red; the x kernel issues its first tiles before it
// waits. The interpreter runs launches in order, so it cannot see a
// missing wait: this reads the PTX.
func TestDependentLaunches(t *testing.T) {
	for _, c := range []struct{ spec, params string }{
		{"t=137,in=200,out=136,r=64", "bt=128,warps=8,stages=3,osplit=2,isplit=4,rg=1,pdl=1,maxnreg=0,mma=sync,tparts=0,xload=cp,dyload=cp"},
		{"t=300,in=192,out=256,r=16,dx=base", "bt=64,warps=4,stages=2,osplit=1,isplit=1,rg=2,pdl=1,maxnreg=0,mma=sync,tparts=0,xload=cp,dyload=cp"},
		{"t=137,in=200,out=136,r=64", "bt=128,warps=8,stages=3,osplit=2,isplit=4,rg=1,pdl=1,maxnreg=0,mma=sync,tparts=0,xload=cp,dyload=tma"},
	} {
		s, params := simtest.Shape(t, fam, c.spec, dtype.BF16), c.params
		p, err := fam.Space(s).ParseRecorded(params) // an axis added since takes its default
		if err != nil {
			t.Fatal(err)
		}
		prog, err := fam.Emit(s, p)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range prog.Launches {
			if l.Dependent != (i > 0) {
				t.Errorf("%s: launch %d (%s) dependent %v", params, i, l.Entry, l.Dependent)
			}
			body := entryBody(t, prog.PTX, l.Entry)
			first := func(re string) int {
				if m := regexp.MustCompile(re).FindStringIndex(body); m != nil {
					return m[0]
				}
				return len(body)
			}
			launch, wait := first(`griddepcontrol\.launch_dependents`), first(`griddepcontrol\.wait`)
			global := first(`(ld|st|red|cp\.async\.ca|cp\.async\.cg)\.(global|shared\.global)`)
			if launch > global {
				t.Errorf("%s: %s touches global memory before launch_dependents", params, l.Entry)
			}
			if i == 0 {
				if wait < len(body) {
					t.Errorf("%s: the first launch %s waits", params, l.Entry)
				}
				continue
			}
			if access := first(`\b(ld\.global|st\.global|red\.global)`); wait > access {
				t.Errorf("%s: %s reads or writes global memory before griddepcontrol.wait", params, l.Entry)
			}
			if strings.Contains(l.Entry, "_x_") && first(`cp\.async\.c[ag]\.shared\.global`) > wait {
				t.Errorf("%s: the x kernel waits before it issues its first tiles", params)
			}
		}
	}
}

// entryBody is the text of kernel entry's body in a module.
func entryBody(t *testing.T, module, entry string) string {
	t.Helper()
	i := strings.Index(module, ".entry "+entry+"(")
	if i < 0 {
		t.Fatalf("no entry %s", entry)
	}
	body := module[i:]
	if j := strings.Index(body[1:], ".entry "); j >= 0 {
		body = body[:j+1]
	}
	return body
}

// TestWithoutDX: with dx=base the program has neither A nor dX, and its
// other outputs are the dx=1 program's (the same reference), for less
// cost.
func TestWithoutDX(t *testing.T) {
	with := simtest.Shape(t, fam, "t=37,in=64,out=72,r=16", dtype.BF16)
	without := simtest.Shape(t, fam, "t=37,in=64,out=72,r=16,dx=base", dtype.BF16)
	var names []string
	for _, b := range fam.Buffers(without) {
		names = append(names, b.Name)
	}
	if slices.Contains(names, "a") || slices.Contains(names, "dx") || len(names) != len(fam.Buffers(with))-2 {
		t.Errorf("dx=base buffers %v", names)
	}
	p, _ := fam.Space(without).ParseRecorded("bt=64,warps=4,stages=2,osplit=1,isplit=1,rg=1,pdl=0,maxnreg=0,mma=sync,tparts=0,xload=cp,dyload=cp")
	prog, err := fam.Emit(without, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range prog.Launches {
		for _, a := range l.Args {
			if a.Buffer == "a" || a.Buffer == "dx" {
				t.Errorf("%s takes %s", l.Entry, a.Buffer)
			}
		}
	}
	if cw, co := fam.Cost(with), fam.Cost(without); co.Flops != cw.Flops-2*37*16*64 || co.Bytes != cw.Bytes-2*(16*64+37*64) {
		t.Errorf("cost %+v without dX, %+v with", co, cw)
	}
}

// TestRuntimeTokens: a program emitted at t=37 is the program emitted at
// other t, and computes t = 1, 16, 64 and 130 on the interpreter.
func TestRuntimeTokens(t *testing.T) {
	simtest.RuntimeDim(t, fam, simtest.Case{Spec: "t=37,in=64,out=136,r=16", DType: dtype.BF16}, "t", []int{1, 16, 64, 130},
		"bt=64,warps=4,stages=2,osplit=2,isplit=1", "bt=64,warps=4,stages=3,osplit=1,isplit=1")
	// streamed rows in four parts: empty parts at 1, 16 and 130 tokens
	simtest.RuntimeDim(t, fam, simtest.Case{Spec: "t=300,in=64,out=136,r=16", DType: dtype.BF16}, "t", []int{1, 16, 130},
		"bt=64,warps=4,stages=2,osplit=2,isplit=1,mma=wgmma,tparts=4")
}

// TestValidationCatchesBugs plants bugs in emission: a k16 step of each
// chunk left out of dh (16 of every 64 reduction indices, so dh, dA and
// dX are wrong), dh's lo half left out of dA (dh to 8 bits there: the
// random inputs' tolerance passes it, the exact inputs do not), and in
// the PTX every red.add turned into a store (osplit=4: dh's and dB's
// partials overwrite each other). Validation must reject each for the
// buffer it breaks first, on the exact inputs at least; with either x
// kernel (mma).
// xKernels are the x kernels over row groups the planted bugs are
// checked in (beside the cp.async dY kernel): mma.sync, wgmma, and wgmma
// fed by TMA; the bugs are also planted beside the TMA dY kernel.
var xKernels = []string{"mma=sync,xload=cp,dyload=cp", "mma=wgmma,xload=cp,dyload=cp", "mma=wgmma,xload=tma,dyload=cp"}

func TestValidationCatchesBugs(t *testing.T) {
	for _, mma := range append(xKernels, "mma=sync,xload=cp,dyload=tma", "mma=sync,xload=cp,dyload=tma,dbsplit=4") {
		t.Run(mma, func(t *testing.T) { catchesBugs(t, mma) })
	}
}

func catchesBugs(t *testing.T, mma string) {
	// out = 2048: the exact inputs' Σ_o dY·B passes 256, so dh's lo half
	// is nonzero.
	ss, emit := plantable(t, "t=130,in=64,out=2048,r=16", "bt=64,warps=4,stages=2,osplit=4,isplit=1,rg=1,pdl=0,maxnreg=0,tparts=0,"+mma)
	good := emit("")
	if err := simtest.ValidateProgram(ss, good); err != nil {
		t.Fatalf("the unbroken program: %v", err)
	}
	stored := good
	stored.PTX = strings.ReplaceAll(good.PTX, "red.global.add.v4.f32", "st.global.v4.f32")
	for _, b := range []struct {
		what   string
		prog   kernels.Program
		buffer string
	}{
		{"dropStep", emit("dropStep"), "dh"},
		{"dropLo", emit("dropLo"), "da"},
		{"red.add stored", stored, "dh"},
	} {
		if b.prog.PTX == good.PTX {
			t.Fatalf("%s: the bug was not planted", b.what)
		}
		c := simtest.CheckBothSets(t, ss, b.prog)
		exact := c.Sets[len(c.Sets)-1]
		if c.OK || exact.OK || !strings.Contains(c.Message, b.buffer) {
			t.Errorf("%s: validation says %q (exact set ok: %v), want a failure of %s", b.what, c.Message, exact.OK, b.buffer)
		}
		t.Logf("%s: %s", b.what, c.Message)
	}
}

// TestRowGroupZeroesBetweenChunks: with rg = 2 a CTA sums dA over two row
// blocks of each of its chunks in the same registers (either mma); a kernel that does
// not zero them after a chunk adds one chunk's sums into the next
// chunk's dA, which validation must reject (and the right kernel pass).
func TestRowGroupZeroesBetweenChunks(t *testing.T) {
	for _, mma := range xKernels {
		ss, emit := plantable(t, "t=300,in=192,out=256,r=16,dx=base", "bt=64,warps=4,stages=2,osplit=1,isplit=1,rg=2,pdl=0,maxnreg=0,tparts=0,"+mma)
		good, bad := emit(""), emit("keepDA")
		if err := simtest.ValidateProgram(ss, good); err != nil {
			t.Fatalf("%s: the unbroken program: %v", mma, err)
		}
		if bad.PTX == good.PTX {
			t.Fatalf("%s: the bug was not planted", mma)
		}
		if c := simtest.CheckBothSets(t, ss, bad); c.OK || !strings.Contains(c.Message, "da") {
			t.Errorf("%s: validation says %q, want a failure of da", mma, c.Message)
		}
	}
}

// TestDBSplitSumsEveryBlock: with dbsplit each dB CTA sums its chunk over
// its part's row blocks; one that skips the first block of its part
// (parts of 2 blocks) must fail dB.
func TestDBSplitSumsEveryBlock(t *testing.T) {
	ss, emit := plantable(t, "t=1000,in=64,out=136,r=16,dx=base", "bt=64,warps=4,stages=2,osplit=1,isplit=1,rg=1,pdl=1,maxnreg=0,tparts=0,mma=sync,xload=cp,dyload=tma,dbsplit=8")
	good, bad := emit(""), emit("dropBlock")
	if err := simtest.ValidateProgram(ss, good); err != nil {
		t.Fatalf("the unbroken program: %v", err)
	}
	if bad.PTX == good.PTX {
		t.Fatal("the bug was not planted")
	}
	if c := simtest.CheckBothSets(t, ss, bad); c.OK || !strings.Contains(c.Message, "db") {
		t.Errorf("validation says %q, want a failure of db", c.Message)
	} else {
		t.Log(c.Message)
	}
}

// plantable prepares an interpreter session for the bf16 shape spec and
// returns it with the emitter of params' program, a named bug planted
// (none for "").
func plantable(t *testing.T, spec, params string) (*runner.Session, func(bug string) kernels.Program) {
	t.Helper()
	s := simtest.Shape(t, fam, spec, dtype.BF16)
	ss := simtest.Session(t, fam, s, 2)
	p, err := fam.Space(s).ParseRecorded(params) // an axis added since takes its default
	if err != nil {
		t.Fatal(err)
	}
	return ss, func(bug string) kernels.Program {
		if bug != "" {
			defer lora.Plant(bug)()
		}
		prog, err := fam.Emit(s, p)
		if err != nil {
			t.Fatal(err)
		}
		return prog
	}
}

// TestExactInputs: the exact set exists at the preset's bf16 shapes and
// small f16 ones, and keeps the scale a power of two from 1 to 8.
func TestExactInputs(t *testing.T) {
	ex := fam.(kernels.Exacter)
	for _, c := range []struct {
		spec string
		dt   dtype.DType
		ok   bool
	}{
		{gateUp, dtype.BF16, true},
		{"t=2048,in=1536,out=1536,r=64", dtype.BF16, true},
		{"t=37,in=64,out=72,r=64", dtype.F16, true},
		{"t=2048,in=1536,out=8960,r=64", dtype.F16, false},
	} {
		s := simtest.Shape(t, fam, c.spec, c.dt)
		in, ok := ex.ExactInputs(s, 1)
		if ok != c.ok {
			t.Errorf("%s %v: exact set %v, want %v", c.spec, c.dt, ok, c.ok)
			continue
		}
		if sc := in["scale"]; ok && (len(sc) != 1 || sc[0] < 1 || sc[0] > 8 || math.Exp2(math.Round(math.Log2(sc[0]))) != sc[0]) {
			t.Errorf("%s: scale %v", c.spec, in["scale"])
		}
	}
}

// TestAssemble assembles a sample of the preset shapes' variants for
// sm_90 (sm_90a with wgmma): ptxas must accept them with no spill, no stack frame and no
// warning.
func TestAssemble(t *testing.T) {
	ptxas.RequireOrSkip(t)
	var jobs []ptxtest.Job
	for _, spec := range []string{gateUp, "t=2048,in=1536,out=1536,r=64"} {
		for _, dt := range fam.DTypes() {
			s := simtest.Shape(t, fam, spec, dt)
			// One in 384: every axis value at least once, about as many
			// modules as one in 32 took before mma, tparts and maxnreg
			// joined (the space grew 3 to 4 times, then 2.7 times with
			// dyload and fold, 1.4 to 1.9 times with dbsplit).
			for _, p := range sweep.Pick(fam.Space(s).Enumerate(), 384) {
				prog, err := fam.Emit(s, p)
				if err != nil {
					t.Fatal(err)
				}
				arch := "sm_90"
				if p["mma"] == "wgmma" || p["dyload"] == "tma" {
					arch = "sm_90a"
				}
				jobs = append(jobs, ptxtest.Job{What: s.Key() + " " + p.String(), Module: ptxas.Module{PTX: prog.PTX, Arch: arch}})
			}
		}
	}
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, true), 20)
}

// TestFoldTickets: with fold=1 the CTA that draws a chunk's last ticket
// rounds da32 into dA and zeroes it. A kernel whose first CTA to draw
// takes itself for the last (drawEarly) rounds a partial sum and zeroes
// it before the others add theirs; validation must reject it (dA wrong,
// or da32 not left zero), on three row groups with dh32's tickets too.
func TestFoldTickets(t *testing.T) {
	ss, emit := plantable(t, "t=300,in=192,out=256,r=16", "bt=64,warps=4,stages=2,osplit=2,isplit=2,rg=2,pdl=1,maxnreg=0,mma=wgmma,tparts=0,xload=tma,dyload=cp,fold=1")
	good, bad := emit(""), emit("drawEarly")
	if err := simtest.ValidateProgram(ss, good); err != nil {
		t.Fatalf("the unbroken program: %v", err)
	}
	if n := len(good.Launches); n != 2 {
		t.Errorf("%d launches, want 2 (no finalize)", n)
	}
	if bad.PTX == good.PTX {
		t.Fatal("the bug was not planted")
	}
	c := simtest.CheckBothSets(t, ss, bad)
	if c.OK {
		t.Errorf("drawEarly passed validation")
	}
	t.Logf("drawEarly: %s", c.Message)
}
