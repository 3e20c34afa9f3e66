package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
)

// TestLookupEveryCommittedEntry plans every entry of the committed tables
// as a trainer would: an exact match with its PTX, checked.
func TestLookupEveryCommittedEntry(t *testing.T) {
	set, err := configs.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tb := range set.Tables {
		for _, e := range tb.Entries {
			sh, err := configs.ParseShape(e.Shape)
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan(tb.GPU, e.Kernel, e.DType, sh)
			if err != nil {
				t.Errorf("%s: %v", e.Key(), err)
				continue
			}
			if p.Match.Rule != configs.Exact || p.Match.Entry.Params != e.Params || !bytes.Contains(p.PTX, []byte(".visible .entry "+e.Launches[0].Entry)) {
				t.Errorf("%s: %v match of %s, PTX of %d bytes", e.Key(), p.Match.Rule, p.Match.Entry.Params, len(p.PTX))
			}
			n++
		}
	}
	if n != 55 {
		t.Errorf("%d entries looked up, want 55", n)
	}
}

func TestRunWithoutGPU(t *testing.T) {
	if _, err := openDevice(); err == nil {
		t.Skip("a GPU is present: the example would launch")
	}
	var out, errb bytes.Buffer
	code := run([]string{"--kernel", "rmsnorm_bwd", "--dtype", "bf16", "--shape", "m=4096,n=2048"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "nearest shape match") || !strings.Contains(out.String(), "not launched") {
		t.Errorf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"--kernel", "no_such_bwd"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no config for this kernel") {
		t.Errorf("unknown kernel: exit %d: %s", code, errb.String())
	}
}

// TestBuildsWithoutCgo builds the example with CGO_ENABLED=0, as a trainer
// without a C toolchain would.
func TestBuildsWithoutCgo(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	cmd := exec.Command(goTool, "build", "-o", filepath.Join(t.TempDir(), "trainer"), ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
}
