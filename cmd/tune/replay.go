package main

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gradtune/gradtune/search"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/tuning"
)

func replayCommand() *command {
	return &command{
		name:  "replay",
		usage: "replay --db FILE[,FILE...] [--strategy S[,S...]|all] [--seeds N] [--budget N|P%]",
		summary: "judge search strategies offline: tune every recorded shape of each database with each\n" +
			"strategy, answering evaluations from its recorded samples (a bootstrap resample per seed),\n" +
			"and print per shape each strategy's median distance to the recorded optimum and the\n" +
			"evaluations and samples it used (Markdown)",
		flags: func(fs *flagSet) {
			fs.String("db", "", "FILE[,FILE...]\trecorded databases (read only)")
			strategyFlags(fs, "all")
			fs.Int("seeds", 20, fmt.Sprintf("N\tseeds per strategy, 1 to %d", tuning.MaxReplaySeeds))
		},
		run: cmdReplay,
	}
}

// strategyFlags are the search flags of tune and replay.
func strategyFlags(fs *flagSet, def string) {
	fs.String("strategy", def, "S\tsearch strategy: "+strings.Join(search.Names(), ", ")+
		" (exhaustive: every variant; model: Bayesian optimization with a final confirmation round; random; halving: successive halving)")
	fs.String("budget", "", "N|P%\tfull evaluations per shape (exhaustive: that many spread evenly, default all; random and model: default 10% of the space, at least 8)")
	fs.Bool("no-abandon", false, "\tnever stop a variant early (default: stop one once its median's 95% CI lies 5% above the best's after 6 samples; recorded as skipped)")
}

// budgetFlag reads --budget: a count or a percentage of the space.
func budgetFlag(fs *flagSet) (n int, frac float64, err error) {
	s := fs.str("budget")
	if s == "" || s == "0" {
		return 0, 0, nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f <= 0 || f > 100 {
			return 0, 0, usagef("--budget %q: want a count or a percentage in (0, 100]", s)
		}
		return 0, f / 100, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, 0, usagef("--budget %q: want a count (0: the strategy's default) or a percentage such as 10%%", s)
	}
	return n, 0, nil
}

// strategiesFlag reads --strategy: one name, several, or all.
func strategiesFlag(fs *flagSet) ([]string, error) {
	s := fs.str("strategy")
	if s == "all" {
		return search.Names(), nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		name, err := search.ParseName(strings.TrimSpace(n))
		if err != nil {
			return nil, usagef("--strategy: %w", err)
		}
		out = append(out, name)
	}
	return out, nil
}

// abandonMargin is the abandon rule's margin unless --no-abandon.
func abandonMargin(fs *flagSet) float64 {
	if fs.Given("no-abandon") {
		return 0
	}
	return defaultAbandonMargin
}

// defaultAbandonMargin: a variant is stopped once its median's CI lies 5%
// above the best's.
const defaultAbandonMargin = 0.05

func cmdReplay(fs *flagSet, stdout, stderr io.Writer) error {
	paths := fs.str("db")
	if paths == "" {
		return usagef("replay needs --db FILE (a recorded database)")
	}
	strats, err := strategiesFlag(fs)
	if err != nil {
		return err
	}
	budget, frac, err := budgetFlag(fs)
	if err != nil {
		return err
	}
	seeds := fs.integer("seeds")
	if seeds < 1 || seeds > tuning.MaxReplaySeeds {
		return usagef("--seeds must be 1 to %d, got %d", tuning.MaxReplaySeeds, seeds)
	}
	opt := tuning.ReplayOptions{Strategies: strats, Seeds: seeds, Budget: budget, BudgetFraction: frac, Abandon: abandonMargin(fs)}
	files, err := pathList("--db", paths, "FILE")
	if err != nil {
		return err
	}
	var data []*tuning.ReplayData
	for _, path := range files {
		d, err := loadReplay(path)
		if err != nil {
			return err
		}
		data = append(data, d)
	}
	fmt.Fprintf(stdout, "dist: how much slower the variant the strategy's run chose (its winner by the winner rule) truly is than\n"+
		"the fastest variant the database knows: the chosen variant's recorded median over the lowest recorded median\n"+
		"of the shape's full evaluations, minus 1; median over the seeds. The exhaustive column is the floor that the\n"+
		"replay's noise and the winner rule leave. evals: worker evaluations (median; share of the replayed space's\n"+
		"points; a re-measurement counts); samples: timing samples taken (median). Budget %s; abandon margin %.0f%%.\n\n",
		budgetText(budget, frac), 100*opt.Abandon)
	for _, d := range data {
		opt.Progress = replayProgress(stderr, d.Name, time.Now)
		outs, err := tuning.ReplayStrategies(context.Background(), d, opt)
		if err != nil {
			return err
		}
		tuning.WriteReplayTable(stdout, d, outs, opt.Seeds)
	}
	return nil
}

// replayProgress says on w how many strategy runs of the database called
// name are done: once the first five seconds have passed, at every tenth
// of the way and every five seconds between (a short replay says
// nothing). now is the clock (time.Now; tests pass their own).
func replayProgress(w io.Writer, name string, now func() time.Time) func(done, total int) {
	start := now()
	last, shown := start, 0
	return func(done, total int) {
		t := now()
		tenth := 10 * done / total
		if t.Sub(start) < 5*time.Second || tenth == shown && t.Sub(last) < 5*time.Second {
			return
		}
		shown, last = tenth, t
		fmt.Fprintf(w, "tune replay: %s: %d of %d strategy runs (%s)\n", name, done, total, t.Sub(start).Round(time.Second))
	}
}

func budgetText(n int, frac float64) string {
	switch {
	case frac > 0:
		return fmt.Sprintf("%g%% of each space", 100*frac)
	case n > 0:
		return fmt.Sprintf("%d evaluations per shape", n)
	}
	return "each strategy's default (exhaustive: all; random and model: 10%, at least 8)"
}

// loadReplay reads a recorded database; one whose name ends in .gz is
// unpacked into a temporary file first, removed once read. Every error
// names path, never the temporary file, and a file that is not a
// readable gzip stream or database is a usage error.
func loadReplay(path string) (*tuning.ReplayData, error) {
	name, file := filepath.Base(path), path
	if strings.HasSuffix(path, ".gz") {
		tmp, err := gunzipTemp(path)
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(filepath.Dir(tmp))
		file = tmp
	}
	db, err := store.OpenReadOnly(file)
	if err != nil {
		err = userError(fmt.Errorf("--db: %w", err))
		if file != path {
			err = renamed{err, file, path + " (unpacked)"}
		}
		return nil, err
	}
	defer db.Close()
	d, err := tuning.LoadReplay(db, name)
	if tuning.IsInput(err) {
		return nil, usageError{err}
	}
	return d, err
}

// renamed is err with every mention of a temporary file's path replaced
// by the path the user gave; errors.As and errors.Is see err.
type renamed struct {
	err      error
	from, to string
}

func (r renamed) Error() string { return strings.ReplaceAll(r.err.Error(), r.from, r.to) }
func (r renamed) Unwrap() error { return r.err }

// gunzipTemp unpacks a gzipped file into a new temporary directory and
// returns the unpacked file's path. A file that is missing or not a
// whole gzip stream is a usage error naming path.
func gunzipTemp(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usagef("--db %s: %w", path, unwrapPathError(err))
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", usagef("--db %s: not a gzip file: %w", path, err)
	}
	dir, err := os.MkdirTemp("", "gradtune-replay-")
	if err != nil {
		return "", fmt.Errorf("--db %s: a directory to unpack it in: %w", path, err)
	}
	out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(path), ".gz"))
	w, err := os.Create(out)
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("--db %s: unpacking: %w", path, unwrapPathError(err))
	}
	_, rerr := io.Copy(w, zr)
	werr := w.Close()
	switch {
	case rerr != nil && !errors.As(rerr, new(*fs.PathError)):
		os.RemoveAll(dir)
		return "", usagef("--db %s: damaged gzip file: %w", path, rerr)
	case rerr != nil:
		os.RemoveAll(dir)
		return "", fmt.Errorf("--db %s: unpacking: %w", path, unwrapPathError(rerr))
	case werr != nil:
		os.RemoveAll(dir)
		return "", fmt.Errorf("--db %s: unpacking: %w", path, unwrapPathError(werr))
	}
	return out, nil
}

// unwrapPathError drops the path of an *fs.PathError, which a message
// names already (or which is a temporary file's), keeping the reason.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
