package testdb

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/store"
)

// Open opens the database at path read-only, unpacking it first when its
// name ends in .gz; the test fails on any error. The caller closes it.
func Open(t testing.TB, path string) *store.DB {
	t.Helper()
	if strings.HasSuffix(path, ".gz") {
		path = Gunzip(t, path)
	}
	db, err := store.OpenReadOnly(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return db
}

// Gunzip unpacks the gzipped file at path into the test's temporary
// directory and returns the unpacked file's path (path less .gz there).
func Gunzip(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, zr); err != nil {
		w.Close()
		t.Fatalf("%s: %v", path, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}
