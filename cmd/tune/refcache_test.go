package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tune's workers keep references in a folder of their own for the run
// (removed after it) unless --ref-cache names one, which stays; bench
// keeps none unless asked.
func TestRefCacheOf(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	parse := func(c *command, args ...string) *flagSet {
		fs, err := c.parse(args)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	dir, done, err := refCacheOf(parse(tuneCommand()), true)
	if err != nil || !strings.HasPrefix(dir, filepath.Join(tmp, "gradtune-refs-")) {
		t.Fatalf("temporary cache %q, %v: want a folder under %s", dir, err, tmp)
	}
	if _, err := os.Stat(filepath.Join(dir, "last-shape-only")); err != nil {
		t.Fatalf("temporary cache not made to keep one shape: %v", err)
	}
	done()
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the temporary cache was left behind: %v", left)
	}

	kept := filepath.Join(t.TempDir(), "refs")
	dir, done, err = refCacheOf(parse(tuneCommand(), "--ref-cache", kept), true)
	if err != nil || filepath.Dir(dir) != kept {
		t.Fatalf("--ref-cache %s: folder %q, %v", kept, dir, err)
	}
	done()
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("a named cache must outlive the run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "last-shape-only")); err == nil {
		t.Errorf("a named cache keeps every shape's references")
	}

	if dir, _, err := refCacheOf(parse(benchCommand()), false); dir != "" || err != nil {
		t.Errorf("bench without --ref-cache: %q, %v; want no cache", dir, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, _, err := refCacheOf(parse(benchCommand(), "--ref-cache", file), false); err == nil || !strings.Contains(err.Error(), "--ref-cache "+file) {
		t.Errorf("a file as --ref-cache: %v; want a usage error naming it", err)
	}
}
