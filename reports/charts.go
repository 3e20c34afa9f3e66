package reports

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/variants"
)

// Chart is one figure of a report.
type Chart struct {
	// Name is the file name without extension; Title the caption.
	Name, Title string
	plot        *plot.Plot
	width       vg.Length
	height      vg.Length
}

var (
	grey   = color.RGBA{R: 140, G: 140, B: 140, A: 255}
	red    = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	blue   = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	green  = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	orange = color.RGBA{R: 255, G: 127, B: 14, A: 255}
	purple = color.RGBA{R: 148, G: 103, B: 189, A: 255}
)

// Render draws the chart as "svg" or "png". A log axis whose range holds
// a single value is widened to a decade around it.
func (c *Chart) Render(format string) (out []byte, err error) {
	for _, a := range []*plot.Axis{&c.plot.X, &c.plot.Y} {
		widenLog(a)
	}
	defer func() {
		if r := recover(); r != nil { // gonum/plot panics on some degenerate ranges
			out, err = nil, fmt.Errorf("render %s.%s: %v", c.Name, format, r)
		}
	}()
	wt, err := c.plot.WriterTo(c.width, c.height, format)
	if err != nil {
		return nil, fmt.Errorf("render %s.%s: %w", c.Name, format, err)
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("render %s.%s: %w", c.Name, format, err)
	}
	return b.Bytes(), nil
}

// widenLog gives a log axis a positive range of at least a decade.
func widenLog(a *plot.Axis) {
	if _, ok := a.Scale.(plot.LogScale); !ok {
		return
	}
	if !(a.Max > 0) {
		a.Min, a.Max = 1, 10
		return
	}
	if !(a.Min > 0) || a.Min > a.Max/10 {
		mid := math.Sqrt(a.Max * math.Max(a.Min, a.Max/10))
		a.Min, a.Max = math.Min(a.Min, mid/math.Sqrt(10)), math.Max(a.Max, mid*math.Sqrt(10))
		if !(a.Min > 0) {
			a.Min = a.Max / 10
		}
	}
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

func scatter(xys plotter.XYs, c color.Color, radius float64, shape draw.GlyphDrawer) (*plotter.Scatter, error) {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle.Color = c
	s.GlyphStyle.Radius = vg.Points(radius)
	s.GlyphStyle.Shape = shape
	return s, nil
}

func hline(y, x0, x1 float64, c color.Color, dashed bool) (*plotter.Line, error) {
	return line(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}}, c, dashed)
}

func line(xys plotter.XYs, c color.Color, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return l, nil
}

// errorBars pairs points with their intervals for plotter.NewYErrorBars.
type errorBars struct {
	plotter.XYs
	plotter.YErrors
}

// ShapeChart draws every valid variant's median with its interval,
// fastest first, marking the winner, the baseline and the peer.
func ShapeChart(sh *results.Shape, peer *Peer) (*Chart, error) {
	p := newPlot(fmt.Sprintf("%s %s %s (run %d): %d valid variants", sh.Kernel, sh.Size, sh.DType, sh.Run.ID, len(sh.Valid)),
		"rank (fastest first)", "median µs (95% CI)")
	var pts, win, base plotter.XYs
	var errs plotter.YErrors
	for _, v := range sh.Valid {
		xy := plotter.XY{X: float64(v.Rank), Y: v.MedianUS}
		lo, hi := v.CI()
		pts = append(pts, xy)
		errs = append(errs, struct{ Low, High float64 }{v.MedianUS - lo, hi - v.MedianUS})
		if v == sh.Winner {
			win = append(win, xy)
		}
		if sh.Baseline != nil && sh.Baseline.Params != "" && v.Key.Params == sh.Baseline.Params {
			base = append(base, xy)
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%s %s: no valid variant to draw", sh.Kernel, sh.Key)
	}
	eb, err := plotter.NewYErrorBars(errorBars{pts, errs})
	if err != nil {
		return nil, err
	}
	eb.Color = grey
	all, err := scatter(pts, grey, 1.5, draw.CircleGlyph{})
	if err != nil {
		return nil, err
	}
	p.Add(eb, all)
	p.Legend.Add("variant", all)
	p.Legend.Left = true
	if err := addMarks(p, win, base, sh, peer, float64(len(pts))); err != nil {
		return nil, err
	}
	return &Chart{Name: "shape-" + slug(sh.Kernel+"-"+sh.Size+"-"+sh.DType), Title: fmt.Sprintf("%s %s %s", sh.Kernel, sh.Size, sh.DType),
		plot: p, width: 7 * vg.Inch, height: 4 * vg.Inch}, nil
}

// addMarks adds the winner, the baseline and the peer to a shape chart.
func addMarks(p *plot.Plot, win, base plotter.XYs, sh *results.Shape, peer *Peer, n float64) error {
	if len(base) > 0 {
		s, err := scatter(base, blue, 4, draw.SquareGlyph{})
		if err != nil {
			return err
		}
		p.Add(s)
		p.Legend.Add(fmt.Sprintf("%s [%s]", sh.Baseline.Name, shorten(sh.Baseline.Params, 40)), s)
	}
	if len(win) > 0 {
		s, err := scatter(win, red, 4, draw.PyramidGlyph{})
		if err != nil {
			return err
		}
		p.Add(s)
		p.Legend.Add("winner "+num(win[0].Y, 2)+" µs", s)
	}
	if peer != nil {
		l, err := hline(peer.MedianUS, 1, math.Max(n, 2), green, true)
		if err != nil {
			return err
		}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s %.2f µs", peer.Name, peer.MedianUS), l)
	}
	return nil
}

// AxisCharts draws, per tuning axis of the kernel, box plots of each
// variant's median relative to the best of its shape, against the
// axis's values, pooled over the kernel's shapes.
func AxisCharts(kernel string, shapes []*results.Shape) ([]*Chart, error) {
	ratios := map[string]map[string]plotter.Values{} // axis → value → ratios
	for _, sh := range shapes {
		if sh.Kernel != kernel || len(sh.Valid) == 0 {
			continue
		}
		best := sh.Valid[0].MedianUS
		for _, v := range sh.Valid {
			ps, err := variants.ParseParams(v.Key.Params)
			if err != nil {
				continue
			}
			for axis, val := range ps {
				if ratios[axis] == nil {
					ratios[axis] = map[string]plotter.Values{}
				}
				ratios[axis][val] = append(ratios[axis][val], v.MedianUS/best)
			}
		}
	}
	var axes []string
	for a, vals := range ratios {
		if len(vals) > 1 {
			axes = append(axes, a)
		}
	}
	sort.Strings(axes)
	var out []*Chart
	for _, axis := range axes {
		c, err := axisChart(kernel, axis, ratios[axis])
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func axisChart(kernel, axis string, byValue map[string]plotter.Values) (*Chart, error) {
	vals := make([]string, 0, len(byValue))
	for v := range byValue {
		vals = append(vals, v)
	}
	sortValues(vals)
	p := newPlot(fmt.Sprintf("%s: time by %s", kernel, axis), axis, "median / best of its shape")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for i, v := range vals {
		b, err := plotter.NewBoxPlot(vg.Points(24), float64(i), byValue[v])
		if err != nil {
			return nil, err
		}
		b.FillColor = color.RGBA{R: 200, G: 220, B: 240, A: 255}
		p.Add(b)
	}
	labels := make([]string, len(vals))
	for i, v := range vals {
		labels[i] = fmt.Sprintf("%s (%d)", v, len(byValue[v]))
	}
	p.NominalX(labels...)
	return &Chart{Name: "axis-" + slug(kernel+"-"+axis), Title: fmt.Sprintf("%s: %s", kernel, axis),
		plot: p, width: 5 * vg.Inch, height: 3.5 * vg.Inch}, nil
}

// sortValues sorts numerically when every value is a number.
func sortValues(vals []string) {
	numeric := true
	for _, v := range vals {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			numeric = false
		}
	}
	sort.Slice(vals, func(i, j int) bool {
		if numeric {
			a, _ := strconv.ParseFloat(vals[i], 64)
			b, _ := strconv.ParseFloat(vals[j], 64)
			return a < b
		}
		return vals[i] < vals[j]
	})
}

func slug(s string) string {
	s = strings.NewReplacer("×", "x", " ", "-", "/", "-", "=", "", ",", "-", ".", "p").Replace(strings.ToLower(s))
	var b strings.Builder
	for _, r := range s {
		if r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
