package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedDBs are every database recorded under testdata/.
func recordedDBs(t *testing.T) []string {
	var files []string
	for _, pat := range []string{"*.db", "research/*.db", "research/*/*.db"} {
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

// TestResultsCommandsOnRecorded runs show, show --variants, export (JSON,
// Go, C, with PTX) and report on every recorded database: none needs a GPU.
func TestResultsCommandsOnRecorded(t *testing.T) {
	for _, db := range recordedDBs(t) {
		name := strings.TrimSuffix(strings.ReplaceAll(strings.TrimPrefix(db, filepath.Join("..", "..", "testdata")+"/"), "/", "_"), ".db")
		t.Run(name, func(t *testing.T) {
			code, out, errs := runResults("show", "--db", db)
			if code != 0 || !strings.Contains(out, "best params") {
				t.Fatalf("show: exit %d\n%s%s", code, out, errs)
			}
			dir := t.TempDir()
			for _, f := range []string{"json", "go", "c"} {
				path := filepath.Join(dir, f, "table."+map[string]string{"json": "json", "go": "go", "c": "h"}[f])
				os.MkdirAll(filepath.Dir(path), 0o755)
				args := []string{"export", "--db", db, "--format", f, "-o", path}
				if !strings.Contains(db, "research") {
					args = append(args, "--ptx") // research databases were timed with experimental generators
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
