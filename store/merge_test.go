package store

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/eval"
)

// mergeFixture writes a database at path with one finished run per host
// started at the given minutes past a fixed time, each with an
// evaluation of two shapes (the second recorded twice, as a retry
// records it), a winner per shape and, in the second run on, telemetry.
func mergeFixture(t *testing.T, path string, hosts []string, minutes []int) {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, host := range hosts {
		r := Run{Started: time.Date(2026, 12, 1, 10, minutes[i], 0, 123456789, time.UTC), Host: host, GPUName: "NVIDIA H200",
			GPUUUID: "GPU-a", CC: "9.0", Driver: "580.1", ToolVersion: "v1", Args: "tune --kernel relu_bwd"}
		if i > 0 {
			r.Telemetry = "SM 1980 MHz"
		}
		run, err := db.BeginRun(r)
		if err != nil {
			t.Fatal(err)
		}
		for j, shape := range []string{"n=8,dtype=f32", "n=16,dtype=f32"} {
			k := baseKey
			k.ShapeKey = shape
			for rep := 0; rep <= j; rep++ {
				e := okEval(k, float64(10*(i+1)+j+rep))
				e.Created = r.Started.Add(time.Duration(j*10+rep) * time.Second)
				mustRecord(t, db, run, e)
			}
			got, _, err := db.Done(k)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.SetWinner(Winner{RunID: run, Kernel: k.Kernel, ShapeKey: shape, VariantID: got.VariantID, MedianUS: got.MedianUS, Rule: "fastest"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.FinishRun(run, RunOK, 3000); err != nil {
			t.Fatal(err)
		}
	}
}

// dump lists every run, evaluation and winner of the database at path by
// content, ids left out (evaluations and winners name their run by its
// identity), sorted.
func dump(t *testing.T, path string) []string {
	t.Helper()
	db, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	ident := map[int64]string{}
	var out []string
	for _, r := range runs {
		ident[r.ID] = fmt.Sprint(runIdentity(r))
		r.ID = 0
		out = append(out, fmt.Sprintf("run %+v", r))
	}
	es, err := db.Evaluations(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		run := ident[e.RunID]
		e.ID, e.RunID, e.VariantID = 0, 0, 0
		out = append(out, fmt.Sprintf("evaluation %s %+v", run, e))
	}
	ws, err := db.Winners(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		run := ident[w.RunID]
		w.RunID, w.VariantID = 0, 0
		out = append(out, fmt.Sprintf("winner %s %+v", run, w))
	}
	slices.Sort(out)
	return out
}

// mergeFiles opens inputs read-only and merges them into out.
func mergeFiles(t *testing.T, out string, inputs ...string) (*MergeReport, error) {
	t.Helper()
	var srcs []*DB
	for _, in := range inputs {
		db, err := OpenReadOnly(in)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		srcs = append(srcs, db)
	}
	return MergeInto(out, srcs)
}

func mustMerge(t *testing.T, out string, inputs ...string) *MergeReport {
	t.Helper()
	rep, err := mergeFiles(t, out, inputs...)
	if err != nil {
		t.Fatalf("merge %v into %s: %v", inputs, out, err)
	}
	return rep
}

func union(t *testing.T, paths ...string) []string {
	var all []string
	for _, p := range paths {
		all = append(all, dump(t, p)...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// TestMergeTwoThenAgain: the merge of two databases holds every row of
// each; merging either input, or both, into it again adds nothing; a new
// output from the output and an input is the same.
func TestMergeTwoThenAgain(t *testing.T) {
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "all.db")
	mergeFixture(t, a, []string{"h1", "h2"}, []int{0, 20})
	mergeFixture(t, b, []string{"h3"}, []int{10})
	rep := mustMerge(t, out, a, b)
	want := MergeStats{Path: a, Runs: MergeCount{Read: 2, Added: 2}, Evaluations: MergeCount{Read: 6, Added: 6}, Winners: MergeCount{Read: 4, Added: 4}}
	if rep.Sources[0] != want || len(rep.Conflicts) != 0 {
		t.Errorf("first source: %+v, conflicts %v; want %+v", rep.Sources[0], rep.Conflicts, want)
	}
	if got := dump(t, out); !slices.Equal(got, union(t, a, b)) {
		t.Errorf("merge holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(union(t, a, b), "\n"))
	}
	if runs := runsOf(t, out); runs[0].Host != "h1" || runs[1].Host != "h3" || runs[2].Host != "h2" {
		t.Errorf("runs not numbered by start: %v, %v, %v", runs[0].Host, runs[1].Host, runs[2].Host)
	}
	before := dump(t, out)
	rep = mustMerge(t, out, b, a)
	for i, s := range rep.Sources[1:] {
		if s.Runs.Added+s.Evaluations.Added+s.Winners.Added != 0 || s.Evaluations.Present != s.Evaluations.Read {
			t.Errorf("again, source %d: %+v", i, s)
		}
	}
	if rep.Sources[0].Path != out || len(rep.Superseded) != 0 {
		t.Errorf("again: first source %s (want the output), superseded %v", rep.Sources[0].Path, rep.Superseded)
	}
	if got := dump(t, out); !slices.Equal(got, before) {
		t.Errorf("merging the inputs again changed the output")
	}
	out2 := filepath.Join(dir, "all2.db")
	mustMerge(t, out2, out, a)
	if got := dump(t, out2); !slices.Equal(got, before) {
		t.Errorf("the output merged with an input differs from the output")
	}
	if es, _ := os.ReadDir(dir); len(es) != 4 {
		t.Errorf("%d files in the directory, want a, b, all and all2 (no temporary file left)", len(es))
	}
}

func runsOf(t *testing.T, path string) []Run {
	t.Helper()
	db, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestMergeRecorded: the recorded databases (schema 1, and one at schema
// 2 whose run records some keys more than once) merge with every
// evaluation, sample and winner of each, columns of schema 2 still NULL.
func TestMergeRecorded(t *testing.T) {
	act := filepath.Join("..", "testdata", "h200-activations.db")
	gemm := filepath.Join("..", "testdata", "issue21", "h200-gemm.db")
	out := filepath.Join(t.TempDir(), "all.db")
	rep := mustMerge(t, out, act, gemm)
	if len(rep.Conflicts) != 0 {
		t.Fatalf("conflicts: %v", rep.Conflicts)
	}
	if got, want := dump(t, out), union(t, act, gemm); !slices.Equal(got, want) {
		t.Fatalf("merge holds %d rows, the inputs %d", len(got), len(want))
	}
	db, err := OpenReadOnly(out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		table string
		want  int
	}{{"runs", 2}, {"evaluations", 3888 + 1021}, {"winners", 18 + 16},
		{"evaluations WHERE samples_json IS NOT NULL", countRows(t, act, "evaluations WHERE samples_json IS NOT NULL") + countRows(t, gemm, "evaluations WHERE samples_json IS NOT NULL")}} {
		if n := countRows(t, out, c.table); n != c.want {
			t.Errorf("%s: %d rows, want %d", c.table, n, c.want)
		}
	}
	if n := countRows(t, out, "evaluations WHERE throttle_reasons IS NOT NULL OR warnings IS NOT NULL"); n != countRows(t, gemm, "evaluations WHERE throttle_reasons IS NOT NULL OR warnings IS NOT NULL") {
		t.Errorf("%d evaluations with schema 2 columns, want the gemm database's", n)
	}
}

// countRows counts the rows of a table (and a WHERE clause) of path.
func countRows(t *testing.T, path, table string) int {
	t.Helper()
	db, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.sql.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMergeShards: a recorded database split by shape into two copies
// merges back to the whole: the same rows, the same winners and the same
// best evaluation per shape.
func TestMergeShards(t *testing.T) {
	dir := t.TempDir()
	whole := filepath.Join("..", "testdata", "h200-activations.db")
	shards := []string{filepath.Join(dir, "s0.db"), filepath.Join(dir, "s1.db")}
	for i, s := range shards {
		copyFile(t, whole, s)
		execRaw(t, s, fmt.Sprintf(`CREATE TEMP TABLE half AS SELECT shape_key, row_number() OVER (ORDER BY shape_key) %% 2 AS h
				FROM (SELECT DISTINCT shape_key FROM variants);
			DELETE FROM winners WHERE shape_key IN (SELECT shape_key FROM half WHERE h = %d);
			DELETE FROM evaluations WHERE variant_id IN (SELECT v.id FROM variants v JOIN half USING (shape_key) WHERE h = %d)`, i, i))
	}
	if a, b := countRows(t, shards[0], "evaluations"), countRows(t, shards[1], "evaluations"); a == 0 || b == 0 || a+b != 3888 {
		t.Fatalf("shards of %d and %d evaluations", a, b)
	}
	out := filepath.Join(dir, "all.db")
	mustMerge(t, out, shards...)
	if got, want := dump(t, out), dump(t, whole); !slices.Equal(got, want) {
		t.Errorf("the merged shards hold %d rows, the whole %d", len(got), len(want))
	}
	wantW, gotW := winnersOf(t, whole), winnersOf(t, out)
	if !slices.Equal(gotW, wantW) || len(wantW) != 18 {
		t.Errorf("winners of the shards\n%s\nwant\n%s", strings.Join(gotW, "\n"), strings.Join(wantW, "\n"))
	}
}

// winnersOf lists the winners of path with the best evaluation of their
// shape, ids left out.
func winnersOf(t *testing.T, path string) []string {
	t.Helper()
	db, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ws, err := db.Winners(0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, w := range ws {
		r, err := db.Run(w.RunID)
		if err != nil {
			t.Fatal(err)
		}
		best, ok, err := db.Best(w.Kernel, w.ShapeKey, r.GPUUUID, eval.Cold)
		if err != nil || !ok {
			t.Fatalf("best of %s %s: %v, %v", w.Kernel, w.ShapeKey, ok, err)
		}
		w.VariantID, w.RunID = 0, 0
		out = append(out, fmt.Sprintf("%+v best %s %g", w, best.Key.Params, best.MedianUS))
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// execRaw runs statements on the file at path as plain SQLite, leaving
// no -wal file behind.
func execRaw(t *testing.T, path, stmts string) {
	t.Helper()
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(stmts); err != nil {
		t.Fatalf("%s: %v", stmts, err)
	}
}

// TestMergeConflict: the same evaluation (run and key) with other samples
// and median, and the same run's winner with another median, are
// conflicts: reported, named, and nothing is written.
func TestMergeConflict(t *testing.T) {
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "all.db")
	mergeFixture(t, a, []string{"h1"}, []int{0})
	copyFile(t, a, b)
	execRaw(t, b, `UPDATE evaluations SET median_us = 99, samples_json = '[99,99,99]' WHERE id = 2;
		UPDATE winners SET median_us = 98 WHERE shape_key = 'n=8,dtype=f32'`)
	rep, err := mergeFiles(t, out, a, b)
	if !errors.Is(err, ErrMergeConflict) || rep == nil || len(rep.Conflicts) != 2 {
		t.Fatalf("err %v, report %+v; want ErrMergeConflict and 2 conflicts", err, rep)
	}
	c := rep.Conflicts[0]
	for _, want := range []string{b, "run started 2026-12-01T10:00:00.123456789Z", "evaluation relu_bwd n=16,dtype=f32", "(#1)",
		"samples_json \"[11,12,10.5]\" in the output, \"[99,99,99]\" in the source", "median_us 11 in the output, 99 in the source"} {
		if !strings.Contains(c.String(), want) {
			t.Errorf("conflict %q lacks %q", c, want)
		}
	}
	if s := rep.Sources[1]; s.Evaluations.Conflicting != 1 || s.Evaluations.Present != 2 || s.Winners.Conflicting != 1 {
		t.Errorf("source b: %+v", s)
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("%d files, want a.db and b.db alone", len(es))
	}
}

// TestMergeSnapshots: a copy of a run taken while it ran, merged with the
// finished run in either order, gives the finished run: its state, every
// evaluation, its winners; not a conflict.
func TestMergeSnapshots(t *testing.T) {
	dir := t.TempDir()
	done, early := filepath.Join(dir, "done.db"), filepath.Join(dir, "early.db")
	mergeFixture(t, done, []string{"h1"}, []int{0})
	copyFile(t, done, early)
	execRaw(t, early, `UPDATE runs SET status = 'running', finished = NULL, copy_gbps = NULL;
		DELETE FROM evaluations WHERE id = 3; UPDATE winners SET median_us = 50 WHERE shape_key = 'n=16,dtype=f32'`)
	for _, order := range [][]string{{early, done}, {done, early}} {
		out := filepath.Join(dir, filepath.Base(order[0])+"-first.db")
		rep := mustMerge(t, out, order...)
		if got := dump(t, out); !slices.Equal(got, dump(t, done)) {
			t.Errorf("%s first: the merge differs from the finished run", order[0])
		}
		s := rep.Sources[1]
		if order[0] == early && (s.Runs.Updated != 1 || s.Evaluations.Added != 1 || s.Winners.Updated != 1) {
			t.Errorf("the finished run after the early copy: %+v", s)
		}
		if order[0] == done && (s.Runs.Present != 1 || s.Evaluations.Present != 2 || s.Winners.Present != 2) {
			t.Errorf("the early copy after the finished run: %+v", s)
		}
	}
}

// TestMergeSuperseded: winners of one kernel, shape, GPU and mode from
// runs of different inputs are no conflict; the report names the newest.
func TestMergeSuperseded(t *testing.T) {
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "all.db")
	mergeFixture(t, a, []string{"h1", "h2"}, []int{0, 5})
	mergeFixture(t, b, []string{"h3"}, []int{10})
	rep := mustMerge(t, out, b, a)
	if len(rep.Superseded) != 2 || len(rep.Conflicts) != 0 {
		t.Fatalf("superseded %+v, conflicts %v; want the two shapes", rep.Superseded, rep.Conflicts)
	}
	s := rep.Superseded[0]
	if s.Runs != 3 || s.NewestRun != 3 || !slices.Equal(s.NewestFrom, []string{b}) || s.Mode != "cold" || s.NewestStarted.Minute() != 10 {
		t.Errorf("superseded %+v, want 3 runs, the newest (3) from b.db", s)
	}
	rep = mustMerge(t, filepath.Join(dir, "a2.db"), a)
	if len(rep.Superseded) != 0 {
		t.Errorf("one input's own runs reported: %+v", rep.Superseded)
	}
}

// TestMergeOutputChecks: the output may be a new file or a gradtune
// database, never an input (by any path that reaches it), a directory,
// another file, or a database being written.
func TestMergeOutputChecks(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.db")
	mergeFixture(t, a, []string{"h1"}, []int{0})
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	busy := filepath.Join(dir, "busy.db")
	copyFile(t, a, busy)
	if err := os.WriteFile(busy+"-wal", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc.db")
	b, _ := os.ReadFile(a)
	if err := os.WriteFile(trunc, b[:len(b)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		out, want string
		is        error
	}{
		{a, "is the input " + a, nil},
		{filepath.Join(dir, "..", filepath.Base(dir), "a.db"), "is the input " + a, nil},
		{link, "is the input " + a + " (the same file)", nil},
		{dir, "not a gradtune database: it is a directory", ErrNotDatabase},
		{notes, "not a gradtune database (the file is not an SQLite database", ErrNotDatabase},
		{busy, busy + "-wal exists", nil},
		{trunc, "database disk image is malformed", ErrDamaged},
		{filepath.Join(dir, "no", "x.db"), "directory " + filepath.Join(dir, "no"), nil},
	} {
		_, err := CheckMergeOutput(c.out, []string{a})
		if !errors.Is(err, ErrMergeOutput) || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("CheckMergeOutput(%s) = %v, want ErrMergeOutput and %q", c.out, err, c.want)
		}
	}
	if existing, err := CheckMergeOutput(filepath.Join(dir, "new.db"), []string{a}); existing || err != nil {
		t.Errorf("a new file: %v, %v", existing, err)
	}
	if existing, err := CheckMergeOutput(a, nil); !existing || err != nil {
		t.Errorf("a gradtune database: %v, %v; want it merged into", existing, err)
	}
}
