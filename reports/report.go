package reports

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gradtune/gradtune/internal/results"
)

// ErrExists is returned (wrapped) by Write for an output directory that
// holds files when Options.Force is not set.
var ErrExists = errors.New("output directory is not empty (use --force to write into it)")

// Options say what Write produces.
type Options struct {
	// Peers are the peer rows to compare with; nil for none.
	Peers *Peers
	// Force writes into a directory that is not empty, replacing the
	// report's files (and only those).
	Force bool
	// NoPNG leaves out the PNG files (and so report.md's images).
	NoPNG bool
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
// not exist and refuses one that holds files unless opt.Force is set. It
// returns the files written.
func Write(set *results.Set, dir string, opt Options) ([]string, error) {
	if err := checkDir(dir, opt.Force); err != nil {
		return nil, err
	}
	r, err := Build(set, opt.Peers)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "img"), 0o755); err != nil {
		return nil, err
	}
	svgs := map[string]string{}
	var files []string
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
			name := filepath.Join(dir, "img", c.Name+"."+f)
			if err := os.WriteFile(name, b, 0o644); err != nil {
				return nil, err
			}
			files = append(files, name)
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
	for name, text := range map[string]string{"index.html": html, "report.md": md} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	sort.Strings(files)
	return files, nil
}

// checkDir accepts a missing or empty directory, or any with force.
func checkDir(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if pi, perr := os.Stat(filepath.Dir(filepath.Clean(dir))); perr != nil || !pi.IsDir() {
			return fmt.Errorf("%s: parent directory %s does not exist", dir, filepath.Dir(filepath.Clean(dir)))
		}
		return nil
	case err != nil:
		if fi, serr := os.Stat(dir); serr == nil && !fi.IsDir() {
			return fmt.Errorf("%s: %w (it is a file, want a directory)", dir, ErrExists)
		}
		return err
	case len(entries) > 0 && !force:
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
