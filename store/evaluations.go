package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gradtune/gradtune/eval"
)

// Variant is one generated kernel: a family, a shape, a parameter choice and
// the PTX they produced.
type Variant struct {
	// ID is assigned by the store.
	ID int64
	// Kernel is the family name ("nf4_gemm_bwd") and ShapeKey the canonical
	// shape string; both are required.
	Kernel, ShapeKey string
	// Params is the canonical parameter string and PTXSHA256 the hex sha256
	// of the PTX text.
	Params, PTXSHA256 string
}

// Key is the content key of an evaluation: the variant's identity plus the
// GPU, driver and measurement mode it was evaluated under.
type Key struct {
	Kernel, ShapeKey, Params, PTXSHA256 string
	// GPUUUID and Driver name the device and driver version.
	GPUUUID, Driver string
	// Mode is how the samples were timed.
	Mode eval.Mode
}

// Evaluation is the finished outcome of compiling, validating and timing one
// variant. Zero numeric fields mean "not measured"; see the package
// documentation for how they are stored.
type Evaluation struct {
	// ID, RunID and VariantID are assigned by Record.
	ID, RunID, VariantID int64
	// Key identifies what was evaluated.
	Key Key
	// Status is the outcome; Message explains a status other than ok.
	Status  eval.Status
	Message string
	// Registers, SpillBytes and SmemBytes (static shared memory) come from
	// the compiled kernel; Occupancy is the fraction of resident warps.
	Registers, SpillBytes, SmemBytes int
	Occupancy                        float64
	// MaxAbsErr and MaxRelErr are the validation errors against the CPU
	// reference.
	MaxAbsErr, MaxRelErr float64
	// Samples are the timed samples in µs, in the order taken.
	Samples []float64
	// MedianUS, CILoUS, CIHiUS (95% confidence interval of the median) and
	// MinUS are in microseconds.
	MedianUS, CILoUS, CIHiUS, MinUS float64
	// ThroughputGBps and TFLOPs follow from the kernel's cost model.
	ThroughputGBps, TFLOPs float64
	// SMClockMHz, MemClockMHz, TemperatureC and PowerW are the GPU state
	// during measurement.
	SMClockMHz, MemClockMHz, TemperatureC int
	PowerW                                float64
	// ThrottleReasons is the mask of NVML clock event reasons seen while
	// sampling; it is stored only with telemetry (SMClockMHz > 0), so
	// "no reason" is a stored 0 and "no NVML" is NULL. Excluded are the
	// indexes into Samples of the samples taken while the GPU throttled,
	// which MedianUS and its interval leave out.
	ThrottleReasons uint64
	Excluded        []int
	// Warnings are benchmath's warnings about the samples (too few for a
	// confidence interval, and the like).
	Warnings []string
	// Created is when the evaluation was recorded; Record uses the current
	// time when it is zero.
	Created time.Time
}

// Filter selects evaluations; a zero field matches any value.
type Filter struct {
	RunID            int64
	Kernel, ShapeKey string
}

// transientStatuses is the SQL list of the statuses Done retries.
var transientStatuses = func() string {
	var q []string
	for _, s := range eval.Statuses() {
		if s.Transient() {
			q = append(q, "'"+string(s)+"'")
		}
	}
	return "(" + strings.Join(q, ", ") + ")"
}()

func checkVariant(v Variant) error {
	if v.Kernel == "" {
		return errors.New("variant has no kernel name")
	}
	if v.ShapeKey == "" {
		return fmt.Errorf("variant of %s has no shape key", v.Kernel)
	}
	return nil
}

func checkKey(k Key) error {
	if err := checkVariant(k.variant()); err != nil {
		return err
	}
	if _, err := eval.ParseMode(string(k.Mode)); err != nil {
		return err
	}
	return nil
}

func (k Key) variant() Variant {
	return Variant{Kernel: k.Kernel, ShapeKey: k.ShapeKey, Params: k.Params, PTXSHA256: k.PTXSHA256}
}

// String describes k for messages, with the PTX hash shortened.
func (k Key) String() string {
	return fmt.Sprintf("%s %s [%s] ptx %s on %s driver %s %s",
		k.Kernel, k.ShapeKey, k.Params, shortHash(k.PTXSHA256), k.GPUUUID, k.Driver, k.Mode)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// VariantID returns the ID of v, inserting it if it is new. Only Kernel,
// ShapeKey, Params and PTXSHA256 are used.
func (db *DB) VariantID(v Variant) (int64, error) {
	if err := db.writable("insert variant"); err != nil {
		return 0, err
	}
	id, err := variantID(db.sql, v)
	if err != nil {
		return 0, db.errf(fmt.Sprintf("variant %s %s [%s]", v.Kernel, v.ShapeKey, v.Params), err)
	}
	return id, nil
}

func variantID(q execQuerier, v Variant) (int64, error) {
	if err := checkVariant(v); err != nil {
		return 0, err
	}
	if _, err := q.Exec(`INSERT INTO variants (kernel, shape_key, params, ptx_sha256) VALUES (?, ?, ?, ?)
		ON CONFLICT (kernel, shape_key, params, ptx_sha256) DO NOTHING`,
		v.Kernel, v.ShapeKey, v.Params, v.PTXSHA256); err != nil {
		return 0, err
	}
	var id int64
	err := q.QueryRow(`SELECT id FROM variants WHERE kernel = ? AND shape_key = ? AND params = ? AND ptx_sha256 = ?`,
		v.Kernel, v.ShapeKey, v.Params, v.PTXSHA256).Scan(&id)
	return id, err
}

// Record stores e as an evaluation of run runID: it inserts the variant
// named by e.Key if it is new, inserts the evaluation and commits, and
// returns the evaluation's ID. The ID, RunID and VariantID fields of e are
// ignored.
func (db *DB) Record(runID int64, e Evaluation) (int64, error) {
	op := fmt.Sprintf("record evaluation of %s in run %d", e.Key, runID)
	if err := db.writable(op); err != nil {
		return 0, err
	}
	if err := checkEvaluation(e); err != nil {
		return 0, db.errf(op, err)
	}
	id, err := db.record(runID, e)
	if err != nil {
		return 0, db.errf(op, err)
	}
	return id, nil
}

func checkEvaluation(e Evaluation) error {
	if err := checkKey(e.Key); err != nil {
		return err
	}
	if _, err := eval.ParseStatus(string(e.Status)); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"registers", e.Registers}, {"spill bytes", e.SpillBytes}, {"shared memory bytes", e.SmemBytes}} {
		if c.v < 0 {
			return fmt.Errorf("%s %d: want >= 0", c.name, c.v)
		}
	}
	for _, i := range e.Excluded {
		if i < 0 || i >= len(e.Samples) {
			return fmt.Errorf("excluded sample %d: want an index into the %d samples", i, len(e.Samples))
		}
	}
	return nil
}

func (db *DB) record(runID int64, e Evaluation) (id int64, err error) {
	tx, err := db.sql.Begin()
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if err := requireRun(tx, runID); err != nil {
		return 0, err
	}
	vid, err := variantID(tx, e.Key.variant())
	if err != nil {
		return 0, err
	}

	// Resources: NULL when nothing is known (the variant did not compile).
	var regs, spill, smem, occ any
	if e.Registers != 0 || e.SpillBytes != 0 || e.SmemBytes != 0 || e.Occupancy != 0 {
		regs, spill, smem, occ = int64(e.Registers), int64(e.SpillBytes), int64(e.SmemBytes), realValue(e.Occupancy)
	}
	// Errors: NULL when validation did not run.
	var absErr, relErr any
	if e.Status == eval.OK || e.MaxAbsErr != 0 || e.MaxRelErr != 0 {
		absErr, relErr = realValue(e.MaxAbsErr), realValue(e.MaxRelErr)
	}
	created := e.Created
	if created.IsZero() {
		created = time.Now()
	}
	res, err := tx.Exec(`INSERT INTO evaluations (
			run_id, variant_id, gpu_uuid, driver, mode, status, message,
			registers, spill_bytes, smem_bytes, occupancy, max_abs_err, max_rel_err,
			samples, samples_json, median_us, ci_lo_us, ci_hi_us, min_us, throughput_gbps, tflops,
			sm_clock_mhz, mem_clock_mhz, temperature_c, power_w, created,
			throttle_reasons, excluded_json, warnings)
		VALUES (?, ?, ?, ?, ?, ?, ?,  ?, ?, ?, ?, ?, ?,  ?, ?, ?, ?, ?, ?, ?, ?,  ?, ?, ?, ?, ?,  ?, ?, ?)`,
		runID, vid, e.Key.GPUUUID, e.Key.Driver, e.Key.Mode, e.Status, optString(e.Message),
		regs, spill, smem, occ, absErr, relErr,
		optInt(len(e.Samples)), encodeSamples(e.Samples),
		optFloat(e.MedianUS), optFloat(e.CILoUS), optFloat(e.CIHiUS), optFloat(e.MinUS),
		optFloat(e.ThroughputGBps), optFloat(e.TFLOPs),
		optInt(e.SMClockMHz), optInt(e.MemClockMHz), optInt(e.TemperatureC), optFloat(e.PowerW),
		formatTime(created), throttleValue(e), encodeIndexes(e.Excluded), optString(strings.Join(e.Warnings, "\n")))
	if err != nil {
		return 0, err
	}
	if id, err = res.LastInsertId(); err != nil {
		return 0, err
	}
	return id, tx.Commit()
}

// evalSelect is the query of evaluations; columns of migration 0002 read
// as NULL in an older database opened read-only.
func (db *DB) evalSelect() string {
	return `SELECT e.id, e.run_id, e.variant_id,
	v.kernel, v.shape_key, v.params, v.ptx_sha256, e.gpu_uuid, e.driver, e.mode,
	e.status, e.message, e.registers, e.spill_bytes, e.smem_bytes, e.occupancy, e.max_abs_err, e.max_rel_err,
	e.samples_json, e.median_us, e.ci_lo_us, e.ci_hi_us, e.min_us, e.throughput_gbps, e.tflops,
	e.sm_clock_mhz, e.mem_clock_mhz, e.temperature_c, e.power_w, e.created, ` +
		db.column("e.throttle_reasons", 2) + `, ` + db.column("e.excluded_json", 2) + `, ` + db.column("e.warnings", 2) + `
	FROM evaluations e JOIN variants v ON v.id = e.variant_id`
}

// throttleValue is the throttle_reasons column: NULL without telemetry.
func throttleValue(e Evaluation) any {
	if e.SMClockMHz == 0 {
		return nil
	}
	return int64(e.ThrottleReasons)
}

func scanEvaluation(s interface{ Scan(...any) error }) (Evaluation, error) {
	var e Evaluation
	var samples, excluded, warnings string
	var throttle int
	k := &e.Key
	err := s.Scan(&e.ID, &e.RunID, &e.VariantID,
		&k.Kernel, &k.ShapeKey, &k.Params, &k.PTXSHA256, &k.GPUUUID, &k.Driver, &k.Mode,
		&e.Status, stringCol{&e.Message}, intCol{&e.Registers}, intCol{&e.SpillBytes}, intCol{&e.SmemBytes},
		floatCol{&e.Occupancy}, floatCol{&e.MaxAbsErr}, floatCol{&e.MaxRelErr},
		stringCol{&samples}, floatCol{&e.MedianUS}, floatCol{&e.CILoUS}, floatCol{&e.CIHiUS}, floatCol{&e.MinUS},
		floatCol{&e.ThroughputGBps}, floatCol{&e.TFLOPs},
		intCol{&e.SMClockMHz}, intCol{&e.MemClockMHz}, intCol{&e.TemperatureC}, floatCol{&e.PowerW},
		timeCol{&e.Created}, intCol{&throttle}, stringCol{&excluded}, stringCol{&warnings})
	if err != nil {
		return e, err
	}
	e.ThrottleReasons = uint64(throttle)
	if warnings != "" {
		e.Warnings = strings.Split(warnings, "\n")
	}
	if excluded != "" {
		if err := json.Unmarshal([]byte(excluded), &e.Excluded); err != nil {
			return e, fmt.Errorf("evaluation %d: excluded_json: %w", e.ID, err)
		}
	}
	if samples != "" {
		if e.Samples, err = decodeSamples(samples); err != nil {
			return e, fmt.Errorf("evaluation %d: samples_json: %w", e.ID, err)
		}
	}
	return e, nil
}

// queryEvaluations runs evalSelect with the given tail (WHERE/ORDER BY).
func (db *DB) queryEvaluations(tail string, args ...any) ([]Evaluation, error) {
	rows, err := db.sql.Query(db.evalSelect()+" "+tail, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var es []Evaluation
	for rows.Next() {
		e, err := scanEvaluation(rows)
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	return es, rows.Err()
}

// queryOne is queryEvaluations for at most one row.
func (db *DB) queryOne(tail string, args ...any) (Evaluation, bool, error) {
	es, err := db.queryEvaluations(tail+" LIMIT 1", args...)
	if err != nil || len(es) == 0 {
		return Evaluation{}, false, err
	}
	return es[0], true, nil
}

// Done returns the latest evaluation with content key k, if there is one
// whose status is final. Evaluations that ended in launch_error or timeout
// are transient and do not count, so a re-run tries them again. Done is how
// a re-run skips work that is already recorded.
func (db *DB) Done(k Key) (Evaluation, bool, error) {
	op := "look up " + k.String()
	if err := checkKey(k); err != nil {
		return Evaluation{}, false, db.errf(op, err)
	}
	e, ok, err := db.queryOne(`WHERE v.kernel = ? AND v.shape_key = ? AND v.params = ? AND v.ptx_sha256 = ?
		AND e.gpu_uuid = ? AND e.driver = ? AND e.mode = ?
		AND e.status NOT IN `+transientStatuses+`
		ORDER BY e.id DESC`,
		k.Kernel, k.ShapeKey, k.Params, k.PTXSHA256, k.GPUUUID, k.Driver, k.Mode)
	if err != nil {
		return Evaluation{}, false, db.errf(op, err)
	}
	return e, ok, nil
}

// Evaluations returns the evaluations that match f, in the order they were
// recorded.
func (db *DB) Evaluations(f Filter) ([]Evaluation, error) {
	var where []string
	var args []any
	if f.RunID != 0 {
		where = append(where, "e.run_id = ?")
		args = append(args, f.RunID)
	}
	if f.Kernel != "" {
		where = append(where, "v.kernel = ?")
		args = append(args, f.Kernel)
	}
	if f.ShapeKey != "" {
		where = append(where, "v.shape_key = ?")
		args = append(args, f.ShapeKey)
	}
	tail := "ORDER BY e.id"
	if len(where) > 0 {
		tail = "WHERE " + strings.Join(where, " AND ") + " " + tail
	}
	es, err := db.queryEvaluations(tail, args...)
	if err != nil {
		return nil, db.errf(fmt.Sprintf("list evaluations (run %d, kernel %q, shape %q)", f.RunID, f.Kernel, f.ShapeKey), err)
	}
	return es, nil
}

// Best returns the evaluation with the lowest median among the "ok"
// evaluations of kernel and shapeKey on GPU gpuUUID in mode, across all runs and drivers. Evaluations without a median are
// ignored; ties go to the earliest recorded. It reports false when there is
// none.
func (db *DB) Best(kernel, shapeKey, gpuUUID string, mode eval.Mode) (Evaluation, bool, error) {
	op := fmt.Sprintf("best of %s %s on %s %s", kernel, shapeKey, gpuUUID, mode)
	if err := checkKey(Key{Kernel: kernel, ShapeKey: shapeKey, Mode: mode}); err != nil {
		return Evaluation{}, false, db.errf(op, err)
	}
	e, ok, err := db.queryOne(`WHERE v.kernel = ? AND v.shape_key = ? AND e.gpu_uuid = ? AND e.mode = ?
		AND e.status = '`+string(eval.OK)+`' AND typeof(e.median_us) = 'real' AND e.median_us > 0
		ORDER BY e.median_us, e.id`,
		kernel, shapeKey, gpuUUID, mode)
	if err != nil {
		return Evaluation{}, false, db.errf(op, err)
	}
	return e, ok, nil
}

// errNoRows reports whether err is sql.ErrNoRows.
func errNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
