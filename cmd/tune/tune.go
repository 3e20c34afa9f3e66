package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/faults"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/search"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/tuning"
	"github.com/gradtune/gradtune/variants"
)

// selectionFlags are the flags that say what to work on, shared by tune,
// check and emit.
func selectionFlags(fs *flagSet, kernelDefault, shapesDefault string) {
	fs.String("kernel", kernelDefault, "K[,K...]|all\tkernel families, as tune list names them")
	fs.String("shapes", shapesDefault, "PRESET|CONFIG|SPEC\ta model preset (qwen1.5b) or a model's Hugging Face config.json (model types "+strings.Join(variants.ModelTypes(), ", ")+"), or shape specs such as m=2048,n=8960, several separated by ';', each may add dtype=bf16")
	fs.String("tokens", strconv.Itoa(variants.DefaultTokens), "N[,N...]\ttoken counts (rows) of a preset's or a config's shapes, e.g. 512,2048,8192; not with explicit specs")
	fs.String("dtype", "", "D[,D...]\tf32, f16, bf16, f64 (default: every dtype the family supports)")
	fs.String("params", "", "P\tfix some axes, e.g. vec=4,grid=once; the others vary")
}

// request reads the selection flags.
func request(fs *flagSet) tuning.Request {
	var tokens string
	if fs.Given("tokens") {
		tokens = fs.str("tokens")
	}
	return tuning.Request{Kernels: fs.str("kernel"), Shapes: fs.str("shapes"),
		Tokens: tokens, DTypes: fs.str("dtype"), Params: fs.str("params")}
}

// resolve resolves the selection flags; notes go to stderr.
func resolve(req tuning.Request, title string, stderr io.Writer) (tuning.Selection, error) {
	sel, err := tuning.Resolve(req)
	if err != nil {
		return sel, usageError{err}
	}
	for _, n := range sel.Notes {
		fmt.Fprintf(stderr, "%s: %s\n", title, n)
	}
	return sel, nil
}

func tuneCommand() *command {
	return &command{
		name:    "",
		usage:   "[flags]",
		summary: "tune kernels over shapes on a GPU and store the results",
		flags: func(fs *flagSet) {
			selectionFlags(fs, "all", "qwen1.5b")
			strategyFlags(fs, "exhaustive")
			compileFlags(fs)
			fs.String("db", "tune.db", "FILE\tSQLite results database")
			fs.Int("device", 0, "N\tGPU ordinal")
			fs.String("devices", "", "all|N,N...\ttune on several GPUs at once: one worker (and its compile helpers) per GPU, each taking (kernel, dtype, shape) items from one queue and recording its own run; not with --device")
			fs.String("shard", "", "i/n\ttune only part i of n of the work items (a hash of each kernel, dtype and shape: stable as the list grows); default: from SLURM_ARRAY_TASK_ID (with SLURM_ARRAY_TASK_COUNT or MIN/MAX) or JOB_COMPLETION_INDEX (with JOB_COMPLETIONS), else all")
			fs.String("replay", "", "DB\tanswer from the samples recorded in DB instead of a GPU, each variant from its own stream (tests of sharding and merging)")
			fs.String("mode", string(eval.Cold), "cold|hot\tflush L2 before every sample (cold) or not")
			fs.Bool("fresh", false, "\tre-measure variants already in the database")
			fs.Int("final-rounds", 3, "N\tre-time each shape's winner and its baseline alternately N times each in a fresh worker; those medians are the run's figures (0: report the tuning medians)")
			fs.Uint64("seed", 1, "N\tinput data seed")
			refCacheFlag(fs, "(default: a temporary folder for this run, so that each final round's fresh worker reads the shape's references instead of computing them again)")
			fs.Bool("faults", false, "\tlet --kernel name the planted-fault family (kernels/faults)")
		},
		hiddenFlags: map[string]bool{"faults": true, "replay": true},
		run:         cmdTune,
	}
}

// gpuOptions are the flags of a command that measures on a GPU into a
// database (tune, bench), checked.
type gpuOptions struct {
	measure runner.MeasureOpts
	device  int
	seed    uint64
	db      string
}

// gpuOptionsOf checks the GPU flags; it reads nothing.
func gpuOptionsOf(fs *flagSet) (gpuOptions, error) {
	opt := gpuOptions{measure: runner.DefaultMeasure, device: fs.integer("device"), seed: fs.unsigned("seed"), db: fs.str("db")}
	mode, err := eval.ParseMode(fs.str("mode"))
	if err != nil {
		return opt, usagef("--mode: %v", err)
	}
	opt.measure.Mode = mode
	if opt.device < 0 {
		return opt, usagef("--device must be a GPU ordinal (0 or more), got %d", opt.device)
	}
	return opt, nil
}

// probeDB refuses, before a GPU opens, a --db that Open would refuse or
// could not write (a new one's missing directory in export's words, then
// store.Probe, then a file created and removed beside it). store's errors
// name the path, so it is said once.
func (opt gpuOptions) probeDB() error {
	if err := checkNewFile("--db", opt.db); err != nil {
		return err
	}
	if err := store.Probe(opt.db); err != nil {
		return usagef("--db: %w", err)
	}
	return probeFile("--db", opt.db, dotTemp)
}

func cmdTune(fs *flagSet, stdout, stderr io.Writer) error {
	gpu, err := gpuOptionsOf(fs)
	if err != nil {
		return err
	}
	run, err := tuneOptionsOf(fs)
	if err != nil {
		return err
	}
	req := request(fs)
	if fs.Given("faults") {
		req.Extra = []kernels.Family{faults.Family()}
	}
	sel, err := resolve(req, "tune", stderr)
	if err != nil {
		return err
	}
	if run.shard.Count > 1 {
		all := len(sel.Shapes())
		sel = run.shard.Select(sel)
		fmt.Fprintf(stdout, "shard %s%s: %d of %d shapes\n", run.shard, run.shardFrom, len(sel.Shapes()), all)
	}
	if err := gpu.probeDB(); err != nil {
		return err
	}
	if run.shard.Count > 1 && len(sel.Jobs) == 0 { // a part may hold nothing
		return emptyPart(gpu.db, stdout)
	}
	refs, closeRefs, err := refCaches(fs, run.devices, run.rounds > 0 && !fs.Given("replay"))
	if err != nil {
		return err
	}
	defer closeRefs()
	run.refs = refs
	if len(run.devices) > 1 {
		return tuneOnDevices(fs, gpu, run, sel, stdout)
	}
	r, pool, err := openDevice(fs, gpu, run, run.devices[0], sel.Fix, stdout)
	if err != nil {
		return err
	}
	defer r.Close()
	if pool != nil {
		defer pool.Close()
	}
	if err := tuning.CheckDevice(sel, r.Device()); err != nil {
		return usageError{err}
	}
	err = tuneOn(r, sel, gpu.db, run.devices[0], fs.raw, stdout)
	printPool(stdout, pool, run.compile)
	return err
}

// emptyPart writes the database of a shard that holds no shape: no run,
// but a file that tune merge reads like the others, so that a merge step
// that names every part's database works however the parts fell.
func emptyPart(path string, stdout io.Writer) error {
	db, err := store.Open(path)
	if err != nil {
		return fmt.Errorf("--db: %w", err)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("--db: %w", err)
	}
	fmt.Fprintf(stdout, "nothing to tune in this part; %s holds no run of it\n", path)
	return nil
}

// tuneOptions are tune's own flags, checked: the search, compiling,
// the final round, the devices and the shard.
type tuneOptions struct {
	strategy  string
	budget    int
	frac      float64
	compile   compileOptions
	rounds    int
	devices   []int
	shard     tuning.Shard
	shardFrom string         // " (from VAR)" when the environment chose the shard
	refs      map[int]string // each GPU's workers' reference cache folder (none: no cache)
}

func tuneOptionsOf(fs *flagSet) (tuneOptions, error) {
	var o tuneOptions
	var err error
	if o.budget, o.frac, err = budgetFlag(fs); err != nil {
		return o, err
	}
	if o.strategy, err = search.ParseName(fs.str("strategy")); err != nil {
		return o, usagef("--strategy: %w", err)
	}
	if o.compile, err = compileOptionsOf(fs); err != nil {
		return o, err
	}
	if o.rounds = fs.integer("final-rounds"); o.rounds < 0 {
		return o, usagef("--final-rounds %d: want 0 or more", o.rounds)
	}
	if o.devices, err = devicesOf(fs); err != nil {
		return o, err
	}
	o.shard, o.shardFrom, err = shardOf(fs, os.Getenv)
	return o, err
}

// shardOf is --shard, else the scheduler's environment, else all.
func shardOf(fs *flagSet, getenv func(string) string) (tuning.Shard, string, error) {
	if fs.Given("shard") {
		s, err := tuning.ParseShard(fs.str("shard"))
		if err != nil {
			return s, "", usagef("--shard %w", err)
		}
		return s, "", nil
	}
	s, from, err := tuning.ShardFromEnv(getenv)
	if err != nil {
		return s, "", usagef("the shard of this task: %w", err)
	}
	if from != "" {
		from = " (from " + from + ")"
	}
	return s, from, nil
}

// devicesOf is the GPUs to tune on: --devices (all: every GPU the driver
// sees), else --device.
func devicesOf(fs *flagSet) ([]int, error) {
	if !fs.Given("devices") {
		return []int{fs.integer("device")}, nil
	}
	if fs.Given("device") {
		return nil, usagef("--device and --devices both name GPUs: give one")
	}
	if fs.Given("replay") {
		return nil, usagef("--devices needs GPUs; --replay answers as one recorded GPU")
	}
	v := strings.TrimSpace(fs.str("devices"))
	if v == "all" {
		return allDevices()
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || slices.Contains(out, n) {
			return nil, usagef("--devices %q: want all, or distinct GPU ordinals such as 0,1", v)
		}
		out = append(out, n)
	}
	return out, nil
}

// allDevices lists the ordinals of every GPU the driver sees.
func allDevices() ([]int, error) {
	d, err := cuda.Open()
	if err != nil {
		return nil, fmt.Errorf("--devices all: %w", err)
	}
	n, err := d.DeviceCount()
	if err != nil || n == 0 {
		return nil, fmt.Errorf("--devices all: the driver sees %d GPUs (%v)", n, err)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out, nil
}

// openDevice starts the runner of GPU dev (or the replay --replay names)
// and its compile pool (nil when it has none), its progress going to
// progress.
func openDevice(fs *flagSet, gpu gpuOptions, o tuneOptions, dev int, fix variants.Params, progress io.Writer) (*runner.Runner, *runner.CompilePool, error) {
	worker, err := tuneWorker(fs, gpu, dev, o.refs[dev])
	if err != nil {
		return nil, nil, err
	}
	r, err := runner.New(runner.Options{
		Measure: gpu.measure, Fresh: fs.Given("fresh"), Seed: gpu.seed, Strategy: o.strategy, Budget: o.budget, BudgetFraction: o.frac,
		Abandon: abandonMargin(fs), Fix: fix, Progress: progress, FinalRounds: o.rounds, NewWorker: worker,
	})
	if err != nil {
		return nil, nil, err
	}
	if fs.Given("replay") {
		return r, nil, nil
	}
	pool, err := startCompilePool(o.compile, r, dev)
	if errors.Is(err, errJITCacheOff) {
		fmt.Fprintf(progress, "compile helpers: none: %v\n", err)
		return r, nil, nil
	}
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	if pool != nil {
		r.UseCompilePool(pool)
	}
	return r, pool, nil
}

// tuneWorker is the constructor of GPU dev's worker processes (keeping
// references in refs, an open reference cache's folder, when not empty), or with
// --replay of a keyed replay of the recorded database (each variant
// draws from its own stream, so shards draw what the whole run would).
func tuneWorker(fs *flagSet, gpu gpuOptions, dev int, refs string) (func() (runner.Worker, error), error) {
	path := fs.str("replay")
	if path == "" {
		return processWorker(dev, workerFlags{faults: fs.Given("faults"), refCache: refs})
	}
	rp, info, err := replayOf(path, gpu.seed)
	if err != nil {
		return nil, err
	}
	rp.Keyed = true
	return rp.Worker(info), nil
}

// printPool says what the compile helpers did.
func printPool(stdout io.Writer, pool *runner.CompilePool, o compileOptions) {
	if pool != nil {
		fmt.Fprintf(stdout, "compile pool: %d helpers (%s), %d programs compiled, %d from the cubin cache\n",
			pool.Helpers(), o.compiler, pool.Compiled, pool.Cached)
	}
}

// processWorker is the constructor of worker processes on GPU dev: this
// binary in its hidden worker mode.
func processWorker(dev int, wf workerFlags) (func() (runner.Worker, error), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the tune binary for its worker: %w", err)
	}
	return runner.NewProcessWorker(workerArgv(exe, dev, wf, os.Getenv("GRADTUNE_WORKER_WRAP"))), nil
}

// workerFlags are what a worker is asked to do beyond its device: serve
// the planted-fault family, keep references in an open reference cache's
// folder (runner.RefCache.Dir).
type workerFlags struct {
	faults   bool
	refCache string
}

// workerArgv is the worker's command line: exe in its worker mode, run
// under wrap (GRADTUNE_WORKER_WRAP, split at spaces) when that is set: a
// profiler that follows one process, such as Nsight Compute with its
// output off stdout (ncu --log-file F -o REPORT ...), since the worker
// talks to tune over its stdin and stdout.
func workerArgv(exe string, dev int, wf workerFlags, wrap string) []string {
	argv := append(strings.Fields(wrap), exe, "__worker", "--device", strconv.Itoa(dev))
	if wf.faults {
		argv = append(argv, "--faults")
	}
	if wf.refCache != "" {
		argv = append(argv, "--ref-cache", wf.refCache)
	}
	return argv
}

// beginRun opens the database at dbPath and starts a run on r's GPU in
// it (startRun).
func beginRun(r *runner.Runner, dbPath string, dev int, args []string, stdout io.Writer) (*store.DB, int64, error) {
	db, err := store.Open(dbPath)
	if err != nil {
		return nil, 0, err
	}
	runID, err := startRun(db, r, dev, args, stdout)
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, runID, nil
}

// startRun records the start of a run on r's GPU (device dev) in db and
// prints the run's header: the device, the run, and the GPU's clocks (or,
// once, why there are none).
func startRun(db *store.DB, r *runner.Runner, dev int, args []string, stdout io.Writer) (int64, error) {
	info := r.Device()
	host, _ := os.Hostname()
	runID, err := db.BeginRun(store.Run{Started: time.Now(), Host: host, GPUName: info.Name, GPUUUID: info.UUID,
		CC: info.CC, Driver: info.Driver, ToolVersion: version, Args: strings.Join(args, " "), Telemetry: info.Telemetry})
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "device %d: %s (sm_%s, %d SMs, %d MiB L2), driver %s; run %d in %s\n",
		dev, info.Name, strings.ReplaceAll(info.CC, ".", ""), info.SMs, info.L2Bytes>>20, info.Driver, runID, db.Path())
	if info.HasTelemetry {
		fmt.Fprintf(stdout, "clocks: %s\n", info.Telemetry)
	} else if info.Telemetry != "" {
		fmt.Fprintf(stdout, "%s\n", info.Telemetry)
	}
	return runID, nil
}

// tuneOn records a run of sel on r's GPU in the database at dbPath.
func tuneOn(r *runner.Runner, sel tuning.Selection, dbPath string, dev int, args []string, stdout io.Writer) error {
	db, runID, err := beginRun(r, dbPath, dev, append([]string{"tune"}, args...), stdout)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	copyGBps, sums, err := tuning.TuneOnGPU(ctx, tuning.GPURun{Runner: r, DB: db, RunID: runID, Progress: stdout}, sel)
	printTable(stdout, sums, copyGBps)
	if err != nil {
		return err
	}
	return tuning.NoValid(sums)
}

func intFlag(fs *flagSet, name string) int {
	n, _ := strconv.Atoi(fs.Lookup(name).Value.String())
	return n
}

// printTable prints a line per shape: the winner, its throughput and, when
// some family of the run has a vendor baseline, a "vs baseline" column:
// the baseline's median over the winner's and its name ("1.08× cublas":
// the winner is 8% faster than cuBLAS).
func printTable(w io.Writer, sums []runner.Summary, copyGBps float64) {
	if len(sums) == 0 {
		return
	}
	withBase := false
	for _, s := range sums {
		withBase = withBase || s.Baseline != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "kernel\tshape\tdtype\tbest params\tmedian µs\tGB/s\t% copy BW\t"
	if withBase {
		head += "vs baseline\t"
	}
	fmt.Fprintln(tw, head+"tried/valid/failed\t")
	for _, s := range sums {
		params, med, gbps, pct := "-", "-", "-", "-"
		if b := s.Best; b != nil {
			params = b.Key.Params
			med = fmt.Sprintf("%.2f", b.Stats.Median)
			gbps = fmt.Sprintf("%.0f", b.GBps)
			if copyGBps > 0 {
				pct = fmt.Sprintf("%.1f%%", 100*b.GBps/copyGBps)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t", s.Kernel, s.Shape.Size(), s.Shape.DType, params, med, gbps, pct)
		if withBase {
			fmt.Fprintf(tw, "%s\t", vsBaseline(s))
		}
		fmt.Fprintf(tw, "%d/%d/%d\t\n", s.Tried, s.Valid, s.Failed)
	}
	tw.Flush()
}

// vsBaseline is the baseline's median over the winner's with the
// baseline's name, "-" without either.
func vsBaseline(s runner.Summary) string {
	if s.Best == nil || s.Baseline == nil || s.Best.Stats.Median <= 0 {
		return "-"
	}
	name, _ := eval.BaselineName(s.Baseline.Key.Params)
	return fmt.Sprintf("%.2f× %s", s.Baseline.Stats.Median/s.Best.Stats.Median, name)
}
