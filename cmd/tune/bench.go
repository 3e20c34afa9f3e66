package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/kernels/faults"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/tuning"
	"github.com/gradtune/gradtune/variants"
)

func benchCommand() *command {
	return &command{
		name:  "bench",
		usage: "bench --configs TABLE.json [--db FILE] [--kernel K] [--shapes S] [--device N] [--mode cold|hot] [--seed N] [--ref-cache DIR] [--warm-ms MS]",
		summary: "measure again, without searching, the tuned variant of every entry of a config table\n" +
			"and its baseline (the table's, else the family's default variant), into a new run;\n" +
			"tune regress then compares that run with an earlier one",
		flags: func(fs *flagSet) {
			fs.String("configs", "", "TABLE.json\ta config table (tune export, configs/h200/*.json); several separated by ','")
			fs.String("db", "tune.db", "FILE\tSQLite results database")
			fs.String("kernel", "", "K[,K...]\tonly these kernels")
			fs.String("shapes", "", "S\tonly entries matching these dims (a subset matches; dtype=bf16; several separated by ';')")
			fs.Int("device", 0, "N\tGPU ordinal")
			fs.String("mode", string(eval.Cold), "cold|hot\tflush L2 before every sample (cold) or not")
			fs.Int("warm-ms", 0, "MS\tbefore each variant's warm-up runs, repeat its sampling loop untimed for this long (a GPU left idle while the host prepared inputs starts at lower clocks)")
			fs.Uint64("seed", 1, "N\tinput data seed")
			refCacheFlag(fs, "(a nightly run computes each entry's once; any other binary ignores them)")
			fs.String("plant-slowdown", "", "'KERNEL DTYPE SHAPE=PCT%'\tadd a delay launch of PCT% of the table's median to that case (tests of the gate)")
			fs.String("replay", "", "DB\tanswer from the samples recorded in DB instead of a GPU (tests of the gate)")
		},
		hiddenFlags: map[string]bool{"plant-slowdown": true, "replay": true},
		run:         cmdBench,
	}
}

func cmdBench(fs *flagSet, stdout, stderr io.Writer) error {
	gpu, err := gpuOptionsOf(fs)
	if err != nil {
		return err
	}
	warmMS := fs.integer("warm-ms")
	if warmMS < 0 {
		return usagef("--warm-ms %d: want 0 or more", warmMS)
	}
	gpu.measure.WarmMS = float64(warmMS)
	cases, err := benchSelection(fs, stderr)
	if err != nil {
		return err
	}
	if err := gpu.probeDB(); err != nil {
		return err
	}
	refs, closeRefs, err := refCaches(fs, []int{gpu.device}, false)
	if err != nil {
		return err
	}
	defer closeRefs()
	worker, err := benchWorker(fs, gpu.device, gpu.seed, refs[gpu.device])
	if err != nil {
		return err
	}
	r, err := runner.New(runner.Options{Measure: gpu.measure, Seed: gpu.seed, Progress: stdout, NewWorker: worker})
	if err != nil {
		return err
	}
	defer r.Close()
	db, runID, err := beginRun(r, gpu.db, gpu.device, append([]string{"tune", "bench"}, fs.raw...), stdout)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	copyGBps, sums, err := tuning.BenchOnGPU(ctx, tuning.GPURun{Runner: r, DB: db, RunID: runID, Progress: stdout}, cases)
	printTable(stdout, sums, copyGBps)
	failed, ferr := writeFailures(stdout, db, runID)
	switch {
	case err != nil:
		return err
	case ferr != nil:
		return ferr
	case failed > 0:
		return fmt.Errorf("%d of %d entries have no valid result in run %d of %s (listed above)", failed, len(cases), runID, gpu.db)
	}
	return nil
}

// benchSelection reads the tables and the filters into cases; notes go to
// stderr. The flags are checked before any table is read, and an entry
// that two tables (or one table named twice) hold is refused.
func benchSelection(fs *flagSet, stderr io.Writer) ([]runner.Case, error) {
	paths := fs.str("configs")
	if paths == "" {
		return nil, usagef("bench needs --configs TABLE.json (for example configs/h200/activations.json)")
	}
	keep, err := entryFilter(fs)
	if err != nil {
		return nil, err
	}
	var plant *tuning.Plant
	if s := fs.str("plant-slowdown"); s != "" {
		p, err := tuning.ParsePlant(s)
		if err != nil {
			return nil, usageError{err}
		}
		plant = &p
	}
	files, err := pathList("--configs", paths, "TABLE.json")
	if err != nil {
		return nil, err
	}
	set, err := tuning.LoadTables(files)
	if err != nil {
		return nil, usageError{err}
	}
	cases, notes, err := tuning.BenchCases(set, keep, plant)
	if err != nil {
		return nil, usageError{err}
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "bench: %s\n", n)
	}
	return cases, nil
}

// pathList splits a flag's list of files at commas: an empty path, or
// one file named twice (by the same path, or by two paths to the same
// file), is a usage error before any file is read. want says what the
// flag takes ("TABLE.json").
func pathList(flag, list, want string) ([]string, error) {
	var files []string
	var infos []os.FileInfo // nil where the path does not stat: the reader says why
	for _, path := range strings.Split(list, ",") {
		path = strings.TrimSpace(path)
		if path == "" {
			return nil, usagef("%s %q: an empty path between commas (want %s[,%s...])", flag, list, want, want)
		}
		fi, _ := os.Stat(path)
		for i, prev := range files {
			switch {
			case prev == path:
				return nil, usagef("%s: %s is given twice: give each file once", flag, path)
			case fi != nil && infos[i] != nil && os.SameFile(fi, infos[i]):
				return nil, usagef("%s: %s and %s are the same file: give each file once", flag, prev, path)
			}
		}
		files, infos = append(files, path), append(infos, fi)
	}
	return files, nil
}

// entryFilter is --kernel and --shapes as a test of a table entry.
func entryFilter(fs *flagSet) (func(configs.Entry) bool, error) {
	var kernels []string
	for _, k := range strings.Split(fs.str("kernel"), ",") {
		if k = strings.TrimSpace(k); k != "" && k != "all" {
			if _, err := catalog.Lookup(k); err != nil {
				return nil, usagef("--kernel: %w", err)
			}
			kernels = append(kernels, k)
		}
	}
	var specs []variants.Spec
	if sh := fs.str("shapes"); sh != "" {
		var err error
		if specs, err = variants.ParseSpecs(sh); err != nil {
			return nil, usagef("--shapes: %w (want dims such as m=2048,n=8960, optionally dtype=bf16; several separated by ';')", err)
		}
	}
	return func(e configs.Entry) bool {
		if len(kernels) > 0 && !slices.Contains(kernels, e.Kernel) {
			return false
		}
		if len(specs) == 0 {
			return true
		}
		for _, sp := range specs {
			if results.Matches(e.Kernel, e.Shape+",dtype="+e.DType, sp) {
				return true
			}
		}
		return false
	}, nil
}

// benchWorker is a GPU worker process (keeping references in refs, an
// open reference cache's folder, when not empty), or with --replay a
// replay of a recorded database.
func benchWorker(fs *flagSet, dev int, seed uint64, refs string) (func() (runner.Worker, error), error) {
	path := fs.str("replay")
	if path == "" {
		return processWorker(dev, workerFlags{refCache: refs})
	}
	rp, info, err := replayOf(path, seed)
	if err != nil {
		return nil, err
	}
	return rp.Worker(info), nil
}

// replayOf is a replay of the samples recorded in the database at path,
// answering as the GPU of its newest run, with that run's copy
// bandwidth.
func replayOf(path string, seed uint64) (*runner.Replay, runner.DeviceInfo, error) {
	db, err := store.OpenReadOnly(path)
	if err != nil {
		return nil, runner.DeviceInfo{}, userError(fmt.Errorf("--replay: %w", err))
	}
	defer db.Close()
	recs, err := tuning.ReplayRecords(db)
	if err != nil {
		return nil, runner.DeviceInfo{}, err
	}
	runs, err := db.Runs()
	if err != nil || len(runs) == 0 {
		return nil, runner.DeviceInfo{}, usagef("--replay %s: no runs recorded (%v)", path, err)
	}
	last := runs[len(runs)-1]
	info := runner.DeviceInfo{Name: last.GPUName, UUID: last.GPUUUID, CC: last.CC, Driver: last.Driver,
		Telemetry: "no telemetry: replaying the samples recorded in " + path}
	rp := runner.NewReplay(recs, seed, 0)
	rp.CopyGBps = last.CopyGBps
	rp.Spin = func(p kernels.Program) time.Duration { return time.Duration(faults.DelayNS(p)) }
	return rp, info, nil
}
