package runner_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

// countingSum is sumFamily counting its Reference calls.
type countingSum struct {
	*sumFamily
	calls int
}

func (f *countingSum) Reference(s variants.Shape, in map[string][]float64) map[string][]float64 {
	f.calls++
	return f.sumFamily.Reference(s, in)
}

// validateCached validates f's program at seed on a fresh interpreter
// session that uses c.
func validateCached(t *testing.T, f *countingSum, c *runner.RefCache, seed uint64) runner.Check {
	t.Helper()
	check, _ := sessionCheck(t, f, seed, func(ss *runner.Session) error { ss.UseRefCache(c); return nil })
	return check
}

// TestRefCache: a session that uses the cache computes the references of
// both input sets once; a later session (as a later process of the same
// binary would) reads them and validates exactly as before, the bug that
// only the exact set catches included. Another seed is computed afresh,
// and so is an entry found damaged, which is then written again.
func TestRefCache(t *testing.T) {
	dir := t.TempDir()
	c, err := runner.OpenRefCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	good := &countingSum{sumFamily: &sumFamily{rows: 100, l: 1024, skip: -1}}
	first := validateCached(t, good, c, 1)
	if !first.OK || len(first.Sets) != 2 || good.calls != 2 {
		t.Fatalf("first session: %d Reference calls, check %+v; want 2 and both sets valid", good.calls, first)
	}
	worker := runner.RefCacheIn(c.Dir()) // the cache as tune hands it to its worker process
	if again := validateCached(t, good, worker, 1); good.calls != 2 || !reflect.DeepEqual(again, first) {
		t.Errorf("second session: %d Reference calls (want 2), check %+v, first %+v", good.calls, again, first)
	}
	bad := &countingSum{sumFamily: &sumFamily{rows: 100, l: 1024, skip: 517}}
	if ch := validateCached(t, bad, c, 1); bad.calls != 0 || ch.OK || !ch.Sets[0].OK || ch.Sets[1].OK {
		t.Errorf("index 517 left out, references from the cache: %d Reference calls, check %+v; want 0, the exact set failing", bad.calls, ch)
	}
	if validateCached(t, good, c, 2); good.calls != 4 {
		t.Errorf("another seed: %d Reference calls in all, want 4", good.calls)
	}

	files, err := filepath.Glob(filepath.Join(dir, "*", "*.ref"))
	if err != nil || len(files) != 4 {
		t.Fatalf("%d cache files (%v), want 4: two seeds, two sets", len(files), err)
	}
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(f, st.Size()-3); err != nil {
			t.Fatal(err)
		}
	}
	if ch := validateCached(t, good, c, 1); good.calls != 6 || !reflect.DeepEqual(ch, first) {
		t.Errorf("damaged entries: %d Reference calls in all (want 6), check %+v", good.calls, ch)
	}
	if validateCached(t, good, c, 1); good.calls != 6 {
		t.Errorf("entries written again: %d Reference calls in all, want 6", good.calls)
	}
}

// TestOpenRefCacheRefusesAFile: a cache directory that cannot be made is
// an error naming it.
func TestOpenRefCacheRefusesAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.OpenRefCache(filepath.Join(file, "refs")); err == nil {
		t.Error("a cache under a file opened")
	}
}

// TestOpenRefCacheKeepsOneExecutable: opening a cache removes another
// executable's folder of references and nothing else.
func TestOpenRefCacheKeepsOneExecutable(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, strings.Repeat("ab", 32))
	mine := filepath.Join(dir, "notes")
	for _, d := range []string{other, mine} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "x.ref"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runner.OpenRefCache(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("another executable's folder is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(mine, "x.ref")); err != nil {
		t.Errorf("a folder the cache does not own was touched: %v", err)
	}
}

// TestRefCacheKeepsLastShape: a run's own cache holds one shape's
// references (both input sets), in the process that marked it and in the
// processes given its folder; the shape in hand is still read back.
func TestRefCacheKeepsLastShape(t *testing.T) {
	dir := t.TempDir()
	c, err := runner.OpenRefCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.KeepLastShape(); err != nil {
		t.Fatal(err)
	}
	worker := runner.RefCacheIn(c.Dir())
	f := &countingSum{sumFamily: &sumFamily{rows: 100, l: 1024, skip: -1}}
	files := func() []string {
		m, _ := filepath.Glob(filepath.Join(c.Dir(), "*.ref"))
		return m
	}
	validateCached(t, f, worker, 1)
	first := files()
	if len(first) != 2 || f.calls != 2 {
		t.Fatalf("first shape: files %v, %d Reference calls; want both sets' 2", first, f.calls)
	}
	validateCached(t, f, worker, 2) // another seed: another entry, as another shape
	second := files()
	if len(second) != 2 || f.calls != 4 {
		t.Fatalf("second shape: files %v, %d Reference calls; want its own 2", second, f.calls)
	}
	for _, p := range first {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s of the first shape kept", filepath.Base(p))
		}
	}
	if validateCached(t, f, runner.RefCacheIn(c.Dir()), 2); f.calls != 4 {
		t.Errorf("the last shape again: %d Reference calls in all, want 4 (read back)", f.calls)
	}
	plain, err := runner.OpenRefCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	validateCached(t, f, plain, 1)
	validateCached(t, f, plain, 2)
	if m, _ := filepath.Glob(filepath.Join(plain.Dir(), "*.ref")); len(m) != 4 {
		t.Errorf("a named cache keeps every shape: %d files, want 4", len(m))
	}
}
