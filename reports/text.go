package reports

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/internal/results"
)

// WriteRuns writes one line per run of the set: GPU, driver, tool and
// measured copy bandwidth.
func WriteRuns(w io.Writer, set *results.Set) {
	for _, r := range set.Runs {
		fmt.Fprintf(w, "run %d of %s: %s (cc %s), driver %s, %s, %s; copy %s GB/s\n",
			r.ID, set.Path, r.GPUName, r.CC, r.Driver, r.ToolVersion, r.Started.UTC().Format("2006-01-02 15:04 UTC"), num(r.CopyGBps, 0))
		if r.Telemetry != "" {
			fmt.Fprintf(w, "  GPU at the start: %s\n", r.Telemetry)
		}
	}
}

// extraText is the winner's extra device memory in MiB: "0" for none,
// two decimals under 10 MiB, "-" where this build cannot emit it.
func extraText(sh *results.Shape) string {
	switch b := sh.WinnerExtra(); {
	case b < 0:
		return "-"
	case b == 0:
		return "0"
	case b < 10<<20:
		return fmt.Sprintf("%.2f", float64(b)/(1<<20))
	default:
		return fmt.Sprintf("%.1f", float64(b)/(1<<20))
	}
}

// countsText is a shape's "valid/failed/skipped" counts.
func countsText(sh *results.Shape) string {
	return fmt.Sprintf("%d/%d/%d", len(sh.Valid), len(sh.Failed)-sh.Skipped(), sh.Skipped())
}

// WriteWinners writes the winners table: one row per shape with the
// winner's params, median and interval, throughput, share of its bound,
// speedup over the baseline and ties.
func WriteWinners(w io.Writer, set *results.Set) error {
	WriteRuns(w, set)
	others := false
	for _, sh := range set.Shapes {
		others = others || len(sh.Others) > 0
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "kernel\tshape\tdtype\tbest params\tmedian µs\t95% CI µs\tGB/s\textra MiB\t% bound\tvs baseline\t"
	if others {
		head += "vs others\t"
	}
	fmt.Fprintln(tw, head+"ties\tvalid/failed/skipped\trun\t")
	for _, sh := range set.Shapes {
		params, med, ci, gbps, extra, bound, vs, ties := "-", "-", "-", "-", "-", "-", "-", ""
		if v := sh.Winner; v != nil {
			params = v.Key.Params
			med = num(v.MedianUS, 2)
			ci = interval(v)
			gbps = num(v.ThroughputGBps, 0)
			extra = extraText(sh)
			bound = boundText(sh, v)
			vs = speedupText(sh)
			ties = tieText(sh.Ties())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t", sh.Kernel, sh.Size, sh.DType, params, med, ci, gbps, extra, bound, vs)
		if others {
			fmt.Fprintf(tw, "%s\t", othersText(sh))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t\n", ties, countsText(sh), sh.Run.ID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "% bound: of the run's measured copy bandwidth (BW), or of the GPU's compute peak for compute-bound kernels (TC: dense bf16/f16 tensor cores; FP32);")
	fmt.Fprintln(w, "extra MiB: device memory the winner allocates beside the shape's operands (its State and Scratch buffers);")
	fmt.Fprintln(w, "vs baseline: baseline median / winner median; tie(n): n variants whose 95% CI overlaps the winner's;")
	if others {
		fmt.Fprintln(w, "vs others: the same against the other baselines the run timed (dequant+cublas: a dequantization kernel, then cuBLAS on its bf16 weight, what bitsandbytes runs);")
	}
	fmt.Fprintln(w, "skipped: not timed in full (stopped early by the abandon rule, or over the local-memory prescreen), never a winner.")
	writeNotes(w, set)
	return nil
}

// writeNotes says, per winner, how a tie was broken and what benchmath
// warned about its samples.
func writeNotes(w io.Writer, set *results.Set) {
	var notes []string
	for _, sh := range set.Shapes {
		v := sh.Winner
		if v == nil {
			continue
		}
		name := fmt.Sprintf("%s %s %s", sh.Kernel, sh.Size, sh.DType)
		switch {
		case sh.Rule != "" && sh.Ties() > 0:
			notes = append(notes, fmt.Sprintf("%s: %s", name, sh.Rule))
		case sh.Rule == "" && sh.Ties() > 0:
			notes = append(notes, fmt.Sprintf("%s: tie(%d), winner picked by the lowest median (recorded before tie rules)", name, sh.Ties()))
		}
		for _, wn := range v.Warnings {
			notes = append(notes, fmt.Sprintf("%s: warning: %s", name, wn))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "notes:\n  %s\n", strings.Join(notes, "\n  "))
	}
}

// WriteVariants writes the ranked list of one shape: every valid variant
// fastest first, then the others, a variant whose status is skipped (the
// early-stop rule's, the prescreen's) marked skipped, never failed.
func WriteVariants(w io.Writer, sh *results.Shape) error {
	fmt.Fprintf(w, "%s %s in run %d (%s): %d valid, %d failed, %d skipped\n", sh.Kernel, sh.Key, sh.Run.ID, sh.Run.GPUName,
		len(sh.Valid), len(sh.Failed)-sh.Skipped(), sh.Skipped())
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
		label := "failed "
		if v.Status == eval.Skipped {
			label = "skipped"
		}
		fmt.Fprintf(w, "%s  %s  %s: %s\n", label, v.Key.Params, v.Status, v.Message)
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
	if len(v.Excluded) > 0 {
		n = append(n, fmt.Sprintf("%d throttled samples left out", len(v.Excluded)))
	}
	if len(v.Warnings) > 0 {
		n = append(n, "warnings: "+strings.Join(v.Warnings, "; "))
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

// othersText is the winner's speedup over each of the shape's other
// baselines.
func othersText(sh *results.Shape) string {
	var parts []string
	for _, o := range sh.Others {
		if x := sh.SpeedupOver(o); x > 0 {
			parts = append(parts, fmt.Sprintf("%.2f× %s", x, o.Name))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
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

// WriteRunSummaries writes what each run recorded: its header and
// telemetry, evaluations by status, telemetry coverage, throttled samples,
// warnings and ties.
func WriteRunSummaries(w io.Writer, path string, sums []results.RunSummary) {
	for _, s := range sums {
		r := s.Run
		fmt.Fprintf(w, "run %d of %s (%s), %s, %s driver %s: %s\n", r.ID, path, r.Status,
			r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.GPUName, r.Driver, r.Args)
		if r.Telemetry != "" {
			fmt.Fprintf(w, "  at start: %s\n", r.Telemetry)
		}
		var st []string
		for _, status := range eval.Statuses() {
			if n := s.Statuses[status]; n > 0 {
				st = append(st, fmt.Sprintf("%s %d", status, n))
			}
		}
		fmt.Fprintf(w, "  evaluations: %d (%s)\n", s.Evaluations, strings.Join(st, ", "))
		fmt.Fprintf(w, "  telemetry: %d of %d timed evaluations", s.WithTelemetry, s.Timed)
		if s.WithTelemetry > 0 {
			reasons := "none"
			if names := eval.ReasonNames(s.Reasons); len(names) > 0 {
				reasons = strings.Join(names, ", ")
			}
			fmt.Fprintf(w, "; SM %d–%d MHz, memory %d–%d MHz, up to %d °C and %.0f W; clock event reasons: %s",
				s.SMMin, s.SMMax, s.MemMin, s.MemMax, s.MaxTempC, s.MaxPowerW, reasons)
		}
		fmt.Fprintf(w, "\n  throttled: %d samples left out of %d evaluations; benchmath warnings on %d evaluations\n",
			s.ExcludedSamples, s.ThrottledEvals, s.WarnedEvals)
		fmt.Fprintf(w, "  winners: %d, %d of them chosen among statistical ties\n", s.Winners, s.TiedWinners)
	}
}
