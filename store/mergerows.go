package store

import (
	"database/sql"
	"fmt"
	"strings"
)

// mergeCol is a column Merge copies as stored, and the schema version
// that added it: a source at an older schema reads it as NULL, and a
// comparison leaves it out.
type mergeCol struct {
	name  string
	since int
}

// runStateCols are the columns of a run that change while it runs.
var runStateCols = []mergeCol{{"finished", 1}, {"status", 1}, {"copy_gbps", 1}, {"telemetry", 2}}

// evalCols are the columns of an evaluation besides its run and variant;
// the first three (GPU, driver, mode) complete its content key.
var evalCols = []mergeCol{{"gpu_uuid", 1}, {"driver", 1}, {"mode", 1}, {"status", 1}, {"message", 1},
	{"registers", 1}, {"spill_bytes", 1}, {"smem_bytes", 1}, {"occupancy", 1}, {"max_abs_err", 1}, {"max_rel_err", 1},
	{"samples", 1}, {"samples_json", 1}, {"median_us", 1}, {"ci_lo_us", 1}, {"ci_hi_us", 1}, {"min_us", 1},
	{"throughput_gbps", 1}, {"tflops", 1}, {"sm_clock_mhz", 1}, {"mem_clock_mhz", 1}, {"temperature_c", 1},
	{"power_w", 1}, {"created", 1}, {"throttle_reasons", 2}, {"excluded_json", 2}, {"warnings", 2}}

// winnerCols are the columns of a winner besides its run, kernel and
// shape; the variant's is the destination's id.
var winnerCols = []mergeCol{{"variant_id", 1}, {"median_us", 1}, {"baseline_name", 1},
	{"baseline_median_us", 1}, {"ties", 2}, {"rule", 2}}

// selectCols lists cols for a SELECT on db, each prefixed (an alias and a
// dot), NULL for a column db's schema lacks.
func (db *DB) selectCols(prefix string, cols []mergeCol) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = db.column(prefix+c.name, c.since)
	}
	return strings.Join(out, ", ")
}

// colNames lists cols for an INSERT, and as many placeholders.
func colNames(cols []mergeCol) (names, marks string) {
	n := make([]string, len(cols))
	for i, c := range cols {
		n[i] = c.name
	}
	return strings.Join(n, ", "), strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
}

// scanRaw reads n columns as the driver gives them, text as string.
func scanRaw(s interface{ Scan(...any) error }, n int) ([]any, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := s.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			vals[i] = string(b)
		}
	}
	return vals, nil
}

// diffCols lists the columns where have (the destination's) and got (a
// source's at schema version schema) differ, "" when none does. A column
// the source's schema lacks is not compared.
func diffCols(cols []mergeCol, have, got []any, schema int) string {
	var d []string
	for i, c := range cols {
		if c.since > schema || sameValue(have[i], got[i]) {
			continue
		}
		d = append(d, fmt.Sprintf("%s %s in the output, %s in the source", c.name, showValue(have[i]), showValue(got[i])))
	}
	return strings.Join(d, "; ")
}

// sameValue compares two stored values exactly (a NaN is stored as the
// text 'NaN', so float equality is enough).
func sameValue(a, b any) bool {
	if fa, ok := a.(float64); ok {
		if ib, ok := b.(int64); ok {
			return fa == float64(ib)
		}
	}
	if ia, ok := a.(int64); ok {
		if fb, ok := b.(float64); ok {
			return float64(ia) == fb
		}
	}
	return a == b
}

// showValue is a stored value in a message, long text cut short.
func showValue(v any) string {
	if v == nil {
		return "NULL"
	}
	s := fmt.Sprint(v)
	if len(s) > 48 {
		s = s[:45] + "..."
	}
	if _, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// matchRun finds p's run in the destination by its identity, or adds it
// with its state; it returns the destination's id and how the two
// copies of the run relate.
func (m *merger) matchRun(p plannedRun) (int64, snapshot, error) {
	src, st := m.srcs[p.src], &m.rep.Sources[p.src].Runs
	state, err := scanRaw(src.sql.QueryRow(`SELECT `+src.selectCols("", runStateCols)+` FROM runs WHERE id = ?`, p.run.ID), len(runStateCols))
	if err != nil {
		return 0, 0, err
	}
	var id int64
	err = m.tx.QueryRow(`SELECT id FROM runs WHERE started = ? AND host = ? AND gpu_name = ? AND gpu_uuid = ?
		AND cc = ? AND driver = ? AND tool_version = ? AND args = ? ORDER BY id LIMIT 1`, runIdentity(p.run)...).Scan(&id)
	if errNoRows(err) {
		st.Added++
		return m.insertRun(p.run, state)
	}
	if err != nil {
		return 0, 0, err
	}
	have, err := scanRaw(m.tx.QueryRow(`SELECT `+m.dst.selectCols("", runStateCols)+` FROM runs WHERE id = ?`, id), len(runStateCols))
	if err != nil {
		return 0, 0, err
	}
	snap := compareSnapshots(have[1], state[1])
	diff := diffCols(runStateCols, have, state, src.schema)
	switch {
	case diff == "" || snap == olderSnapshot:
		st.Present++
	case snap == laterSnapshot:
		st.Updated++
		_, err = m.tx.Exec(`UPDATE runs SET finished = ?, status = ?, copy_gbps = ?, telemetry = coalesce(?, telemetry) WHERE id = ?`,
			append(state, id)...)
	default:
		st.Conflicting++
		m.conflict(p, "run state", diff)
	}
	return id, snap, err
}

// compareSnapshots relates two copies of a run by their status: a run
// still running is an earlier snapshot of the one that has finished.
func compareSnapshots(have, got any) snapshot {
	running := string(RunRunning)
	switch {
	case have == running && got != running:
		return laterSnapshot
	case have != running && got == running:
		return olderSnapshot
	}
	return sameSnapshot
}

// insertRun adds r with the state columns as the source stored them.
func (m *merger) insertRun(r Run, state []any) (int64, snapshot, error) {
	args := append(runIdentity(r), state...)
	res, err := m.tx.Exec(`INSERT INTO runs (started, host, gpu_name, gpu_uuid, cc, driver, tool_version, args,
		finished, status, copy_gbps, telemetry) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	if err != nil {
		return 0, 0, err
	}
	id, err := res.LastInsertId()
	return id, sameSnapshot, err
}

// conflict records a row of p's source left out.
func (m *merger) conflict(p plannedRun, row, diff string) {
	m.rep.Conflicts = append(m.rep.Conflicts, MergeConflict{Path: m.srcs[p.src].path, Run: describeRun(p.run), Row: row, Diff: diff})
}

// variantID is the destination's id of source src's variant v (v.ID is
// the source's).
func (m *merger) variantID(src int, v Variant) (int64, error) {
	if id, ok := m.variants[src][v.ID]; ok {
		return id, nil
	}
	id, err := variantID(m.tx, v)
	if err != nil {
		return 0, err
	}
	m.variants[src][v.ID] = id
	return id, nil
}

// scanVariant reads a variant's id, kernel, shape key, params and PTX
// hash, then n raw columns.
func scanVariant(rows *sql.Rows, n int) (Variant, []any, error) {
	vals, err := scanRaw(rows, 5+n)
	if err != nil {
		return Variant{}, nil, err
	}
	v := Variant{ID: vals[0].(int64)}
	for i, p := range []*string{&v.Kernel, &v.ShapeKey, &v.Params, &v.PTXSHA256} {
		s, ok := vals[i+1].(string)
		if !ok {
			return Variant{}, nil, fmt.Errorf("variant %d: column %d is %T, want text", v.ID, i+1, vals[i+1])
		}
		*p = s
	}
	return v, vals[5:], nil
}
