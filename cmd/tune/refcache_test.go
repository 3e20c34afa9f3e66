package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tune's workers keep references in a folder of their own per GPU for the
// run (removed after it) unless --ref-cache names one, shared and kept;
// bench keeps none unless asked.
func TestRefCaches(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	parse := func(c *command, args ...string) *flagSet {
		fs, err := c.parse(args)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	dirs, done, err := refCaches(parse(tuneCommand()), []int{0, 3}, true)
	if err != nil || len(dirs) != 2 || dirs[0] == dirs[3] {
		t.Fatalf("temporary caches %v, %v: want one folder per GPU", dirs, err)
	}
	for d, dir := range dirs {
		if !strings.HasPrefix(dir, filepath.Join(tmp, "gradtune-refs-")) {
			t.Errorf("GPU %d's cache %s is not under %s", d, dir, tmp)
		}
		if _, err := os.Stat(filepath.Join(dir, "last-shape-only")); err != nil {
			t.Errorf("GPU %d's temporary cache not made to keep one shape: %v", d, err)
		}
	}
	done()
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the temporary caches were left behind: %v", left)
	}

	kept := filepath.Join(t.TempDir(), "refs")
	dirs, done, err = refCaches(parse(tuneCommand(), "--ref-cache", kept), []int{0, 1}, true)
	if err != nil || filepath.Dir(dirs[0]) != kept || dirs[1] != dirs[0] {
		t.Fatalf("--ref-cache %s: folders %v, %v; want one shared folder in it", kept, dirs, err)
	}
	done()
	if _, err := os.Stat(dirs[0]); err != nil {
		t.Errorf("a named cache must outlive the run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "last-shape-only")); err == nil {
		t.Errorf("a named cache keeps every shape's references")
	}

	if dirs, _, err := refCaches(parse(benchCommand()), []int{0}, false); len(dirs) != 0 || err != nil {
		t.Errorf("bench without --ref-cache: %v, %v; want no cache", dirs, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, _, err := refCaches(parse(benchCommand(), "--ref-cache", file), []int{0}, false); err == nil || !strings.Contains(err.Error(), "--ref-cache "+file) {
		t.Errorf("a file as --ref-cache: %v; want a usage error naming it", err)
	}
}
