package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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

func cmdReport(fs *flagSet, stdout, stderr io.Writer) error {
	out := fs.str("o")
	if out == "" {
		return usagef("report needs -o DIR (the report directory)")
	}
	sel, err := resultOptions(fs)
	if err != nil {
		return err
	}
	if err := reports.CheckDir(out, fs.Given("force")); err != nil {
		return outputError(err)
	}
	opt := reports.Options{Force: fs.Given("force"), Keep: protectDB(fs)}
	path := fs.str("peers")
	if path != "" {
		if opt.Peers, err = readPeers(path); err != nil {
			return err
		}
	}
	dir := out // the report's directory, or the one it will be made in
	if _, err := os.Stat(out); err != nil {
		dir = filepath.Dir(filepath.Clean(out))
	}
	if err := probeWrite("-o", out, dir, ".gradtune-probe-*"); err != nil {
		return err
	}
	set, err := loadSelection(fs.str("db"), sel)
	if err != nil {
		return err
	}
	if path != "" && opt.Peers.Matching(set) == 0 {
		fmt.Fprintf(stderr, "tune report: --peers %s: none of its %d rows is a shape of the report (its kernels: %s); the report has no peers\n",
			path, opt.Peers.Len(), strings.Join(opt.Peers.Kernels(), ", "))
	}
	files, err := reports.Write(set, out, opt)
	if err != nil {
		return outputError(err)
	}
	fmt.Fprintf(stdout, "%d files in %s; open %s\n", len(files), out, filepath.Join(out, "index.html"))
	return nil
}

// readPeers reads a peers file; a missing, malformed or empty one is a
// usage error.
func readPeers(path string) (*reports.Peers, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--peers: %w", err)
	}
	defer f.Close()
	p, err := reports.ReadPeers(f)
	if err != nil {
		return nil, usagef("--peers %s: %w", path, err)
	}
	return p, nil
}
