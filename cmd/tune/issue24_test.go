package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/tuning"
	"github.com/gradtune/gradtune/variants"
)

// TestSaidTwice: the check TestBadInputs applies to every message finds
// a prefix said twice.
func TestSaidTwice(t *testing.T) {
	for msg, want := range map[string]string{
		"tune: --shapes: nf4_gemm_bwd: nf4_gemm_bwd shape: n=100 is not a multiple\n": "nf4_gemm_bwd",
		"tune: --db x.db: --db x.db: damaged\n":                                       "--db x.db",
		"tune: --db: store x.db: read schema version: damaged gradtune database\n":    "",
		"tune: no results for gemm_bwd in x.db (kernels recorded there: relu_bwd)\n":  "",
	} {
		if got := saidTwice(msg); got != want {
			t.Errorf("saidTwice(%q) = %q, want %q", msg, got, want)
		}
	}
}

// TestReplayProgress: replay's progress on stderr, on a clock the test
// moves: nothing in the first five seconds (a short replay says
// nothing), then a line at each new tenth of the runs and every five
// seconds between.
func TestReplayProgress(t *testing.T) {
	var b bytes.Buffer
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	now := start
	p := replayProgress(&b, "h200-pool.db", func() time.Time { return now })
	for _, step := range []struct {
		at          time.Duration
		done, total int
		want        string
	}{
		{1 * time.Second, 1, 100, ""},
		{4 * time.Second, 10, 100, ""},
		{6 * time.Second, 11, 100, "tune replay: h200-pool.db: 11 of 100 strategy runs (6s)\n"},
		{7 * time.Second, 12, 100, ""},
		{11500 * time.Millisecond, 13, 100, "tune replay: h200-pool.db: 13 of 100 strategy runs (12s)\n"},
		{12 * time.Second, 20, 100, "tune replay: h200-pool.db: 20 of 100 strategy runs (12s)\n"},
		{13 * time.Second, 21, 100, ""},
		{14 * time.Second, 100, 100, "tune replay: h200-pool.db: 100 of 100 strategy runs (14s)\n"},
	} {
		now = start.Add(step.at)
		p(step.done, step.total)
		if got := b.String(); got != step.want {
			t.Errorf("at %v, %d of %d: %q, want %q", step.at, step.done, step.total, got, step.want)
		}
		b.Reset()
	}
	// A replay of a thousand runs in under five seconds says nothing.
	now = start
	p = replayProgress(&b, "x.db", func() time.Time { return now })
	for i := 1; i <= 1000; i++ {
		now = start.Add(time.Duration(i) * 4 * time.Millisecond)
		p(i, 1000)
	}
	if b.Len() != 0 {
		t.Errorf("a four-second replay printed %q", b.String())
	}
}

// TestProbeNamesTheOutput: an output its directory will not take is a
// usage error that names the flag and the output, never the temporary
// file; a probe that succeeds leaves nothing behind.
func TestProbeNamesTheOutput(t *testing.T) {
	t.Run("name too long for the temporary file", probeLongName)
	t.Run("read-only directory", probeReadOnly)
}

func probeLongName(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, strings.Repeat("n", 252))
	for _, c := range []struct {
		flag    string
		pattern func(string) string
	}{{"-o", dotTemp}, {"--out", crosscheckTemp}, {"--db", dotTemp}} {
		err := probeFile(c.flag, long, c.pattern)
		if !errors.As(err, new(usageError)) || !strings.HasPrefix(err.Error(), c.flag+" "+long+": cannot create a file in "+dir+": file name too long") ||
			strings.Contains(err.Error(), "/."+filepath.Base(long)) || strings.Contains(err.Error(), ".tmp") {
			t.Errorf("%s: %v", c.flag, err)
		}
		if err := probeFile(c.flag, filepath.Join(dir, "t.json"), c.pattern); err != nil {
			t.Errorf("%s t.json: %v", c.flag, err)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("the probes left %d files in %s", len(es), dir)
	}
}

// probeReadOnly: a directory this process may not write into (as root
// every directory is writable, so this half needs another user).
func probeReadOnly(t *testing.T) {
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(ro, 0o755)
	if f, err := os.CreateTemp(ro, "w"); err == nil {
		f.Close()
		os.Remove(f.Name())
		t.Skip("this process writes into a read-only directory (root)")
	}
	db := filepath.Join("..", "..", "testdata", "h200-pool.db")
	for _, args := range [][]string{
		{"export", "--db", db, "-o", filepath.Join(ro, "t.json")},
		{"report", "--db", db, "-o", filepath.Join(ro, "r")},
		{"crosscheck", "--out", filepath.Join(ro, "x.jsonl"), "--kernel", "relu_bwd", "--cases", "1"},
		{"--kernel", "relu_bwd", "--shapes", "n=8", "--db", filepath.Join(ro, "tune.db")},
		{"bench", "--configs", filepath.Join("..", "..", "configs", "h200", "pool.json"), "--db", filepath.Join(ro, "n.db")},
	} {
		out := args[len(args)-1]
		if args[0] == "crosscheck" {
			out = args[2]
		}
		code, _, errs := runTune(t, args...)
		if code != 2 || !strings.Contains(errs, out) || !strings.Contains(errs, "writ") && !strings.Contains(errs, "permission denied") ||
			strings.Contains(errs, "/.") || strings.Contains(errs, ".tmp") || strings.Contains(errs, "gradtune-probe") {
			t.Errorf("%v: exit %d, %q; want 2 naming %s and why", args, code, errs, out)
		}
	}
	if es, _ := os.ReadDir(ro); len(es) != 0 {
		t.Errorf("%d files in the read-only directory", len(es))
	}
}

// TestCheckPrintsTheFamilysBound: check's last column is the bound each
// family held its outputs to (tuning.ToleranceText), not a bare "ok".
func TestCheckPrintsTheFamilysBound(t *testing.T) {
	bounds := map[string]bool{}
	for _, c := range []struct{ kernel, spec, dt string }{
		{"relu_bwd", "m=2,n=64", "f32"},
		{"gelu_bwd", "m=2,n=64", "bf16"},
		{"softmax_bwd", "m=2,n=64", "f16"},
		{"nf4_dequant", "n=64,k=64", "bf16"},
		{"lp_pool1d_bwd", "n=1,c=1,l=8,window=2,p=2", "f64"},
	} {
		code, out, errs := runTune(t, "check", "--kernel", c.kernel, "--shapes", c.spec, "--dtype", c.dt, "--sample", "1")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.kernel, code, errs)
		}
		f, err := catalog.Lookup(c.kernel)
		if err != nil {
			t.Fatal(err)
		}
		specs, err := variants.ParseSpecs(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		dt, err := dtype.Parse(c.dt)
		if err != nil {
			t.Fatal(err)
		}
		shape, err := f.Shape(specs[0], dt)
		if err != nil {
			t.Fatal(err)
		}
		want := tuning.ToleranceText(f, shape)
		bounds[want] = true
		rows := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, c.kernel+" ") {
				rows++
				if !strings.Contains(l, " ok ") || !strings.HasSuffix(strings.TrimSpace(l), want) {
					t.Errorf("%s row %q does not end with its bound %q", c.kernel, l, want)
				}
			}
		}
		if rows == 0 || !strings.Contains(out, "bound |err| ≤") {
			t.Errorf("%s: %d rows, no bound column?\n%s", c.kernel, rows, out)
		}
	}
	if len(bounds) < 2 {
		t.Errorf("every family printed the same bound %v: not the family's own", bounds)
	}
}

// TestLpPoolTakesPyTorchsValues: lp_pool1d_bwd takes what PyTorch's
// lp_pool1d does: a fractional norm type (p=2.5, where the dtype has
// lg2/ex2) and ceil_mode as 0 or 1.
func TestLpPoolTakesPyTorchsValues(t *testing.T) {
	for _, spec := range []string{"n=1,c=2,l=10,window=3,p=2.5", "n=1,c=2,l=10,window=3,p=2,ceil=0", "n=1,c=2,l=10,window=3,p=2,ceil=1"} {
		code, out, errs := runTune(t, "check", "--kernel", "lp_pool1d_bwd", "--shapes", spec, "--dtype", "f32", "--sample", "1")
		if code != 0 || !strings.Contains(out, "1 ok") {
			t.Errorf("check --shapes %s: exit %d, %s\n%s", spec, code, errs, out)
		}
	}
}
