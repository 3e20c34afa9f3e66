package store

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestTelemetryAndTiesRoundTrip: the columns of migration 0002 store and
// read back; "no NVML" (no clocks) is NULL, "no throttling" a stored 0.
func TestTelemetryAndTiesRoundTrip(t *testing.T) {
	db, _ := openTemp(t)
	run, err := db.BeginRun(Run{GPUName: "NVIDIA H200", Telemetry: "SM 1980 MHz, memory 3201 MHz"})
	if err != nil {
		t.Fatal(err)
	}
	e := okEval(baseKey, 10)
	e.SMClockMHz, e.MemClockMHz, e.TemperatureC, e.PowerW = 1980, 3201, 41, 312.5
	e.ThrottleReasons, e.Excluded, e.Warnings = 0x8, []int{0, 2}, []string{"need >= 6 samples", "second"}
	id := mustRecord(t, db, run, e)
	plain := okEval(baseKey, 11) // no telemetry at all
	mustRecord(t, db, run, plain)
	es, err := db.Evaluations(Filter{RunID: run})
	if err != nil || len(es) != 2 {
		t.Fatalf("evaluations %v, %v", es, err)
	}
	got := es[0]
	if got.ID != id || got.SMClockMHz != 1980 || got.ThrottleReasons != 8 || !slices.Equal(got.Excluded, []int{0, 2}) ||
		!slices.Equal(got.Warnings, e.Warnings) || got.PowerW != 312.5 {
		t.Errorf("read back %+v", got)
	}
	var throttle sql.NullInt64
	db.sql.QueryRow(`SELECT throttle_reasons FROM evaluations WHERE id = ?`, es[1].ID).Scan(&throttle)
	if throttle.Valid || es[1].Excluded != nil || es[1].Warnings != nil {
		t.Errorf("without telemetry: throttle %v, excluded %v, warnings %v", throttle, es[1].Excluded, es[1].Warnings)
	}
	r, err := db.Run(run)
	if err != nil || r.Telemetry != "SM 1980 MHz, memory 3201 MHz" {
		t.Errorf("run telemetry %q, %v", r.Telemetry, err)
	}
	if err := db.SetWinner(Winner{RunID: run, Kernel: baseKey.Kernel, ShapeKey: baseKey.ShapeKey, VariantID: got.VariantID,
		MedianUS: 10, Ties: 3, Rule: "fewest registers"}); err != nil {
		t.Fatal(err)
	}
	ws, err := db.Winners(run)
	if err != nil || len(ws) != 1 || ws[0].Ties != 3 || ws[0].Rule != "fewest registers" {
		t.Errorf("winners %+v, %v", ws, err)
	}
	bad := okEval(baseKey, 10)
	bad.Excluded = []int{3}
	if _, err := db.Record(run, bad); err == nil {
		t.Error("an excluded index past the samples was stored")
	}
}

// TestOlderSchemaReadsAndUpgrades: a database at schema 1 (as every
// database recorded before migration 0002) opens read-only with the new
// columns empty and refuses writes; Open upgrades it and keeps its data.
func TestOlderSchemaReadsAndUpgrades(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{ms[0].sql, "PRAGMA user_version = 1", fmt.Sprintf("PRAGMA application_id = %d", applicationID),
		`INSERT INTO runs (id, started, gpu_name) VALUES (1, '2026-01-01T00:00:00.000000000Z', 'NVIDIA H200')`,
		`INSERT INTO variants (id, kernel, shape_key, params, ptx_sha256) VALUES (1, 'relu_bwd', 'n=8,dtype=f32', 'v=1', 'aa')`,
		`INSERT INTO evaluations (run_id, variant_id, gpu_uuid, driver, mode, status, samples_json, median_us, created)
			VALUES (1, 1, 'GPU-a', '1', 'cold', 'ok', '[1,2,3]', 2, '2026-01-01T00:00:00.000000000Z')`,
		`INSERT INTO winners (run_id, kernel, shape_key, variant_id, median_us) VALUES (1, 'relu_bwd', 'n=8,dtype=f32', 1, 2)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()

	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	es, err := ro.Evaluations(Filter{})
	if err != nil || len(es) != 1 || es[0].MedianUS != 2 || es[0].Warnings != nil || es[0].ThrottleReasons != 0 {
		t.Fatalf("schema 1 read-only: %+v, %v", es, err)
	}
	ws, err := ro.Winners(0)
	if err != nil || len(ws) != 1 || ws[0].Rule != "" {
		t.Fatalf("winners %+v, %v", ws, err)
	}
	if r, err := ro.Run(1); err != nil || r.Telemetry != "" {
		t.Fatalf("run %+v, %v", r, err)
	}
	if _, err := ro.Record(1, okEval(baseKey, 1)); err == nil {
		t.Error("Record on a read-only database succeeded")
	}
	ro.Close()

	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v := pragmaInt(t, db, "user_version"); v != int64(len(ms)) {
		t.Fatalf("upgraded to %d, want %d", v, len(ms))
	}
	e := okEval(baseKey, 5)
	e.Warnings = []string{"w"}
	mustRecord(t, db, 1, e)
	es, err = db.Evaluations(Filter{RunID: 1})
	if err != nil || len(es) != 2 || es[0].MedianUS != 2 || es[1].Warnings[0] != "w" {
		t.Fatalf("after the upgrade: %+v, %v", es, err)
	}
}
