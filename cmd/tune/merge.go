package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gradtune/gradtune/store"
)

func mergeCommand() *command {
	return &command{
		name:     "merge",
		usage:    "merge -o OUT.db IN.db [IN.db...]  (or --db IN.db[,IN.db...])",
		operands: "IN.db...",
		summary: "merge gradtune databases (the shards of a tune, several machines' results) into OUT.db:\n" +
			"every run with its evaluations, samples and winners, matched by content, so merging an\n" +
			"input again adds nothing; a gradtune database at OUT.db is merged into, any other file\n" +
			"refused; prints per input the rows read, added and already present; exit 1, writing\n" +
			"nothing, when the inputs conflict (the same evaluation recorded with other samples)",
		flags: func(fs *flagSet) {
			fs.String("db", "", "IN.db[,IN.db...]\tmore databases to merge, before the operands (read only)")
			fs.String("o", "", "OUT.db\tthe merged database: a new file, or a gradtune database to merge into (never an input)")
		},
		misplace: map[string]string{"force": "merge replaces no file: a gradtune database at -o is merged into, and any other file is refused"},
		run:      cmdMerge,
	}
}

// errMerge is a merge that found conflicts: exit 1, nothing written.
var errMerge = errors.New("merge")

func cmdMerge(fs *flagSet, stdout, _ io.Writer) error {
	out, list := fs.str("o"), fs.str("db")
	if list == "" && len(fs.args) == 0 {
		return usagef("merge needs the databases to merge: tune merge -o OUT.db IN.db [IN.db...]")
	}
	if out == "" {
		return usagef("merge needs -o OUT.db (the merged database)")
	}
	all := fs.args
	if list != "" {
		all = append([]string{list}, all...)
	}
	for _, a := range fs.args {
		if strings.Contains(a, ",") {
			return usagef("merge: %q: an input's name has a comma; rename it", a)
		}
	}
	inputs, err := pathList("inputs", strings.Join(all, ","), "IN.db")
	if err != nil {
		return err
	}
	existing, err := store.CheckMergeOutput(out, inputs)
	if err != nil {
		return usagef("-o: %w", err)
	}
	srcs, err := openInputs(inputs)
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
	}()
	if err != nil {
		return err
	}
	if err := probeFile("-o", out, dotTemp); err != nil {
		return err
	}
	rep, err := store.MergeInto(out, srcs)
	if rep != nil {
		writeMergeReport(stdout, out, existing, rep)
	}
	switch {
	case errors.Is(err, store.ErrMergeConflict):
		return fmt.Errorf("%w: %w (listed above)", errMerge, err)
	case errors.Is(err, store.ErrMergeOutput):
		return usagef("-o: %w", err)
	}
	return err
}

// openInputs opens every input read-only; the first that cannot be read
// is a usage error naming it.
func openInputs(inputs []string) ([]*store.DB, error) {
	var srcs []*store.DB
	for _, in := range inputs {
		db, err := store.OpenReadOnly(in)
		if err != nil {
			return srcs, userError(fmt.Errorf("input: %w", err))
		}
		srcs = append(srcs, db)
	}
	return srcs, nil
}

// writeMergeReport prints what the merge did: per source the rows read,
// added and already present, the winners that inputs' runs share, the
// conflicts, and what the output holds.
func writeMergeReport(w io.Writer, out string, existing bool, rep *store.MergeReport) {
	into := "a new database"
	if existing {
		into = "the existing database, whose rows are kept (listed first)"
	}
	fmt.Fprintf(w, "merge into %s, %s:\n", out, into)
	var total [3]int
	for _, s := range rep.Sources {
		fmt.Fprintf(w, "  %s: %s; %s; %s\n", s.Path, mergeCount("runs", s.Runs), mergeCount("evaluations", s.Evaluations), mergeCount("winners", s.Winners))
		for i, c := range []store.MergeCount{s.Runs, s.Evaluations, s.Winners} {
			total[i] += c.Added
		}
	}
	if len(rep.Superseded) > 0 {
		fmt.Fprintf(w, "%d kernels and shapes have winners from runs of different inputs (not a conflict: show, report and export take the newest run's):\n", len(rep.Superseded))
		for _, s := range rep.Superseded {
			fmt.Fprintf(w, "  %s %s on %s %s: %d runs; the newest started %s, from %s\n", s.Kernel, s.ShapeKey, s.GPUUUID, s.Mode,
				s.Runs, s.NewestStarted.UTC().Format(time.RFC3339), strings.Join(s.NewestFrom, ", "))
		}
	}
	if len(rep.Conflicts) > 0 {
		fmt.Fprintf(w, "%d conflicts (the output's row, from the input listed earlier, against the named input's); nothing written:\n", len(rep.Conflicts))
		for _, c := range rep.Conflicts {
			fmt.Fprintf(w, "  %s\n", c)
		}
		return
	}
	fmt.Fprintf(w, "%s: %d runs, %d evaluations, %d winners\n", out, total[0], total[1], total[2])
}

// mergeCount is one table's counts of a source.
func mergeCount(table string, c store.MergeCount) string {
	s := fmt.Sprintf("%s %d read, %d added, %d already present", table, c.Read, c.Added, c.Present)
	if c.Updated > 0 {
		s += fmt.Sprintf(", %d updated (a later copy of a run that was running)", c.Updated)
	}
	if c.Conflicting > 0 {
		s += fmt.Sprintf(", %d in conflict", c.Conflicting)
	}
	return s
}
