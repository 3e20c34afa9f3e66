package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/crosscheck"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// TestHelp: every way to ask for help prints on stdout and exits 0; a
// command's help shows its flags.
func TestHelp(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"tune tunes GPU backward kernels", "tune check", "--db FILE"}},
		{[]string{"-h"}, []string{"tune tunes GPU backward kernels"}},
		{[]string{"help"}, []string{"tune crosscheck --out FILE"}},
		{[]string{"help", "emit"}, []string{"usage: tune emit", "Flags of tune emit:", "--params P", "--dtype D[,D...]", "--tokens N"}},
		{[]string{"emit", "--help"}, []string{"usage: tune emit", "--params P"}},
		{[]string{"help", "check"}, []string{"usage: tune check", "--sample N", "variants per shape"}},
		{[]string{"check", "-h"}, []string{"usage: tune check"}},
		{[]string{"help", "crosscheck"}, []string{"--force", "never an SQLite database"}},
		{[]string{"help", "tune"}, []string{"usage: tune [flags]", "--mode cold|hot"}},
		{[]string{"help", "list"}, []string{"usage: tune list", "none"}},
	}
	for _, c := range cases {
		code, out, errs := runTune(t, c.args...)
		if code != 0 || errs != "" {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: stdout lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}

// TestPanicIsAnInternalError: a panic exits 1 (never 2, the usage code)
// with "internal error" and the stack.
func TestPanicIsAnInternalError(t *testing.T) {
	commands["__panic"] = &command{name: "__panic", hidden: true, run: func(*flagSet, io.Writer, io.Writer) error {
		var m map[string]int
		m["x"] = 1
		return nil
	}}
	defer delete(commands, "__panic")
	code, _, errs := runTune(t, "__panic")
	if code != 1 || !strings.Contains(errs, "tune: internal error: assignment to entry in nil map") || !strings.Contains(errs, "goroutine") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestEmitTakesTheFirstValidPoint: unnamed axes of the row families take
// the first valid point, not each axis's first value.
func TestEmitTakesTheFirstValidPoint(t *testing.T) {
	for _, k := range []string{"softmax_bwd", "rmsnorm_bwd", "layernorm_bwd"} {
		code, out, errs := runTune(t, "emit", "--kernel", k, "--shapes", "m=2048,n=8960", "--dtype", "f32")
		if code != 0 || !strings.Contains(out, "// kernel "+k+", shape m=2048,n=8960,dtype=f32, params ") || !strings.Contains(out, ".entry") {
			t.Errorf("%s: exit %d, stderr %q", k, code, errs)
		}
	}
	code, out, _ := runTune(t, "emit", "--kernel", "softmax_bwd", "--shapes", "m=2048,n=8960", "--dtype", "f32", "--params", "store=smem")
	if code != 0 || !strings.Contains(out, "store=smem") {
		t.Errorf("with store=smem: exit %d", code)
	}
}

// TestEmitListsValidValues: rejected params list, per axis, the values
// valid with the others.
func TestEmitListsValidValues(t *testing.T) {
	code, _, errs := runTune(t, "emit", "--kernel", "softmax_bwd", "--shapes", "m=2048,n=8960", "--dtype", "f32", "--params", "vec=4,vpt=1,rows=16")
	if code != 2 || !strings.Contains(errs, "no valid variant has rows=16,vec=4,vpt=1; valid values: vec: ") || !strings.Contains(errs, "(with rows=16,vpt=1)") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestListShowsEachDTypesValues: vec=8 of the 16-bit dtypes appears.
func TestListShowsEachDTypesValues(t *testing.T) {
	_, out, _ := runTune(t, "list")
	i := strings.Index(out, "  relu_bwd")
	if i < 0 || !strings.Contains(out[i:], "1,2,4 (f32)") || !strings.Contains(out[i:], "1,2,4,8 (f16, bf16)") {
		t.Errorf("relu_bwd's vec per dtype missing:\n%s", out)
	}
}

func TestCheck(t *testing.T) {
	code, out, errs := runTune(t, "check", "--kernel", "relu_bwd,silu_bwd", "--shapes", "m=3,n=77", "--dtype", "f32,bf16", "--sample", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{"kernel", "max abs err", "bound |err| ≤", "relu_bwd", "silu_bwd", "3×77", "bf16",
		"8 variants on the interpreter: 8 ok, 0 invalid, 0 errors, 0 compile errors (correctness only: nothing was timed)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
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

// TestCheckAllSendsEachSpecWhereItFits: with all, each spec goes to the
// families that take it, and the others are named as skipped.
func TestCheckAllSendsEachSpecWhereItFits(t *testing.T) {
	code, out, errs := runTune(t, "check", "--kernel", "all", "--shapes", "m=8,n=8;n=2,c=3,l=50,window=3,p=2", "--dtype", "f32", "--sample", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	specs, err := variants.ParseSpecs("m=8,n=8;n=2,c=3,l=50,window=3,p=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range catalog.All() {
		takes := false
		for _, sp := range specs {
			_, err := f.Shape(sp, dtype.F32)
			takes = takes || err == nil
		}
		if takes != strings.Contains(out, f.Name()) {
			t.Errorf("%s takes one of the specs: %v; checked: %v\n%s", f.Name(), takes, !takes, out)
		}
	}
	code, _, errs = runTune(t, "check", "--kernel", "all", "--shapes", "m=2,n=33", "--dtype", "f32", "--sample", "1")
	if code != 0 || !strings.Contains(errs, "tune check: skipping lp_pool1d_bwd:") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

func TestNoDriver(t *testing.T) {
	if _, err := cuda.Open(); err == nil {
		t.Skip("an NVIDIA driver is present; this test is for machines without one")
	}
	db := filepath.Join(t.TempDir(), "tune.db")
	code, _, errs := runTune(t, "--kernel", "relu_bwd,gelu_bwd,silu_bwd", "--shapes", "qwen1.5b", "--db", db)
	if code != 1 || !strings.Contains(errs, "NVIDIA driver (libcuda.so.1) not found") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a database was created without a GPU (stat: %v)", err)
	}
	code, _, errs = runTune(t, "devices")
	if code != 1 || !strings.Contains(errs, "libcuda.so.1") {
		t.Errorf("devices: exit %d, stderr %q", code, errs)
	}
	out := filepath.Join(t.TempDir(), "x.jsonl")
	code, _, errs = runTune(t, "crosscheck", "--kernel", "relu_bwd", "--cases", "3", "--out", out)
	if code != 1 || !strings.Contains(errs, "libcuda.so.1") {
		t.Errorf("crosscheck: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written without a GPU", out)
	}
}

// TestCrosscheckPipeline runs crosscheck with the interpreter standing in
// for the GPU, twice on the same output (an earlier output may be
// replaced).
func TestCrosscheckPipeline(t *testing.T) {
	old := openGPU
	defer func() { openGPU = old }()
	openGPU = func(int) (runner.Backend, func(), error) { return sim.New(sim.Options{}), func() {}, nil }
	out := filepath.Join(t.TempDir(), "x.jsonl")
	for range 2 {
		code, stdout, errs := runTune(t, "crosscheck", "--kernel", "relu_bwd,gelu_bwd", "--cases", "12", "--out", out)
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errs, stdout)
		}
		for _, want := range []string{"crosscheck: 12 cases of 2 families", "gelu_bwd", "all", "probes:", "mma_f16", "cp_async_2stage"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
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
		var r crosscheck.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Verdict != crosscheck.Identical {
			t.Errorf("%v: %s", err, l)
		}
	}
}

// TestVersion: --version prints the build's module version (and its VCS
// revision when the build recorded one), and a run records the same.
func TestVersion(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information")
	}
	code, out, errs := runTune(t, "--version")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "tune "+bi.Main.Version+", ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && !strings.Contains(out, s.Value) {
			t.Errorf("--version %q lacks the revision %s", out, s.Value)
		}
	}
	if code, _, errs := runTune(t, "--version", "list"); code != 2 || !strings.Contains(errs, "--version stands alone") {
		t.Errorf("--version list: exit %d, %q", code, errs)
	}
	db := replayBench(t, t.TempDir(), "v.db", "1")
	d, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	runs, err := d.Runs()
	if err != nil || len(runs) != 1 || runs[0].ToolVersion != version || !strings.HasPrefix(out, "tune "+version) {
		t.Errorf("the run records %+v (%v), want the version --version prints", runs, err)
	}
}
