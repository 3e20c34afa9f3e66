package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gradtune/gradtune/regress"
	"github.com/gradtune/gradtune/store"
)

func regressCommand() *command {
	return &command{
		name:  "regress",
		usage: "regress --baseline A.db[:RUN] --db B.db[:RUN] [--threshold 3.5%] [--min-shift 0.75] [--no-drift] [--alpha 0.05] [--format markdown|bench]",
		summary: "the regression gate: compare each kernel, dtype and shape of run B with run A (default:\n" +
			"each database's newest run) with a Mann–Whitney U test, a threshold, a minimum shift and\n" +
			"the 95% CI of the change, B's samples divided by its drift (the median change of all its\n" +
			"cases); exit 1 when a case regressed, has no valid result in B (failed, listed with\n" +
			"its error) or is missing from B, 0 otherwise, 2 on bad input (a run compared with itself);\n" +
			"a Markdown table, or --format bench for benchstat (benchstat -col run FILE)",
		flags: func(fs *flagSet) {
			fs.String("baseline", "", "A.db[:RUN]\tthe last good run")
			fs.String("db", "", "B.db[:RUN]\tthe run to judge")
			fs.String("threshold", fmt.Sprintf("%g%%", 100*regress.DefaultOptions.Threshold), "PCT\tthe smallest slowdown that fails the gate, after the run's drift")
			fs.Float64("min-shift", regress.DefaultOptions.MinShift, "US\tthe smallest slowdown in µs that fails the gate")
			fs.Bool("no-drift", false, "\tcompare B's samples as measured, without taking out its drift")
			fs.Float64("alpha", regress.DefaultOptions.Alpha, "P\tsignificance level of the U test")
			fs.String("format", "markdown", "F\tmarkdown or bench (the Go benchmark format of both runs' samples)")
		},
		run: cmdRegress,
	}
}

// errGate is the failure of the gate: exit 1, the cases named.
var errGate = errors.New("the regression gate failed")

func cmdRegress(fs *flagSet, stdout, _ io.Writer) error {
	opt, err := gateOptions(fs)
	if err != nil {
		return err
	}
	format := fs.str("format")
	if format != "markdown" && format != "bench" {
		return usagef("--format %q: want markdown or bench", format)
	}
	var sides [2]regress.Side
	for i, name := range []string{"baseline", "db"} {
		if sides[i], err = loadSide(name, fs.Lookup(name).Value.String()); err != nil {
			return err
		}
	}
	rep, err := regress.Compare(sides[0], sides[1], opt)
	if err != nil {
		return usageError{err}
	}
	if format == "bench" {
		err = regress.WriteBenchfmt(stdout, rep)
	} else {
		err = regress.WriteMarkdown(stdout, rep)
	}
	if err != nil {
		return err
	}
	if failed := rep.Failed(); len(failed) > 0 {
		var names []string
		for _, row := range failed {
			names = append(names, fmt.Sprintf("%s %s %s", row.Key(), row.Verdict, changeText(row)))
		}
		return fmt.Errorf("%w: %d of %d cases: %s", errGate, len(failed), len(rep.Rows), strings.Join(names, "; "))
	}
	return nil
}

func changeText(row regress.Row) string {
	switch row.Verdict {
	case regress.Missing:
		return "(not in the new run)"
	case regress.Failed:
		return "(no valid result in the new run: " + row.New.Err + ")"
	}
	return fmt.Sprintf("%+.1f%% (95%% CI %+.1f%% … %+.1f%%)", 100*row.Change, 100*row.Lo, 100*row.Hi)
}

func gateOptions(fs *flagSet) (regress.Options, error) {
	opt := regress.DefaultOptions
	th := strings.TrimSpace(fs.str("threshold"))
	v, err := strconv.ParseFloat(strings.TrimSuffix(th, "%"), 64)
	if err != nil || v < 0 || v >= 100 {
		return opt, usagef("--threshold %q: want a percentage such as 2%%", th)
	}
	opt.Threshold = v / 100
	opt.MinShift = fs.float("min-shift")
	if !(opt.MinShift >= 0) {
		return opt, usagef("--min-shift %v: want microseconds, 0 or more", opt.MinShift)
	}
	opt.NoDrift = fs.Given("no-drift")
	opt.Alpha = fs.float("alpha")
	if !(opt.Alpha > 0 && opt.Alpha < 1) {
		return opt, usagef("--alpha %v: want a level between 0 and 1, such as 0.05", opt.Alpha)
	}
	return opt, nil
}

// loadSide opens FILE[:RUN] read-only and loads its run.
func loadSide(flag, spec string) (regress.Side, error) {
	if spec == "" {
		return regress.Side{}, usagef("regress needs --baseline A.db[:RUN] and --db B.db[:RUN]")
	}
	path, run, err := splitRun(spec)
	if err != nil {
		return regress.Side{}, usagef("--%s %q: %v", flag, spec, err)
	}
	db, err := store.OpenReadOnly(path)
	if err != nil {
		return regress.Side{}, userError(fmt.Errorf("--%s: %w", flag, err))
	}
	defer db.Close()
	side, err := regress.Load(db, run)
	if err != nil {
		return regress.Side{}, userError(fmt.Errorf("--%s: %w", flag, err))
	}
	return side, nil
}

// splitRun splits "path:RUN"; a path that exists as given is taken whole.
func splitRun(spec string) (string, int64, error) {
	i := strings.LastIndex(spec, ":")
	if i < 0 {
		return spec, 0, nil
	}
	if _, err := os.Stat(spec); err == nil {
		return spec, 0, nil
	}
	run, err := strconv.ParseInt(spec[i+1:], 10, 64)
	if err != nil || run <= 0 {
		return "", 0, fmt.Errorf("the part after ':' must be a run id (see tune runs)")
	}
	return spec[:i], run, nil
}
