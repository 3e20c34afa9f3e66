package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
)

// replayBench runs tune bench on the activations table, answered from the
// recorded H200 database, into a new database in dir.
func replayBench(t *testing.T, dir, name, seed string, extra ...string) string {
	t.Helper()
	db := filepath.Join(dir, name)
	args := append([]string{"bench", "--configs", filepath.Join("..", "..", "configs", "h200", "activations.json"),
		"--replay", filepath.Join("..", "..", "testdata", "h200-activations.db"), "--db", db, "--seed", seed}, extra...)
	code, out, errs := runResults(args...)
	if code != 0 || !strings.Contains(out, "relu_bwd") || !strings.Contains(out, "no telemetry: replaying") {
		t.Fatalf("bench %v: exit %d\n%s\n%s", extra, code, out, errs)
	}
	return db
}

// TestGateOnReplays: bench re-measures the table's 18 cases (tuned and
// baseline) into a run; an A/A pair passes the gate, a planted 5%
// slowdown fails it with exit 1 naming the case, and both outputs read.
func TestGateOnReplays(t *testing.T) {
	dir := t.TempDir()
	a := replayBench(t, dir, "a.db", "1")
	b := replayBench(t, dir, "b.db", "2")
	c := replayBench(t, dir, "c.db", "3", "--plant-slowdown", "relu_bwd f32 m=2048,n=8960=5%")

	code, out, errs := runResults("runs", "--db", a)
	if code != 0 || !strings.Contains(out, "evaluations: 36 (ok 36)") || !strings.Contains(out, "winners: 18") {
		t.Errorf("runs: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runResults("regress", "--baseline", a, "--db", b+":1")
	if code != 0 || !strings.Contains(out, "0 regressed, 0 failed, 0 missing") || !strings.Contains(out, "| ~ | relu_bwd | f32 | m=2048,n=8960 |") {
		t.Errorf("A/A: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runResults("regress", "--baseline", a, "--db", c)
	if code != 1 || !strings.Contains(out, "| **regressed** | relu_bwd | f32 | m=2048,n=8960 |") ||
		!strings.Contains(errs, "1 of 18 cases: relu_bwd f32 m=2048,n=8960 regressed +5.") {
		t.Errorf("planted: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runResults("regress", "--baseline", a, "--db", c, "--format", "bench")
	if code != 1 || !strings.Contains(out, "run: baseline\n") || !strings.Contains(out, "run: new\n") ||
		!strings.Contains(out, "BenchmarkRelu_bwd/m=2048/n=8960/dtype=f32 1 ") {
		t.Errorf("bench format: exit %d\n%.600s", code, out)
	}
	code, _, errs = runResults("regress", "--baseline", a, "--db", c, "--threshold", "10%")
	if code != 0 {
		t.Errorf("a 5%% slowdown failed a 10%% gate: %s", errs)
	}
}

// TestGateBadInput: every wrong input exits 2, names what is accepted,
// and creates or changes no file.
func TestGateBadInput(t *testing.T) {
	dir := t.TempDir()
	a := replayBench(t, dir, "a.db", "1")
	pool := filepath.Join("..", "..", "testdata", "h200-pool.db")
	notJSON := filepath.Join(dir, "table.json")
	os.WriteFile(notJSON, []byte("{not json"), 0o644)
	table := filepath.Join("..", "..", "configs", "h200", "activations.json")
	fresh := filepath.Join(dir, "fresh.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"regress"}, "regress needs --baseline"},
		{[]string{"regress", "--baseline", a}, "regress needs --baseline"},
		{[]string{"regress", "--baseline", filepath.Join(dir, "none.db"), "--db", a}, "no database file"},
		{[]string{"regress", "--baseline", a + ":9", "--db", a}, "no run with id"},
		{[]string{"regress", "--baseline", a + ":x", "--db", a}, "must be a run id"},
		{[]string{"regress", "--baseline", pool, "--db", a}, "share no kernel and shape"},
		{[]string{"regress", "--baseline", a, "--db", a, "--threshold", "two"}, "want a percentage"},
		{[]string{"regress", "--baseline", a, "--db", a, "--alpha", "2"}, "want a level between 0 and 1"},
		{[]string{"regress", "--baseline", a, "--db", a, "--format", "csv"}, "want markdown or bench"},
		{[]string{"bench", "--db", fresh}, "bench needs --configs"},
		{[]string{"bench", "--db", fresh, "--configs", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"bench", "--db", fresh, "--configs", notJSON}, "malformed config table"},
		{[]string{"bench", "--db", fresh, "--configs", table, "--kernel", "softmax_bwd"}, "no entry of the tables matches"},
		{[]string{"bench", "--db", fresh, "--configs", table, "--plant-slowdown", "relu_bwd f32 m=1,n=1=5%"}, "no selected case is"},
		{[]string{"bench", "--db", fresh, "--configs", table, "--plant-slowdown", "relu_bwd f32 m=2048,n=8960=0%"}, "percentage in (0, 100]"},
		{[]string{"bench", "--db", notJSON, "--configs", table, "--replay", pool}, "not an SQLite database"},
		{[]string{"runs", "--db", filepath.Join(dir, "none.db")}, "no database file"},
	} {
		code, _, errs := runResults(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a refused bench created its database")
	}
	if b, _ := os.ReadFile(notJSON); string(b) != "{not json" {
		t.Error("a refused bench changed a file")
	}
}

// TestGateFailedCases: an entry made to fail (its recorded samples
// removed from the replayed database) is listed at the end of bench with
// why, and bench exits 1; regress fails the gate naming it, whether the
// baseline had it or it failed in both runs; a run compared with itself
// is a usage error.
func TestGateFailedCases(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken-replay.db")
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "h200-activations.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, data, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", broken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`DELETE FROM evaluations WHERE variant_id IN
		(SELECT id FROM variants WHERE kernel = 'relu_bwd' AND shape_key = 'm=2048,n=8960,dtype=f32')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	bench := func(name, seed string) (string, string) {
		db := filepath.Join(dir, name)
		code, out, errs := runResults("bench", "--configs", filepath.Join("..", "..", "configs", "h200", "activations.json"),
			"--replay", broken, "--db", db, "--seed", seed)
		why := "relu_bwd f32 m=2048,n=8960: [" + tableParams(t, "activations.json", "relu_bwd", "f32", "m=2048,n=8960") + "] launch_error: replay: nothing recorded"
		if code != 1 || !strings.Contains(out, "failed (no valid result in run 1):\n  "+why) ||
			!strings.Contains(errs, "1 of 18 entries have no valid result in run 1 of "+db) {
			t.Fatalf("bench with a failing entry: exit %d\n%s\n%s", code, out, errs)
		}
		return db, out
	}
	good := replayBench(t, dir, "good.db", "1")
	f1, _ := bench("f1.db", "2")
	f2, _ := bench("f2.db", "3")
	for _, pair := range [][2]string{{good, f1}, {f1, f2}} {
		code, out, errs := runResults("regress", "--baseline", pair[0], "--db", pair[1])
		if code != 1 || !strings.Contains(out, "| **failed** | relu_bwd | f32 | m=2048,n=8960 |") ||
			!strings.Contains(out, "0 regressed, 1 failed, 0 missing") ||
			!strings.Contains(errs, "1 of 18 cases: relu_bwd f32 m=2048,n=8960 failed (no valid result in the new run: [") {
			t.Errorf("regress %s %s: exit %d\n%s%s", filepath.Base(pair[0]), filepath.Base(pair[1]), code, out, errs)
		}
	}
	code, out, errs := runResults("regress", "--baseline", f1, "--db", good)
	if code != 0 || !strings.Contains(out, "| new | relu_bwd | f32 | m=2048,n=8960 |") || !strings.Contains(out, "relu_bwd f32 m=2048,n=8960, baseline: [") {
		t.Errorf("regress from a failed case to a valid one: exit %d\n%s%s", code, out, errs)
	}
	cp := filepath.Join(dir, "copy.db")
	if b, err := os.ReadFile(good); err != nil || os.WriteFile(cp, b, 0o644) != nil {
		t.Fatal(err)
	}
	for _, db := range []string{good, good + ":1", cp} {
		code, _, errs := runResults("regress", "--baseline", good, "--db", db)
		if code != 2 || !strings.Contains(errs, "a run compared with itself") {
			t.Errorf("regress %s against %s: exit %d, %q; want 2, a run compared with itself", good, db, code, errs)
		}
	}
}

// tableParams is the params of one entry of a committed table under
// configs/h200.
func tableParams(t *testing.T, table, kernel, dt, shape string) string {
	t.Helper()
	set, err := configs.LoadFiles(filepath.Join("..", "..", "configs", "h200", table))
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range set.Tables {
		for _, e := range tb.Entries {
			if e.Kernel == kernel && e.DType == dt && e.Shape == shape {
				return e.Params
			}
		}
	}
	t.Fatalf("%s has no entry %s %s %s", table, kernel, dt, shape)
	return ""
}
