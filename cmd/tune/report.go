package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gradtune/gradtune/reports"
)

func reportCommand() *command {
	return &command{
		name:  "report",
		usage: "report [--db FILE] [--run ID] [--kernel K] [--shapes S] [--peers FILE.jsonl] [--force] -o DIR",
		summary: "charts (SVG and PNG under DIR/img), DIR/index.html (self-contained, reads\n" +
			"offline) and DIR/report.md (for pull requests): every valid variant's median\n" +
			"and CI per shape, time by each axis, a roofline, best so far, failures by kind",
		flags: func(fs *flagSet) {
			resultFlags(fs)
			fs.String("o", "", "DIR\tthe report directory")
			fs.String("peers", "", "FILE\tJSON lines of bench/peers*.py, shown beside our results")
			fs.Bool("force", false, "\twrite into a directory that already holds files")
		},
		run: cmdReport,
	}
}

func cmdReport(fs *flagSet, stdout, _ io.Writer) error {
	out := fs.Lookup("o").Value.String()
	if out == "" {
		return usagef("report needs -o DIR (the report directory)")
	}
	opt := reports.Options{Force: fs.Given("force")}
	if path := fs.Lookup("peers").Value.String(); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return usagef("--peers: %w", err)
		}
		opt.Peers, err = reports.ReadPeers(f)
		f.Close()
		if err != nil {
			return usagef("--peers %s: %w", path, err)
		}
	}
	set, err := loadResults(fs)
	if err != nil {
		return err
	}
	files, err := reports.Write(set, out, opt)
	if errors.Is(err, reports.ErrExists) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d files in %s; open %s\n", len(files), out, out+"/index.html")
	return nil
}
