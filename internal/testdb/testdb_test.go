package testdb

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// TestGunzipRoundTrip: Gunzip gives back the bytes gzip packed, named as
// the file less .gz, beside nothing of the original.
func TestGunzipRoundTrip(t *testing.T) {
	want := bytes.Repeat([]byte("gradtune "), 1000)
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(want)
	zw.Close()
	path := filepath.Join(t.TempDir(), "night.db.gz")
	if err := os.WriteFile(path, b.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	out := Gunzip(t, path)
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, want) || filepath.Base(out) != "night.db" || filepath.Dir(out) == filepath.Dir(path) {
		t.Fatalf("Gunzip = %s (%d bytes, %v), want night.db in its own directory with %d bytes", out, len(got), err, len(want))
	}
}
