package regress

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/gradtune/gradtune/store"
)

// night loads the newest run of testdata/issue21/night-NAME.db.gz, one of
// the three real nights of all 55 committed entries on the H200 (c with
// relu_bwd bf16 m=2048,n=8960 slowed by 5% and rows.json's layernorm_bwd
// f16 entry broken).
func night(t *testing.T, name string) Side {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "issue21", "night-"+name+".db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "night-"+name+".db")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	out.Close()
	db, err := store.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := Load(db, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRealNights holds the gate's defaults to the three recorded nights,
// compared both ways: the A/A pair passes, and a pair with night c fails
// on exactly what c planted (the slowed case regressed, the broken one
// failed) when c is the new run, and on nothing when c is the baseline.
func TestRealNights(t *testing.T) {
	n := map[string]Side{"a": night(t, "a"), "b": night(t, "b"), "c": night(t, "c")}
	const slowed, broken = "relu_bwd bf16 m=2048,n=8960", "layernorm_bwd f16 m=2048,n=1536"
	for _, c := range []struct {
		base, cur string
		want      []string
	}{
		{"a", "b", nil}, {"b", "a", nil},
		{"a", "c", []string{broken + " failed", slowed + " regressed"}},
		{"b", "c", []string{broken + " failed", slowed + " regressed"}},
		{"c", "a", nil}, {"c", "b", nil},
	} {
		rep, err := Compare(n[c.base], n[c.cur], DefaultOptions)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rep.Failed() {
			got = append(got, r.Key()+" "+string(r.Verdict))
		}
		sort.Strings(got)
		if len(got) != len(c.want) || len(got) > 0 && (got[0] != c.want[0] || got[1] != c.want[1]) {
			t.Errorf("night %s against %s: the gate fails on %q, want %q", c.cur, c.base, got, c.want)
		}
		largest := 0.0
		for _, r := range rep.Rows {
			if r.Verdict == Unchanged && r.Change > largest {
				largest = r.Change
			}
		}
		t.Logf("night %s against %s: drift %+.2f%%, largest unchanged slowdown %+.2f%%, failing %q", c.cur, c.base, 100*rep.Drift, 100*largest, got)
	}
}
