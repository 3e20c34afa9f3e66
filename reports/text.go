package reports

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gradtune/gradtune/internal/results"
)

// WriteRuns writes one line per run of the set: GPU, driver, tool and
// measured copy bandwidth.
func WriteRuns(w io.Writer, set *results.Set) {
	for _, r := range set.Runs {
		fmt.Fprintf(w, "run %d of %s: %s (cc %s), driver %s, %s, %s; copy %s GB/s\n",
			r.ID, set.Path, r.GPUName, r.CC, r.Driver, r.ToolVersion, r.Started.UTC().Format("2006-01-02 15:04 UTC"), num(r.CopyGBps, 0))
	}
}

// WriteWinners writes the winners table: one row per shape with the
// winner's params, median and interval, throughput, share of its bound,
// speedup over the baseline and ties.
func WriteWinners(w io.Writer, set *results.Set) error {
	WriteRuns(w, set)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tshape\tdtype\tbest params\tmedian µs\t95% CI µs\tGB/s\t% bound\tvs baseline\tties\tvalid/failed\trun\t")
	for _, sh := range set.Shapes {
		params, med, ci, gbps, bound, vs, ties := "-", "-", "-", "-", "-", "-", ""
		if v := sh.Winner; v != nil {
			params = v.Key.Params
			med = num(v.MedianUS, 2)
			ci = interval(v)
			gbps = num(v.ThroughputGBps, 0)
			bound = boundText(sh, v)
			vs = speedupText(sh)
			ties = tieText(sh.Ties())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d\t\n", sh.Kernel, sh.Size, sh.DType, params,
			med, ci, gbps, bound, vs, ties, len(sh.Valid), len(sh.Failed), sh.Run.ID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "% bound: of the run's measured copy bandwidth (BW), or of the GPU's FP32 peak for compute-bound kernels;")
	fmt.Fprintln(w, "vs baseline: baseline median / winner median; tie(n): n variants whose 95% CI overlaps the winner's.")
	return nil
}

// WriteVariants writes the ranked list of one shape: every valid variant
// fastest first, then the failures.
func WriteVariants(w io.Writer, sh *results.Shape) error {
	fmt.Fprintf(w, "%s %s in run %d (%s): %d valid, %d failed\n", sh.Kernel, sh.Key, sh.Run.ID, sh.Run.GPUName, len(sh.Valid), len(sh.Failed))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tparams\tmedian µs\t95% CI µs\tvs best\tGB/s\t% bound\tregs\tsmem\toccupancy\tnote\t")
	best := 0.0
	if len(sh.Valid) > 0 {
		best = sh.Valid[0].MedianUS
	}
	for _, v := range sh.Valid {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t\n", v.Rank, v.Key.Params, num(v.MedianUS, 2), interval(v),
			fmt.Sprintf("+%.1f%%", 100*(v.MedianUS/best-1)), num(v.ThroughputGBps, 0), boundText(sh, v),
			v.Registers, v.SmemBytes, fmt.Sprintf("%.0f%%", 100*v.Occupancy), note(sh, v))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range sh.Failed {
		fmt.Fprintf(w, "failed  %s  %s: %s\n", v.Key.Params, v.Status, v.Message)
	}
	return nil
}

func note(sh *results.Shape, v *results.Variant) string {
	var n []string
	if v == sh.Winner {
		n = append(n, "winner")
	}
	if v.Tie {
		n = append(n, "tie")
	}
	if b := sh.Baseline; b != nil && b.Params != "" && b.Params == v.Key.Params {
		n = append(n, b.Name)
	}
	if v.Reused {
		n = append(n, fmt.Sprintf("from run %d", v.RunID))
	}
	return strings.Join(n, ",")
}

func interval(v *results.Variant) string {
	lo, hi := v.CI()
	return fmt.Sprintf("%.2f–%.2f", lo, hi)
}

func boundText(sh *results.Shape, v *results.Variant) string {
	pct, of := sh.Bound(v)
	if of == "" {
		return "-"
	}
	return fmt.Sprintf("%.1f%% %s", pct, of)
}

func speedupText(sh *results.Shape) string {
	s := sh.Speedup()
	if s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f× %s", s, sh.Baseline.Name)
}

func tieText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("tie(%d)", n)
}

// num prints v with the given decimals, or "-" when it is not positive.
func num(v float64, decimals int) string {
	if !(v > 0) {
		return "-"
	}
	return fmt.Sprintf("%.*f", decimals, v)
}
