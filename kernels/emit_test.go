package kernels_test

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/variants"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenVariants are pinned in testdata/<name>.golden: one per family and
// dtype, with tails (n=1003, n=7, n=1), an exactly divisible model shape,
// both grid kinds and register caps. Params not named take their axis'
// first value.
var goldenVariants = []struct {
	family, dtype, shape, params string
}{
	{"relu_bwd", "f32", "m=2048,n=8960", "block=256,vec=4,ept=1,grid=once,maxnreg=0"},
	{"relu_bwd", "f16", "n=1003", "block=128,vec=2,ept=2,grid=stride,maxnreg=32"},
	{"relu_bwd", "bf16", "n=1003", "block=256,vec=8,ept=1,grid=once,maxnreg=0"},
	{"gelu_bwd", "f32", "n=1003", "block=128,vec=1,ept=2,grid=once,maxnreg=64"},
	{"gelu_bwd", "f16", "m=2048,n=1536", "block=256,vec=2,ept=1,grid=stride,maxnreg=0"},
	{"gelu_bwd", "bf16", "n=7", "block=128,vec=4,ept=1,grid=once,maxnreg=0"},
	{"silu_bwd", "f32", "n=1", "block=128,vec=4,ept=1,grid=once,maxnreg=0"},
	{"silu_bwd", "f16", "n=1003", "block=128,vec=4,ept=1,grid=once,maxnreg=0"},
	{"silu_bwd", "bf16", "m=2048,n=8960", "block=256,vec=8,ept=1,grid=stride,maxnreg=32"},
}

func emitVariant(t *testing.T, family, dt, sp, params string) (kernels.Family, variants.Shape, variants.Params, kernels.Program) {
	t.Helper()
	f, err := catalog.Lookup(family)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dtype.Parse(dt)
	if err != nil {
		t.Fatal(err)
	}
	s := shape(t, f, sp, d)
	p, err := variants.ParseParams(params)
	if err != nil {
		t.Fatal(err)
	}
	p = f.Space(s).Complete(p)
	prog, err := f.Emit(s, p)
	if err != nil {
		t.Fatalf("%s %s %s: %v", family, s.Key(), p, err)
	}
	return f, s, p, prog
}

func TestGoldenPTX(t *testing.T) {
	for _, g := range goldenVariants {
		_, s, p, prog := emitVariant(t, g.family, g.dtype, g.shape, g.params)
		name := fmt.Sprintf("%s_%s_%s.golden", g.family, g.dtype, strings.NewReplacer("=", "", ",", "_").Replace(g.shape))
		var b strings.Builder
		fmt.Fprintf(&b, "// %s %s %s\n", g.family, s.Key(), p)
		for _, l := range prog.Launches {
			fmt.Fprintf(&b, "// launch %s grid=%v gridPerSM=%d block=%v smem=%d args=%v\n", l.Entry, l.Grid, l.GridPerSM, l.Block, l.SharedBytes, l.Args)
		}
		b.WriteString(prog.PTX)
		checkGolden(t, name, b.String())
	}
}

var (
	paramRE   = regexp.MustCompile(`\.param \.u64 (\w+)`)
	predMemRE = regexp.MustCompile(`(?m)^\t@!?%p\d+ (ld|st)\.`)
)

// hasInst reports whether text has a line "\t<op> ..." containing part.
func hasInst(text, op, part string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "\t"+op) && strings.Contains(line, part) {
			return true
		}
	}
	return false
}

// access is the form of one global load or store: its qualifiers
// (".nc.cs.v4") and type.
type access struct{ quals, typ string }

// accesses lists the global accesses of the kind ("ld" or "st") in text,
// in order.
func accesses(kind, text string) []access {
	var out []access
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimPrefix(line, "\t")
		if strings.HasPrefix(line, "@%p") {
			line = line[strings.IndexByte(line, ' ')+1:]
		}
		rest, ok := strings.CutPrefix(line, kind+".global")
		if !ok {
			continue
		}
		op, _, _ := strings.Cut(rest, " ")
		dot := strings.LastIndexByte(op, '.')
		out = append(out, access{op[:dot], op[dot+1:]})
	}
	return out
}

// mainForm is the vector form of the main loop's accesses of vec elements
// of dt: ".v4" and "f32" for four f32, ".v4" and "b32" for eight halves.
func mainForm(dt dtype.DType, vec int) (v, typ string) {
	words, typ := vec, "f32"
	if dt.Size() == 2 {
		words, typ = vec/2, "b32"
	}
	if words > 1 {
		v = fmt.Sprintf(".v%d", words)
	}
	return v, typ
}

// TestEmitStructure checks the PTX and launch of the variants at the
// sweep shapes (allVariants: every axis value of each space, then a
// sample; every variant with GRADTUNE_SWEEP=ci or full) for what can be
// read off the text without running it:
// launch geometry against the shape, the runtime dim's parameter,
// directives, labels and registers, bounds checks only in the tail and
// the leftover elements, the vector width and cache qualifiers of every
// access.
func TestEmitStructure(t *testing.T) {
	fails := 0
	for _, v := range allVariants(t) {
		if fails > 30 {
			t.Fatal("too many failures")
		}
		errorf := func(format string, args ...any) {
			fails++
			t.Errorf("%v: %s", v, fmt.Sprintf(format, args...))
		}
		p, text, dt := v.params, v.prog.PTX, v.shape.DType
		block, _ := p.Int("block")
		vec, _ := p.Int("vec")
		ept, _ := p.Int("ept")
		maxnreg, _ := p.Int("maxnreg")
		stride := p["grid"] == "stride"
		n := v.shape.Elems()
		units, chunk := n/vec, block*ept
		// The runtime dim is m for [m × n], n for a flat shape; the
		// leftover elements exist when a token's elements are not whole
		// vectors.
		dim, perToken := "m", v.shape.Get("n")
		if v.shape.Get("m") == 0 {
			dim, perToken = "n", 1
		}
		leftover := 0
		if perToken%vec != 0 {
			leftover = vec - 1
		}

		// Launch.
		if len(v.prog.Launches) != 1 {
			errorf("%d launches", len(v.prog.Launches))
			continue
		}
		l, sl := v.plan.Launches[0], v.prog.Launches[0]
		grid := max(1, (units+chunk-1)/chunk)
		wantPerSM := 0
		if stride {
			wantPerSM = 2048 / block
		}
		wantGrid := grid
		if wantPerSM > 0 {
			wantGrid = min(grid, wantPerSM*132)
		}
		if l.Entry != v.family+"_"+dt.String() || l.Grid != [3]int{wantGrid, 1, 1} || l.Block != [3]int{block, 1, 1} ||
			l.SharedBytes != 0 || sl.GridPerSM != wantPerSM {
			errorf("launch %+v (%+v), want entry %s_%v grid %d gridPerSM %d block %d", l, sl, v.family, dt, wantGrid, wantPerSM, block)
		}
		if !stride && grid*chunk < units {
			errorf("grid %d × %d units per CTA does not cover %d units", grid, chunk, units)
		}
		if want := fmt.Sprintf("[{dy} {x} {dx} {u32 %s}]", dim); fmt.Sprint(sl.Args) != want {
			errorf("args %v, want %s", sl.Args, want)
		}
		if fmt.Sprint(v.prog.RuntimeDims) != "["+dim+"]" {
			errorf("runtime dims %v, want [%s]", v.prog.RuntimeDims, dim)
		}
		params := paramRE.FindAllStringSubmatch(text, -1)
		if len(params) != 3 || params[0][1] != l.Entry+"_param_dy" || params[1][1] != l.Entry+"_param_x" || params[2][1] != l.Entry+"_param_dx" {
			errorf("parameters %v do not follow the args", params)
		}
		if !strings.Contains(text, fmt.Sprintf("\t.param .u32 %s_param_%s\n)", l.Entry, dim)) ||
			!strings.Contains(text, fmt.Sprintf("\tld.param.u32 %%r1, [%s_param_%s];\n", l.Entry, dim)) {
			errorf("the runtime dim %s is not the last parameter, loaded once", dim)
		}
		// Nothing derived from the runtime dim's value is an immediate.
		for _, c := range []int{n, units} {
			if c > perToken && c > chunk && strings.Contains(text, fmt.Sprintf(", %d;", c)) {
				errorf("the count %d of this shape is an immediate", c)
			}
		}

		// Directives and target.
		if !strings.Contains(text, ".visible .entry "+l.Entry+"(") || strings.Count(text, ".visible .entry ") != 1 {
			errorf("entry %s not defined once", l.Entry)
		}
		if !strings.Contains(text, fmt.Sprintf("\n.reqntid %d\n", block)) {
			errorf("no .reqntid %d", block)
		}
		if has := strings.Contains(text, fmt.Sprintf("\n.maxnreg %d\n", maxnreg)); has != (maxnreg > 0) || (maxnreg == 0 && strings.Contains(text, ".maxnreg")) {
			errorf(".maxnreg directive does not match maxnreg=%d", maxnreg)
		}
		if !strings.Contains(text, "\n.target sm_80\n") || strings.Contains(text, "cvt.f32.bf16") {
			errorf("not an sm_80 kernel (bf16 widening must be a shift)")
		}
		_, loops, problems := ptxtest.Labels(text)
		if len(problems) > 0 {
			errorf("labels: %v", problems)
		}
		if _, problems := ptxtest.Regs(text); len(problems) > 0 {
			errorf("registers: %v", problems)
		}
		if (loops == 1) != stride || loops > 1 {
			errorf("%d loops for grid=%s", loops, p["grid"])
		}

		// Bounds checks: the full iterations are unguarded; the tail (a
		// thread's last ept units, with ept > 1) guards its units past the
		// first, the leftover elements each element.
		tailUnits := 0
		if ept > 1 {
			tailUnits = ept
		}
		if preds, want := predMemRE.FindAllString(text, -1), 3*(max(tailUnits-1, 0)+leftover); len(preds) != want {
			errorf("%d predicated accesses, want %d (2 loads and a store per guarded unit or leftover element)", len(preds), want)
		}

		// Leftover elements.
		comment := fmt.Sprintf("\t// up to %d leftover elements, done by thread 0 of CTA 0\n", vec-1)
		if leftover > 0 != strings.Contains(text, comment) || strings.Count(text, "leftover") > 1 {
			errorf("leftover comment for %d elements per token and vec=%d missing or misplaced", perToken, vec)
		}

		// Accesses: 2·ept vector loads and ept vector stores in the full
		// iterations, as many in the tail, then 2 scalar loads and 1 store
		// per leftover element.
		lds, sts := accesses("ld", text), accesses("st", text)
		mainUnits := ept + tailUnits
		if len(lds) != 2*mainUnits+2*leftover || len(sts) != mainUnits+leftover {
			errorf("%d loads and %d stores, want %d and %d", len(lds), len(sts), 2*mainUnits+2*leftover, mainUnits+leftover)
			continue
		}
		wantLd, wantSt := ".nc", ""
		switch p["cache"] {
		case "", "default":
		case "stream":
			wantLd, wantSt = ".nc.cs", ".cs"
		default:
			errorf("cache=%s: this test does not know its qualifiers", p["cache"])
		}
		vq, vt := mainForm(dt, vec)
		st := "f32"
		if dt.Size() == 2 {
			st = "b16"
		}
		for i, a := range lds {
			want := access{wantLd + vq, vt}
			if i >= 2*mainUnits {
				want = access{wantLd, st}
			}
			if a != want {
				errorf("load %d is ld.global%s.%s, want ld.global%s.%s", i, a.quals, a.typ, want.quals, want.typ)
			}
		}
		for i, a := range sts {
			want := access{wantSt + vq, vt}
			if i >= mainUnits {
				want = access{wantSt, st}
			}
			if a != want {
				errorf("store %d is st.global%s.%s, want st.global%s.%s", i, a.quals, a.typ, want.quals, want.typ)
			}
		}
	}
}

// TestEmitSpotChecks pins forms the task description names.
func TestEmitSpotChecks(t *testing.T) {
	cases := []struct {
		family, dt, shape, params string
		has, hasNot               []string
	}{
		{"relu_bwd", "f32", "m=2048,n=8960", "block=256,vec=4,ept=2,grid=once,maxnreg=0",
			[]string{"\tld.global.nc.v4.f32 {%f", "\tst.global.v4.f32 [", "\t@%p11 ld.global.nc.v4.f32", "\tmul.lo.u32 %r2, %r1, 8960;"}, []string{"leftover"}},
		{"relu_bwd", "bf16", "m=2048,n=8960", "block=128,vec=8,ept=1,grid=stride,maxnreg=0",
			[]string{"\tld.global.nc.v4.b32 {%r", "\tst.global.v4.b32 [", "cvt.rn.bf16x2.f32"}, []string{"@%p1 ld", "cvt.f32.bf16", "@%p"}},
		{"silu_bwd", "f32", "n=1003", "block=128,vec=4,ept=1,grid=once,maxnreg=0",
			[]string{"\t// up to 3 leftover elements, done by thread 0 of CTA 0\n", "\t@%p3 ld.global.nc.f32", "ex2.approx.f32", "rcp.rn.f32"}, []string{"@%p1 ld.global.nc.v4.f32"}},
		{"gelu_bwd", "f16", "n=1003", "block=128,vec=2,ept=1,grid=once,maxnreg=0",
			[]string{"\t// up to 1 leftover elements", "\t@%p3 ld.global.nc.b16 %h", "\tcvt.rn.f16.f32 %h", "cvt.rn.f16x2.f32", "cvt.f32.f16"}, []string{"tanh.approx"}},
		{"gelu_bwd", "bf16", "n=1", "block=128,vec=2,ept=1,grid=stride,maxnreg=0",
			[]string{"\t// up to 1 leftover elements", "\tcvt.rn.bf16.f32 %h", "shl.b32", "$L_loop", "\tld.global.nc.b32 %r"}, nil},
	}
	for _, c := range cases {
		_, _, _, prog := emitVariant(t, c.family, c.dt, c.shape, c.params)
		for _, s := range c.has {
			if !strings.Contains(prog.PTX, s) {
				t.Errorf("%s %s %s %s: PTX lacks %q", c.family, c.dt, c.shape, c.params, s)
			}
		}
		for _, s := range c.hasNot {
			if strings.Contains(prog.PTX, s) {
				t.Errorf("%s %s %s %s: PTX has %q", c.family, c.dt, c.shape, c.params, s)
			}
		}
	}
}
