package main

import (
	"fmt"
	"io"

	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/reports"
	"github.com/gradtune/gradtune/store"
)

func runsCommand() *command {
	return &command{
		name:  "runs",
		usage: "runs [--db FILE]",
		summary: "every run of a database: its command, GPU state at the start, evaluations by status,\n" +
			"telemetry coverage, samples left out while throttled, warnings and tied winners",
		flags: func(fs *flagSet) { fs.String("db", "tune.db", "FILE\tSQLite results database (read only)") },
		run:   cmdRuns,
	}
}

func cmdRuns(fs *flagSet, stdout, _ io.Writer) error {
	path := fs.str("db")
	db, err := store.OpenReadOnly(path)
	if err != nil {
		return userError(fmt.Errorf("--db: %w", err))
	}
	defer db.Close()
	sums, err := results.Summaries(db)
	if err != nil {
		return err
	}
	if len(sums) == 0 {
		return usageError{results.ErrNoResults}
	}
	reports.WriteRunSummaries(stdout, path, sums)
	return nil
}
