package reports

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gradtune/gradtune/internal/outfile"
	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/internal/step"
	"github.com/gradtune/gradtune/store"
)

// ErrExists is returned (wrapped) by Write for an output directory that
// holds files when Options.Force is not set.
var ErrExists = errors.New("output directory is not empty (use --force to write into it)")

// Options say what Write produces.
type Options struct {
	// Peers are the peer rows to compare with; nil for none.
	Peers *Peers
	// Force writes into a directory that is not empty, replacing the
	// report's files (and only those, never a database).
	Force bool
	// Keep are files no output may replace (the command's --db).
	Keep []outfile.Protected
	// NoPNG leaves out the PNG files (and so report.md's images).
	NoPNG bool
	// Step, when set, is a model's backward step to weigh the winners
	// by (package step): its table and chart join the report.
	Step *StepInput
}

// StepInput is a model's backward step: its name and resolved shapes.
type StepInput struct {
	Model  string
	Shapes []step.Resolved
}

// Report is an assembled report: its charts and tables.
type Report struct {
	Set      *results.Set
	Peers    *Peers
	Charts   []*Chart
	Spreads  []Spread
	Fit      *Fit
	FitNote  string
	Failures map[string]int
	Step     *Step
}

// Build assembles the report of set: every chart and statistic.
func Build(set *results.Set, peers *Peers) (*Report, error) {
	r := &Report{Set: set, Peers: peers}
	for _, sh := range set.Shapes {
		if len(sh.Valid) == 0 {
			continue
		}
		var peer *Peer
		if p, ok := peers.Lookup(sh.Kernel, sh.Key); ok {
			peer = &p
		}
		c, err := ShapeChart(sh, peer)
		if err != nil {
			return nil, err
		}
		r.Charts = append(r.Charts, c)
		if s, ok := spread(sh); ok {
			r.Spreads = append(r.Spreads, s)
		}
	}
	for _, k := range set.Kernels() {
		cs, err := AxisCharts(k, set.Shapes)
		if err != nil {
			return nil, err
		}
		r.Charts = append(r.Charts, cs...)
		if c, err := Progress(k, set.Shapes); err == nil {
			r.Charts = append(r.Charts, c)
		}
	}
	for _, gpu := range gpus(set) {
		if c, err := Roofline(gpu, set.Shapes); err == nil {
			r.Charts = append(r.Charts, c)
		}
	}
	fc, counts, err := Failures(set.Shapes)
	if err != nil {
		return nil, err
	}
	if fc != nil {
		r.Charts = append(r.Charts, fc)
	}
	r.Failures = counts
	if f, err := fitTime(set); err == nil {
		r.Fit = &f
	} else {
		r.FitNote = err.Error()
	}
	return r, nil
}

func gpus(set *results.Set) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range set.Runs {
		if !seen[r.GPUName] {
			seen[r.GPUName] = true
			out = append(out, r.GPUName)
		}
	}
	return out
}

// Write builds the report of set into dir: img/*.svg and img/*.png,
// index.html (self-contained) and report.md. It creates dir when it does
// not exist and refuses one that holds files unless opt.Force is set
// (CheckDir); even then it replaces only the report's own files, and
// never a database among them (internal/outfile). It returns the files
// written.
func Write(set *results.Set, dir string, opt Options) ([]string, error) {
	if err := CheckDir(dir, opt.Force); err != nil {
		return nil, err
	}
	r, err := Build(set, opt.Peers)
	if err != nil {
		return nil, err
	}
	if opt.Step != nil {
		r.Step = BuildStep(opt.Step.Model, opt.Step.Shapes, set, opt.Peers)
		c, err := StepChart(r.Step)
		if err != nil {
			return nil, err
		}
		r.Charts = append([]*Chart{c}, r.Charts...)
	}
	files := map[string][]byte{}
	svgs := map[string]string{}
	for _, c := range r.Charts {
		formats := []string{"svg", "png"}
		if opt.NoPNG {
			formats = formats[:1]
		}
		for _, f := range formats {
			b, err := c.Render(f)
			if err != nil {
				return nil, err
			}
			files[filepath.Join(dir, "img", c.Name+"."+f)] = b
			if f == "svg" {
				svgs[c.Name] = "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(b)
			}
		}
	}
	html, err := r.HTML(svgs)
	if err != nil {
		return nil, err
	}
	md, err := r.Markdown(!opt.NoPNG)
	if err != nil {
		return nil, err
	}
	files[filepath.Join(dir, "index.html")] = []byte(html)
	files[filepath.Join(dir, "report.md")] = []byte(md)
	for name := range files { // before img/ is made: a refusal leaves dir as it was
		if _, err := os.Stat(filepath.Dir(name)); err == nil {
			if err := outfile.Check(name, true, opt.Keep); err != nil {
				return nil, err
			}
		}
	}
	img := filepath.Join(dir, "img")
	if err := os.MkdirAll(img, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", img, outfile.ErrPath, err)
	}
	return outfile.Write(files, true, opt.Keep)
}

// CheckDir says whether dir may receive a report: a missing directory
// whose parent exists, an empty directory, or with force any directory.
// A file is never one, whatever force says (outfile.ErrPath).
func CheckDir(dir string, force bool) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		parent := filepath.Dir(filepath.Clean(dir))
		if pi, perr := os.Stat(parent); perr != nil || !pi.IsDir() {
			return fmt.Errorf("%s: %w: parent directory %s does not exist", dir, outfile.ErrPath, parent)
		}
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w: %w", dir, outfile.ErrPath, err)
	case !fi.IsDir():
		what := "a file"
		if isDB, _ := store.IsSQLite(dir); isDB {
			what = "an SQLite database"
		}
		return fmt.Errorf("%s: %w: it is %s, want a directory for the report (--force does not change that)", dir, outfile.ErrPath, what)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w: %w", dir, outfile.ErrPath, err)
	}
	if len(entries) > 0 && !force {
		var names []string
		for i, e := range entries {
			if i == 3 {
				names = append(names, "…")
				break
			}
			names = append(names, e.Name())
		}
		return fmt.Errorf("%s: %w (holds %s)", dir, ErrExists, strings.Join(names, ", "))
	}
	return nil
}
