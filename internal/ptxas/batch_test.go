package ptxas

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// invalidPTX is a module ptxas rejects (an undeclared register on line 7).
const invalidPTX = `.version 7.8
.target sm_80
.address_size 64
.visible .entry broken()
{
	.reg .b32 %r<2>;
	add.s32 %r1, %r1, %nosuchreg;
	ret;
}
`

// testModules are modules of every kind Check meets: the hand-written ones (spill.ptx has a
// .func and a warning), modules the families emit (tune emit: layernorm_bwd's two kernels
// and their dynamic shared memory, gemm_bwd on the wgmma path for sm_90a, nf4_gemm_bwd on
// the sync path), each for sm_90 (sm_90a for wgmma) and for sm_80 where it targets it; and
// first one that ptxas rejects (it shares a batch with others), last two repeated.
func testModules(t *testing.T) []Module {
	t.Helper()
	mods := []Module{{invalidPTX, "sm_80"}}
	for _, name := range []string{"simple", "spill", "layernorm_bwd_bf16", "gemm_bwd_wgmma_bf16", "nf4_gemm_bwd_sync_bf16"} {
		ptx, err := os.ReadFile(filepath.Join("testdata", name+".ptx"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(ptx), ".target sm_90a") {
			mods = append(mods, Module{string(ptx), "sm_90a"})
			continue
		}
		mods = append(mods, Module{string(ptx), "sm_90"}, Module{string(ptx), "sm_80"})
	}
	return append(mods, mods[3], mods[1])
}

// countingPTXAS is a ptxas that logs each run's arguments to a file, then runs path.
func countingPTXAS(t *testing.T, path string) (fake, log string) {
	t.Helper()
	dir := t.TempDir()
	fake, log = filepath.Join(dir, "ptxas"), filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho \"$*\" >>'" + log + "'\nexec '" + path + "' \"$@\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return fake, log
}

// assemblies reads the runs countingPTXAS logged: the number of modules of each run, less
// the --version runs.
func assemblies(t *testing.T, log string) []int {
	t.Helper()
	data, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var runs []int
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if line != "--version" {
			runs = append(runs, strings.Count(line, ".ptx"))
		}
	}
	return runs
}

// TestCheckIsAssemblingAlone: Check's result for every module, assembled several to a
// process, is what assembling it alone gives (reports, warnings, the rejection's message);
// modules did share processes; a second Check takes every result from the cache and runs no
// ptxas; an entry that does not parse is a miss.
func TestCheckIsAssemblingAlone(t *testing.T) {
	real := RequireOrSkip(t)
	fake, log := countingPTXAS(t, real)
	mods := testModules(t)
	ctx := context.Background()
	alone := make([]Result, len(mods))
	for i, m := range mods {
		alone[i] = Assembler{Path: real}.alone(ctx, m)
	}
	if alone[0].Err == nil || !strings.Contains(alone[0].Err.Error(), "kernel.ptx, line 7") {
		t.Fatalf("the invalid module: %v", alone[0].Err)
	}

	a := Assembler{Path: fake, Cache: t.TempDir()}
	same := func(what string, got []Result, cached bool) {
		t.Helper()
		for i, r := range got {
			want := alone[i]
			if !reflect.DeepEqual(r.Reports, want.Reports) || !slices.Equal(r.Warnings, want.Warnings) || errText(r.Err) != errText(want.Err) {
				t.Errorf("%s: module %d (%s): got\n%+v\nwant (alone)\n%+v", what, i, mods[i].Arch, r, want)
			}
			if r.Cached != cached {
				t.Errorf("%s: module %d: Cached = %v", what, i, r.Cached)
			}
		}
	}
	same("first Check", a.Check(ctx, mods), false)
	runs := assemblies(t, log)
	t.Logf("%d modules: ptxas runs of %v modules", len(mods), runs)
	if slices.Max(runs) < 2 {
		t.Errorf("ptxas runs of %v modules: no two modules shared a process", runs)
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	same("second Check", a.Check(ctx, mods), true)
	if runs := assemblies(t, log); len(runs) != 0 {
		t.Errorf("second Check ran ptxas %d times, want none (all cached)", len(runs))
	}

	key, err := cacheKeyOf(a.Path, mods[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.entryPath(key), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := a.Check(ctx, mods[1:2])
	if runs := assemblies(t, log); got[0].Cached || !slices.Equal(runs, []int{1}) {
		t.Errorf("a torn cache entry: Cached %v, ptxas runs %v; want one run of one module", got[0].Cached, runs)
	}
	var f *Failure
	if r := a.Check(ctx, []Module{{invalidPTX, "sm_80"}})[0]; !r.Cached || !errors.As(r.Err, &f) {
		t.Errorf("a cached rejection: Cached %v, Err %v; want a *Failure from the cache", r.Cached, r.Err)
	}
}

func cacheKeyOf(path string, m Module) (string, error) {
	v, err := versionOf(path)
	return cacheKey(v, m), err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCheckConcurrent: Checks that share a cache folder at once (as test processes do) all
// get every result whole.
func TestCheckConcurrent(t *testing.T) {
	path := RequireOrSkip(t)
	mods := testModules(t)[1:5]
	a := Assembler{Path: path, Cache: t.TempDir()}
	done := make(chan []Result)
	for range 3 {
		go func() { done <- a.Check(context.Background(), mods) }()
	}
	for range 3 {
		for i, r := range <-done {
			if r.Err != nil || len(r.Reports) == 0 {
				t.Errorf("module %d: %+v", i, r)
			}
		}
	}
}

// TestCheckNoPTXAS: without a ptxas every result is the error.
func TestCheckNoPTXAS(t *testing.T) {
	rs := Assembler{Path: filepath.Join(t.TempDir(), "missing")}.Check(context.Background(), []Module{{invalidPTX, "sm_80"}})
	if len(rs) != 1 || rs[0].Err == nil || !strings.Contains(rs[0].Err.Error(), "--version") {
		t.Errorf("results %+v, want the error of ptxas --version", rs)
	}
}

func TestModuleSymbols(t *testing.T) {
	for _, c := range []struct {
		ptx   string
		names []string
		ok    bool
	}{
		{".version 8.0\n.target sm_90a\n.address_size 64\n\n.extern .shared .align 16 .b8 k_smem[];\n\n.visible .entry k(\n\t.param .u64 k_param_a\n)\n.maxnreg 168\n.reqntid 384\n{\n\t.shared .align 4 .b8 buf[16];\n\tret;\n}\n",
			[]string{"k_smem", "k"}, true},
		{".version 7.8\n.target sm_80\n.func (.param .b32 r) pick(\n\t.param .b32 i\n)\n{\n\tret;\n}\n.global .align 4 .u32 table[4] = {1, 2, 3, 4};\n.const .f32 c;\n.visible .entry e()\n{\n\tret;\n}\n",
			[]string{"pick", "table", "c", "e"}, true},
		{".version 7.8\n/* a block comment */\n.visible .entry e()\n{\n}\n", nil, false},
		{".version 7.8\n.file 1 \"k.cu\"\n.visible .entry e()\n{\n}\n", nil, false},
		{".version 7.8\n.global .u32 a, b;\n", nil, false},
	} {
		names, ok := moduleSymbols(c.ptx)
		if ok != c.ok || !slices.Equal(names, c.names) {
			t.Errorf("moduleSymbols(%q) = %q, %v; want %q, %v", c.ptx, names, ok, c.names, c.ok)
		}
	}
	got := renamed(".extern .shared .b8 k_smem[];\n.visible .entry k(.param .u64 k_param_a)\n{\n\tmov.u64 %rd1, k_smem;\n\tld.param.u64 %rd2, [k_param_a];\n}\n", 3)
	want := ".extern .shared .b8 k_smem__pb3[];\n.visible .entry k__pb3(.param .u64 k_param_a)\n{\n\tmov.u64 %rd1, k_smem__pb3;\n\tld.param.u64 %rd2, [k_param_a];\n}\n"
	if got != want {
		t.Errorf("renamed:\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct {
		line string
		j    int
		out  string
	}{
		{"ptxas warning : For entry spill__pb2 adjusting", 2, "ptxas warning : For entry spill adjusting"},
		{"ptxas m11.ptx, line 7; warning : x", 11, "ptxas kernel.ptx, line 7; warning : x"},
		{"ptxas m1.ptx, line 7; warning : in k__pb2", -1, "ptxas kernel.ptx, line 7; warning : in k"},
		{"ptxas warning : something", -1, "ptxas warning : something"},
	} {
		if j, out := restore(c.line); j != c.j || out != c.out {
			t.Errorf("restore(%q) = %d, %q; want %d, %q", c.line, j, out, c.j, c.out)
		}
	}
}
