package store

import (
	"fmt"
	"math"
)

// Winner is the variant chosen for one kernel and shape in one run.
type Winner struct {
	RunID            int64
	Kernel, ShapeKey string
	// Params is the winning variant's canonical parameter string; Winners
	// fills it in from the variant and SetWinner ignores it.
	Params    string
	VariantID int64
	// MedianUS is the winner's median time in µs.
	MedianUS float64
	// BaselineName ("cublas", "seed") and BaselineMedianUS describe what the
	// winner was compared with; both are empty when there was no baseline.
	BaselineName     string
	BaselineMedianUS float64
	// Ties is how many other variants' 95% CIs overlapped the fastest's,
	// and Rule the rule that chose the winner among them ("" when not
	// recorded, in databases from before it was).
	Ties int
	Rule string
}

// SetWinner records w as the winner for its run, kernel and shape,
// replacing an earlier winner of the same triple, and commits. The variant
// must exist and belong to the same kernel and shape.
func (db *DB) SetWinner(w Winner) error {
	op := fmt.Sprintf("set winner of %s %s in run %d", w.Kernel, w.ShapeKey, w.RunID)
	if err := db.writable(op); err != nil {
		return err
	}
	if err := checkWinner(w); err != nil {
		return db.errf(op, err)
	}
	if err := db.setWinner(w); err != nil {
		return db.errf(op, err)
	}
	return nil
}

func checkWinner(w Winner) error {
	if w.Kernel == "" || w.ShapeKey == "" {
		return fmt.Errorf("kernel %q and shape key %q: both are required", w.Kernel, w.ShapeKey)
	}
	if w.VariantID <= 0 {
		return fmt.Errorf("variant id %d: want the id of a recorded variant", w.VariantID)
	}
	if !(w.MedianUS > 0) || math.IsInf(w.MedianUS, 0) {
		return fmt.Errorf("median %v µs: want a finite time > 0", w.MedianUS)
	}
	if w.BaselineMedianUS < 0 || math.IsNaN(w.BaselineMedianUS) || math.IsInf(w.BaselineMedianUS, 0) {
		return fmt.Errorf("baseline median %v µs: want a finite time >= 0 (0 = no baseline)", w.BaselineMedianUS)
	}
	if w.Ties < 0 {
		return fmt.Errorf("ties %d: want >= 0", w.Ties)
	}
	if w.BaselineName == "" && w.BaselineMedianUS != 0 {
		return fmt.Errorf("baseline median %v µs without a baseline name", w.BaselineMedianUS)
	}
	return nil
}

func (db *DB) setWinner(w Winner) (err error) {
	tx, err := db.sql.Begin()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if err := requireRun(tx, w.RunID); err != nil {
		return err
	}
	var kernel, shape string
	err = tx.QueryRow(`SELECT kernel, shape_key FROM variants WHERE id = ?`, w.VariantID).Scan(&kernel, &shape)
	if errNoRows(err) {
		return fmt.Errorf("no variant with id %d", w.VariantID)
	}
	if err != nil {
		return err
	}
	if kernel != w.Kernel || shape != w.ShapeKey {
		return fmt.Errorf("variant %d is of %s %s, not of %s %s", w.VariantID, kernel, shape, w.Kernel, w.ShapeKey)
	}
	if _, err := tx.Exec(`INSERT INTO winners
			(run_id, kernel, shape_key, variant_id, median_us, baseline_name, baseline_median_us, ties, rule)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, kernel, shape_key) DO UPDATE SET
			variant_id = excluded.variant_id,
			median_us = excluded.median_us,
			baseline_name = excluded.baseline_name,
			baseline_median_us = excluded.baseline_median_us,
			ties = excluded.ties,
			rule = excluded.rule`,
		w.RunID, w.Kernel, w.ShapeKey, w.VariantID, w.MedianUS,
		optString(w.BaselineName), optFloat(w.BaselineMedianUS), int64(w.Ties), optString(w.Rule)); err != nil {
		return err
	}
	return tx.Commit()
}

// Winners returns the winners of run runID, or of every run when runID is
// 0, ordered by run, kernel and shape key, with Params taken from the
// winning variant.
func (db *DB) Winners(runID int64) ([]Winner, error) {
	op := fmt.Sprintf("list winners of run %d", runID)
	q := `SELECT w.run_id, w.kernel, w.shape_key, v.params, w.variant_id,
			w.median_us, w.baseline_name, w.baseline_median_us, ` + db.column("w.ties", 2) + `, ` + db.column("w.rule", 2) + `
		FROM winners w JOIN variants v ON v.id = w.variant_id`
	var args []any
	if runID != 0 {
		q += ` WHERE w.run_id = ?`
		args = append(args, runID)
	}
	q += ` ORDER BY w.run_id, w.kernel, w.shape_key`
	rows, err := db.sql.Query(q, args...)
	if err != nil {
		return nil, db.errf(op, err)
	}
	defer rows.Close()
	var ws []Winner
	for rows.Next() {
		var w Winner
		if err := rows.Scan(&w.RunID, &w.Kernel, &w.ShapeKey, &w.Params, &w.VariantID,
			floatCol{&w.MedianUS}, stringCol{&w.BaselineName}, floatCol{&w.BaselineMedianUS},
			intCol{&w.Ties}, stringCol{&w.Rule}); err != nil {
			return nil, db.errf(op, err)
		}
		ws = append(ws, w)
	}
	if err := rows.Err(); err != nil {
		return nil, db.errf(op, err)
	}
	return ws, nil
}
