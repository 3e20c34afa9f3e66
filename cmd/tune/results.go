package main

import (
	"errors"
	"strings"

	"github.com/gradtune/gradtune/internal/outfile"
	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/reports"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// resultFlags defines the flags that select results: the database, a
// run, kernels and shapes.
func resultFlags(fs *flagSet) {
	fs.String("db", "tune.db", "FILE\tSQLite results database (read only)")
	fs.Int64("run", 0, "ID\tone run (default: each shape from the newest run that tuned it)")
	fs.String("kernel", "", "K[,K...]\tonly these kernels")
	fs.String("shapes", "", "S\tonly shapes matching these dims, e.g. m=2048,n=8960 (a subset matches; dtype=bf16; several separated by ';')")
}

// loadResults opens the database read-only and loads the selection the
// flags make. Errors that come from the user's input (a missing or foreign
// database, an unknown run, kernel or shape, an empty run) are usage
// errors.
func loadResults(fs *flagSet) (*results.Set, error) {
	run := fs.integer64("run")
	if run < 0 {
		return nil, usagef("--run %d: want a run id (see tune show)", run)
	}
	opt := results.Options{RunID: run}
	for _, k := range strings.Split(fs.str("kernel"), ",") {
		if k = strings.TrimSpace(k); k != "" && k != "all" {
			opt.Kernels = append(opt.Kernels, k)
		}
	}
	if sh := fs.str("shapes"); sh != "" {
		specs, err := variants.ParseSpecs(sh)
		if err != nil {
			return nil, usagef("--shapes: %w (want dims such as m=2048,n=8960, optionally dtype=bf16; several separated by ';')", err)
		}
		opt.Shapes = specs
	}
	db, err := store.OpenReadOnly(fs.str("db"))
	if err != nil {
		return nil, userError(err)
	}
	defer db.Close()
	set, err := results.Load(db, opt)
	if err != nil {
		return nil, userError(err)
	}
	return set, nil
}

// protectDB is the --db database of a command that reads one, which no
// output of the command may replace.
func protectDB(fs *flagSet) []outfile.Protected {
	return []outfile.Protected{{Path: fs.str("db"), What: "the --db database"}}
}

// outputError marks the errors that name an output path no output may
// take (a database, a directory, a missing directory, an existing file
// without --force) as usage errors.
func outputError(err error) error {
	for _, e := range []error{outfile.ErrExists, outfile.ErrDatabase, outfile.ErrPath, reports.ErrExists} {
		if errors.Is(err, e) {
			return usageError{err}
		}
	}
	return err
}

// userError marks the errors that name a wrong input as usage errors.
func userError(err error) error {
	for _, e := range []error{store.ErrNoDatabase, store.ErrNotDatabase, store.ErrDamaged, store.ErrSchemaTooNew, store.ErrNoRun, results.ErrNoResults} {
		if errors.Is(err, e) {
			return usageError{err}
		}
	}
	return err
}
