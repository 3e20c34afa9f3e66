package regress

import (
	"fmt"
	"io"
	"strings"
	"unicode"
)

// WriteMarkdown writes the report as a Markdown table, failures first,
// then a line of counts and the warnings.
func WriteMarkdown(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "### Regression gate: %s against %s\n\n", r.New.Label, r.Base.Label)
	for _, s := range []Side{r.Base, r.New} {
		if s.Run.Telemetry != "" {
			fmt.Fprintf(w, "- %s (%s): %s\n", s.Label, s.Run.GPUName, s.Run.Telemetry)
		}
	}
	fmt.Fprintf(w, "\nA case regresses when the Mann–Whitney U test gives p < %g, its median is more than %s and %g µs slower "+
		"and the 95%% CI of the change (Hodges–Lehmann) lies above zero, %s.\n\n", r.Options.Alpha, pct(r.Options.Threshold), r.Options.MinShift, driftText(r))
	fmt.Fprintln(w, "| verdict | kernel | dtype | shape | params | baseline µs | new µs | change | 95% CI | p | n |")
	fmt.Fprintln(w, "|---|---|---|---|---|--:|--:|--:|---|--:|--:|")
	for _, pass := range []bool{true, false} {
		for _, row := range r.Rows {
			if row.Verdict.Fails() == pass {
				writeRow(w, row)
			}
		}
	}
	fmt.Fprintf(w, "\n%d regressed, %d failed, %d missing, %d improved, %d unchanged, %d new.\n",
		r.Count(Regressed), r.Count(Failed), r.Count(Missing), r.Count(Improved), r.Count(Unchanged), r.Count(Added))
	var errs []string
	for _, row := range r.Rows {
		for _, c := range []struct {
			side string
			c    *Case
		}{{"baseline", row.Base}, {"new run", row.New}} {
			if c.c != nil && c.c.Err != "" {
				errs = append(errs, fmt.Sprintf("- %s, %s: %s", row.Key(), c.side, c.c.Err))
			}
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "\nNo valid result:\n%s\n", strings.Join(errs, "\n"))
	}
	var warns []string
	for _, row := range r.Rows {
		for _, wn := range dedup(row.Warnings) {
			warns = append(warns, fmt.Sprintf("- %s: %s", row.Key(), wn))
		}
	}
	if len(warns) > 0 {
		fmt.Fprintf(w, "\nWarnings:\n%s\n", strings.Join(warns, "\n"))
	}
	return nil
}

func writeRow(w io.Writer, row Row) {
	c := row.Base
	if c == nil {
		c = row.New
	}
	verdict := string(row.Verdict)
	if row.Verdict.Fails() {
		verdict = "**" + verdict + "**"
	}
	params := c.Params
	if row.Base != nil && row.New != nil {
		switch b, n := row.Base.Params, row.New.Params; {
		case b == "":
			params = n
		case n != "" && n != b:
			params = fmt.Sprintf("%s → %s", b, n)
		}
	}
	base, cur, change, ci, p, n := "-", "-", "-", "-", "-", "-"
	if row.Base != nil {
		base = medianText(row.Base, row.BaseMedian)
	}
	if row.New != nil {
		cur = medianText(row.New, row.NewMedian)
	}
	if row.Base != nil && row.New != nil && row.Base.Err == "" && row.New.Err == "" {
		change = signedPct(row.Change)
		ci = signedPct(row.Lo) + " … " + signedPct(row.Hi)
		p = fmt.Sprintf("%.3f", row.P)
		n = fmt.Sprintf("%d+%d", len(row.Base.Samples), len(row.New.Samples))
	}
	fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", verdict, c.Kernel, c.DType, c.Dims,
		params, base, cur, change, ci, p, n)
}

// medianText is a side's median, or "failed" when the case has no
// winner there.
func medianText(c *Case, median float64) string {
	if c.Err != "" {
		return "failed"
	}
	return fmt.Sprintf("%.2f", median)
}

// WriteBenchfmt writes both sides' samples in the Go benchmark format,
// one line per sample in ns/op, the sides told apart by the configuration
// key "run" (baseline, new): `benchstat -col run FILE` compares them. The
// GPU is named once (a key that differed between the sides would split
// benchstat's tables); the sources are named in lines benchstat skips.
func WriteBenchfmt(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "# gradtune regression gate: %s against %s\n", oneWord(r.New.Label), oneWord(r.Base.Label))
	fmt.Fprintf(w, "pkg: github.com/gradtune/gradtune\ngpu: %s\n", oneWord(r.New.Run.GPUName))
	for _, s := range []struct {
		name string
		side Side
	}{{"baseline", r.Base}, {"new", r.New}} {
		fmt.Fprintf(w, "run: %s\n", s.name)
		for _, c := range s.side.Cases {
			name := BenchName(c)
			for _, x := range c.Samples {
				if _, err := fmt.Fprintf(w, "%s 1 %.0f ns/op\n", name, x*1e3); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// BenchName is the benchmark name of a case: "BenchmarkRelu_bwd" and the
// shape as name keys, "/m=2048/n=8960/dtype=f32".
func BenchName(c Case) string {
	r := []rune(c.Kernel)
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return "Benchmark" + string(r) + "/" + strings.ReplaceAll(c.ShapeKey, ",", "/")
}

// oneWord makes a configuration value of s (no newlines; "-" for none).
func oneWord(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return s
}

func pct(f float64) string { return fmt.Sprintf("%.4g%%", 100*f) }

func signedPct(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) }

func dedup(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// driftText says how the run's drift entered the test.
func driftText(r *Report) string {
	switch {
	case r.Options.NoDrift:
		return "the new run's samples as measured (no drift taken out)"
	case r.Drift == 0:
		return fmt.Sprintf("no drift taken out (fewer than %d cases compared, or none)", minDriftCases)
	}
	return fmt.Sprintf("the new run's samples divided by its drift of %s (the median change of the cases compared); "+
		"the change and its CI are after it, the medians as measured", signedPct(r.Drift))
}
