package main

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"

	"github.com/gradtune/gradtune/crosscheck"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/tuning"
)

// openGPU opens the device crosscheck compares with; tests substitute
// the interpreter.
var openGPU = runner.OpenCUDA

func crosscheckCommand() *command {
	return &command{
		name:  "crosscheck",
		usage: "crosscheck --out FILE [--force] [--kernel K|all] [--cases N] [--seed N] [--device N] [--dtype D]",
		summary: "run N small cases on the GPU and on the interpreter, compare every output\n" +
			"element, write JSON lines to FILE (an earlier crosscheck output, or any file\n" +
			"with --force; never an SQLite database)",
		flags: func(fs *flagSet) {
			fs.String("out", "", "FILE\tJSON lines output, one line per case and probe")
			fs.Bool("force", false, "\treplace an existing --out that is not a crosscheck output")
			fs.String("kernel", "all", "K[,K...]|all\tkernel families")
			fs.Int("cases", 240, "N\tcases in all, spread over the families")
			fs.Uint64("seed", 1, "N\tcase selection and input data seed")
			fs.Int("device", 0, "N\tGPU ordinal")
			fs.String("dtype", "", "D[,D...]\tonly these dtypes (default: all)")
		},
		run: cmdCrosscheck,
	}
}

func cmdCrosscheck(fs *flagSet, stdout, stderr io.Writer) error {
	out, force := fs.str("out"), fs.Given("force")
	if out == "" {
		return usagef("crosscheck needs --out FILE (JSON lines, one per case)")
	}
	if err := checkNewFile("--out", out); err != nil {
		return err
	}
	if err := crosscheck.CheckOut(out, force); err != nil {
		return usageError{err}
	}
	ncases, dev := fs.integer("cases"), fs.integer("device")
	if ncases <= 0 {
		return usagef("--cases must be positive, got %d", ncases)
	}
	if dev < 0 {
		return usagef("--device must be a GPU ordinal (0 or more), got %d", dev)
	}
	fams, _, err := tuning.ParseKernels(fs.str("kernel"))
	if err != nil {
		return usageError{err}
	}
	var dts []dtype.DType
	if d := fs.str("dtype"); d != "" {
		if dts, err = dtype.ParseList(d); err != nil {
			return usagef("--dtype: %w", err)
		}
	}
	seed := fs.unsigned("seed")
	cases := crosscheck.Pick(fams, dts, ncases, seed)
	if len(cases) == 0 {
		return usagef("no case: no family accepts a small shape in the dtypes asked for")
	}
	if err := probeFile("--out", out, crosscheckTemp); err != nil {
		return err
	}
	// The GPU, in this process, on this OS thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gpu, closeGPU, err := openGPU(dev)
	if err != nil {
		return err
	}
	defer closeGPU()
	info := gpu.Device()
	fmt.Fprintf(stdout, "crosscheck: %d cases of %d families on device %d (%s, %d SMs) and the interpreter\n",
		len(cases), len(fams), dev, info.Name, info.SMs)
	rep, err := crosscheck.Run(gpu, cases, seed, stderr)
	if err != nil {
		return err
	}
	if err := crosscheck.WriteFile(out, force, rep.WriteJSONL); err != nil {
		return err
	}
	printCrosscheck(stdout, rep)
	fmt.Fprintf(stdout, "interpreter %.1fs, GPU %.1fs; %s written\n", rep.SimTime.Seconds(), rep.GPUTime.Seconds(), out)
	if n := rep.Failed(); n > 0 {
		return fmt.Errorf("%d cases or probes are not identical or within tolerance (see %s)", n, out)
	}
	return nil
}

func printCrosscheck(w io.Writer, rep crosscheck.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tcases\tidentical\twithin tol\tdiffers\tdisagree\toutside tol\terrors\texact: identical/cases\t")
	ts, sum := rep.Tallies()
	for _, t := range append(ts, sum) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d/%d\t\n", t.Kernel, t.Cases, t.Identical, t.Within, t.Differs, t.Disagree, t.Outside, t.Errors, t.ExactIdentical, t.Exact)
	}
	tw.Flush()
	fmt.Fprintln(w, "probes:")
	for _, p := range rep.Probes {
		line := fmt.Sprintf("  %-22s %s", p.Name, p.Verdict)
		if p.Detail != "" {
			line += ": " + p.Detail
		}
		fmt.Fprintln(w, line)
	}
}
