package store

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// damagedCopies writes damaged copies of a recorded database into dir:
// truncated at a third, a table dropped, a column dropped, pages
// overwritten in the middle and a file holding only the SQLite header.
func damagedCopies(t *testing.T, dir string) map[string]string {
	t.Helper()
	good, err := os.ReadFile(filepath.Join("..", "testdata", "h200-pool.db"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out[name] = p
		return p
	}
	write("truncated.db", good[:len(good)/3])
	write("header-only.db", []byte(sqliteMagic))
	mid := bytes.Clone(good)
	copy(mid[len(mid)/2:], bytes.Repeat([]byte{0xff}, 16<<10))
	write("pages.db", mid)
	for name, stmt := range map[string]string{"no-winners.db": "DROP TABLE winners",
		"no-column.db": "ALTER TABLE evaluations DROP COLUMN median_us"} {
		p := write(name, good)
		raw, err := sql.Open("sqlite3", p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		raw.Close()
		os.Remove(p + "-wal")
		os.Remove(p + "-shm")
	}
	return out
}

// TestDamagedDatabasesAreRefused: Open, OpenReadOnly and Probe refuse a
// damaged database with ErrDamaged, a message naming the file and what is
// wrong, and leave it byte-identical.
func TestDamagedDatabasesAreRefused(t *testing.T) {
	files := damagedCopies(t, t.TempDir())
	want := map[string]string{
		"truncated.db":   "database disk image is malformed",
		"header-only.db": "damaged gradtune database",
		"pages.db":       "check pages: damaged gradtune database",
		"no-winners.db":  "table winners is missing (schema version 1 has tables evaluations, runs, variants, winners)",
		"no-column.db":   "column evaluations.median_us is missing",
	}
	openers := map[string]func(string) error{
		"Open":         func(p string) error { return closeOpened(Open(p)) },
		"OpenReadOnly": func(p string) error { return closeOpened(OpenReadOnly(p)) },
		"Probe":        Probe,
	}
	for name, path := range files {
		for oname, open := range openers {
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			err = open(path)
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want[name]) {
				t.Errorf("%s(%s) = %v, want ErrDamaged naming the file and %q", oname, name, err, want[name])
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("%s(%s) changed the file", oname, name)
			}
		}
	}
}

// TestIsSQLite reads only the header: any SQLite file is one, whatever its
// program; text, a short file and a missing one are not.
func TestIsSQLite(t *testing.T) {
	dir := t.TempDir()
	cases := map[string][]byte{"db": []byte(sqliteMagic + "rest of page"), "header": []byte(sqliteMagic),
		"text": []byte("SQLite format 3 is a header"), "short": []byte("SQL"), "empty": nil}
	for name, data := range cases {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]bool{"db": true, "header": true, "text": false, "short": false, "empty": false, "missing": false} {
		got, err := IsSQLite(filepath.Join(dir, name))
		if err != nil || got != want {
			t.Errorf("IsSQLite(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
}
