package main

import (
	"fmt"
	"io"

	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/store"
)

// writeFailures lists the cases of run runID in db that have no winner
// (no valid result), each with why (results.Shape.Why), and returns how
// many there are.
func writeFailures(w io.Writer, db *store.DB, runID int64) (int, error) {
	set, err := results.Load(db, results.Options{RunID: runID})
	if err != nil {
		return 0, fmt.Errorf("listing the failures of run %d: %w", runID, err)
	}
	n := 0
	for _, sh := range set.Shapes {
		if why := sh.Why(); why != "" {
			if n == 0 {
				fmt.Fprintf(w, "failed (no valid result in run %d):\n", runID)
			}
			n++
			fmt.Fprintf(w, "  %s %s %s: %s\n", sh.Kernel, sh.DType, sh.Dims, why)
		}
	}
	return n, nil
}
