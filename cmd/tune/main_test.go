package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/tuning"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testHostMemory is what check may use under test, whatever the machine
// has, so that the memory refusals do not depend on it.
const testHostMemory = 16 << 30

// TestMain lets the test binary stand in for tune's worker: run re-executes
// os.Executable() with "__worker", which is this binary under go test.
// With "__tune" it is tune itself, for tests that kill a run.
func TestMain(m *testing.M) {
	simtest.FastGC()
	if len(os.Args) > 1 && os.Args[1] == "__worker" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "__tune" {
		os.Exit(run(os.Args[2:], os.Stdout, os.Stderr))
	}
	hostLimit = func() (tuning.Limit, error) {
		return tuning.Limit{Bytes: testHostMemory, Source: "test memory"}, nil
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
