package regress

import (
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/gradtune/gradtune/internal/testdb"
)

// night loads the newest run of a recorded night of all 55 committed
// entries on the H200: testdata/issue21/night-{a,b,c}.db.gz (2026-12-02;
// c with relu_bwd bf16 m=2048,n=8960 slowed by 5% and rows.json's
// layernorm_bwd f16 entry broken) and testdata/issue23/night-{1,2,3,slow,
// broken}.db.gz (2026-12-05, another machine; slow and broken plant one
// each), and testdata/issue23/nights-1205c-h200/night-{1..6,slow,broken}
// (2026-12-05, a third machine, 81 entries of six tables, after the
// defaults were set: slow plants 4.3% on nf4_gemm_bwd bf16
// m=8192,n=8960,k=1536, broken the same layernorm_bwd f16 entry).
func night(t *testing.T, name string) Side {
	t.Helper()
	db := testdb.Open(t, filepath.Join("..", "testdata", name+".db.gz"))
	defer db.Close()
	s, err := Load(db, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRealNights holds the gate's defaults to the recorded nights of three
// machines, every pair of one machine compared both ways: a pair of
// unplanted nights passes; a pair whose new night planted a slowdown or a
// broken entry fails on exactly that case; a planted night as the
// baseline fails nothing.
func TestRealNights(t *testing.T) {
	const slowed, broken = "relu_bwd bf16 m=2048,n=8960 regressed", "layernorm_bwd f16 m=2048,n=1536 failed"
	const slowedNF4 = "nf4_gemm_bwd bf16 m=8192,n=8960,k=1536 regressed"
	const third = "issue23/nights-1205c-h200/"
	plants := map[string][]string{
		"issue21/night-c":      {broken, slowed},
		"issue23/night-slow":   {slowed},
		"issue23/night-broken": {broken},
		third + "night-slow":   {slowedNF4},
		third + "night-broken": {broken},
	}
	for _, machine := range [][]string{
		{"issue21/night-a", "issue21/night-b", "issue21/night-c"},
		{"issue23/night-1", "issue23/night-2", "issue23/night-3", "issue23/night-slow", "issue23/night-broken"},
		{third + "night-1", third + "night-2", third + "night-3", third + "night-4", third + "night-5", third + "night-6",
			third + "night-slow", third + "night-broken"},
	} {
		sides := map[string]Side{}
		for _, n := range machine {
			sides[n] = night(t, n)
		}
		for _, base := range machine {
			for _, cur := range machine {
				if base != cur {
					checkNight(t, sides[base], sides[cur], base, cur, plants[cur])
				}
			}
		}
	}
}

// checkNight compares night cur with night base and wants the gate to fail
// on the cases want names ("kernel dtype dims verdict", sorted), no other.
func checkNight(t *testing.T, base, cur Side, baseName, curName string, want []string) {
	t.Helper()
	rep, err := Compare(base, cur, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Failed() {
		got = append(got, r.Key()+" "+string(r.Verdict))
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s against %s: the gate fails on %q, want %q", curName, baseName, got, want)
	}
	largest, shift := 0.0, 0.0
	for _, r := range rep.Rows {
		if r.Verdict == Unchanged && r.Change > largest {
			largest = r.Change
		}
		if r.Verdict == Unchanged && r.Change*r.BaseMedian > shift {
			shift = r.Change * r.BaseMedian
		}
	}
	t.Logf("%s against %s: drift %+.2f%%, largest unchanged slowdown %+.2f%%, %.2f µs; failing %q", curName, baseName, 100*rep.Drift, 100*largest, shift, got)
}
