package xent_test

import (
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
	"github.com/gradtune/gradtune/kernels/xent"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

var fam = xent.Families()[0]

// modelSpec is qwen1.5b's logits at 2048 tokens.
const modelSpec = "t=2048,v=151936"

// TestShapesAndSpace: the preset's shape, the model shape's space (every
// point emits two launches over t·split CTAs and a partials buffer of
// t·split·4 f32) and the shape limits.
// heldBytes is a one-pass CTA's share of a row: ⌈v/vec/split⌉ vectors.
func heldBytes(s variants.Shape, p variants.Params) int {
	vec, _ := p.Int("vec")
	split, _ := p.Int("split")
	return (s.Get("v")/vec + split - 1) / split * vec * s.DType.Size()
}

func TestShapesAndSpace(t *testing.T) {
	p, err := variants.LookupPreset("qwen1.5b", 2048)
	if err != nil {
		t.Fatal(err)
	}
	if got := fam.Shapes(p, fam.DTypes()); len(got) != 3 || got[0].Key() != modelSpec+",dtype=f32" {
		t.Fatalf("Shapes = %v", got)
	}
	for _, dt := range fam.DTypes() {
		s := simtest.Shape(t, fam, modelSpec, dt)
		pts := fam.Space(s).Enumerate()
		t.Logf("%s: %d points", s.Key(), len(pts))
		if len(pts) < 100 {
			t.Errorf("%s: %d points", s.Key(), len(pts))
		}
		for _, pt := range sweep.Pick(pts, 8) {
			prog, err := fam.Emit(s, pt)
			if err != nil {
				t.Fatalf("%s %s: %v", s.Key(), pt, err)
			}
			plan, err := kernels.PlanAt(fam, s, prog, 132)
			if err != nil {
				t.Fatal(err)
			}
			split, _ := pt.Int("split")
			grid := [3]int{2048 * split, 1, 1}
			switch last := plan.Launches[len(plan.Launches)-1]; {
			case !slices.Equal(prog.RuntimeDims, []string{"t"}) || last.Grid != grid:
				t.Errorf("%s %s: launches %+v, runtime %v", s.Key(), pt, plan.Launches, prog.RuntimeDims)
			case pt["pass"] == "two" && (len(plan.Launches) != 2 || len(prog.Buffers) != 1 || kernels.Elems(prog.Buffers[0], s) != 2048*split*4):
				t.Errorf("%s %s: two passes: launches %+v, buffers %v", s.Key(), pt, plan.Launches, prog.Buffers)
			case pt["pass"] == "one" && (len(plan.Launches) != 1 || len(prog.Buffers) != 0 || last.SharedBytes != heldBytes(s, pt)):
				t.Errorf("%s %s: one pass: launches %+v, buffers %v", s.Key(), pt, plan.Launches, prog.Buffers)
			}
		}
	}
	s := simtest.Shape(t, fam, modelSpec, dtype.BF16)
	if c := fam.Cost(s); c.Bytes != 2*2048*151936*2+12*2048 {
		t.Errorf("Cost = %+v", c)
	}
	for _, bad := range []string{"t=1,v=16777217", "t=1,v=8,smooth=1", "t=200000000,v=8", "t=1,v=8,labels=i16", "t=1,v=8,zloss=2", "t=1,v=8,labels=1", "t=1,v=8,inplace=2"} {
		sp, _ := variants.ParseSpecs(bad)
		if _, err := fam.Shape(sp[0], dtype.F32); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestOptionDims: labels (i32 or i64) and zloss (0 or 1) parse, their
// defaults leave the key; labels=i64 widens the labels buffer and the
// cost, zloss=1 adds the input zloss_scale and nothing to the cost.
func TestOptionDims(t *testing.T) {
	for _, c := range []struct{ spec, key, labels string }{
		{"t=4,v=8", "t=4,v=8", "i32"},
		{"t=4,v=8,labels=i32,zloss=0", "t=4,v=8", "i32"},
		{"t=4,v=8,labels=i64", "t=4,v=8,labels=i64", "i64"},
		{"t=4,v=8,smooth=0.1,zloss=1", "t=4,v=8,smooth=0.1,zloss=1", "i32"},
		{"t=4,v=8,zloss=1,labels=i64", "t=4,v=8,labels=i64,zloss=1", "i64"},
	} {
		s := simtest.Shape(t, fam, c.spec, dtype.F16)
		var names []string
		for _, b := range fam.Buffers(s) {
			names = append(names, b.Name)
			if b.Name == "labels" && b.DType.String() != c.labels {
				t.Errorf("%s: labels %v, want %s", c.spec, b.DType, c.labels)
			}
		}
		zl := strings.Contains(c.key, "zloss=1")
		if s.Key() != c.key+",dtype=f16" || slices.Contains(names, "zloss_scale") != zl {
			t.Errorf("%s: key %s, buffers %v", c.spec, s.Key(), names)
		}
		lb := int64(4)
		if c.labels == "i64" {
			lb = 8
		}
		if got := fam.Cost(s); got.Bytes != 2*32*2+(8+lb)*4 || got.Flops != 7*32 {
			t.Errorf("%s: Cost = %+v", c.spec, got)
		}
		if in := fam.Inputs(s, 1); zl && (in["zloss_scale"][0] < 0.01 || in["zloss_scale"][0] >= 0.1) {
			t.Errorf("%s: zloss_scale %v", c.spec, in["zloss_scale"])
		}
	}
}

// TestInputs: deterministic, seeded, rounded to their dtypes; labels are
// classes or ignore_index on every eighth row, n_valid counts the others.
func TestInputs(t *testing.T) {
	s := simtest.Shape(t, fam, "t=37,v=1003", dtype.BF16)
	in, again, other := fam.Inputs(s, 1), fam.Inputs(s, 1), fam.Inputs(s, 2)
	for _, b := range fam.Buffers(s) {
		if b.Role != kernels.Input {
			continue
		}
		v := in[b.Name]
		if len(v) != kernels.Elems(b, s) || !slices.Equal(v, again[b.Name]) {
			t.Errorf("input %s: %d values, or not deterministic", b.Name, len(v))
		}
		if len(v) > 1 && slices.Equal(v, other[b.Name]) {
			t.Errorf("input %s ignores the seed", b.Name)
		}
		for _, x := range v {
			if b.DType.Round(x) != x {
				t.Fatalf("input %s: %v is not a %v", b.Name, x, b.DType)
			}
		}
	}
	valid := 0
	for r, l := range in["labels"] {
		switch {
		case (r+1)%8 == 7:
			if l != xent.IgnoreIndex {
				t.Errorf("row %d: label %v, want ignore_index", r, l)
			}
		case l < 0 || l >= 1003:
			t.Errorf("row %d: label %v", r, l)
		default:
			valid++
		}
	}
	if in["n_valid"][0] != float64(valid) || in["dloss"][0] < 0.5 || in["dloss"][0] >= 2 {
		t.Errorf("n_valid %v (want %d), dloss %v", in["n_valid"], valid, in["dloss"])
	}
}

// meanLoss is dloss·Σ loss / n_valid, the loss of a trainer's objective,
// from logits z by the reference.
func meanLoss(s variants.Shape, in map[string][]float64, z []float64) float64 {
	c := map[string][]float64{}
	for k, v := range in {
		c[k] = v
	}
	c["logits"] = z
	var sum float64
	for _, l := range fam.Reference(s, c)["loss"] {
		sum += l
	}
	return in["dloss"][0] * sum / in["n_valid"][0]
}

// TestReferenceMatchesFiniteDifferences checks the reference's dlogits
// against central differences of its own mean loss, and its loss against
// PyTorch's formula with smoothing, (1−ε)·nll + ε·mean_c(−log p_c), plus
// PaLM's z-loss λ·lse².
func TestReferenceMatchesFiniteDifferences(t *testing.T) {
	for _, sp := range []string{"t=9,v=5", "t=8,v=17,smooth=0.1", "t=3,v=1", "t=8,v=6,smooth=0.1,zloss=1", "t=5,v=4,labels=i64,zloss=1"} {
		s := simtest.Shape(t, fam, sp, dtype.F32)
		in := fam.Inputs(s, 3)
		tt, v := s.Get("t"), s.Get("v")
		eps, lambda := 0.0, 0.0
		if strings.Contains(sp, "smooth") {
			eps = 0.1
		}
		if strings.Contains(sp, "zloss=1") {
			lambda = in["zloss_scale"][0]
		}
		z := kernels.Uniform(dtype.F64, tt*v, -3, 3, 5, "z")
		in["logits"] = z
		out := fam.Reference(s, in)
		for r := 0; r < tt; r++ {
			lab := int(in["labels"][r])
			if lab == xent.IgnoreIndex {
				continue
			}
			lse, mean := math.Inf(-1), 0.0
			for c := 0; c < v; c++ {
				lse = math.Max(lse, z[r*v+c])
			}
			var sum float64
			for c := 0; c < v; c++ {
				sum += math.Exp(z[r*v+c] - lse)
				mean += z[r*v+c] / float64(v)
			}
			lse += math.Log(sum)
			want := (1-eps)*(lse-z[r*v+lab]) + eps*(lse-mean) + lambda*lse*lse
			if d := math.Abs(out["loss"][r] - want); d > 1e-12 || math.Abs(out["lse"][r]-lse) > 1e-12 {
				t.Errorf("%s row %d: loss %v lse %v, want %v %v", sp, r, out["loss"][r], out["lse"][r], want, lse)
			}
		}
		for i := range z {
			const h = 1e-5
			zp, zm := slices.Clone(z), slices.Clone(z)
			zp[i] += h
			zm[i] -= h
			fd := (meanLoss(s, in, zp) - meanLoss(s, in, zm)) / (2 * h)
			if d := math.Abs(out["dlogits"][i] - fd); d > 1e-8 {
				t.Errorf("%s: dlogits[%d] = %.12g, finite differences %.12g", sp, i, out["dlogits"][i], fd)
			}
		}
	}
}

// simCases are the interpreter's sampled shapes: a vocabulary of whole vectors,
// an odd one (vec=1) with smoothing, a prime one, a row narrower than a
// 16-byte vector, and v=40 in f16 (5 vectors of 8: split=4 leaves the
// last CTA of each row empty). Each has ignored rows but t=5.
var simCases = []simtest.Case{
	{Spec: "t=9,v=1000", DType: dtype.BF16},
	{Spec: "t=17,v=1003,smooth=0.1", DType: dtype.F32},
	{Spec: "t=8,v=4099,smooth=0.25", DType: dtype.F16},
	{Spec: "t=5,v=3", DType: dtype.BF16},
	{Spec: "t=10,v=40", DType: dtype.F16},
}

// TestVariantsOnInterpreter validates a sample of each case's variants
// on the interpreter (every output within tolerance, no access out of
// bounds, no shared-memory race), and the points that matter by name:
// empty CTAs, the largest split, the smallest vectors, reverse, and
// rows of the model's vocabulary.
func TestVariantsOnInterpreter(t *testing.T) {
	simtest.Sample(t, fam, simCases, 8, func(variants.Params) bool { return true })
	simtest.RunNamed(t, fam, []simtest.Point{
		{Case: simCases[4], Params: "vec=8,block=128,vpt=1,split=4,reverse=1,pass=two,copy=ld,regs=free"},
		{Case: simCases[4], Params: "vec=8,block=128,vpt=4,split=4,reverse=0,pass=two,copy=ld,regs=free"},
		{Case: simCases[1], Params: "vec=1,block=128,vpt=2,split=16,reverse=1,pass=two,copy=ld,regs=free"},
		{Case: simCases[2], Params: "vec=1,block=128,vpt=4,split=16,reverse=0,pass=two,copy=ld,regs=free"},
		{Case: simCases[3], Params: "vec=1,block=128,vpt=1,split=2,reverse=0,pass=two,copy=ld,regs=free"},
		{Case: simCases[0], Params: "vec=4,block=128,vpt=1,split=1,reverse=1,pass=two,copy=ld,regs=free"},
		// Two rows of the model's vocabulary, on the longest chain of
		// sums the space has there (297 iterations per thread).
		{Case: simtest.Case{Spec: "t=2,v=151936", DType: dtype.BF16}, Params: "vec=4,block=128,vpt=1,split=1,reverse=0,pass=two,copy=ld,regs=free"},
		{Case: simtest.Case{Spec: "t=2,v=151936,smooth=0.1,zloss=1", DType: dtype.F32}, Params: "vec=4,block=1024,vpt=4,split=16,reverse=1,pass=two,copy=ld,regs=free"},
		// The options alone and combined: i64 labels (row 6 ignored),
		// z-loss with smoothing, both with smoothing over empty CTAs.
		{Case: simtest.Case{Spec: "t=9,v=1000,labels=i64", DType: dtype.BF16}, Params: "vec=8,block=128,vpt=1,split=2,reverse=1,pass=two,copy=ld,regs=free"},
		{Case: simtest.Case{Spec: "t=17,v=1003,smooth=0.1,zloss=1", DType: dtype.F32}, Params: "vec=1,block=128,vpt=2,split=4,reverse=0,pass=two,copy=ld,regs=free"},
		{Case: simtest.Case{Spec: "t=10,v=40,smooth=0.05,labels=i64,zloss=1", DType: dtype.F16}, Params: "vec=8,block=128,vpt=1,split=4,reverse=1,pass=two,copy=ld,regs=free"},
		// one pass: a CTA a row, and clusters of 2, 4 and 8 with tails,
		// smoothing, i64 labels and z-loss
		{Case: simCases[4], Params: "vec=8,block=128,vpt=2,split=1,reverse=0,pass=one,copy=ld,regs=free"},
		{Case: simCases[4], Params: "vec=4,block=128,vpt=1,split=2,reverse=0,pass=one,copy=ld,regs=free"},
		{Case: simCases[1], Params: "vec=1,block=128,vpt=4,split=8,reverse=0,pass=one,copy=ld,regs=smem"},
		{Case: simtest.Case{Spec: "t=17,v=1003,smooth=0.1,zloss=1", DType: dtype.F32}, Params: "vec=1,block=128,vpt=2,split=4,reverse=0,pass=one,copy=ld,regs=smem"},
		{Case: simtest.Case{Spec: "t=10,v=40,smooth=0.05,labels=i64,zloss=1", DType: dtype.F16}, Params: "vec=8,block=128,vpt=1,split=4,reverse=0,pass=one,copy=ld,regs=smem"},
		// one pass by bulk copies: a CTA a row; parts with tails, an
		// empty part (v=40 is 5 vectors over 4 CTAs: parts of 2, 2, 1, 0)
		// and the options; f32's 16 bytes are 4 values
		{Case: simCases[0], Params: "vec=8,block=128,vpt=1,split=1,reverse=0,pass=one,copy=in,regs=smem"},
		{Case: simCases[0], Params: "vec=8,block=128,vpt=2,split=2,reverse=0,pass=one,copy=inout,regs=smem"},
		{Case: simCases[4], Params: "vec=8,block=128,vpt=1,split=4,reverse=0,pass=one,copy=inout,regs=smem"},
		{Case: simtest.Case{Spec: "t=10,v=40,smooth=0.05,labels=i64,zloss=1", DType: dtype.F16}, Params: "vec=8,block=128,vpt=1,split=4,reverse=0,pass=one,copy=in,regs=smem"},
		{Case: simtest.Case{Spec: "t=6,v=1004,smooth=0.1,zloss=1", DType: dtype.F32}, Params: "vec=4,block=128,vpt=4,split=8,reverse=0,pass=one,copy=inout,regs=smem"},
		{Case: simtest.Case{Spec: "t=2,v=151936", DType: dtype.BF16}, Params: "vec=8,block=256,vpt=2,split=8,reverse=0,pass=one,copy=inout,regs=smem"},
		// streamed bulk copies: parts of 1025 and 1024 vectors (steps of
		// 128: a remainder of one vector, and none), 513 and 512 with the
		// options, the model shape
		{Case: simtest.Case{Spec: "t=3,v=16392", DType: dtype.BF16}, Params: "vec=8,block=128,vpt=1,split=2,reverse=0,pass=one,copy=stream,regs=smem"},
		{Case: simtest.Case{Spec: "t=6,v=4100,smooth=0.1,labels=i64,zloss=1", DType: dtype.F32}, Params: "vec=4,block=128,vpt=1,split=2,reverse=0,pass=one,copy=stream,regs=free"},
		{Case: simtest.Case{Spec: "t=2,v=151936", DType: dtype.BF16}, Params: "vec=8,block=256,vpt=2,split=8,reverse=0,pass=one,copy=stream,regs=smem"},
	})
}

// TestRuntimeTokens: a program emitted at t=9 is the program emitted at
// other t, and computes t = 1, 4, 8 and 33 on the interpreter; so does
// one with i64 labels and z-loss at t = 1 and 8.
func TestRuntimeTokens(t *testing.T) {
	simtest.RuntimeDim(t, fam, simtest.Case{Spec: "t=9,v=1000,smooth=0.05", DType: dtype.BF16}, "t", []int{1, 4, 8, 33},
		"vec=8,block=128,vpt=2,split=4,reverse=1,pass=two,copy=ld,regs=free", "vec=4,block=128,vpt=1,split=1,reverse=0,pass=two,copy=ld,regs=free")
	simtest.RuntimeDim(t, fam, simtest.Case{Spec: "t=9,v=1000,labels=i64,zloss=1", DType: dtype.BF16}, "t", []int{1, 8},
		"vec=8,block=128,vpt=1,split=2,reverse=0,pass=two,copy=ld,regs=free")
}

// validBase is the session of bf16 shape spec on the interpreter and
// the program of vec=8,block=128,vpt=1,split=2,reverse=0 there, which
// bug tests break: it must validate unbroken first.
func validBase(t *testing.T, spec string) (*runner.Session, kernels.Program) {
	t.Helper()
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	s := simtest.Shape(t, fam, spec, dtype.BF16)
	if err := ss.Prepare(fam, s, 1); err != nil {
		t.Fatal(err)
	}
	p, _ := variants.ParseParams("vec=8,block=128,vpt=1,split=2,reverse=0,pass=two,copy=ld,regs=free")
	prog, err := fam.Emit(s, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := simtest.ValidateProgram(ss, prog); err != nil {
		t.Fatalf("%s: the unbroken program: %v", spec, err)
	}
	return ss, prog
}

// TestValidationCatchesBugs plants bugs in a valid program's PTX: the
// label's −(1−ε) term dropped from the gradient (its fma's immediate,
// the last of the two, zeroed), and ignore_index misread (its compare
// against −100 made one against −101). Validation must reject both, for
// the buffers they break.
func TestValidationCatchesBugs(t *testing.T) {
	ss, prog := validBase(t, "t=9,v=1000")
	defer ss.Release()
	const minusOne = ", 0fBF800000, "
	last := strings.LastIndex(prog.PTX, minusOne)
	bugs := []struct{ what, ptx, buffer string }{
		{"no label term", prog.PTX[:last] + ", 0f00000000, " + prog.PTX[last+len(minusOne):], "dlogits"},
		{"ignore_index misread", strings.Replace(prog.PTX, ", 4294967196;", ", 4294967195;", 1), "dlogits"},
	}
	for _, b := range bugs {
		if b.ptx == prog.PTX || strings.Count(prog.PTX, minusOne) != 2 {
			t.Fatalf("%s: the bug was not planted", b.what)
		}
		bad := prog
		bad.PTX = b.ptx
		err := simtest.ValidateProgram(ss, bad)
		if err == nil || !strings.Contains(err.Error(), b.buffer) {
			t.Errorf("%s: validation says %v, want a failure of %s", b.what, err, b.buffer)
		}
	}
}

// TestValidationCatchesOptionBugs plants a bug of each option in a valid
// program's PTX: z-loss's 2λ taken as λ (its add λ + λ made a mov), and
// i64 labels read 4 bytes apart (the label offsets' multiplier 8 made
// 4, in both kernels). Validation must reject both in dlogits.
func TestValidationCatchesOptionBugs(t *testing.T) {
	double := regexp.MustCompile(`add\.rn\.f32 (%f\d+), (%f\d+), (%f\d+);`)
	stride := regexp.MustCompile(`mul\.wide\.u32 (%rd\d+), (%r\d+), 8;`)
	for _, c := range []struct {
		what, spec string
		sites      int
		plant      func(string) (string, int)
	}{
		{"z-loss's λ for 2λ", "t=9,v=1000,smooth=0.1,zloss=1", 1, func(ptx string) (string, int) {
			n := 0
			return double.ReplaceAllStringFunc(ptx, func(m string) string {
				if g := double.FindStringSubmatch(m); g[2] == g[3] {
					n++
					return "mov.f32 " + g[1] + ", " + g[2] + ";"
				}
				return m
			}), n
		}},
		{"i64 labels 4 bytes apart", "t=9,v=1000,labels=i64", 2, func(ptx string) (string, int) {
			return stride.ReplaceAllString(ptx, "mul.wide.u32 $1, $2, 4;"), len(stride.FindAllString(ptx, -1))
		}},
	} {
		ss, prog := validBase(t, c.spec)
		bad := prog
		var n int
		if bad.PTX, n = c.plant(prog.PTX); n != c.sites {
			t.Fatalf("%s: planted %d times", c.what, n)
		}
		if err := simtest.ValidateProgram(ss, bad); err == nil || !strings.Contains(err.Error(), "dlogits") {
			t.Errorf("%s: validation says %v, want a failure of dlogits", c.what, err)
		}
		ss.Release()
	}
}

// TestAssemble assembles a sample of the model shape's variants in each
// dtype, without and with smoothing, i64 labels and z-loss, for sm_80
// and sm_90: ptxas must accept them with no spill, no stack frame and no
// warning.
func TestAssemble(t *testing.T) {
	ptxas.RequireOrSkip(t)
	var jobs []ptxtest.Job
	for i, dt := range append(fam.DTypes(), fam.DTypes()...) {
		spec, n := modelSpec, 40
		if i >= len(fam.DTypes()) {
			spec, n = modelSpec+",smooth=0.1,labels=i64,zloss=1", 40
		}
		s := simtest.Shape(t, fam, spec, dt)
		for _, p := range sweep.Pick(fam.Space(s).Enumerate(), n) {
			prog, err := fam.Emit(s, p)
			if err != nil {
				t.Fatal(err)
			}
			archs := []string{"sm_80", "sm_90"}
			if p["pass"] == "one" {
				archs = archs[1:] // clusters: sm_90
			}
			for _, arch := range archs {
				jobs = append(jobs, ptxtest.Job{What: s.Key() + " " + p.String(), Module: ptxas.Module{PTX: prog.PTX, Arch: arch}, SpillAllowed: smallSpillAtLimit})
			}
		}
	}
	ptxtest.ReportSorted(t, ptxtest.Assemble(t, jobs, true), 20)
}

// smallSpillBytes is the spill TestAssemble allows a kernel: at block=1024
// (64 registers a thread, the hardware's limit) the heaviest gradient
// variants (16 values held, smoothing, z-loss and i64 labels in 16-bit
// dtypes) spill a word or two, which the runner's local-memory prescreen
// lets be measured.
const smallSpillBytes = 16

// smallSpillAtLimit allows such a spill.
func smallSpillAtLimit(r ptxas.Report) bool {
	return r.Registers == 64 && r.SpillStores <= smallSpillBytes
}

// TestOnePassPlants: the one-pass kernel without the row's barrier
// between publishing the CTAs' statistics and merging them reads
// statistics not yet written, and with bulk copies one that reads its
// part before the copy has completed, or bulk-stores a gradient its
// threads wrote without a proxy fence, breaks the interpreter's
// async-proxy rules; a label element left with the loop's off-label term
// (its fix-up skipped, in either pass) is wrong by g·(1−ε): validation
// rejects each, and passes the same variant without the bug.
func TestOnePassPlants(t *testing.T) {
	for _, c := range []struct {
		spec, params string
		bugs         []string
	}{
		{"t=9,v=1000", "vec=4,block=128,vpt=1,split=2,reverse=0,pass=one,copy=ld,regs=smem", []string{"unsynced", "nolabel"}},
		{"t=5,v=1000", "vec=8,block=128,vpt=1,split=2,reverse=0,pass=one,copy=inout,regs=smem", []string{"nowait", "nofence", "nolabel"}},
		{"t=3,v=16392", "vec=8,block=128,vpt=1,split=2,reverse=0,pass=one,copy=stream,regs=smem", []string{"nowait", "prevstep", "nolabel"}},
		{"t=9,v=1000", "vec=4,block=128,vpt=2,split=4,reverse=1,pass=two,copy=ld,regs=free", []string{"nolabel"}},
	} {
		s := simtest.Shape(t, fam, c.spec, dtype.BF16)
		p, err := variants.ParseParams(c.params)
		if err != nil {
			t.Fatal(err)
		}
		ss := simtest.Session(t, fam, s, 2)
		good, err := fam.Emit(s, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := simtest.ValidateProgram(ss, good); err != nil {
			t.Fatalf("%s without a bug: %v", c.params, err)
		}
		for _, bug := range c.bugs {
			bad, err := xent.EmitPlanted(s, p, bug)
			if err != nil {
				t.Fatal(err)
			}
			err = simtest.ValidateProgram(ss, bad)
			t.Logf("%s: %v", bug, err)
			if err == nil {
				t.Errorf("%s: the one-pass kernel passed validation", bug)
			}
		}
	}
}

// TestRegsBySharedMemory: regs=smem caps the one-pass kernel's registers
// so that as many CTAs share an SM as their parts' shared memory allows
// (the model shape's 256-thread CTAs hold 37,984 bytes each, five a SM:
// 48 registers; 512-thread ones at split 4 hold 75,968, three a SM: 40),
// never below what its held values need (vpt=2: 40; vpt=4: 64);
// regs=free leaves one CTA the register file; pass=two refuses smem; the
// rules' count of a CTA's shared memory is what the kernel declares.
func TestRegsBySharedMemory(t *testing.T) {
	s := simtest.Shape(t, fam, modelSpec, dtype.BF16)
	maxnreg := regexp.MustCompile(`\.maxnreg (\d+)`)
	for _, c := range []struct{ params, want string }{
		{"vec=8,block=256,vpt=2,split=8,reverse=0,pass=one,copy=ld,regs=smem", "48"},
		{"vec=8,block=256,vpt=2,split=8,reverse=0,pass=one,copy=ld,regs=free", "255"},
		{"vec=8,block=256,vpt=4,split=8,reverse=0,pass=one,copy=ld,regs=smem", "64"},
		{"vec=8,block=512,vpt=2,split=4,reverse=0,pass=one,copy=inout,regs=smem", "40"},
	} {
		p, err := variants.ParseParams(c.params)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := fam.Emit(s, p)
		if err != nil {
			t.Fatalf("%s: %v", c.params, err)
		}
		if m := maxnreg.FindStringSubmatch(prog.PTX); m == nil || m[1] != c.want {
			t.Errorf("%s: .maxnreg %v, want %s", c.params, m, c.want)
		}
	}
	p, _ := variants.ParseParams("vec=8,block=256,vpt=2,split=8,reverse=0,pass=two,copy=ld,regs=smem")
	if _, err := fam.Emit(s, p); err == nil || !strings.Contains(err.Error(), "regs=smem") {
		t.Errorf("pass=two, regs=smem: %v", err)
	}
	for _, dt := range fam.DTypes() {
		s := simtest.Shape(t, fam, modelSpec, dt)
		for _, p := range sweep.Pick(fam.Space(s).Enumerate(), 40) {
			if p["pass"] != "one" {
				continue
			}
			counted, emitted, err := xent.OnePassShared(s, p)
			if err != nil || counted != emitted {
				t.Errorf("%v %s: shared memory counted %d, emitted %d (%v)", dt, p, counted, emitted, err)
			}
		}
	}
}
