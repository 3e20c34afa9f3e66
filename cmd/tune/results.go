package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gradtune/gradtune/internal/outfile"
	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/kernels/faults"
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

// loadResults checks the selection flags, then opens the database
// read-only and loads the selection they make.
func loadResults(fs *flagSet) (*results.Set, error) {
	opt, err := resultOptions(fs)
	if err != nil {
		return nil, err
	}
	return loadSelection(fs.str("db"), opt)
}

// resultOptions checks --run, --kernel and --shapes; it reads nothing.
func resultOptions(fs *flagSet) (results.Options, error) {
	run := fs.integer64("run")
	if run < 0 {
		return results.Options{}, usagef("--run %d: want a run id (see tune show)", run)
	}
	opt := results.Options{RunID: run}
	for _, k := range strings.Split(fs.str("kernel"), ",") {
		if k = strings.TrimSpace(k); k != "" && k != "all" {
			if err := knownKernel(k); err != nil {
				return opt, usagef("--kernel: %w", err)
			}
			opt.Kernels = append(opt.Kernels, k)
		}
	}
	if sh := fs.str("shapes"); sh != "" {
		specs, err := variants.ParseSpecs(sh)
		if err != nil {
			return opt, usagef("--shapes: %w (want dims such as m=2048,n=8960, optionally dtype=bf16; several separated by ';')", err)
		}
		opt.Shapes = specs
	}
	return opt, nil
}

// loadSelection opens the database at path read-only and loads opt's
// selection. Errors that come from the user's input (a missing, damaged
// or foreign database, an unknown run, kernel or shape, an empty run)
// are usage errors; the database's own are said after --db, as every
// command that reads one says them.
func loadSelection(path string, opt results.Options) (*results.Set, error) {
	db, err := store.OpenReadOnly(path)
	if err != nil {
		return nil, userError(fmt.Errorf("--db: %w", err))
	}
	defer db.Close()
	set, err := results.Load(db, opt)
	if err != nil {
		return nil, userError(err)
	}
	return set, nil
}

// knownKernel accepts the families of the catalog and the planted-fault
// family (tune --faults records it), before any database is read.
func knownKernel(name string) error {
	if name == faults.Name {
		return nil
	}
	_, err := catalog.Lookup(name)
	return err
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
