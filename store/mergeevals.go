package store

import (
	"fmt"
	"slices"

	"github.com/gradtune/gradtune/eval"
)

// evalIdent is an evaluation's identity within a run of the destination:
// its content key (the variant's id stands for kernel, shape, params and
// PTX hash) and its rank among the run's evaluations of that key, in
// the order they were recorded (1 for the first).
type evalIdent struct {
	variant           int64
	gpu, driver, mode any
	n                 int
}

// rawEval is an evaluation as stored: its variant and evalCols.
type rawEval struct {
	variant Variant
	vals    []any
}

// mergeEvaluations adds the evaluations of p's run that the destination's
// run id lacks, by identity, and compares those it holds.
func (m *merger) mergeEvaluations(p plannedRun, id int64) error {
	src, st := m.srcs[p.src], &m.rep.Sources[p.src].Evaluations
	evs, err := m.sourceEvaluations(p)
	if err != nil {
		return err
	}
	have, err := m.destEvaluations(id)
	if err != nil {
		return err
	}
	names, marks := colNames(evalCols)
	insert := `INSERT INTO evaluations (run_id, variant_id, ` + names + `) VALUES (?, ?, ` + marks + `)`
	rank := map[evalIdent]int{}
	for _, e := range evs {
		st.Read++
		vid, err := m.variantID(p.src, e.variant)
		if err != nil {
			return err
		}
		ident := evalIdent{variant: vid, gpu: e.vals[0], driver: e.vals[1], mode: e.vals[2]}
		rank[ident]++
		ident.n = rank[ident]
		old, ok := have[ident]
		switch {
		case !ok:
			st.Added++
			if _, err := m.tx.Exec(insert, append([]any{id, vid}, e.vals...)...); err != nil {
				return err
			}
		default:
			if diff := diffCols(evalCols, old, e.vals, src.schema); diff != "" {
				st.Conflicting++
				m.conflict(p, fmt.Sprintf("evaluation %s (#%d)", evalKey(e), ident.n), diff)
			} else {
				st.Present++
			}
		}
	}
	return nil
}

// evalKey is the content key of e, for messages.
func evalKey(e rawEval) Key {
	k := Key{Kernel: e.variant.Kernel, ShapeKey: e.variant.ShapeKey, Params: e.variant.Params, PTXSHA256: e.variant.PTXSHA256}
	k.GPUUUID, _ = e.vals[0].(string)
	k.Driver, _ = e.vals[1].(string)
	if s, ok := e.vals[2].(string); ok {
		k.Mode = eval.Mode(s)
	}
	return k
}

// sourceEvaluations reads the evaluations of p's run, in recording order.
func (m *merger) sourceEvaluations(p plannedRun) ([]rawEval, error) {
	src := m.srcs[p.src]
	rows, err := src.sql.Query(`SELECT v.id, v.kernel, v.shape_key, v.params, v.ptx_sha256, `+src.selectCols("e.", evalCols)+`
		FROM evaluations e JOIN variants v ON v.id = e.variant_id WHERE e.run_id = ? ORDER BY e.id`, p.run.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []rawEval
	for rows.Next() {
		v, vals, err := scanVariant(rows, len(evalCols))
		if err != nil {
			return nil, err
		}
		out = append(out, rawEval{variant: v, vals: vals})
	}
	return out, rows.Err()
}

// destEvaluations reads the evaluations of the destination's run id by
// identity.
func (m *merger) destEvaluations(id int64) (map[evalIdent][]any, error) {
	rows, err := m.tx.Query(`SELECT variant_id, `+m.dst.selectCols("", evalCols)+` FROM evaluations WHERE run_id = ? ORDER BY id`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[evalIdent][]any{}
	rank := map[evalIdent]int{}
	for rows.Next() {
		vals, err := scanRaw(rows, 1+len(evalCols))
		if err != nil {
			return nil, err
		}
		ident := evalIdent{variant: vals[0].(int64), gpu: vals[1], driver: vals[2], mode: vals[3]}
		rank[ident]++
		ident.n = rank[ident]
		out[ident] = vals[1:]
	}
	return out, rows.Err()
}

// mergeWinners adds the winners of p's run that the destination's run id
// lacks and compares those it holds: a later snapshot of the run
// replaces a differing winner, an older one leaves it, and the same
// snapshot reports a conflict.
func (m *merger) mergeWinners(p plannedRun, id int64, snap snapshot) error {
	src, st := m.srcs[p.src], &m.rep.Sources[p.src].Winners
	rows, err := src.sql.Query(`SELECT v.id, v.kernel, v.shape_key, v.params, v.ptx_sha256, `+src.selectCols("w.", winnerCols[1:])+`
		FROM winners w JOIN variants v ON v.id = w.variant_id WHERE w.run_id = ? ORDER BY w.id`, p.run.ID)
	if err != nil {
		return err
	}
	var ws []rawEval
	for rows.Next() {
		v, vals, err := scanVariant(rows, len(winnerCols)-1)
		if err != nil {
			rows.Close()
			return err
		}
		ws = append(ws, rawEval{variant: v, vals: vals})
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, w := range ws {
		st.Read++
		if err := m.mergeWinner(p, id, snap, w); err != nil {
			return err
		}
	}
	return nil
}

// mergeWinner merges one winner w (its variant, then winnerCols after the
// variant's) of p's run into the destination's run id.
func (m *merger) mergeWinner(p plannedRun, id int64, snap snapshot, w rawEval) error {
	st := &m.rep.Sources[p.src].Winners
	vid, err := m.variantID(p.src, w.variant)
	if err != nil {
		return err
	}
	got := append([]any{vid}, w.vals...)
	names, marks := colNames(winnerCols)
	have, err := scanRaw(m.tx.QueryRow(`SELECT `+m.dst.selectCols("", winnerCols)+` FROM winners
		WHERE run_id = ? AND kernel = ? AND shape_key = ?`, id, w.variant.Kernel, w.variant.ShapeKey), len(winnerCols))
	if errNoRows(err) {
		st.Added++
		_, err = m.tx.Exec(`INSERT INTO winners (run_id, kernel, shape_key, `+names+`) VALUES (?, ?, ?, `+marks+`)`,
			append([]any{id, w.variant.Kernel, w.variant.ShapeKey}, got...)...)
		return err
	}
	if err != nil {
		return err
	}
	diff := diffCols(winnerCols, have, got, m.srcs[p.src].schema)
	switch {
	case diff == "" || snap == olderSnapshot:
		st.Present++
	case snap == laterSnapshot:
		st.Updated++
		_, err = m.tx.Exec(`UPDATE winners SET (`+names+`) = (`+marks+`) WHERE run_id = ? AND kernel = ? AND shape_key = ?`,
			append(got, id, w.variant.Kernel, w.variant.ShapeKey)...)
	default:
		st.Conflicting++
		m.conflict(p, fmt.Sprintf("winner of %s %s", w.variant.Kernel, w.variant.ShapeKey), diff)
	}
	return err
}

// superseded lists the (kernel, shape, GPU, mode) whose winners in the
// destination come from several runs that no single source holds
// together; a run the destination held before Merge counts as the
// destination's.
func (m *merger) superseded() ([]SupersededWinner, error) {
	rows, err := m.tx.Query(`SELECT w.kernel, w.shape_key, r.gpu_uuid,
			coalesce((SELECT min(e.mode) FROM evaluations e WHERE e.run_id = w.run_id AND e.variant_id = w.variant_id), ''),
			w.run_id, r.started
		FROM winners w JOIN runs r ON r.id = w.run_id
		ORDER BY w.kernel, w.shape_key, r.gpu_uuid, 4, r.started, w.run_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []SupersededWinner // one per winner, NewestRun its own run
	for rows.Next() {
		var s SupersededWinner
		if err := rows.Scan(&s.Kernel, &s.ShapeKey, &s.GPUUUID, &s.Mode, &s.NewestRun, timeCol{&s.NewestStarted}); err != nil {
			return nil, err
		}
		all = append(all, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []SupersededWinner
	for i, j := 0, 0; i < len(all); i = j {
		var origins [][]int
		for j = i; j < len(all) && sameWinnerGroup(all[i], all[j]); j++ {
			origins = append(origins, m.sources(all[j].NewestRun))
		}
		if j-i > 1 && !oneSourceHolds(origins) {
			s := all[j-1]
			s.Runs, s.NewestFrom = j-i, m.paths(origins[len(origins)-1])
			out = append(out, s)
		}
	}
	return out, nil
}

func sameWinnerGroup(a, b SupersededWinner) bool {
	return a.Kernel == b.Kernel && a.ShapeKey == b.ShapeKey && a.GPUUUID == b.GPUUUID && a.Mode == b.Mode
}

// sources are the sources that hold the destination's run id, or -1 (the
// destination) for a run no source holds.
func (m *merger) sources(id int64) []int {
	if o := m.origin[id]; len(o) > 0 {
		return o
	}
	return []int{-1}
}

// oneSourceHolds reports whether one source holds every run of a group,
// given each run's sources.
func oneSourceHolds(origins [][]int) bool {
	for _, src := range origins[0] {
		all := true
		for _, o := range origins[1:] {
			all = all && slices.Contains(o, src)
		}
		if all {
			return true
		}
	}
	return false
}

// paths names sources by their files (-1: the destination).
func (m *merger) paths(srcs []int) []string {
	var out []string
	for _, i := range srcs {
		if i < 0 {
			out = append(out, m.dst.path)
		} else {
			out = append(out, m.srcs[i].path)
		}
	}
	return out
}
