package ptxtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Golden compares got with the file testdata/name, or, with update (the
// tests' -update flag), writes got there instead.
func Golden(t testing.TB, update bool, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v (go test -update creates it)", err)
		return
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it); got:\n%s", path, got)
	}
}
