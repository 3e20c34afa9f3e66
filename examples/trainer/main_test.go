package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
)

// TestPlanEveryCommittedEntry plans every entry of the committed tables as
// a trainer would, at its tuned shape and at two other values of each
// runtime dim: a launchable match with its PTX checked, and a launch plan
// that resolves (every argument bound to a buffer, every tensor map one the
// driver accepts).
func TestPlanEveryCommittedEntry(t *testing.T) {
	cases, err := casesOf(options{all: true, gpu: configs.GPU{Name: "NVIDIA H200", CC: "9.0"}})
	if err != nil {
		t.Fatal(err)
	}
	entries, runtime := map[string]bool{}, 0
	for _, c := range cases {
		e := c.Match.Entry
		if err := e.Launchable(c.Match.Shape); err != nil {
			t.Errorf("%s at %s: %v", e.Key(), c.Match.Shape, err)
		}
		wantRule := configs.Exact
		if c.Match.Shape.String() != mustShape(t, e.Shape).String() {
			wantRule, runtime = configs.Runtime, runtime+1
		}
		if c.Match.Rule != wantRule || !bytes.Contains(c.PTX, []byte(".visible .entry "+e.Launches[0].Entry)) {
			t.Errorf("%s at %s: %v match, PTX of %d bytes", e.Key(), c.Match.Shape, c.Match.Rule, len(c.PTX))
		}
		plan, err := c.Match.Plan(132)
		if err != nil {
			t.Errorf("%s at %s: %v", e.Key(), c.Match.Shape, err)
			continue
		}
		if len(plan.Launches) != len(e.Launches) || len(plan.Buffers) != len(e.Buffers) {
			t.Errorf("%s: plan of %d launches and %d buffers", e.Key(), len(plan.Launches), len(plan.Buffers))
		}
		entries[c.Match.Table.Source+" "+e.Key()] = true
	}
	set, _ := configs.Embedded()
	n := 0
	for _, tb := range set.Tables {
		n += len(tb.Entries)
	}
	if len(entries) != n {
		t.Errorf("%d entries planned, the tables hold %d", len(entries), n)
	}
	t.Logf("%d entries, %d plans at other token counts", n, runtime)
}

// TestOnlySomeKernels: --all --only plans the named kernels' entries
// alone, each at its tuned shape and two other token counts.
func TestOnlySomeKernels(t *testing.T) {
	cases, err := casesOf(options{all: true, only: []string{"nf4_gemm_bwd", "rmsnorm_bwd"}, gpu: configs.GPU{Name: "NVIDIA H200", CC: "9.0"}})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, c := range cases {
		n[c.Match.Entry.Kernel]++
	}
	if len(n) != 2 || n["nf4_gemm_bwd"] != 3*34 || n["rmsnorm_bwd"] != 3*3 {
		t.Errorf("plans per kernel %v, want 102 of nf4_gemm_bwd's 34 entries and 9 of rmsnorm_bwd's 3", n)
	}
	tuned, err := casesOf(options{all: true, tunedOnly: true, only: []string{"rmsnorm_bwd"}, gpu: configs.GPU{Name: "NVIDIA H200", CC: "9.0"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tuned) != 3 {
		t.Fatalf("--tuned-only: %d plans of rmsnorm_bwd's 3 entries", len(tuned))
	}
	for _, c := range tuned {
		if c.Match.Rule.String() != "exact" {
			t.Errorf("--tuned-only planned %s at %s: a %s match, want the tuned shape", c.Kernel, c.Match.Shape, c.Match.Rule)
		}
	}
}

func mustShape(t *testing.T, s string) configs.Shape {
	t.Helper()
	sh, err := configs.ParseShape(s)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

func TestRunWithoutGPU(t *testing.T) {
	if _, err := openDevice(); err == nil {
		t.Skip("a GPU is present: the example would launch")
	}
	var out, errb bytes.Buffer
	code := run([]string{"--kernel", "rmsnorm_bwd", "--dtype", "bf16", "--shape", "m=2048,n=1536"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "exact match") || !strings.Contains(out.String(), "not launched") {
		t.Errorf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kernel", "no_such_bwd"}, "no config for this kernel"},
		{[]string{"--kernel", "relu_bwd", "--shape", "m=2048,n=1000"}, "no config for this dtype and shape"},
		{[]string{"--tokens", "5"}, "--tokens goes with --all"},
		{[]string{"--only", "relu_bwd"}, "--only goes with --all"},
		{[]string{"--all", "--only", "relu_bwd,,gelu_bwd"}, "want kernel names separated by commas"},
		{[]string{"--all", "--only", "no_such_bwd"}, "no committed entry of these kernels"},
		{[]string{"--all", "--only", "relu_bwd,no_such_bwd"}, "no committed entry of these kernels: no_such_bwd"},
		{[]string{"--all", "--tokens", "0"}, "want positive integers"},
		{[]string{"--tuned-only"}, "--tuned-only goes with --all"},
		{[]string{"--all", "--tuned-only", "--tokens", "7"}, "without --tokens"},
		{[]string{"--warm-ms", "-1"}, "want 0 or more"},
		{[]string{"--sustained-ms", "-1"}, "want 0 or more"},
		{[]string{"--pad-bytes", "-1"}, "--pad-bytes -1: want 0 or more"},
		{[]string{"--repeat", "0"}, "--repeat 0: want 1 or more"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		out.Reset()
		errb.Reset()
		if code := run(c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d: %s", c.args, code, errb.String())
		}
	}
}

// --configs looks up the tables it names, not the committed set: every
// plan comes from them, and a table that does not load is a bad input.
func TestConfigsFromFiles(t *testing.T) {
	path := "../../configs/h200/rows.json"
	set, err := configs.LoadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, e := range set.Tables[0].Entries {
		want[e.Kernel] = true
	}
	cases, err := casesOf(options{all: true, tables: []string{path}, gpu: configs.GPU{Name: "NVIDIA H200", CC: "9.0"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range cases {
		got[c.Kernel] = true
	}
	if len(cases) < len(set.Tables[0].Entries) || len(got) != len(want) {
		t.Errorf("%d plans of kernels %v from a table of %d entries of %v", len(cases), got, len(set.Tables[0].Entries), want)
	}
	for k := range got {
		if !want[k] {
			t.Errorf("a plan of %s, which %s does not hold", k, path)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"--all", "--configs", filepath.Join(t.TempDir(), "none.json")}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--configs") {
		t.Errorf("a missing table: exit %d: %s", code, errb.String())
	}
	alone := filepath.Join(t.TempDir(), "rows.json") // the table without its PTX files
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(alone, data, 0o644)
	errb.Reset()
	if code := run([]string{"--all", "--configs", alone}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--configs") {
		t.Errorf("a table without its PTX files: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"--all", "--configs", path, "--only", "relu_bwd"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no --configs entry") {
		t.Errorf("--only a kernel the table lacks: exit %d: %s", code, errb.String())
	}
}

// A trace holds each plan's samples in the order they were timed, one
// JSON line a plan; a file that cannot be created is an error.
func TestTraceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tr, err := openTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	c := Case{Kernel: "relu_bwd", DType: "bf16"}
	c.Match.Shape = mustShape(t, "m=2048,n=8960")
	tr.writer(c)("protocol", []float64{3, 1, 2})
	tr.writer(c)("sustained", []float64{5})
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"loop":"protocol","kernel":"relu_bwd","dtype":"bf16","shape":"m=2048,n=8960","samples_us":[3,1,2]}` + "\n" +
		`{"loop":"sustained","kernel":"relu_bwd","dtype":"bf16","shape":"m=2048,n=8960","samples_us":[5]}` + "\n"
	if string(raw) != want {
		t.Errorf("trace:\n%s\nwant\n%s", raw, want)
	}
	if none, err := openTrace(""); err != nil || none.writer(c) != nil || none.Close() != nil {
		t.Errorf("no trace: %v", err)
	}
	if _, err := openTrace(filepath.Join(t.TempDir(), "missing", "trace.jsonl")); err == nil || !strings.Contains(err.Error(), "--trace") {
		t.Errorf("trace in a missing folder: %v", err)
	}
}
