package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gradtune/gradtune/reports"
)

const reportHelp = `tune report [--db tune.db] [--run ID] [--kernel K] [--shapes S] [--peers FILE.jsonl]
            [--force] -o DIR
  charts (SVG and PNG under DIR/img), DIR/index.html (self-contained, reads
  offline) and DIR/report.md (for pull requests): per shape every valid
  variant's median and CI with the winner and baselines marked, time by
  each tuning axis, a roofline, best so far against evaluations, failures
  by kind, quartiles and outliers, and the fit of time against bytes.
  --peers: the JSON lines of bench/peers*.py, shown beside our results.
  A directory that holds files is not written into without --force.
`

func cmdReport(args []string, stdout io.Writer) error {
	fs := newFlags("report")
	sel := addResultFlags(fs)
	out := fs.String("o", "", "")
	peersFile := fs.String("peers", "", "")
	force := fs.Bool("force", false, "")
	if err := parseResultFlags(fs, args, reportHelp, stdout); err != nil {
		return err
	}
	if *out == "" {
		return usagef("report needs -o DIR (the report directory)")
	}
	opt := reports.Options{Force: *force}
	if *peersFile != "" {
		f, err := os.Open(*peersFile)
		if err != nil {
			return usagef("--peers: %v", err)
		}
		opt.Peers, err = reports.ReadPeers(f)
		f.Close()
		if err != nil {
			return usagef("--peers %s: %v", *peersFile, err)
		}
	}
	set, err := sel.load()
	if err != nil {
		return err
	}
	files, err := reports.Write(set, *out, opt)
	if errors.Is(err, reports.ErrExists) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d files in %s; open %s\n", len(files), *out, *out+"/index.html")
	return nil
}
