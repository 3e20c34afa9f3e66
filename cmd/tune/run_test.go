package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner/cuda"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestMain lets the test binary stand in for tune's worker: run re-executes
// os.Executable() with "__worker", which is this binary under go test.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "__worker" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func runTune(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, got)
	}
}

func TestGolden(t *testing.T) {
	cases := []struct {
		file string
		args []string
	}{
		{"list.golden", []string{"list"}},
		{"help.golden", []string{"help"}},
		{"emit_relu_f32.golden", []string{"emit", "--kernel", "relu_bwd", "--shapes", "n=1003", "--dtype", "f32", "--params", "vec=4,ept=2"}},
		{"emit_gelu_bf16.golden", []string{"emit", "--kernel", "gelu_bwd", "--shapes", "m=2,n=512,dtype=bf16", "--params", "vec=8,grid=stride"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			code, out, errs := runTune(t, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			golden(t, c.file, out)
		})
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--kernel", "nope"}, `unknown kernel "nope" (kernels: ` + strings.Join(catalog.Names(), ", ") + ")"},
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"--shapes", "llama7b"}, `malformed shape "llama7b"`},
		{[]string{"--shapes", "m=0,n=4"}, "m=0 is not a positive integer"},
		{[]string{"--shapes", "k=4"}, "takes n=N or m=M,n=N (got [k])"},
		{[]string{"--kernel", "relu_bwd", "--dtype", "f64"}, "relu_bwd supports none of --dtype f64"},
		{[]string{"--dtype", "int4"}, `unknown dtype "int4"`},
		{[]string{"--mode", "warm"}, `mode "warm": want cold or hot`},
		{[]string{"--tokens", "-3"}, "--tokens must be positive"},
		{[]string{"--budget", "-1"}, "--budget must be positive"},
		{[]string{"--params", "vec"}, "malformed params"},
		{[]string{"--kernel", "relu_bwd", "--params", "warps=4"}, `relu_bwd has no axis "warps"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"emit", "--kernel", "relu_bwd"}, "emit needs --shapes"},
		{[]string{"emit", "--kernel", "relu_bwd,gelu_bwd", "--shapes", "n=4"}, "emit needs one --kernel"},
		{[]string{"emit", "--kernel", "relu_bwd", "--shapes", "n=4"}, "emit needs exactly one shape and dtype"},
		{[]string{"emit", "--kernel", "relu_bwd", "--shapes", "n=4", "--dtype", "f32", "--params", "vec=3"}, "vec=3 not accepted (values: 1, 2, 4)"},
		{[]string{"list", "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		code, out, errs := runTune(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, errs)
		}
		if !strings.Contains(errs, c.want) || !strings.Contains(errs, "tune help") {
			t.Errorf("%v: stderr %q lacks %q", c.args, errs, c.want)
		}
		if out != "" {
			t.Errorf("%v: wrote to stdout on a usage error: %q", c.args, out)
		}
	}
}

func TestDBThatIsADirectory(t *testing.T) {
	code, _, errs := runTune(t, "--kernel", "relu_bwd", "--db", t.TempDir())
	if code != 2 || !strings.Contains(errs, "is a directory") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestNoDriver(t *testing.T) {
	if _, err := cuda.Open(); err == nil {
		t.Skip("an NVIDIA driver is present; this test is for machines without one")
	}
	db := filepath.Join(t.TempDir(), "tune.db")
	code, _, errs := runTune(t, "--kernel", "relu_bwd,gelu_bwd,silu_bwd", "--shapes", "qwen1.5b", "--db", db)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, errs)
	}
	if !strings.Contains(errs, "NVIDIA driver (libcuda.so.1) not found") {
		t.Errorf("stderr %q does not name the driver", errs)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a database was created without a GPU (stat: %v)", err)
	}
	code, _, errs = runTune(t, "devices")
	if code != 1 || !strings.Contains(errs, "libcuda.so.1") {
		t.Errorf("devices: exit %d, stderr %q", code, errs)
	}
}
