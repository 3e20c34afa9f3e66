package store

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// Run is one invocation of the tuner.
type Run struct {
	// ID is assigned by BeginRun.
	ID int64
	// Started is when the run began; BeginRun uses the current time when it
	// is zero. Finished is set by FinishRun and is zero while running.
	Started, Finished time.Time
	// Host, GPUName, GPUUUID, CC (compute capability, "9.0"), Driver,
	// ToolVersion and Args (the command line) describe where and how the
	// run happened.
	Host, GPUName, GPUUUID, CC, Driver, ToolVersion, Args string
	// Status is RunRunning until FinishRun sets one of the others.
	Status RunStatus
	// CopyGBps is the device-to-device copy bandwidth measured during the
	// run, in GB/s; zero when it was not measured.
	CopyGBps float64
	// Telemetry is the GPU's clocks, temperature and power when the run
	// began, or why they are unknown (no NVML); empty when not recorded.
	Telemetry string
}

// RunStatus is the state of a run.
type RunStatus string

// Run statuses: the schema allows exactly these (runs.status).
const (
	RunRunning     RunStatus = "running"
	RunOK          RunStatus = "ok"
	RunFailed      RunStatus = "failed"
	RunInterrupted RunStatus = "interrupted"
)

// RunStatuses lists every run status.
func RunStatuses() []RunStatus { return []RunStatus{RunRunning, RunOK, RunFailed, RunInterrupted} }

// BeginRun records the start of a run with status "running" and returns its
// ID. The Status and Finished fields of r are ignored.
func (db *DB) BeginRun(r Run) (int64, error) {
	if err := db.writable("begin run"); err != nil {
		return 0, err
	}
	if err := checkBandwidth(r.CopyGBps); err != nil {
		return 0, db.errf("begin run", err)
	}
	started := r.Started
	if started.IsZero() {
		started = time.Now()
	}
	res, err := db.sql.Exec(`INSERT INTO runs
		(started, host, gpu_name, gpu_uuid, cc, driver, tool_version, args, status, copy_gbps, telemetry)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		formatTime(started), r.Host, r.GPUName, r.GPUUUID, r.CC, r.Driver, r.ToolVersion, r.Args, RunRunning,
		optFloat(r.CopyGBps), optString(r.Telemetry))
	if err != nil {
		return 0, db.errf("begin run", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, db.errf("begin run", err)
	}
	return id, nil
}

// FinishRun marks run id as finished now with status RunOK, RunFailed or
// RunInterrupted. A positive copyGBps records the run's measured copy
// bandwidth; zero leaves the stored value as it is (NULL unless BeginRun set
// it).
func (db *DB) FinishRun(id int64, status RunStatus, copyGBps float64) error {
	op := fmt.Sprintf("finish run %d", id)
	if err := db.writable(op); err != nil {
		return err
	}
	if status != RunOK && status != RunFailed && status != RunInterrupted {
		return db.errf(op, fmt.Errorf("status %q: want ok, failed or interrupted", status))
	}
	if err := checkBandwidth(copyGBps); err != nil {
		return db.errf(op, err)
	}
	res, err := db.sql.Exec(`UPDATE runs SET status = ?, finished = ?, copy_gbps = coalesce(?, copy_gbps) WHERE id = ?`,
		status, formatTime(time.Now()), optFloat(copyGBps), id)
	if err != nil {
		return db.errf(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return db.errf(op, err)
	}
	if n == 0 {
		return db.errf(op, fmt.Errorf("no run with id %d", id))
	}
	return nil
}

func checkBandwidth(gbps float64) error {
	if gbps < 0 || math.IsNaN(gbps) || math.IsInf(gbps, 0) {
		return fmt.Errorf("copy bandwidth %v GB/s: want a finite value >= 0 (0 = not measured)", gbps)
	}
	return nil
}

// runColumns are the columns of a run; telemetry reads as NULL in an
// older database opened read-only.
func (db *DB) runColumns() string {
	return `id, started, finished, host, gpu_name, gpu_uuid, cc, driver, tool_version, args, status, copy_gbps, ` +
		db.column("telemetry", 2)
}

func scanRun(s interface{ Scan(...any) error }) (Run, error) {
	var r Run
	err := s.Scan(&r.ID, timeCol{&r.Started}, timeCol{&r.Finished}, &r.Host, &r.GPUName, &r.GPUUUID,
		&r.CC, &r.Driver, &r.ToolVersion, &r.Args, &r.Status, floatCol{&r.CopyGBps}, stringCol{&r.Telemetry})
	return r, err
}

// Runs returns all runs, oldest first.
func (db *DB) Runs() ([]Run, error) {
	rows, err := db.sql.Query(`SELECT ` + db.runColumns() + ` FROM runs ORDER BY id`)
	if err != nil {
		return nil, db.errf("list runs", err)
	}
	defer rows.Close()
	var runs []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, db.errf("list runs", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, db.errf("list runs", err)
	}
	return runs, nil
}

// requireRun returns an error naming the run when it does not exist.
func requireRun(q execQuerier, id int64) error {
	var one int
	err := q.QueryRow(`SELECT 1 FROM runs WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("no run with id %d (call BeginRun first)", id)
	}
	return err
}
