package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/tuning"
)

// hostLimit is the memory check may use; tests pin it.
var hostLimit = tuning.HostLimit

// timingOnly are tune's flags that only mean something when variants are
// timed on a GPU.
var timingOnly = map[string]string{}

func init() {
	for _, f := range []string{"mode", "budget", "db", "device", "fresh"} {
		timingOnly[f] = "check validates on the CPU interpreter and never times (run tune on a GPU to time)"
	}
}

func checkCommand() *command {
	return &command{
		name:  "check",
		usage: "check --kernel K[,K...]|all --shapes SPEC [--dtype D] [--sample N] [--params P] [--seed N] [--tokens N]",
		summary: "validate variants on the CPU interpreter against the float64 reference\n" +
			"(correctness only: the interpreter never times); shapes must fit in the\n" +
			"available host memory",
		flags: func(fs *flagSet) {
			selectionFlags(fs, "", "")
			fs.Int("sample", 8, "N\tvariants per shape, spread evenly (0: all)")
			fs.Uint64("seed", 1, "N\tinput data seed")
		},
		misplace: timingOnly,
		run:      cmdCheck,
	}
}

func cmdCheck(fs *flagSet, stdout, stderr io.Writer) error {
	req := request(fs)
	if req.Kernels == "" {
		return usagef("check needs --kernel (kernels: %s, or all)", strings.Join(catalog.Names(), ", "))
	}
	if req.Shapes == "" {
		return usagef("check needs --shapes: a spec such as m=64,n=1001 (the interpreter runs about 10^8 thread-instructions per second per core, so keep shapes small) or a preset with --tokens")
	}
	sample := fs.integer("sample")
	if sample < 0 {
		return usagef("--sample must be 0 (every variant) or more, got %d", sample)
	}
	sel, err := resolve(req, "tune check", stderr)
	if err != nil {
		return err
	}
	lim, err := hostLimit()
	if err != nil {
		fmt.Fprintf(stderr, "tune check: %v; shapes are not checked against memory\n", err)
	} else if err := tuning.CheckHost(sel, lim); err != nil {
		return usageError{err}
	}
	seed := fs.unsigned("seed")
	rs := tuning.Check(sel, tuning.CheckOptions{Sample: sample, Seed: seed, Memory: lim})
	printCheckTable(stdout, rs)
	counts := map[eval.Status]int{}
	for _, r := range rs {
		counts[r.Status]++
	}
	fmt.Fprintf(stdout, "%d variants on the interpreter: %d ok, %d invalid, %d errors, %d compile errors (correctness only: nothing was timed)\n",
		len(rs), counts[eval.OK], counts[eval.Invalid], counts[eval.LaunchError], counts[eval.CompileError])
	if bad := len(rs) - counts[eval.OK]; bad > 0 {
		return fmt.Errorf("%d of %d variants failed on the interpreter", bad, len(rs))
	}
	return nil
}

func printCheckTable(w io.Writer, rs []tuning.CheckResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tshape\tdtype\tparams\tstatus\tmax abs err\tmax rel err\tbound |err| ≤")
	for _, r := range rs {
		abs, rel := "-", "-"
		if r.Status == eval.OK || r.Status == eval.Invalid {
			abs, rel = fmt.Sprintf("%.3g", r.MaxAbs), fmt.Sprintf("%.3g", r.MaxRel)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Kernel, r.Shape.Size(), r.Shape.DType, r.Params, r.Status, abs, rel, r.Bound)
	}
	tw.Flush()
	if len(rs) > 0 {
		fmt.Fprintln(w, "ok: every output element within its bound, |got − ref| ≤ atol + rtol·|ref| (ref: the float64 reference);"+
			" max rel err is over the elements whose ref is not 0, so it can exceed rtol where atol covers a small ref")
	}
	for _, r := range rs {
		if r.Message != "" {
			fmt.Fprintf(w, "%s %s %s: %s\n", r.Kernel, r.Shape.Key(), r.Params, r.Message)
		}
	}
}
