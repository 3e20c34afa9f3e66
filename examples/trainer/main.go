package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gradtune/gradtune/configs"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command line's.
type options struct {
	kernel, dtype string
	shape         configs.Shape
	all           bool
	only          []string // --all: only these kernels' entries; nil: every entry
	tokens        []int64  // other values of the runtime dim (--all); nil: v/2+1 and 2v
	tunedOnly     bool     // --all at each entry's tuned shape alone
	tables        []string // --configs: tables read from these files; nil: the committed ones
	timing        timing
	trace         string // --trace: the file of every plan's samples; "": none
	gpu           configs.GPU
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("trainer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kernel := fs.String("kernel", "relu_bwd", "kernel family")
	dt := fs.String("dtype", "bf16", "element type")
	shape := fs.String("shape", "m=2048,n=8960", "problem size (dims, without dtype)")
	all := fs.Bool("all", false, "every committed entry, at its tuned shape and two other token counts")
	tokens := fs.String("tokens", "", "with --all: the other values of each entry's runtime dim (default v/2+1 and 2v)")
	tables := fs.String("configs", "", "TABLE.json[,TABLE.json...]: look up these tables (tune export --ptx writes them with their PTX) instead of the committed ones")
	tunedOnly := fs.Bool("tuned-only", false, "with --all: only each entry's tuned shape (the one its table figure is of)")
	only := fs.String("only", "", "with --all: only the entries of these kernels, e.g. nf4_gemm_bwd,rmsnorm_bwd (default every entry)")
	sustainedMS := fs.Int("sustained-ms", 0, fmt.Sprintf("also time each plan %d runs back to back after this many milliseconds of continuous work, as a training step's kernels run (0: not)", sustainedSamples))
	trace := fs.String("trace", "", "FILE: write each launch plan's samples (µs, in order) to FILE as JSON lines")
	warmMS := fs.Int("warm-ms", 1000, "milliseconds of the timed loop's own work (flush and launches) before the first sample, so that the GPU is as busy as in the tuner (0: only the table's warm-up runs)")
	padBytes := fs.Int("pad-bytes", 0, "diagnostic: allocate this many bytes before each plan's buffers, so that they lie elsewhere in device memory")
	packed := fs.Bool("packed", false, "diagnostic: every plan's buffers in one allocation, each 256-byte aligned")
	repeat := fs.Int("repeat", 1, "time each plan this many times in a row and print each median (the last is the one reported)")
	gpuName := fs.String("gpu", "", "GPU model to look up (default: device 0's, else NVIDIA H200)")
	cc := fs.String("cc", "", "compute capability to fall back on (default: device 0's, else 9.0)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o := options{kernel: *kernel, dtype: *dt, all: *all, gpu: configs.GPU{Name: *gpuName, CC: *cc},
		timing: timing{warm: time.Duration(*warmMS) * time.Millisecond,
			sustained: time.Duration(*sustainedMS) * time.Millisecond,
			layout:    layout{padBytes: *padBytes, packed: *packed}, repeat: *repeat},
		trace: *trace}
	switch {
	case *sustainedMS < 0:
		return options{}, fmt.Errorf("--sustained-ms %d: want 0 or more", *sustainedMS)
	case *warmMS < 0:
		return options{}, fmt.Errorf("--warm-ms %d: want 0 or more", *warmMS)
	case *padBytes < 0:
		return options{}, fmt.Errorf("--pad-bytes %d: want 0 or more", *padBytes)
	case *repeat < 1:
		return options{}, fmt.Errorf("--repeat %d: want 1 or more", *repeat)
	}
	if *tables != "" {
		for _, p := range strings.Split(*tables, ",") {
			if p = strings.TrimSpace(p); p == "" {
				return options{}, fmt.Errorf("--configs %q: want table files separated by commas", *tables)
			}
			o.tables = append(o.tables, p)
		}
	}
	if *only != "" {
		if !o.all {
			return options{}, errors.New("--only goes with --all")
		}
		for _, k := range strings.Split(*only, ",") {
			if k = strings.TrimSpace(k); k == "" {
				return options{}, fmt.Errorf("--only %q: want kernel names separated by commas", *only)
			}
			o.only = append(o.only, k)
		}
	}
	if *tunedOnly {
		if !o.all || *tokens != "" {
			return options{}, errors.New("--tuned-only goes with --all and without --tokens")
		}
		o.tunedOnly = true
	}
	if *tokens != "" {
		if !o.all {
			return options{}, errors.New("--tokens goes with --all")
		}
		for _, f := range strings.Split(*tokens, ",") {
			v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil || v < 1 {
				return options{}, fmt.Errorf("--tokens %q: want positive integers separated by commas", *tokens)
			}
			o.tokens = append(o.tokens, v)
		}
	}
	sh, err := configs.ParseShape(*shape)
	if err != nil {
		return options{}, err
	}
	o.shape = sh
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "trainer: %v\n", err)
		}
		return 2
	}
	dev, devErr := openDevice()
	if dev != nil {
		defer dev.close()
		o.gpu = configs.GPU{Name: or(o.gpu.Name, dev.name), CC: or(o.gpu.CC, dev.cc)}
	}
	o.gpu = configs.GPU{Name: or(o.gpu.Name, "NVIDIA H200"), CC: or(o.gpu.CC, "9.0")}
	cases, err := casesOf(o)
	if err != nil {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		if errors.Is(err, configs.ErrUnknownGPU) || errors.Is(err, configs.ErrUnknownKernel) || errors.Is(err, configs.ErrNoConfig) ||
			errors.Is(err, errBadTables) {
			return 2
		}
		return 1
	}
	if dev == nil {
		for _, p := range cases {
			p.describe(stdout)
		}
		fmt.Fprintf(stdout, "no GPU (%v): not launched\n", devErr)
		return 0
	}
	traces, err := openTrace(o.trace)
	if err != nil {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		return 1
	}
	failed := 0
	for _, p := range cases {
		p.describe(stdout)
		tm := o.timing
		tm.trace = traces.writer(p)
		r, err := dev.exercise(p, tm)
		if err != nil {
			fmt.Fprintf(stdout, "  FAILED: %v\n", err)
			failed++
			continue
		}
		r.print(stdout, p)
	}
	fmt.Fprintf(stdout, "%d launch plans, %d failed\n", len(cases), failed)
	if err := traces.Close(); err != nil {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		return 1
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// Case is one lookup the trainer makes and what it will launch.
type Case struct {
	Kernel, DType string
	Match         configs.Match
	PTX           []byte
}

// casesOf looks up what o asks for: one shape, or every entry at its
// tuned shape and at other values of its runtime dims. An entry of
// --configs' tables whose PTX cannot be read or does not match its
// checksum is a bad input (errBadTables); the committed tables' are
// checked by configs' tests.
func casesOf(o options) ([]Case, error) {
	set, err := tablesOf(o)
	if err != nil {
		return nil, err
	}
	cases, err := plan(set, o)
	if o.tables != nil && errors.Is(err, errPTX) {
		err = fmt.Errorf("--configs: %w (%w)", err, errBadTables)
	}
	return cases, err
}

// plan looks up o's cases in set.
func plan(set *configs.Set, o options) ([]Case, error) {
	if !o.all {
		c, err := lookup(set, o.gpu, o.kernel, o.dtype, o.shape)
		return []Case{c}, err
	}
	var out []Case
	planned := map[string]bool{} // kernels with an entry
	for _, t := range set.Tables {
		for _, e := range t.Entries {
			if o.only != nil && !slices.Contains(o.only, e.Kernel) {
				continue
			}
			planned[e.Kernel] = true
			shapes := shapesOf(e, o.tokens)
			if o.tunedOnly {
				shapes = shapes[:1]
			}
			for _, sh := range shapes {
				c, err := lookup(set, t.GPU, e.Kernel, e.DType, sh)
				if err != nil {
					return nil, err
				}
				out = append(out, c)
			}
		}
	}
	var missing []string
	for _, k := range o.only {
		if !planned[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("--only %s: no %s entry of these kernels: %s: %w", strings.Join(o.only, ","), tablesName(o), strings.Join(missing, ", "), configs.ErrUnknownKernel)
	}
	return out, nil
}

// tablesName says which tables o looks up.
func tablesName(o options) string {
	if o.tables == nil {
		return "committed"
	}
	return "--configs"
}

// errPTX marks a looked-up entry whose PTX could not be read.
var errPTX = errors.New("the entry's PTX")

// errBadTables marks --configs tables that do not load: a bad input.
var errBadTables = errors.New("tables not loaded")

// tablesOf is --configs' tables, else the committed ones.
func tablesOf(o options) (*configs.Set, error) {
	if o.tables == nil {
		return configs.Embedded()
	}
	set, err := configs.LoadFiles(o.tables...)
	if err != nil {
		return nil, fmt.Errorf("--configs: %w (%w)", err, errBadTables)
	}
	return set, nil
}

// shapesOf is the entry's tuned shape, then the same with each runtime
// dim at each of tokens (nil: v/2+1 and 2v of the tuned v).
func shapesOf(e configs.Entry, tokens []int64) []configs.Shape {
	tuned, _ := configs.ParseShape(e.Shape)
	out := []configs.Shape{tuned}
	for name, r := range e.Runtime {
		v := int64(tuned.Sizes[name])
		vals := tokens
		if vals == nil {
			vals = []int64{v/2 + 1, 2 * v}
		}
		for _, x := range vals {
			if x == v || x < r.Min || x > r.Max {
				continue
			}
			sh, _ := configs.ParseShape(e.Shape)
			sh.Sizes[name] = float64(x)
			out = append(out, sh)
		}
	}
	return out
}

func lookup(set *configs.Set, gpu configs.GPU, kernel, dtype string, shape configs.Shape) (Case, error) {
	m, err := set.Lookup(gpu, kernel, dtype, shape)
	if err != nil {
		return Case{}, err
	}
	ptx, err := set.PTX(m)
	if err != nil {
		return Case{}, fmt.Errorf("%w: %w", errPTX, err)
	}
	return Case{Kernel: kernel, DType: dtype, Match: m, PTX: ptx}, nil
}

func (c Case) describe(w io.Writer) {
	e := c.Match.Entry
	fmt.Fprintf(w, "%s %s %s: %s match of %s on %s (cc %s)\n", c.Kernel, c.DType, c.Match.Shape, c.Match.Rule, e.Shape,
		c.Match.Table.GPU.Name, c.Match.Table.GPU.CC)
	fmt.Fprintf(w, "  params %s\n  tuned median %.2f µs at %s (95%% CI %.2f–%.2f), run %d, %s\n", e.Params, e.MedianUS, e.Shape,
		e.CIUS[0], e.CIUS[1], e.Provenance.Run, e.Provenance.Date)
	if p, err := c.Match.Plan(132); err == nil {
		for _, l := range p.Launches {
			var args []string
			for _, a := range l.Args {
				args = append(args, or(a.Buffer, string(a.Kind)))
			}
			fmt.Fprintf(w, "  launch %s grid %v block %v cluster %v smem %d dependent %v (%s) [132 SMs]\n", l.Entry, l.Grid, l.Block, l.Cluster,
				l.SharedBytes, l.Dependent, strings.Join(args, ", "))
		}
	}
	fmt.Fprintf(w, "  PTX %s, %d bytes, sha256 %.12s checked\n", e.PTX, len(c.PTX), e.PTXSHA256)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
