package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRegressOnRecordedH200 replays the gate on the H200 nights recorded
// by bench/issue14_h200.sh: the A/A pair passes, and the night with a
// planted 5% slowdown fails naming that case alone.
func TestRegressOnRecordedH200(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "nightly")
	a, b, c := filepath.Join(dir, "issue14-a.db"), filepath.Join(dir, "issue14-b.db"), filepath.Join(dir, "issue14-c.db")
	if code, out, errs := runTune(t, "regress", "--baseline", a, "--db", b); code != 0 || !strings.Contains(out, "0 regressed, 0 failed, 0 missing") {
		t.Errorf("A/A: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runTune(t, "regress", "--baseline", a, "--db", c)
	const planted = "lp_pool1d_bwd f64 n=32,c=256,l=4096,window=4,stride=2,p=2 regressed"
	if code != 1 || !strings.Contains(errs, "1 of 31 cases: "+planted) || !strings.Contains(out, "1 regressed, 0 failed, 0 missing") {
		t.Errorf("planted: exit %d\n%s%s", code, out, errs)
	}
}
