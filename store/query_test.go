package store

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenReadOnlyRecorded reads a recorded database in place and checks
// that nothing is written beside it.
func TestOpenReadOnlyRecorded(t *testing.T) {
	path := filepath.Join("..", "testdata", "h200-pool.db")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := db.Winners(0)
	if err != nil || len(ws) != 4 {
		t.Fatalf("winners = %d, %v", len(ws), err)
	}
	r, err := db.Run(1)
	if err != nil || r.GPUName != "NVIDIA H200" || r.CC != "9.0" {
		t.Fatalf("run 1 = %+v, %v", r, err)
	}
	if _, err := db.Run(99); !errors.Is(err, ErrNoRun) {
		t.Errorf("run 99: err = %v, want ErrNoRun", err)
	}
	if _, err := db.BeginRun(Run{}); err == nil {
		t.Error("BeginRun on a read-only database succeeded")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Errorf("OpenReadOnly left %s%s", path, suffix)
		}
	}
	after, _ := os.Stat(path)
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Errorf("the database changed: %v %d -> %v %d", before.ModTime(), before.Size(), after.ModTime(), after.Size())
	}
}

func TestOpenReadOnlyRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o644)
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello, this is not sqlite at all"), 0o644)
	newer := filepath.Join(dir, "newer.db")
	db, err := Open(newer)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := sql.Open("sqlite3", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	for _, c := range []struct {
		path string
		want error
	}{
		{filepath.Join(dir, "missing.db"), ErrNoDatabase},
		{empty, ErrNotDatabase},
		{text, ErrNotDatabase},
		{newer, ErrSchemaTooNew},
	} {
		_, err := OpenReadOnly(c.path)
		if !errors.Is(err, c.want) {
			t.Errorf("OpenReadOnly(%s) = %v, want %v", filepath.Base(c.path), err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("OpenReadOnly created a missing database")
	}
}
