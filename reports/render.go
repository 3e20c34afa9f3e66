package reports

import (
	"fmt"
	"html"
	htmltemplate "html/template"
	"path/filepath"
	"sort"
	"strings"
	texttemplate "text/template"

	"github.com/gradtune/gradtune/internal/results"
)

// page is what the HTML and Markdown templates show.
type page struct {
	Title    string
	Runs     []string
	Winners  [][]string
	Peers    [][]string
	PeerNote string
	Spreads  [][]string
	Fit      string
	Failures [][]string
	Charts   []pageChart
	// StepHead, StepRows and StepNote are the model's backward step,
	// when the report has one.
	StepHead []string
	StepRows [][]string
	StepNote string
}

type pageChart struct {
	Name, Title string
	// Img is the <img> element with the SVG as a data: URI, built here
	// because html/template would write the base64 text's '+' and '=' as
	// character references.
	Img htmltemplate.HTML
}

var (
	winnerHead = []string{"kernel", "shape", "dtype", "best params", "median µs", "95% CI µs", "GB/s", "extra MiB", "% bound", "vs baseline", "ties", "valid/failed/skipped", "run"}
	peerHead   = []string{"kernel", "shape", "dtype", "best params", "ours µs (95% CI)", "ours GB/s", "% copy", "peer", "peer µs", "peer GB/s", "speedup"}
	spreadHead = []string{"kernel", "shape", "dtype", "min µs", "Q1", "median", "Q3", "max", "IQR", "slow outliers", "fast outliers"}
)

func (r *Report) page(svgs map[string]string) page {
	p := page{Title: "gradtune report: " + filepath.Base(r.Set.Path)}
	for _, run := range r.Set.Runs {
		p.Runs = append(p.Runs, fmt.Sprintf("run %d: %s (cc %s), driver %s, %s, started %s, measured copy %s GB/s; `%s`",
			run.ID, run.GPUName, run.CC, run.Driver, run.ToolVersion, run.Started.UTC().Format("2006-01-02 15:04 UTC"), num(run.CopyGBps, 0), run.Args))
	}
	for _, sh := range r.Set.Shapes {
		p.Winners = append(p.Winners, winnerRow(sh))
		if row, ok := r.peerRow(sh); ok {
			p.Peers = append(p.Peers, row)
		}
	}
	if r.Peers != nil && r.Peers.CopyGBps > 0 {
		p.PeerNote = fmt.Sprintf("Peer device-to-device copy (%s): %.0f GB/s.", r.Peers.CopyName, r.Peers.CopyGBps)
	}
	for _, s := range r.Spreads {
		sh := s.Shape
		p.Spreads = append(p.Spreads, []string{sh.Kernel, sh.Size, sh.DType, f2(s.Min), f2(s.Q1), f2(s.Median), f2(s.Q3), f2(s.Max), f2(s.IQR),
			fmt.Sprint(s.Slow), fmt.Sprint(s.Fast)})
	}
	if f := r.Fit; f != nil {
		p.Fit = fmt.Sprintf("Least-squares fit of the %d winners' median time against bytes moved: time ≈ %.2f µs + bytes / %.0f GB/s (R² = %.3f). The intercept is the fixed cost of a program run; the inverse slope an effective bandwidth.",
			f.N, f.InterceptUS, f.BandwidthGBps, f.R2)
	} else {
		p.Fit = "No fit of time against bytes: " + r.FitNote + "."
	}
	var kinds []string
	for k := range r.Failures {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		p.Failures = append(p.Failures, []string{k, fmt.Sprint(r.Failures[k])})
	}
	if st := r.Step; st != nil {
		p.StepHead, p.StepRows = st.head(), st.rows()
		p.StepNote = stepNote(st)
	}
	for _, c := range r.Charts {
		p.Charts = append(p.Charts, pageChart{Name: c.Name, Title: c.Title, Img: img(svgs[c.Name], c.Title)})
	}
	return p
}

// stepNote sums the step: ours over the shapes tuned, each peer over
// the shapes it has, and ours over the same shapes as that peer.
func stepNote(st *Step) string {
	kernels, ours, _ := st.Totals()
	total := 0.0
	for _, k := range kernels {
		total += ours[k]
	}
	note := fmt.Sprintf("Launches per step × time per launch, at the step's shapes (bf16 unless the table says). Ours: %.3f ms over the shapes tuned.", total)
	for _, name := range st.PeerNames {
		var peer, same float64
		for _, r := range st.Rows {
			if us, ok := r.PeerUS[name]; ok && r.OursUS > 0 {
				peer += float64(r.Count) * us / 1000
				same += float64(r.Count) * r.OursUS / 1000
			}
		}
		note += fmt.Sprintf(" %s: %.3f ms where both have a time, ours %.3f ms there.", name, peer, same)
	}
	return note + " Attention's backward is not a family yet."
}

func winnerRow(sh *results.Shape) []string {
	v := sh.Winner
	if v == nil {
		return []string{sh.Kernel, sh.Size, sh.DType, "no winner", "-", "-", "-", "-", "-", "-", "", countsText(sh), fmt.Sprint(sh.Run.ID)}
	}
	return []string{sh.Kernel, sh.Size, sh.DType, v.Key.Params, f2(v.MedianUS), interval(v), num(v.ThroughputGBps, 0),
		extraText(sh), boundText(sh, v), speedupText(sh), tieText(sh.Ties()), countsText(sh), fmt.Sprint(sh.Run.ID)}
}

// peerRow is the comparison of a winner with its peer, as
// bench/compare.py printed it: speedup = peer time / our time.
func (r *Report) peerRow(sh *results.Shape) ([]string, bool) {
	p, ok := r.Peers.Lookup(sh.Kernel, sh.Key)
	if !ok || sh.Winner == nil {
		return nil, false
	}
	v := sh.Winner
	pct := "-"
	if sh.Run.CopyGBps > 0 && v.ThroughputGBps > 0 {
		pct = fmt.Sprintf("%.1f%%", 100*v.ThroughputGBps/sh.Run.CopyGBps)
	}
	return []string{sh.Kernel, sh.Size, sh.DType, v.Key.Params, fmt.Sprintf("%s (%s)", f2(v.MedianUS), interval(v)),
		num(v.ThroughputGBps, 0), pct, p.Name, f2(p.MedianUS), num(p.GBps, 0), fmt.Sprintf("%.3f×", p.MedianUS/v.MedianUS)}, true
}

// img is an <img> element for a data: URI of base64 text.
func img(dataURI, alt string) htmltemplate.HTML {
	if !strings.HasPrefix(dataURI, "data:image/svg+xml;base64,") || strings.ContainsAny(dataURI, "\"<> ") {
		return ""
	}
	return htmltemplate.HTML(`<img src="` + dataURI + `" alt="` + html.EscapeString(alt) + `">`)
}

func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

// HTML renders the self-contained page; svgs maps chart names to data URIs.
func (r *Report) HTML(svgs map[string]string) (string, error) {
	var b strings.Builder
	err := htmlPage.Execute(&b, struct {
		page
		WinnerHead, PeerHead, SpreadHead []string
	}{r.page(svgs), winnerHead, peerHead, spreadHead})
	return b.String(), err
}

// Markdown renders report.md; with images it links img/NAME.png.
func (r *Report) Markdown(images bool) (string, error) {
	var b strings.Builder
	err := mdPage.Execute(&b, struct {
		page
		Images                           bool
		WinnerHead, PeerHead, SpreadHead []string
	}{r.page(nil), images, winnerHead, peerHead, spreadHead})
	return b.String(), err
}

// winnerNote is the winners table's legend, on both pages.
const winnerNote = "% bound: of the run's measured copy bandwidth (BW), or of the GPU's compute peak for compute-bound kernels (TC: dense bf16/f16 tensor cores; FP32). extra MiB: the device memory the winner allocates beside the shape's operands (its State and Scratch buffers). vs baseline: the baseline's median over the winner's (default: the first valid point of its space). tie(n): n variants whose 95% CI overlaps the winner's."

var funcs = map[string]any{
	"winnerNote": func() string { return winnerNote },
	"row": func(cells []string) string {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		return "| " + strings.Join(esc, " | ") + " |"
	},
	"rule": func(n int) string { return "|" + strings.Repeat("---|", n) },
}

var mdPage = texttemplate.Must(texttemplate.New("md").Funcs(funcs).Parse(`# {{.Title}}

{{range .Runs}}- {{.}}
{{end}}
## Winners

{{row .WinnerHead}}
{{rule (len .WinnerHead)}}
{{range .Winners}}{{row .}}
{{end}}
{{winnerNote}}
{{if .Peers}}
## Peers

{{row .PeerHead}}
{{rule (len .PeerHead)}}
{{range .Peers}}{{row .}}
{{end}}
Speedup: peer median / our median. {{.PeerNote}}
{{end}}{{if .StepRows}}
## The backward step

{{row .StepHead}}
{{rule (len .StepHead)}}
{{range .StepRows}}{{row .}}
{{end}}
{{.StepNote}}
{{end}}
## Spread of the variants

{{row .SpreadHead}}
{{rule (len .SpreadHead)}}
{{range .Spreads}}{{row .}}
{{end}}
Outliers: beyond 1.5 IQR from the quartiles.

{{.Fit}}

## Failures
{{if .Failures}}
| kernel — kind | evaluations |
|---|---|
{{range .Failures}}{{row .}}
{{end}}{{else}}
None: every evaluated variant was valid and timed.
{{end}}{{if .Images}}
## Charts
{{range .Charts}}
### {{.Title}}

![{{.Title}}](img/{{.Name}}.png)
{{end}}{{end}}`))

var htmlPage = htmltemplate.Must(htmltemplate.New("html").Funcs(htmltemplate.FuncMap{
	"winnerNote": func() htmltemplate.HTML { return winnerNote }, // a constant, no markup
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }
th { background: #f0f0f0; }
table.params td:nth-child(4) { text-align: left; font-family: monospace; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; color: #555; }
.note { font-size: 0.85em; color: #555; max-width: 60em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<ul>{{range .Runs}}<li>{{.}}</li>{{end}}</ul>
<h2>Winners</h2>
<table class="params">
<tr>{{range .WinnerHead}}<th>{{.}}</th>{{end}}</tr>
{{range .Winners}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="note">{{winnerNote}}</p>
{{if .Peers}}<h2>Peers</h2>
<table class="params">
<tr>{{range .PeerHead}}<th>{{.}}</th>{{end}}</tr>
{{range .Peers}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="note">Speedup: peer median / our median. {{.PeerNote}}</p>
{{end}}{{if .StepRows}}<h2>The backward step</h2>
<table>
<tr>{{range .StepHead}}<th>{{.}}</th>{{end}}</tr>
{{range .StepRows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="note">{{.StepNote}}</p>
{{end}}<h2>Spread of the variants</h2>
<table>
<tr>{{range .SpreadHead}}<th>{{.}}</th>{{end}}</tr>
{{range .Spreads}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<p class="note">Outliers: beyond 1.5 IQR from the quartiles. {{.Fit}}</p>
<h2>Failures</h2>
{{if .Failures}}<table>
<tr><th>kernel — kind</th><th>evaluations</th></tr>
{{range .Failures}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{else}}<p>None: every evaluated variant was valid and timed.</p>{{end}}
<h2 id="charts">Charts</h2>
{{range .Charts}}<figure id="{{.Name}}">{{.Img}}<figcaption>{{.Title}}</figcaption></figure>
{{end}}
</body>
</html>
`))
