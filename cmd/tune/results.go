package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// dispatch runs the commands that read results (show, report, export) and
// hands every other command to run.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return run(args, stdout, stderr)
	}
	var err error
	switch args[0] {
	case "show":
		err = cmdShow(args[1:], stdout)
	case "report":
		err = cmdReport(args[1:], stdout)
	case "export":
		err = cmdExport(args[1:], stdout)
	default:
		return run(args, stdout, stderr)
	}
	return exitCode(err, stderr)
}

// exitCode prints err and maps it to an exit code: 0, 2 for usage errors
// and for inputs of the user's that are wrong, 1 for the rest.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "tune: %v\n", err)
	var u usageError
	if errors.As(err, &u) {
		return exitUsage
	}
	return exitFail
}

// resultFlags are the flags that select results.
type resultFlags struct {
	db, kernel, shapes *string
	run                *int64
}

func addResultFlags(fs *flag.FlagSet) resultFlags {
	return resultFlags{
		db:     fs.String("db", "tune.db", ""),
		run:    fs.Int64("run", 0, ""),
		kernel: fs.String("kernel", "", ""),
		shapes: fs.String("shapes", "", ""),
	}
}

// load opens the database read-only and loads the selection. Errors that
// come from the user's input (a missing or foreign database, an unknown
// run, kernel or shape, an empty run) are usage errors.
func (f resultFlags) load() (*results.Set, error) {
	opt := results.Options{RunID: *f.run}
	if *f.run < 0 {
		return nil, usagef("--run %d: want a run id (see tune show)", *f.run)
	}
	for _, k := range strings.Split(*f.kernel, ",") {
		if k = strings.TrimSpace(k); k != "" && k != "all" {
			opt.Kernels = append(opt.Kernels, k)
		}
	}
	if *f.shapes != "" {
		specs, err := variants.ParseSpecs(*f.shapes)
		if err != nil {
			return nil, usagef("--shapes: %v (want dims such as m=2048,n=8960, optionally dtype=bf16; several separated by ';')", err)
		}
		opt.Shapes = specs
	}
	db, err := store.OpenReadOnly(*f.db)
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

// userError marks the errors that name a wrong input as usage errors.
func userError(err error) error {
	for _, e := range []error{store.ErrNoDatabase, store.ErrNotDatabase, store.ErrSchemaTooNew, store.ErrNoRun, results.ErrNoResults} {
		if errors.Is(err, e) {
			return usageError{err}
		}
	}
	return err
}

// parseResultFlags parses args, answering --help with text.
func parseResultFlags(fs *flag.FlagSet, args []string, help string, stdout io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return flag.ErrHelp
		}
		return usagef("%v\n%s", err, strings.TrimSpace(help))
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q\n%s", fs.Arg(0), strings.TrimSpace(help))
	}
	return nil
}
