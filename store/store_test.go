package store

import (
	"bytes"
	"database/sql"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gradtune/gradtune/eval"
)

// openTemp opens a new database in a temporary directory and closes it when
// the test ends.
func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tune.db")
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func mustBeginRun(t *testing.T, db *DB) int64 {
	t.Helper()
	id, err := db.BeginRun(Run{Host: "h", GPUName: "NVIDIA H200", GPUUUID: "GPU-a", CC: "9.0", Driver: "580.1", ToolVersion: "v0", Args: "tune"})
	if err != nil {
		t.Fatalf("BeginRun: %v", err)
	}
	return id
}

func mustRecord(t *testing.T, db *DB, run int64, e Evaluation) int64 {
	t.Helper()
	id, err := db.Record(run, e)
	if err != nil {
		t.Fatalf("Record(%d, %v): %v", run, e.Key, err)
	}
	return id
}

var baseKey = Key{
	Kernel: "relu_bwd", ShapeKey: "n=4096/f32", Params: "block=256,vec=4",
	PTXSHA256: strings.Repeat("ab", 32), GPUUUID: "GPU-a", Driver: "580.1", Mode: "cold",
}

func okEval(k Key, median float64) Evaluation {
	return Evaluation{Key: k, Status: "ok", Registers: 16, Occupancy: 1, Samples: []float64{median, median + 1, median - 0.5},
		MedianUS: median, CILoUS: median - 0.5, CIHiUS: median + 1, MinUS: median - 0.5}
}

func pragmaInt(t *testing.T, db *DB, name string) int64 {
	t.Helper()
	var v int64
	if err := db.sql.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestOpenMigratesAndReopenIsIdempotent(t *testing.T) {
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	db, path := openTemp(t)
	if got := pragmaInt(t, db, "user_version"); got != int64(len(ms)) {
		t.Errorf("user_version = %d, want %d", got, len(ms))
	}
	if got := pragmaInt(t, db, "application_id"); got != applicationID {
		t.Errorf("application_id = %#x, want %#x", got, applicationID)
	}
	if got := pragmaInt(t, db, "foreign_keys"); got != 1 {
		t.Errorf("foreign_keys = %d, want 1", got)
	}
	if got := pragmaInt(t, db, "busy_timeout"); got <= 0 {
		t.Errorf("busy_timeout = %d, want > 0", got)
	}
	var mode string
	if err := db.sql.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q (%v), want wal", mode, err)
	}
	var schema1 string
	if err := db.sql.QueryRow("SELECT group_concat(sql, ';') FROM (SELECT sql FROM sqlite_master ORDER BY name)").Scan(&schema1); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"runs", "variants", "evaluations", "winners"} {
		if !strings.Contains(schema1, "CREATE TABLE "+table) {
			t.Errorf("schema lacks table %s", table)
		}
	}
	db.Close()

	for i := 0; i < 2; i++ {
		db2, err := Open(path)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		var schema2 string
		if err := db2.sql.QueryRow("SELECT group_concat(sql, ';') FROM (SELECT sql FROM sqlite_master ORDER BY name)").Scan(&schema2); err != nil {
			t.Fatal(err)
		}
		if schema2 != schema1 {
			t.Errorf("reopen %d changed the schema:\n%s\nwant\n%s", i, schema2, schema1)
		}
		if got := pragmaInt(t, db2, "user_version"); got != int64(len(ms)) {
			t.Errorf("reopen %d: user_version = %d, want %d", i, got, len(ms))
		}
		db2.Close()
	}
}

func TestOpenConcurrentlyOnNewFile(t *testing.T) {
	// Several handles (as several processes would) race to create and
	// migrate the same file; all must succeed.
	path := filepath.Join(t.TempDir(), "tune.db")
	var wg sync.WaitGroup
	errs := make([]error, 6)
	dbs := make([]*DB, len(errs))
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			dbs[i], errs[i] = Open(path)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		if _, err := dbs[i].BeginRun(Run{}); err != nil {
			t.Errorf("BeginRun on handle %d: %v", i, err)
		}
		dbs[i].Close()
	}
}

// closeOpened closes what an opener returned and passes its error on.
func closeOpened(db *DB, err error) error {
	if err == nil {
		db.Close()
	}
	return err
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	textContent := []byte("tune results, see tune.db\nline two\n")
	if err := os.WriteFile(text, textContent, 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.db")
	if err := os.WriteFile(short, []byte("SQL"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "other.sqlite")
	{
		odb, err := sql.Open("sqlite3", foreign)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := odb.Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')"); err != nil {
			t.Fatal(err)
		}
		odb.Close()
	}
	newer := filepath.Join(dir, "newer.db")
	{
		db, err := Open(newer)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.sql.Exec("PRAGMA user_version = 9999"); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}

	tests := []struct {
		name      string
		path      string
		is        error    // errors.Is target, or nil
		wantParts []string // substrings of the message
		unchanged bool     // the file's bytes must not change
	}{
		{"directory", dir, nil, []string{dir, "is a directory"}, false},
		{"text file", text, ErrNotDatabase, []string{text, "not a gradtune database", "not an SQLite database"}, true},
		{"short file", short, ErrNotDatabase, []string{short, "not a gradtune database"}, true},
		{"other sqlite database", foreign, ErrNotDatabase, []string{foreign, "not a gradtune database", "1 schema objects"}, true},
		{"newer schema", newer, ErrSchemaTooNew, []string{newer, "schema version 9999"}, true},
		{"missing directory", filepath.Join(dir, "nope", "tune.db"), nil, []string{"nope"}, false},
		{"empty path", "", nil, []string{"empty database path"}, false},
	}
	// Open, OpenReadOnly and Probe refuse the same paths alike.
	openers := []struct {
		name string
		open func(string) error
	}{
		{"Open", func(p string) error { return closeOpened(Open(p)) }},
		{"OpenReadOnly", func(p string) error { return closeOpened(OpenReadOnly(p)) }},
		{"Probe", Probe},
	}
	for _, tc := range tests {
		for _, o := range openers {
			t.Run(tc.name+"/"+o.name, func(t *testing.T) {
				var before []byte
				if tc.unchanged {
					var err error
					if before, err = os.ReadFile(tc.path); err != nil {
						t.Fatal(err)
					}
				}
				err := o.open(tc.path)
				if err == nil {
					t.Fatalf("%s(%q) succeeded, want an error", o.name, tc.path)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("%s(%q) = %v, want errors.Is %v", o.name, tc.path, err, tc.is)
				}
				for _, p := range tc.wantParts {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("%s(%q) error %q does not mention %q", o.name, tc.path, err, p)
					}
				}
				if tc.unchanged {
					after, err := os.ReadFile(tc.path)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(before, after) {
						t.Errorf("%s(%q) changed the file", o.name, tc.path)
					}
				}
			})
		}
	}
	// Nothing was created next to the text file.
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(text + suffix); err == nil {
			t.Errorf("Open created %s", text+suffix)
		}
	}
	if got, _ := os.ReadFile(text); !bytes.Equal(got, textContent) {
		t.Errorf("text file changed to %q", got)
	}
}

func TestLoadMigrations(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		wantErr string
	}{
		{"ok", []string{"0001_init.sql", "0002_more.sql"}, ""},
		{"gap", []string{"0001_init.sql", "0003_more.sql"}, "want version 0002"},
		{"not from one", []string{"0002_init.sql"}, "want version 0001"},
		{"bad name", []string{"0001_init.sql", "2_more.sql"}, "NNNN_words.sql"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for _, f := range tc.files {
				fsys["migrations/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
			}
			ms, err := loadMigrations(fsys)
			if tc.wantErr == "" {
				if err != nil || len(ms) != len(tc.files) {
					t.Fatalf("loadMigrations = %d migrations, %v; want %d, nil", len(ms), err, len(tc.files))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("loadMigrations error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	// The embedded migrations themselves are well formed.
	if _, err := loadMigrations(migrationFS); err != nil {
		t.Fatal(err)
	}
}

func TestRunsBeginFinish(t *testing.T) {
	db, _ := openTemp(t)
	started := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	want := Run{Started: started, Host: "node1", GPUName: "NVIDIA H200", GPUUUID: "GPU-1", CC: "9.0",
		Driver: "580.159.04", ToolVersion: "v0.3.0", Args: "--kernel relu_bwd", Status: "ignored"}
	id1, err := db.BeginRun(want)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := db.BeginRun(Run{CopyGBps: 3000})
	if err != nil {
		t.Fatal(err)
	}
	id3 := mustBeginRun(t, db)

	tests := []struct {
		name     string
		id       int64
		status   RunStatus
		copy     float64
		wantErr  string
		wantCopy float64
	}{
		{"ok with bandwidth", id1, "ok", 4012.5, "", 4012.5},
		{"zero keeps bandwidth", id2, "failed", 0, "", 3000},
		{"interrupted", id3, "interrupted", 0, "", 0},
		{"bad status", id3, "done", 0, `status "done"`, 0},
		{"running is not final", id3, "running", 0, `status "running"`, 0},
		{"negative bandwidth", id3, "ok", -1, "copy bandwidth", 0},
		{"unknown run", 999, "ok", 0, "no run with id 999", 0},
	}
	before := time.Now().Add(-time.Second)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := db.FinishRun(tc.id, tc.status, tc.copy)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("FinishRun error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			runs, err := db.Runs()
			if err != nil {
				t.Fatal(err)
			}
			var got *Run
			for i := range runs {
				if runs[i].ID == tc.id {
					got = &runs[i]
				}
			}
			if got == nil {
				t.Fatalf("run %d not listed", tc.id)
			}
			if got.Status != tc.status || got.CopyGBps != tc.wantCopy || got.Finished.Before(before) {
				t.Errorf("run = status %q copy %v finished %v; want %q %v after %v", got.Status, got.CopyGBps, got.Finished, tc.status, tc.wantCopy, before)
			}
		})
	}

	runs, err := db.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].ID != id1 || runs[1].ID != id2 || runs[2].ID != id3 {
		t.Fatalf("Runs = %+v, want ids %d %d %d in order", runs, id1, id2, id3)
	}
	got := runs[0]
	want.ID, want.Status, want.CopyGBps, want.Finished = id1, "ok", 4012.5, got.Finished
	if !got.Started.Equal(started) {
		t.Errorf("Started = %v, want %v", got.Started, started)
	}
	got.Started = want.Started
	if !reflect.DeepEqual(got, want) {
		t.Errorf("run 1 = %+v\nwant %+v", got, want)
	}
	// A run whose bandwidth was never measured stores NULL.
	var null sql.NullFloat64
	if err := db.sql.QueryRow("SELECT copy_gbps FROM runs WHERE id = ?", id3).Scan(&null); err != nil || null.Valid {
		t.Errorf("copy_gbps of run %d = %v (%v), want NULL", id3, null, err)
	}
}

func TestRecordThenDone(t *testing.T) {
	db, _ := openTemp(t)
	run := mustBeginRun(t, db)
	e := okEval(baseKey, 12.5)
	e.Message = "fine"
	e.SpillBytes, e.SmemBytes = 0, 4096
	e.MaxAbsErr, e.MaxRelErr = 1e-6, 2e-5
	e.ThroughputGBps, e.TFLOPs = 3100, 0.5
	e.SMClockMHz, e.MemClockMHz, e.TemperatureC, e.PowerW = 1980, 3201, 55, 410.5
	e.Created = time.Date(2026, 3, 1, 12, 0, 0, 5, time.UTC)
	id := mustRecord(t, db, run, e)

	other := func(f func(*Key)) Key { k := baseKey; f(&k); return k }
	tests := []struct {
		name string
		key  Key
		want bool
	}{
		{"same key", baseKey, true},
		{"other gpu", other(func(k *Key) { k.GPUUUID = "GPU-b" }), false},
		{"other mode", other(func(k *Key) { k.Mode = "hot" }), false},
		{"other ptx hash", other(func(k *Key) { k.PTXSHA256 = strings.Repeat("cd", 32) }), false},
		{"other driver", other(func(k *Key) { k.Driver = "590.0" }), false},
		{"other params", other(func(k *Key) { k.Params = "block=128,vec=4" }), false},
		{"other shape", other(func(k *Key) { k.ShapeKey = "n=8192/f32" }), false},
		{"other kernel", other(func(k *Key) { k.Kernel = "gelu_bwd" }), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := db.Done(tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.want {
				t.Fatalf("Done(%v) found = %v, want %v", tc.key, ok, tc.want)
			}
			if !ok {
				return
			}
			want := e
			want.ID, want.RunID, want.VariantID = id, run, got.VariantID
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Done = %+v\nwant %+v", got, want)
			}
			vid, err := db.VariantID(Variant{Kernel: baseKey.Kernel, ShapeKey: baseKey.ShapeKey, Params: baseKey.Params, PTXSHA256: baseKey.PTXSHA256})
			if err != nil || vid != got.VariantID {
				t.Errorf("VariantID = %d, %v; want %d (the recorded variant)", vid, err, got.VariantID)
			}
		})
	}
}

func TestDoneRetriesTransientFailures(t *testing.T) {
	tests := []struct {
		name     string
		statuses []eval.Status // recorded in order for the same key
		want     eval.Status   // status Done returns, "" for not done
	}{
		{"launch_error", []eval.Status{"launch_error"}, ""},
		{"timeout", []eval.Status{"timeout"}, ""},
		{"invalid is final", []eval.Status{"invalid"}, "invalid"},
		{"compile_error is final", []eval.Status{"compile_error"}, "compile_error"},
		{"skipped is final", []eval.Status{"skipped"}, "skipped"},
		{"ok after timeout", []eval.Status{"timeout", "ok"}, "ok"},
		{"earlier ok survives a later launch_error", []eval.Status{"ok", "launch_error"}, "ok"},
		{"latest final wins", []eval.Status{"invalid", "ok"}, "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openTemp(t)
			run := mustBeginRun(t, db)
			var lastFinal int64
			for _, s := range tc.statuses {
				e := Evaluation{Key: baseKey, Status: s, Message: "status " + string(s)}
				if s == "ok" {
					e = okEval(baseKey, 10)
				}
				id := mustRecord(t, db, run, e)
				if s != "launch_error" && s != "timeout" {
					lastFinal = id
				}
			}
			got, ok, err := db.Done(baseKey)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if ok {
					t.Fatalf("Done = %+v, want not done", got)
				}
				return
			}
			if !ok || got.Status != tc.want || got.ID != lastFinal {
				t.Fatalf("Done = id %d status %q found %v; want id %d status %q", got.ID, got.Status, ok, lastFinal, tc.want)
			}
		})
	}
}

func TestBest(t *testing.T) {
	db, _ := openTemp(t)
	run1 := mustBeginRun(t, db)
	run2 := mustBeginRun(t, db)
	k := func(params, gpu string, mode eval.Mode, driver string) Key {
		key := baseKey
		key.Params, key.GPUUUID, key.Mode, key.Driver = params, gpu, mode, driver
		key.PTXSHA256 = params // distinct variants
		return key
	}
	mustRecord(t, db, run1, okEval(k("a", "GPU-a", "cold", "580"), 10))
	wantID := mustRecord(t, db, run1, okEval(k("b", "GPU-a", "cold", "580"), 5))
	mustRecord(t, db, run2, okEval(k("c", "GPU-a", "cold", "590"), 7))
	mustRecord(t, db, run2, okEval(k("tie", "GPU-a", "cold", "590"), 5)) // later tie loses
	bad := okEval(k("d", "GPU-a", "cold", "580"), 1)
	bad.Status, bad.MaxAbsErr = "invalid", 0.5
	mustRecord(t, db, run2, bad)
	mustRecord(t, db, run2, okEval(k("e", "GPU-b", "cold", "580"), 2))
	mustRecord(t, db, run2, okEval(k("f", "GPU-a", "hot", "580"), 3))
	mustRecord(t, db, run2, Evaluation{Key: k("g", "GPU-a", "cold", "580"), Status: "ok"}) // no timing
	mustRecord(t, db, run2, Evaluation{Key: k("h", "GPU-a", "cold", "580"), Status: "timeout"})

	tests := []struct {
		name               string
		kernel, shape, gpu string
		mod                eval.Mode
		wantID             int64
		wantMedian         float64
		wantErr            string
	}{
		{"lowest ok across runs", baseKey.Kernel, baseKey.ShapeKey, "GPU-a", "cold", wantID, 5, ""},
		{"other gpu", baseKey.Kernel, baseKey.ShapeKey, "GPU-b", "cold", -1, 2, ""},
		{"hot mode", baseKey.Kernel, baseKey.ShapeKey, "GPU-a", "hot", -1, 3, ""},
		{"unknown gpu", baseKey.Kernel, baseKey.ShapeKey, "GPU-z", "cold", 0, 0, ""},
		{"unknown shape", baseKey.Kernel, "n=1/f32", "GPU-a", "cold", 0, 0, ""},
		{"bad mode", baseKey.Kernel, baseKey.ShapeKey, "GPU-a", "warm", 0, 0, `mode "warm"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := db.Best(tc.kernel, tc.shape, tc.gpu, tc.mod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Best error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantMedian == 0 {
				if ok {
					t.Fatalf("Best = %+v, want none", got)
				}
				return
			}
			if !ok || got.MedianUS != tc.wantMedian || got.Status != "ok" || (tc.wantID > 0 && got.ID != tc.wantID) {
				t.Fatalf("Best = id %d median %v status %q found %v; want id %d median %v", got.ID, got.MedianUS, got.Status, ok, tc.wantID, tc.wantMedian)
			}
		})
	}
}

func TestWinnersUpsert(t *testing.T) {
	db, _ := openTemp(t)
	run1 := mustBeginRun(t, db)
	run2 := mustBeginRun(t, db)
	vid := func(params, shape string) int64 {
		id, err := db.VariantID(Variant{Kernel: "gemm_bwd", ShapeKey: shape, Params: params, PTXSHA256: params + "-hash"})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a, b, c := vid("BM=64", "s1"), vid("BM=128", "s1"), vid("BM=64", "s2")
	if a == b || a == c || b == c {
		t.Fatalf("variant ids not distinct: %d %d %d", a, b, c)
	}
	if again := vid("BM=64", "s1"); again != a {
		t.Fatalf("VariantID is not stable: %d then %d", a, again)
	}

	steps := []struct {
		name    string
		w       Winner
		wantErr string
	}{
		{"first", Winner{RunID: run1, Kernel: "gemm_bwd", ShapeKey: "s1", VariantID: a, MedianUS: 20, BaselineName: "cublas", BaselineMedianUS: 18}, ""},
		{"replace", Winner{RunID: run1, Kernel: "gemm_bwd", ShapeKey: "s1", VariantID: b, MedianUS: 15, Params: "ignored"}, ""},
		{"other shape", Winner{RunID: run1, Kernel: "gemm_bwd", ShapeKey: "s2", VariantID: c, MedianUS: 30}, ""},
		{"other run", Winner{RunID: run2, Kernel: "gemm_bwd", ShapeKey: "s1", VariantID: a, MedianUS: 19}, ""},
		{"variant of another shape", Winner{RunID: run1, Kernel: "gemm_bwd", ShapeKey: "s2", VariantID: a, MedianUS: 1}, "not of gemm_bwd s2"},
		{"unknown variant", Winner{RunID: run1, Kernel: "gemm_bwd", ShapeKey: "s1", VariantID: 999, MedianUS: 1}, "no variant with id 999"},
		{"unknown run", Winner{RunID: 999, Kernel: "gemm_bwd", ShapeKey: "s1", VariantID: a, MedianUS: 1}, "no run with id 999"},
		{"no median", Winner{RunID: run1, Kernel: "gemm_bwd", ShapeKey: "s1", VariantID: a}, "median 0"},
		{"baseline without name", Winner{RunID: run1, Kernel: "gemm_bwd", ShapeKey: "s1", VariantID: a, MedianUS: 1, BaselineMedianUS: 2}, "without a baseline name"},
	}
	for _, s := range steps {
		err := db.SetWinner(s.w)
		if s.wantErr == "" && err != nil {
			t.Fatalf("%s: SetWinner: %v", s.name, err)
		}
		if s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)) {
			t.Fatalf("%s: SetWinner error = %v, want one containing %q", s.name, err, s.wantErr)
		}
	}

	got, err := db.Winners(run1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Winner{
		{RunID: run1, Kernel: "gemm_bwd", ShapeKey: "s1", Params: "BM=128", VariantID: b, MedianUS: 15},
		{RunID: run1, Kernel: "gemm_bwd", ShapeKey: "s2", Params: "BM=64", VariantID: c, MedianUS: 30},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Winners(%d) = %+v\nwant %+v", run1, got, want)
	}
	all, err := db.Winners(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[2].RunID != run2 || all[2].Params != "BM=64" {
		t.Errorf("Winners(0) = %+v, want run %d's two then run %d's one", all, run1, run2)
	}
	none, err := db.Winners(12345)
	if err != nil || len(none) != 0 {
		t.Errorf("Winners(unknown) = %v, %v; want none", none, err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	db, path := openTemp(t)
	run := mustBeginRun(t, db)
	eid := mustRecord(t, db, run, okEval(baseKey, 42))
	var vid int64
	if err := db.sql.QueryRow("SELECT variant_id FROM evaluations WHERE id = ?", eid).Scan(&vid); err != nil {
		t.Fatal(err)
	}
	if err := db.SetWinner(Winner{RunID: run, Kernel: baseKey.Kernel, ShapeKey: baseKey.ShapeKey, VariantID: vid, MedianUS: 42}); err != nil {
		t.Fatal(err)
	}
	if err := db.FinishRun(run, "ok", 0); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	runs, err := db2.Runs()
	if err != nil || len(runs) != 1 || runs[0].Status != "ok" {
		t.Fatalf("Runs after reopen = %+v, %v; want one ok run", runs, err)
	}
	e, ok, err := db2.Done(baseKey)
	if err != nil || !ok || e.ID != eid || e.MedianUS != 42 || !reflect.DeepEqual(e.Samples, []float64{42, 43, 41.5}) {
		t.Fatalf("Done after reopen = %+v, %v, %v; want evaluation %d with median 42", e, ok, err, eid)
	}
	ws, err := db2.Winners(run)
	if err != nil || len(ws) != 1 || ws[0].VariantID != vid {
		t.Fatalf("Winners after reopen = %+v, %v", ws, err)
	}
	// New rows continue the sequence.
	if id := mustRecord(t, db2, run, okEval(baseKey, 41)); id <= eid {
		t.Errorf("new evaluation id %d, want > %d", id, eid)
	}
}

func TestRecordStoresNullsAndNaN(t *testing.T) {
	db, _ := openTemp(t)
	run := mustBeginRun(t, db)
	compileErr := mustRecord(t, db, run, Evaluation{Key: baseKey, Status: "compile_error", Message: "ptxas: error"})
	exact := okEval(baseKey, 3)
	exact.SpillBytes, exact.MaxAbsErr, exact.MaxRelErr = 0, 0, 0
	exactID := mustRecord(t, db, run, exact)
	nan := Evaluation{Key: baseKey, Status: "invalid", Registers: 20, MaxAbsErr: math.NaN(), MaxRelErr: math.Inf(1),
		Samples: []float64{1, math.NaN()}}
	nanID := mustRecord(t, db, run, nan)

	type row struct {
		regs, spill, absErr, median, samples, samplesJSON, message any
	}
	read := func(id int64) row {
		var r row
		if err := db.sql.QueryRow(`SELECT registers, spill_bytes, max_abs_err, median_us, samples, samples_json, message
			FROM evaluations WHERE id = ?`, id).Scan(&r.regs, &r.spill, &r.absErr, &r.median, &r.samples, &r.samplesJSON, &r.message); err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		name string
		id   int64
		want row
	}{
		{"compile error has no measurements", compileErr, row{nil, nil, nil, nil, nil, nil, "ptxas: error"}},
		{"exact valid variant stores zeros", exactID, row{int64(16), int64(0), 0.0, 3.0, int64(3), "[3,4,2.5]", nil}},
		{"NaN error kept as text", nanID, row{int64(20), int64(0), "NaN", nil, int64(2), "[1,null]", nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := read(tc.id); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("row = %#v\nwant %#v", got, tc.want)
			}
		})
	}

	es, err := db.Evaluations(Filter{RunID: run})
	if err != nil || len(es) != 3 {
		t.Fatalf("Evaluations = %d, %v; want 3", len(es), err)
	}
	if e := es[0]; e.Registers != 0 || e.MedianUS != 0 || e.Samples != nil || e.Message != "ptxas: error" {
		t.Errorf("compile error read back as %+v", e)
	}
	e := es[2]
	if !math.IsNaN(e.MaxAbsErr) || !math.IsInf(e.MaxRelErr, 1) || len(e.Samples) != 2 || e.Samples[0] != 1 || !math.IsNaN(e.Samples[1]) {
		t.Errorf("NaN evaluation read back as abs %v rel %v samples %v", e.MaxAbsErr, e.MaxRelErr, e.Samples)
	}
}

func TestRecordRejects(t *testing.T) {
	db, _ := openTemp(t)
	run := mustBeginRun(t, db)
	with := func(f func(*Evaluation)) Evaluation { e := okEval(baseKey, 1); f(&e); return e }
	tests := []struct {
		name    string
		run     int64
		e       Evaluation
		wantErr string
	}{
		{"unknown run", 77, okEval(baseKey, 1), "no run with id 77"},
		{"bad status", run, with(func(e *Evaluation) { e.Status = "great" }), `status "great"`},
		{"bad mode", run, with(func(e *Evaluation) { e.Key.Mode = "" }), `mode ""`},
		{"no kernel", run, with(func(e *Evaluation) { e.Key.Kernel = "" }), "no kernel name"},
		{"no shape", run, with(func(e *Evaluation) { e.Key.ShapeKey = "" }), "no shape key"},
		{"negative registers", run, with(func(e *Evaluation) { e.Registers = -1 }), "registers -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.Record(tc.run, tc.e)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Record error = %v, want one containing %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), "record evaluation") {
				t.Errorf("Record error %q does not name the operation", err)
			}
		})
	}
	es, err := db.Evaluations(Filter{})
	if err != nil || len(es) != 0 {
		t.Fatalf("after rejected records: %d evaluations, %v; want none", len(es), err)
	}
	var variants int
	if err := db.sql.QueryRow("SELECT count(*) FROM variants").Scan(&variants); err != nil || variants != 0 {
		t.Errorf("rejected records left %d variants (%v); want 0 (the transaction rolls back)", variants, err)
	}
}

func TestEvaluationsFilter(t *testing.T) {
	db, _ := openTemp(t)
	run1 := mustBeginRun(t, db)
	run2 := mustBeginRun(t, db)
	key := func(kernel, shape string) Key { k := baseKey; k.Kernel, k.ShapeKey = kernel, shape; return k }
	ids := map[string]int64{
		"r1 relu s1":  mustRecord(t, db, run1, okEval(key("relu_bwd", "s1"), 1)),
		"r1 gelu s1":  mustRecord(t, db, run1, okEval(key("gelu_bwd", "s1"), 1)),
		"r2 relu s2":  mustRecord(t, db, run2, okEval(key("relu_bwd", "s2"), 1)),
		"r2 relu s1":  mustRecord(t, db, run2, okEval(key("relu_bwd", "s1"), 1)),
		"r2 gelu s2 ": mustRecord(t, db, run2, okEval(key("gelu_bwd", "s2"), 1)),
	}
	tests := []struct {
		name string
		f    Filter
		want []string
	}{
		{"all", Filter{}, []string{"r1 relu s1", "r1 gelu s1", "r2 relu s2", "r2 relu s1", "r2 gelu s2 "}},
		{"run", Filter{RunID: run2}, []string{"r2 relu s2", "r2 relu s1", "r2 gelu s2 "}},
		{"kernel", Filter{Kernel: "relu_bwd"}, []string{"r1 relu s1", "r2 relu s2", "r2 relu s1"}},
		{"run kernel shape", Filter{RunID: run2, Kernel: "relu_bwd", ShapeKey: "s1"}, []string{"r2 relu s1"}},
		{"shape", Filter{ShapeKey: "s2"}, []string{"r2 relu s2", "r2 gelu s2 "}},
		{"nothing", Filter{Kernel: "silu_bwd"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es, err := db.Evaluations(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []int64
			for _, e := range es {
				got = append(got, e.ID)
			}
			for _, n := range tc.want {
				want = append(want, ids[n])
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Evaluations(%+v) ids = %v, want %v", tc.f, got, want)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	db, _ := openTemp(t)
	run := mustBeginRun(t, db)
	const workers, perWorker, distinct = 8, 25, 5
	var wg sync.WaitGroup
	errc := make(chan error, workers*perWorker*3)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				k := baseKey
				k.Params = string(rune('a' + (w*perWorker+i)%distinct)) // variants shared across workers
				if _, err := db.Record(run, okEval(k, float64(1+i))); err != nil {
					errc <- err
				}
				if _, _, err := db.Done(k); err != nil {
					errc <- err
				}
				if _, err := db.Evaluations(Filter{RunID: run}); err != nil {
					errc <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	es, err := db.Evaluations(Filter{RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != workers*perWorker {
		t.Errorf("%d evaluations, want %d", len(es), workers*perWorker)
	}
	var variants int
	if err := db.sql.QueryRow("SELECT count(*) FROM variants").Scan(&variants); err != nil || variants != distinct {
		t.Errorf("%d variants (%v), want %d", variants, err, distinct)
	}
}
