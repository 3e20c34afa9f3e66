package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestOpenReadOnlyLeavesNoFiles reads the committed databases in place (they
// are in WAL mode, where a plain read creates -wal and -shm files) and
// checks that the directory and the files are as before.
func TestOpenReadOnlyLeavesNoFiles(t *testing.T) {
	dir := filepath.Join("..", "testdata")
	files, err := filepath.Glob(filepath.Join(dir, "h200-*.db"))
	if err != nil || len(files) == 0 {
		t.Fatalf("recorded databases: %v %v", files, err)
	}
	before := dirEntries(t, dir)
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		db, err := OpenReadOnly(f)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := db.Runs()
		if err != nil || len(runs) == 0 {
			t.Fatalf("%s: runs %v, %v", f, runs, err)
		}
		if _, err := db.Evaluations(Filter{RunID: runs[0].ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.BeginRun(Run{}); err == nil || !strings.Contains(err.Error(), "readonly") {
			t.Errorf("%s: BeginRun on a read-only database: %v, want a read-only error", f, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		after, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if after.Size() != st.Size() || !after.ModTime().Equal(st.ModTime()) {
			t.Errorf("%s changed: size %d → %d, mtime %v → %v", f, st.Size(), after.Size(), st.ModTime(), after.ModTime())
		}
	}
	if after := dirEntries(t, dir); !slices.Equal(before, after) {
		t.Errorf("reading left files behind in %s:\nbefore %q\nafter  %q", dir, before, after)
	}
}

// TestOpenReadOnlyBesideAWriter reads a database that another handle has
// open for writing: it sees what the writer committed.
func TestOpenReadOnlyBesideAWriter(t *testing.T) {
	w, path := openTemp(t)
	run := mustBeginRun(t, w)
	mustRecord(t, w, run, okEval(baseKey, 10))
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Evaluations(Filter{RunID: run})
	if err != nil || len(got) != 1 || got[0].MedianUS == 0 {
		t.Fatalf("read-only beside a writer: %+v, %v", got, err)
	}
	mustRecord(t, w, run, okEval(baseKey, 9))
	if got, err := r.Evaluations(Filter{RunID: run}); err != nil || len(got) != 2 {
		t.Errorf("a later commit of the writer: read %d evaluations, %v; want 2", len(got), err)
	}
}

func TestOpenReadOnlyRejectsMissingAndEmpty(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "missing.db"): "no database file",
		empty:                            "the file is empty",
	} {
		if db, err := OpenReadOnly(path); err == nil {
			db.Close()
			t.Errorf("OpenReadOnly(%s) succeeded", path)
		} else if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("OpenReadOnly(%s): %v, want the path and %q", path, err, want)
		}
	}
	if got := dirEntries(t, dir); !slices.Equal(got, []string{"empty.db"}) {
		t.Errorf("files after the refusals: %q", got)
	}
}

// TestProbe: a path Open would create or open is accepted and nothing is
// created; an unwritable directory is refused.
func TestProbe(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new.db")
	if err := Probe(fresh); err != nil {
		t.Errorf("Probe(new file): %v", err)
	}
	if got := dirEntries(t, dir); len(got) != 0 {
		t.Errorf("Probe created %q", got)
	}
	db, err := Open(fresh)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := Probe(fresh); err != nil {
		t.Errorf("Probe(existing database): %v", err)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root: write permissions are not enforced, skipping the read-only directory")
		return
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := Probe(filepath.Join(ro, "tune.db")); err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Errorf("Probe in a read-only directory: %v", err)
	}
}
