package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

func TestCheck(t *testing.T) {
	code, out, errs := runTune(t, "check", "--kernel", "relu_bwd,silu_bwd", "--shapes", "m=3,n=77", "--dtype", "f32,bf16", "--sample", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{"kernel", "max abs err", "relu_bwd", "silu_bwd", "3×77", "bf16",
		"8 variants on the interpreter: 8 ok, 0 invalid, 0 errors, 0 compile errors (correctness only: nothing was timed)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// --params fixes axes: every row has vec=4.
	code, out, errs = runTune(t, "check", "--kernel", "gelu_bwd", "--shapes", "n=1001", "--dtype", "f32", "--params", "vec=4", "--sample", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "gelu_bwd") {
			rows++
			if !strings.Contains(l, "vec=4") {
				t.Errorf("row without vec=4: %s", l)
			}
		}
	}
	if rows < 2 {
		t.Errorf("--sample 0 gave %d rows:\n%s", rows, out)
	}
}

func TestCheckAllSkipsFamiliesWithOtherDims(t *testing.T) {
	code, out, errs := runTune(t, "check", "--kernel", "all", "--shapes", "m=2,n=33", "--dtype", "f32", "--sample", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "relu_bwd") {
		t.Errorf("relu_bwd not checked:\n%s", out)
	}
	for _, f := range catalog.All() {
		if _, err := f.Shape(mustSpec(t, "m=2,n=33"), f.DTypes()[0]); err != nil && !strings.Contains(errs, "skipping "+f.Name()) {
			t.Errorf("%s does not take m,n but is not reported as skipped: %s", f.Name(), errs)
		}
	}
}

func TestCheckUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"check", "--shapes", "n=4"}, "check needs --kernel"},
		{[]string{"check", "--kernel", "relu_bwd"}, "check needs --shapes"},
		{[]string{"check", "--kernel", "relu_bwd", "--shapes", "n=4", "--mode", "hot"}, "never times: --mode does not apply"},
		{[]string{"check", "--kernel", "relu_bwd", "--shapes", "n=4", "--db=x.db"}, "--db does not apply"},
		{[]string{"check", "--kernel", "relu_bwd", "--shapes", "n=4", "--sample", "-1"}, "--sample must be 0"},
		{[]string{"check", "--kernel", "relu_bwd", "--shapes", "n=4", "--params", "vec=3"}, "vec=3 not accepted"},
		{[]string{"check", "--kernel", "nope", "--shapes", "n=4"}, `unknown kernel "nope"`},
		{[]string{"crosscheck", "--cases", "5"}, "crosscheck needs --out"},
		{[]string{"crosscheck", "--out", "x.jsonl", "--cases", "0"}, "--cases must be positive"},
		{[]string{"crosscheck", "--out", "x.jsonl", "--kernel", "nope"}, `unknown kernel "nope"`},
	}
	for _, c := range cases {
		code, out, errs := runTune(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
		if out != "" {
			t.Errorf("%v: wrote to stdout on a usage error: %q", c.args, out)
		}
	}
}

func TestCrosscheckWithoutGPU(t *testing.T) {
	if _, err := cuda.Open(); err == nil {
		t.Skip("an NVIDIA driver is present; this test is for machines without one")
	}
	out := filepath.Join(t.TempDir(), "x.jsonl")
	code, _, errs := runTune(t, "crosscheck", "--kernel", "relu_bwd", "--cases", "3", "--out", out)
	if code != 1 || !strings.Contains(errs, "libcuda.so.1") {
		t.Fatalf("exit %d, stderr %q; want 1 naming the driver", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written without a GPU", out)
	}
}

func TestCrossCases(t *testing.T) {
	fams := catalog.All()
	cs := crossCases(fams, nil, 240, 1)
	if len(cs) < 240 {
		t.Fatalf("%d cases for 240", len(cs))
	}
	per := map[string]int{}
	seen := map[string]bool{}
	for _, c := range cs {
		per[c.f.Name()]++
		key := c.f.Name() + c.s.Key() + c.p.String()
		if seen[key] {
			t.Errorf("case twice: %s", key)
		}
		seen[key] = true
		if c.emitErr != nil {
			t.Errorf("%s %s %s: %v", c.f.Name(), c.s.Key(), c.p, c.emitErr)
		}
	}
	for _, f := range fams {
		if per[f.Name()] == 0 {
			t.Errorf("no case of %s", f.Name())
		}
	}
	again := crossCases(fams, nil, 240, 1)
	for i := range cs {
		if cs[i].p.String() != again[i].p.String() || cs[i].s.Key() != again[i].s.Key() {
			t.Fatal("case selection is not deterministic")
		}
	}
}

func TestInexactReason(t *testing.T) {
	cases := map[string]string{
		"\tadd.rn.f32 %f1, %f2, %f3;\n":                                "",
		"\tex2.approx.f32 %f1, %f2;\n":                                 "approximate instructions",
		"\tred.global.add.f32 [%rd1], %f1;\n":                          "float atomics (order)",
		"\tatom.global.add.noftz.f16 %h1, [%rd1], %h2;\n":              "float atomics (order)",
		"\tred.global.add.u32 [%rd1], %r1;\n":                          "",
		"\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {...};\n": "tensor-core sums",
	}
	for ptx, want := range cases {
		if got := inexactReason(ptx); got != want {
			t.Errorf("inexactReason(%q) = %q, want %q", ptx, got, want)
		}
	}
}

func TestVerdict(t *testing.T) {
	f, err := catalog.Lookup("relu_bwd")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Shape(mustSpec(t, "n=3"), f.DTypes()[0])
	if err != nil {
		t.Fatal(err)
	}
	side := func(v ...float64) sideResult {
		return sideResult{check: runner.Check{OK: true}, outs: map[string][]float64{"dx": v}}
	}
	nan := math.NaN()
	cases := []struct {
		name     string
		inexact  string
		gpu, sim sideResult
		want     string
	}{
		{"identical with NaN", "", side(1, nan, 3), side(1, nan, 3), vIdentical},
		{"exact but one ulp off", "", side(1, 2, 3), side(1, 2, math.Nextafter(3, 4)), vDiffers},
		{"approx, one ulp off", "approximate instructions", side(1, 2, 3), side(1, 2, math.Nextafter(3, 4)), vWithin},
		{"far off", "approximate instructions", side(1, 2, 3), side(1, 2, 4), vOutside},
		{"validation disagrees", "approximate instructions", side(1, 2, 3), sideResult{check: runner.Check{}, outs: map[string][]float64{"dx": {1, 2, 3}}}, vDisagree},
	}
	for _, c := range cases {
		x := &xcase{f: f, s: s, inexact: c.inexact, gpu: c.gpu, sim: c.sim}
		if got, _ := verdict(x); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func mustSpec(t *testing.T, s string) variants.Spec {
	t.Helper()
	sp, err := variants.ParseSpecs(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp[0]
}

// TestCrosscheckPipeline runs crosscheck with the interpreter standing in
// for the GPU: every case and probe must come out identical, and the JSON
// lines must describe them.
func TestCrosscheckPipeline(t *testing.T) {
	old := openGPU
	defer func() { openGPU = old }()
	openGPU = func(int) (runner.Backend, func(), error) { return sim.New(sim.Options{}), func() {}, nil }
	out := filepath.Join(t.TempDir(), "x.jsonl")
	code, stdout, errs := runTune(t, "crosscheck", "--kernel", "relu_bwd,gelu_bwd", "--cases", "12", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, stdout)
	}
	for _, want := range []string{"crosscheck: 12 cases of 2 families", "gelu_bwd", "all", "probes:", "mma_f16", "cp_async_2stage"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	probes, _ := sim.Probes()
	if len(lines) != 12+len(probes) {
		t.Fatalf("%d JSON lines, want %d", len(lines), 12+len(probes))
	}
	for _, l := range lines {
		var r caseRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r.Verdict != vIdentical || (r.Kind == "case" && (!r.GPU.Valid || !r.Sim.Valid || len(r.Buffers) == 0)) {
			t.Errorf("not identical and valid: %s", l)
		}
		if r.Kind == "case" && r.Kernel == "gelu_bwd" && r.Exact {
			t.Errorf("gelu_bwd (ex2.approx) marked exactly rounded: %s", l)
		}
	}
}
