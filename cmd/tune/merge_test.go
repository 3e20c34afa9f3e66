package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeCommand: tune merge of two recorded databases, then of the
// output with an input (nothing added), an output reached through a link
// to an input (refused), and a conflicting copy (exit 1, nothing written).
func TestMergeCommand(t *testing.T) {
	dir := t.TempDir()
	act, pool := filepath.Join("..", "..", "testdata", "h200-activations.db"), filepath.Join("..", "..", "testdata", "h200-pool.db")
	out := filepath.Join(dir, "all.db")
	code, stdout, stderr := runTune(t, "merge", "--db", act+","+pool, "-o", out)
	if code != 0 || !strings.Contains(stdout, "merge into "+out+", a new database:\n  "+act+": runs 1 read, 1 added, 0 already present; evaluations 3888 read, 3888 added") ||
		!strings.HasSuffix(stdout, out+": 2 runs, 5688 evaluations, 22 winners\n") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	code, stdout, stderr = runTune(t, "merge", "--db", pool, "-o", out)
	if code != 0 || !strings.Contains(stdout, pool+": runs 1 read, 0 added, 1 already present; evaluations 1800 read, 0 added, 1800 already present; winners 4 read, 0 added, 4 already present") {
		t.Fatalf("again: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(mustAbs(t, pool), link); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runTune(t, "merge", "--db", act+","+pool, "-o", link)
	if code != 2 || !strings.Contains(stderr, "-o: "+link+" is the input "+pool+" (the same file): cannot receive the merge") {
		t.Errorf("an output linked to an input: exit %d, %s", code, stderr)
	}

	bad := filepath.Join(dir, "bad.db")
	b, err := os.ReadFile(pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE evaluations SET median_us = median_us + 1 WHERE id = 7`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	fresh := filepath.Join(dir, "fresh.db")
	code, stdout, stderr = runTune(t, "merge", "--db", pool+","+bad, "-o", fresh)
	if code != 1 || !strings.Contains(stdout, "1 conflicts") || !strings.Contains(stdout, bad+": run started 2026-11-30T") ||
		!strings.Contains(stderr, "the databases conflict: 1 rows conflict; nothing written to "+fresh) {
		t.Errorf("a conflict: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	es, _ := os.ReadDir(dir)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "all.db bad.db link.db" {
		t.Errorf("files %v, want no output and no temporary file", names)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
