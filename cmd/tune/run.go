package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// version is the tool version recorded with every run.
var version = "v0.1.0-dev"

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError marks errors that exit 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func run(args []string, stdout, stderr io.Writer) int {
	var err error
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "", "tune":
		err = cmdTune(args, stdout, stderr)
	case "list":
		err = cmdList(args, stdout)
	case "emit":
		err = cmdEmit(args, stdout)
	case "devices":
		err = cmdDevices(args, stdout)
	case "check":
		err = cmdCheck(args, stdout, stderr)
	case "crosscheck":
		err = cmdCrosscheck(args, stdout, stderr)
	case "__worker":
		err = cmdWorker(args)
	case "help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	default:
		err = usagef("unknown command %q (commands: tune, list, emit, check, crosscheck, devices, help)", cmd)
	}
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "tune: %v\n", err)
	var u usageError
	if errors.As(err, &u) {
		fmt.Fprintln(stderr, "Run 'tune help' for usage.")
		return exitUsage
	}
	return exitFail
}

const usageText = `tune tunes GPU backward kernels.

  tune [flags]                 tune kernels over shapes and store the results
  tune list                    families, their dims, dtypes and axes; presets
  tune emit --kernel K --shapes SPEC --params P [--dtype D]
                               print the PTX of one variant
  tune devices                 the GPUs the driver sees
  tune check --kernel K[,K...]|all --shapes SPEC [--dtype D] [--sample N]
             [--params P] [--seed N] [--tokens N]
                               validate variants on the CPU interpreter
                               against the reference (correctness only: the
                               interpreter never times; --sample N variants
                               per shape, spread evenly, default 8, 0 = all)
  tune crosscheck --out FILE [--kernel K|all] [--cases N] [--seed N]
             [--device N] [--dtype D]
                               run N small cases (default 240) on the GPU and
                               on the interpreter, compare every output
                               element, write JSON lines to FILE

Flags of tune:
  --kernel K[,K...]|all   kernel families (default all)
  --shapes PRESET|SPEC    a model preset (qwen1.5b) or shape specs such as
                          m=2048,n=8960 (several separated by ';')
  --tokens N              rows of preset shapes (default 2048)
  --dtype D[,D...]        f32, f16, bf16, f64 (default: all the family supports)
  --budget N              at most N variants per shape (default all)
  --db FILE               SQLite results database (default tune.db)
  --device N              GPU ordinal (default 0)
  --mode cold|hot         flush L2 before every sample (cold, default) or not
  --params P              fix some axes, e.g. vec=4,grid=once; tune the rest
  --fresh                 re-measure variants already in the database
  --seed N                input data seed (default 1)

Exit codes: 0 success, 1 failure, 2 usage error.
`

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return usagef("%s", strings.TrimSpace(usageText))
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// selection is what --kernel, --shapes, --tokens and --dtype resolve to.
type selection struct {
	jobs []runner.Job
}

func resolve(kernelList, shapes string, tokens int, dtypes string) (selection, error) {
	fams, err := catalog.ParseList(kernelList)
	if err != nil {
		return selection{}, usageError{err}
	}
	if tokens < 0 {
		return selection{}, usagef("--tokens must be positive, got %d", tokens)
	}
	var dts []dtype.DType
	if dtypes != "" {
		if dts, err = dtype.ParseList(dtypes); err != nil {
			return selection{}, usagef("--dtype: %v", err)
		}
	}
	var sel selection
	for _, f := range fams {
		fdts := f.DTypes()
		if dts != nil {
			fdts = nil
			for _, d := range dts {
				if supports(f, d) {
					fdts = append(fdts, d)
				}
			}
			if len(fdts) == 0 {
				return selection{}, usagef("%s supports none of --dtype %s (dtypes: %v)", f.Name(), dtypes, f.DTypes())
			}
		}
		job := runner.Job{Family: f}
		if variants.IsPreset(shapes) {
			p, err := variants.LookupPreset(shapes, tokens)
			if err != nil {
				return selection{}, usageError{err}
			}
			job.Shapes = f.Shapes(p, fdts)
		} else {
			specs, err := variants.ParseSpecs(shapes)
			if err != nil {
				return selection{}, usagef("--shapes: %v (or a preset: %s)", err, strings.Join(variants.PresetNames(), ", "))
			}
			for _, sp := range specs {
				sdts := fdts
				if sp.DType != dtype.Invalid {
					sdts = []dtype.DType{sp.DType}
				}
				for _, d := range sdts {
					s, err := f.Shape(sp, d)
					if err != nil {
						return selection{}, usagef("--shapes: %v", err)
					}
					job.Shapes = append(job.Shapes, s)
				}
			}
		}
		sel.jobs = append(sel.jobs, job)
	}
	return sel, nil
}

func supports(f kernels.Family, d dtype.DType) bool {
	for _, x := range f.DTypes() {
		if x == d {
			return true
		}
	}
	return false
}

func cmdTune(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tune")
	kernelList := fs.String("kernel", "all", "")
	shapes := fs.String("shapes", "qwen1.5b", "")
	tokens := fs.Int("tokens", 0, "")
	dtypes := fs.String("dtype", "", "")
	budget := fs.Int("budget", 0, "")
	dbPath := fs.String("db", "tune.db", "")
	dev := fs.Int("device", 0, "")
	mode := fs.String("mode", "cold", "")
	fresh := fs.Bool("fresh", false, "")
	seed := fs.Uint64("seed", 1, "")
	strategy := fs.String("strategy", "auto", "")
	fixed := fs.String("params", "", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fix, err := variants.ParseParams(*fixed)
	if err != nil {
		return usagef("--params: %v", err)
	}
	tmode, err := eval.ParseMode(*mode)
	if err != nil {
		return usagef("--mode: %v", err)
	}
	if *strategy != "auto" && *strategy != "exhaustive" {
		return usagef("--strategy %q: want auto or exhaustive", *strategy)
	}
	if *budget < 0 {
		return usagef("--budget must be positive, got %d", *budget)
	}
	if *dev < 0 {
		return usagef("--device must be a GPU ordinal, got %d", *dev)
	}
	sel, err := resolve(*kernelList, *shapes, *tokens, *dtypes)
	if err != nil {
		return err
	}
	if err := checkFix(sel, fix); err != nil {
		return err
	}
	if st, err := os.Stat(*dbPath); err == nil && st.IsDir() {
		return usagef("--db %s is a directory", *dbPath)
	}

	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the tune binary for its worker: %w", err)
	}
	measure := runner.DefaultMeasure
	measure.Mode = tmode
	r, err := runner.New(runner.Options{
		Measure: measure, Fresh: *fresh, Seed: *seed, Budget: *budget, Fix: fix, Progress: stdout,
		NewWorker: runner.NewProcessWorker([]string{exe, "__worker", "--device", strconv.Itoa(*dev)}),
	})
	if err != nil {
		return err
	}
	defer r.Close()
	info := r.Device()

	db, err := store.Open(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	host, _ := os.Hostname()
	runID, err := db.BeginRun(store.Run{Started: time.Now(), Host: host, GPUName: info.Name, GPUUUID: info.UUID,
		CC: info.CC, Driver: info.Driver, ToolVersion: version, Args: strings.Join(append([]string{"tune"}, args...), " ")})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "device %d: %s (sm_%s, %d SMs, %d MiB L2), driver %s; run %d in %s\n",
		*dev, info.Name, strings.ReplaceAll(info.CC, ".", ""), info.SMs, info.L2Bytes>>20, info.Driver, runID, *dbPath)
	copyGBps, err := r.CopyBandwidth()
	if err != nil {
		db.FinishRun(runID, store.RunFailed, 0)
		return fmt.Errorf("measuring copy bandwidth: %w", err)
	}
	fmt.Fprintf(stdout, "device-to-device copy: %.0f GB/s\n", copyGBps)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rec := &recorder{db: db, run: runID}
	sums, err := r.Tune(ctx, sel.jobs, rec)
	status := store.RunOK
	switch {
	case ctx.Err() != nil:
		status = store.RunInterrupted
	case err != nil:
		status = store.RunFailed
	}
	if ferr := db.FinishRun(runID, status, copyGBps); ferr != nil && err == nil {
		err = ferr
	}
	printTable(stdout, sums, copyGBps)
	if err != nil {
		return err
	}
	for _, s := range sums {
		if s.Best == nil {
			return fmt.Errorf("%s %s: no valid variant", s.Kernel, s.Shape.Key())
		}
	}
	return nil
}

// checkFix rejects --params that name an axis or value no selected shape
// has.
func checkFix(sel selection, fix variants.Params) error {
	for _, j := range sel.jobs {
		for _, s := range j.Shapes {
			sp := j.Family.Space(s)
			for k, v := range fix {
				a, ok := sp.Axis(k)
				if !ok {
					var names []string
					for _, a := range sp.Axes {
						names = append(names, a.Name)
					}
					return usagef("--params: %s has no axis %q (axes: %s)", j.Family.Name(), k, strings.Join(names, ", "))
				}
				if !slices.Contains(a.Values, v) {
					return usagef("--params: %s %s=%s not accepted for %s (values: %s)", j.Family.Name(), k, v, s.Key(), strings.Join(a.Values, ", "))
				}
			}
		}
	}
	return nil
}

func printTable(w io.Writer, sums []runner.Summary, copyGBps float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tshape\tdtype\tbest params\tmedian µs\tGB/s\t% copy BW\ttried/valid/failed\t")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d/%d\t\n", s.Kernel, s.Shape.Size(), s.Shape.DType,
			params, med, gbps, pct, s.Tried, s.Valid, s.Failed)
	}
	tw.Flush()
}

func cmdList(args []string, stdout io.Writer) error {
	fs := newFlags("list")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "kernels:")
	for _, f := range catalog.All() {
		fmt.Fprintf(stdout, "  %s — %s\n", f.Name(), f.Doc())
		fmt.Fprintf(stdout, "    dims: %s; dtypes: %v\n", strings.Join(f.Dims(), ", "), f.DTypes())
		// Axes of the first supported dtype's space at a representative shape.
		p, _ := variants.LookupPreset("qwen1.5b", 0)
		shapes := f.Shapes(p, f.DTypes()[:1])
		if len(shapes) == 0 {
			continue
		}
		sp := f.Space(shapes[0])
		width := 22 // of the values column: the family's longest list
		for _, a := range sp.Axes {
			width = max(width, utf8.RuneCountInString(strings.Join(a.Values, ",")))
		}
		for _, a := range sp.Axes {
			fmt.Fprintf(stdout, "    %-8s %-*s %s\n", a.Name, width, strings.Join(a.Values, ","), a.Doc)
		}
	}
	fmt.Fprintln(stdout, "presets:")
	for _, n := range variants.PresetNames() {
		p, _ := variants.LookupPreset(n, 0)
		fmt.Fprintf(stdout, "  %s — hidden %d, intermediate %d, %d layers, %d heads (%d KV), head dim %d, vocab %d; --tokens default %d\n",
			n, p.Hidden, p.Intermediate, p.Layers, p.Heads, p.KVHeads, p.HeadDim, p.Vocab, p.Tokens)
	}
	return nil
}

func cmdEmit(args []string, stdout io.Writer) error {
	fs := newFlags("emit")
	kernel := fs.String("kernel", "", "")
	shapes := fs.String("shapes", "", "")
	params := fs.String("params", "", "")
	dt := fs.String("dtype", "", "")
	tokens := fs.Int("tokens", 0, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *kernel == "" || strings.Contains(*kernel, ",") || *kernel == "all" {
		return usagef("emit needs one --kernel (kernels: %s)", strings.Join(catalog.Names(), ", "))
	}
	if *shapes == "" {
		return usagef("emit needs --shapes, e.g. --shapes m=2048,n=8960")
	}
	if *dt != "" && strings.Contains(*dt, ",") {
		return usagef("emit takes one --dtype")
	}
	sel, err := resolve(*kernel, *shapes, *tokens, *dt)
	if err != nil {
		return err
	}
	job := sel.jobs[0]
	if len(job.Shapes) != 1 {
		return usagef("emit needs exactly one shape and dtype; %q gives %d (add --dtype or dtype= to the spec)", *shapes, len(job.Shapes))
	}
	s := job.Shapes[0]
	p, err := variants.ParseParams(*params)
	if err != nil {
		return usageError{err}
	}
	space := job.Family.Space(s)
	p = space.Complete(p)
	if err := space.Check(p); err != nil {
		return usagef("%s: %v", job.Family.Name(), err)
	}
	prog, err := job.Family.Emit(s, p)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "// kernel %s, shape %s, params %s\n", job.Family.Name(), s.Key(), p)
	for _, l := range prog.Launches {
		grid := fmt.Sprint(l.Grid)
		if l.GridPerSM > 0 {
			grid = fmt.Sprintf("[%d×SMs 1 1]", l.GridPerSM)
		}
		fmt.Fprintf(stdout, "// launch %s grid %s block %v smem %d\n", l.Entry, grid, l.Block, l.SharedBytes)
	}
	fmt.Fprint(stdout, prog.PTX)
	return nil
}

func cmdDevices(args []string, stdout io.Writer) error {
	fs := newFlags("devices")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	d, err := cuda.Open()
	if err != nil {
		return err
	}
	n, err := d.DeviceCount()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "driver API %d, %d device(s)\n", d.Version(), n)
	for i := 0; i < n; i++ {
		dev, err := d.Device(i)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d: %s %s sm_%d%d, %d SMs, %d MiB L2, %d MiB memory\n", i, dev.Name, dev.UUID,
			dev.Major, dev.Minor, dev.SMs, dev.L2Bytes>>20, dev.TotalMem>>20)
	}
	return nil
}

func cmdWorker(args []string) error {
	fs := newFlags("__worker")
	dev := fs.Int("device", 0, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return runner.Serve(os.Stdin, os.Stdout, *dev)
}
