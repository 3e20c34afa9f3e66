package store

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// MergeReport is what Merge did: per source, the rows read, added and
// already present; the conflicts between the sources (and the
// destination); and the winners that several sources hold for one kernel,
// shape, GPU and mode.
type MergeReport struct {
	// Sources has one entry per source, in the order given.
	Sources []MergeStats
	// Conflicts are the rows of a source that were not taken because the
	// destination holds the same row (by identity) with other contents.
	Conflicts []MergeConflict
	// Superseded lists the (kernel, shape, GPU, mode) whose winners come
	// from runs of different sources; the newest run's is the one that
	// show and export use.
	Superseded []SupersededWinner
}

// MergeStats counts what Merge did with one source's rows.
type MergeStats struct {
	// Path is the source's file.
	Path string
	// Runs, Evaluations and Winners count the rows of each table.
	Runs, Evaluations, Winners MergeCount
}

// MergeCount counts one table's rows of a source: Read = Added + Present +
// Updated + Conflicting.
type MergeCount struct {
	// Read is the rows the source holds.
	Read int
	// Added is the rows copied into the destination.
	Added int
	// Present is the rows the destination held already, as they are or
	// as recorded by a later snapshot of the same run.
	Present int
	// Updated is the rows the destination held as an earlier snapshot of
	// the same run (a run still "running"), replaced by the source's.
	Updated int
	// Conflicting is the rows left out because the destination holds the
	// same row with other contents (listed in MergeReport.Conflicts).
	Conflicting int
}

// MergeConflict is one row of a source that the destination holds, by
// identity, with other contents.
type MergeConflict struct {
	// Path is the source whose row was left out.
	Path string
	// Run describes the run by its identity.
	Run string
	// Row names the row: "run state", "evaluation KEY (#N)", "winner K S".
	Row string
	// Diff lists the columns that differ: the destination's value (kept),
	// then the source's.
	Diff string
}

// String describes the conflict on one line.
func (c MergeConflict) String() string {
	return fmt.Sprintf("%s: %s: %s: %s", c.Path, c.Run, c.Row, c.Diff)
}

// SupersededWinner is a (kernel, shape, GPU, mode) with winners in several
// runs that no single source holds together.
type SupersededWinner struct {
	Kernel, ShapeKey, GPUUUID string
	// Mode is the mode the winner was timed in ("" when the run holds no
	// evaluation of the winning variant).
	Mode string
	// Runs is how many runs of the destination have a winner for it.
	Runs int
	// NewestRun and NewestStarted are the newest of those runs in the
	// destination; NewestFrom the sources that hold it.
	NewestRun     int64
	NewestStarted time.Time
	NewestFrom    []string
}

// Merge copies every run of srcs into dst with its evaluations and
// winners, in one transaction on dst; see the package documentation
// (Merging) for the identities and the conflict rule. srcs may be opened
// read-only and at an older schema; dst must be writable and none of
// them. Merge fails only on an error of the databases: conflicts are
// reported, not errors.
func Merge(dst *DB, srcs ...*DB) (rep *MergeReport, err error) {
	if err := dst.writable("merge"); err != nil {
		return nil, err
	}
	for _, s := range srcs {
		if s == dst {
			return nil, dst.errf("merge", errors.New("the destination is also a source"))
		}
	}
	plan, err := mergePlan(srcs)
	if err != nil {
		return nil, err
	}
	tx, err := dst.sql.Begin()
	if err != nil {
		return nil, dst.errf("merge: begin", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	m := &merger{dst: dst, tx: tx, srcs: srcs, rep: &MergeReport{}, variants: make([]map[int64]int64, len(srcs)),
		origin: map[int64][]int{}}
	for i, s := range srcs {
		m.rep.Sources = append(m.rep.Sources, MergeStats{Path: s.path})
		m.variants[i] = map[int64]int64{}
	}
	for _, p := range plan {
		if err := m.mergeRun(p); err != nil {
			return nil, dst.errf(fmt.Sprintf("merge run %d of %s", p.run.ID, srcs[p.src].path), err)
		}
	}
	if m.rep.Superseded, err = m.superseded(); err != nil {
		return nil, dst.errf("merge: winners", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, dst.errf("merge: commit", err)
	}
	return m.rep, nil
}

// plannedRun is one run of one source.
type plannedRun struct {
	src int
	run Run
}

// mergePlan lists every run of every source, oldest started first (ties
// in the order of the sources, then of the runs), so that the
// destination numbers the runs it adds in the order they began, which is
// what "newest run" means to show, report and export.
func mergePlan(srcs []*DB) ([]plannedRun, error) {
	var plan []plannedRun
	for i, s := range srcs {
		runs, err := s.Runs()
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			plan = append(plan, plannedRun{src: i, run: r})
		}
	}
	sort.SliceStable(plan, func(i, j int) bool { return plan[i].run.Started.Before(plan[j].run.Started) })
	return plan, nil
}

// merger is the state of one Merge.
type merger struct {
	dst  *DB
	tx   *sql.Tx
	srcs []*DB
	rep  *MergeReport
	// variants maps each source's variant ids to the destination's.
	variants []map[int64]int64
	// origin is the sources each destination run was found in.
	origin map[int64][]int
}

// runIdentity is the run's identity across databases (see the package
// documentation): the columns BeginRun writes once and nothing changes.
func runIdentity(r Run) []any {
	return []any{formatTime(r.Started), r.Host, r.GPUName, r.GPUUUID, r.CC, r.Driver, r.ToolVersion, r.Args}
}

// describeRun names a run in messages by its identity.
func describeRun(r Run) string {
	return fmt.Sprintf("run started %s on %q %s %s (driver %s, tool %s)",
		r.Started.UTC().Format(time.RFC3339Nano), r.Host, r.GPUName, r.GPUUUID, r.Driver, r.ToolVersion)
}

// snapshot is how a source's copy of a run relates to the destination's.
type snapshot int

const (
	sameSnapshot  snapshot = iota // the same state: differing rows conflict
	laterSnapshot                 // the source's run has finished, the destination's has not
	olderSnapshot                 // the destination's run has finished, the source's has not
)

// mergeRun finds or adds p's run in the destination, then merges its
// evaluations and winners.
func (m *merger) mergeRun(p plannedRun) error {
	st := &m.rep.Sources[p.src]
	st.Runs.Read++
	id, snap, err := m.matchRun(p)
	if err != nil {
		return err
	}
	if !slices.Contains(m.origin[id], p.src) {
		m.origin[id] = append(m.origin[id], p.src)
	}
	if err := m.mergeEvaluations(p, id); err != nil {
		return err
	}
	return m.mergeWinners(p, id, snap)
}
