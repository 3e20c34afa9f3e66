package main

import (
	"bytes"
	"github.com/gradtune/gradtune/internal/sweep"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedDBs are every database recorded under testdata/.
func recordedDBs(t *testing.T) []string {
	var files []string
	for _, pat := range []string{"*.db", "research/*.db", "research/*/*.db", "issue21/*.db"} {
		m, err := filepath.Glob(filepath.Join("..", "..", "testdata", pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 17 {
		t.Fatalf("%d recorded databases, want at least 17", len(files))
	}
	return files
}

func runResults(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// currentGenerator are the recorded databases timed with today's
// generators: export --ptx re-emits their PTX and must find every recorded
// hash. The others were timed with PTX that baked the token dim in, which
// export refuses to re-emit (see TestExportStalePTX), so they export
// without it.
var currentGenerator = map[string]bool{"issue21_h200-gemm": true, "issue21_h200-nf4": true}

// TestResultsCommandsOnRecorded runs show on every recorded database, and
// export (JSON, Go, C; with PTX where the database is the current
// generator's) and report on the current generator's and a sweep of one
// in 1 of the others (internal/sweep: a third by default, all with ci):
// none needs a GPU.
func TestResultsCommandsOnRecorded(t *testing.T) {
	for i, db := range recordedDBs(t) {
		name := strings.TrimSuffix(strings.ReplaceAll(strings.TrimPrefix(db, filepath.Join("..", "..", "testdata")+"/"), "/", "_"), ".db")
		t.Run(name, func(t *testing.T) {
			code, out, errs := runResults("show", "--db", db)
			if code != 0 || !strings.Contains(out, "best params") {
				t.Fatalf("show: exit %d\n%s%s", code, out, errs)
			}
			if !currentGenerator[name] && !sweep.Take(i, 1) {
				return
			}
			dir := t.TempDir()
			for _, f := range []string{"json", "go", "c"} {
				path := filepath.Join(dir, f, "table."+map[string]string{"json": "json", "go": "go", "c": "h"}[f])
				os.MkdirAll(filepath.Dir(path), 0o755)
				args := []string{"export", "--db", db, "--format", f, "-o", path}
				if currentGenerator[name] {
					args = append(args, "--ptx")
				}
				if code, out, errs := runResults(args...); code != 0 {
					t.Fatalf("export %s: exit %d\n%s%s", f, code, out, errs)
				}
			}
			if code, out, errs := runResults("report", "--db", db, "-o", filepath.Join(dir, "report")); code != 0 {
				t.Fatalf("report: exit %d\n%s%s", code, out, errs)
			}
			if _, err := os.Stat(filepath.Join(dir, "report", "index.html")); err != nil {
				t.Fatal(err)
			}
		})
	}
	stale := filepath.Join("..", "..", "testdata", "h200-activations.db")
	out := filepath.Join(t.TempDir(), "stale.json")
	if code, _, errs := runResults("export", "--db", stale, "--format", "json", "--ptx", "-o", out); code != 2 || !strings.Contains(errs, "re-emitted PTX differs from the recorded hash") {
		t.Errorf("export --ptx of a database timed with an older generator: exit %d, %q; want 2 and the stale PTX named", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused export wrote its output")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "testdata", "h200-pool.db-wal")); err == nil {
		t.Error("reading a recorded database left a -wal file beside it")
	}
}

func TestShowVariants(t *testing.T) {
	db := filepath.Join("..", "..", "testdata", "h200-activations.db")
	code, out, errs := runResults("show", "--db", db, "--kernel", "gelu_bwd", "--shapes", "m=2048,n=1536,dtype=bf16", "--variants")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 218 || !strings.Contains(lines[2], "block=128,cache=stream,ept=1,grid=once,maxnreg=0,vec=8") || !strings.Contains(lines[2], "winner") {
		t.Errorf("%d lines; rank 1: %q", len(lines), lines[2])
	}
	code, _, errs = runResults("show", "--db", db, "--kernel", "gelu_bwd", "--variants")
	if code != 2 || !strings.Contains(errs, "needs one kernel and shape") || !strings.Contains(errs, "gelu_bwd m=2048,n=8960,dtype=f32") {
		t.Errorf("--variants over 6 shapes: exit %d, %s", code, errs)
	}
}

// TestResultsCommandsRefuse checks the user's mistakes: each exits 2 with a
// message naming the problem, and nothing is overwritten.
func TestResultsCommandsRefuse(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join("..", "..", "testdata", "h200-pool.db")
	notDB := filepath.Join(dir, "notes.txt")
	os.WriteFile(notDB, []byte("not a database, just words"), 0o644)
	existing := filepath.Join(dir, "table.json")
	os.WriteFile(existing, []byte("mine"), 0o644)
	full := filepath.Join(dir, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "keep.txt"), []byte("mine"), 0o644)
	badPeers := filepath.Join(dir, "peers.jsonl")
	os.WriteFile(badPeers, []byte("{\"kernel\": \n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "--db", filepath.Join(dir, "missing.db")}, "no database file"},
		{[]string{"show", "--db", notDB}, "not a gradtune database"},
		{[]string{"show", "--db", db, "--run", "9"}, "no run with id"},
		{[]string{"show", "--db", db, "--kernel", "relu_bwd"}, "no results for relu_bwd in " + db + " (kernels recorded there: lp_pool1d_bwd)"},
		{[]string{"show", "--db", db, "--shapes", "n=,c=1"}, "--shapes"},
		{[]string{"show", "--db", db, "extra"}, `unexpected argument "extra"`},
		{[]string{"export", "--db", db, "--format", "yaml", "-o", existing}, `format "yaml": want one of json, go, c`},
		{[]string{"export", "--db", db}, "needs -o"},
		{[]string{"export", "--db", db, "-o", existing}, existing + " exists (--force replaces it)"},
		{[]string{"report", "--db", db, "-o", full}, "not empty"},
		{[]string{"report", "--db", db, "--peers", badPeers, "-o", filepath.Join(dir, "r")}, "malformed peers"},
		{[]string{"report", "--db", db, "--peers", filepath.Join(dir, "nope.jsonl"), "-o", filepath.Join(dir, "r")}, "--peers"},
	} {
		code, _, errs := runResults(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("tune %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "mine" {
		t.Error("export overwrote an existing file")
	}
	if b, _ := os.ReadFile(filepath.Join(full, "keep.txt")); string(b) != "mine" {
		t.Error("report overwrote a file")
	}
	if code, _, errs := runResults("export", "--db", db, "--force", "-o", existing); code != 0 {
		t.Errorf("export --force: exit %d: %s", code, errs)
	}
}

// TestExportForceNeverReplacesADatabase: export --force onto a results
// database, and onto its own --db (by its name and through a link), in
// every format, with and without --ptx, exits 2 and leaves the database
// byte-identical; report --force refuses the same.
func TestExportForceNeverReplacesADatabase(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "h200-pool.db"))
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "results.db")
	other := filepath.Join(dir, "other.json") // a database whatever its name says
	for _, p := range []string{own, other} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "table.json")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{own, link, other} {
		for _, format := range []string{"json", "go", "c"} {
			for _, ptx := range []bool{false, true} {
				args := []string{"export", "--db", own, "--format", format, "-o", target, "--force"}
				if ptx {
					args = append(args, "--ptx")
				}
				code, out, errs := runResults(args...)
				if code != 2 || out != "" || !strings.Contains(errs, "no output replaces a database, even with --force") {
					t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and the refusal", args, code, out, errs)
				}
			}
		}
		code, _, errs := runResults("report", "--db", own, "-o", target, "--force")
		if code != 2 || !strings.Contains(errs, "it is an SQLite database, want a directory for the report") {
			t.Errorf("report -o %s --force: exit %d, %q", target, code, errs)
		}
	}
	for _, p := range []string{own, other} {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s changed (%v)", p, err)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 3 {
		t.Errorf("%d files in %s, want the 3 it had", len(es), dir)
	}
}

// TestDefaultsSelect: a shape's default extents select it: the plain
// (f32-scales) NF4 shapes with scales=f32 or block=64, a floor-mode pool
// with ceil=0.
func TestDefaultsSelect(t *testing.T) {
	db := filepath.Join("..", "..", "testdata", "nf4", "h200-nf4.db")
	for _, spec := range []string{"scales=f32", "block=64,scales=f32", "n=1536,k=1536,block=64"} {
		code, out, errs := runResults("show", "--db", db, "--kernel", "nf4_dequant", "--shapes", spec)
		rows, dq := 0, 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "nf4_dequant ") {
				rows++
				if strings.Contains(l, "×dq") {
					dq++
				}
			}
		}
		if code != 0 || rows == 0 || dq > 0 && spec != "n=1536,k=1536,block=64" {
			t.Errorf("show --shapes %s: exit %d, %d rows (%d double-quantized)\n%s%s", spec, code, rows, dq, out, errs)
		}
	}
	code, out, errs := runResults("emit", "--kernel", "lp_pool1d_bwd", "--shapes", "n=1,c=2,l=10,window=3,p=2,ceil=0", "--dtype", "f32")
	if code != 0 || !strings.Contains(out, "shape n=1,c=2,l=10,window=3,stride=3,p=2,dtype=f32,") {
		t.Errorf("emit with ceil=0: exit %d, %s\n%.300s", code, errs, out)
	}
}

// TestReportSaysPeersMatchNothing: a peers file none of whose rows is a
// shape of the report is said on stderr; the report is written.
func TestReportSaysPeersMatchNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r")
	code, stdout, errs := runResults("report", "--db", filepath.Join("..", "..", "testdata", "h200-pool.db"),
		"--peers", filepath.Join("..", "..", "testdata", "peers-rows.jsonl"), "-o", out)
	if code != 0 || !strings.Contains(stdout, "files in "+out) ||
		!strings.Contains(errs, "none of its 9 rows is a shape of the report (its kernels: layernorm_bwd, rmsnorm_bwd, softmax_bwd); the report has no peers") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
}
