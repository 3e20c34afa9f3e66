package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: each kind of target gets its sentinel and a message that
// names the output path.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	db := filepath.Join(dir, "tune.db")
	for name, data := range map[string]string{notes: "mine", db: "SQLite format 3\x00page"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keep := []Protected{{Path: notes, What: "the --db database"}}
	for _, c := range []struct {
		path  string
		force bool
		keep  []Protected
		is    error
		want  string
	}{
		{filepath.Join(dir, "new.json"), false, nil, nil, ""},
		{notes, true, nil, nil, ""},
		{notes, false, nil, ErrExists, notes + " exists (--force replaces it)"},
		{notes, true, keep, ErrDatabase, notes + " is the --db database"},
		{db, true, nil, ErrDatabase, db + " is an SQLite database"},
		{dir, true, nil, ErrPath, dir + ": cannot receive an output file: it is a directory"},
		{filepath.Join(dir, "no", "x.json"), true, nil, ErrPath, "directory " + filepath.Join(dir, "no") + " does not exist"},
		{filepath.Join(notes, "x.json"), true, nil, ErrPath, notes + " is not a directory"},
	} {
		err := Check(c.path, c.force, c.keep)
		if c.is == nil && err != nil || c.is != nil && (!errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%s, force %v) = %v, want %v and %q", c.path, c.force, err, c.is, c.want)
		}
	}
}

// TestWriteChecksAllFirst: one refused target means nothing is written.
func TestWriteChecksAllFirst(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "b.db")
	if err := os.WriteFile(db, []byte("SQLite format 3\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Write(map[string][]byte{filepath.Join(dir, "a.txt"): []byte("a"), db: []byte("b")}, true, nil)
	if !errors.Is(err, ErrDatabase) {
		t.Fatalf("err = %v, want ErrDatabase", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err == nil {
		t.Error("a.txt was written before the refusal")
	}
	names, err := Write(map[string][]byte{filepath.Join(dir, "a.txt"): []byte("a")}, false, nil)
	if err != nil || len(names) != 1 {
		t.Fatalf("Write = %v, %v", names, err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("%d files, want a.txt and b.db (no temporary file left)", len(es))
	}
}

// TestWriteErrorsNameTheOutput: a write that fails in the directory (here
// the temporary file's name is too long for the file system, as an
// unwritable directory would fail it) names the output path, never the
// temporary file.
func TestWriteErrorsNameTheOutput(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, strings.Repeat("t", 250)+".json")
	_, err := Write(map[string][]byte{name: []byte("{}")}, false, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "writing "+name+": ") || strings.Count(err.Error(), dir) != 1 {
		t.Fatalf("err = %v, want one naming %s alone", err, name)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("%d files left in %s", len(es), dir)
	}
}
