package reports

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gradtune/gradtune/internal/results"
)

// zeroFlopIntensity is where kernels whose cost model counts no flops
// (the activations) are drawn on the roofline's log axis.
const zeroFlopIntensity = 1.0 / 64

// Roofline draws the achieved GB/s of every valid variant (winners
// marked) against arithmetic intensity, under the roofs: the run's
// measured copy bandwidth, the data-sheet bandwidth, the FP32 peak and
// the dense bf16/f16 tensor-core peak (GB/s = peak / intensity), the
// intensity axis reaching past the variant of the highest.
func Roofline(gpu string, shapes []*results.Shape) (*Chart, error) {
	p := newPlot("roofline: "+gpu, "arithmetic intensity (flop/byte; no flops counted: 1/64)", "achieved GB/s")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	var all, win plotter.XYs
	copyBW, xMax := 0.0, 256.0
	for _, sh := range shapes {
		if sh.Run.GPUName != gpu || sh.Bytes <= 0 {
			continue
		}
		copyBW = math.Max(copyBW, sh.Run.CopyGBps)
		x := float64(sh.Flops) / float64(sh.Bytes)
		if x <= 0 {
			x = zeroFlopIntensity
		}
		xMax = math.Max(xMax, 2*x)
		for _, v := range sh.Valid {
			xy := plotter.XY{X: x, Y: float64(sh.Bytes) / v.MedianUS / 1e3}
			all = append(all, xy)
			if v == sh.Winner {
				win = append(win, xy)
			}
		}
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("roofline of %s: no variant with a known cost", gpu)
	}
	s, err := scatter(all, grey, 1.2, draw.CircleGlyph{})
	if err != nil {
		return nil, err
	}
	p.Add(s)
	p.Legend.Add("variant", s)
	if len(win) > 0 {
		w, err := scatter(win, red, 3.5, draw.PyramidGlyph{})
		if err != nil {
			return nil, err
		}
		p.Add(w)
		p.Legend.Add("winner", w)
	}
	if err := addRoofs(p, gpu, copyBW, xMax); err != nil {
		return nil, err
	}
	return &Chart{Name: "roofline-" + slug(gpu), Title: "Roofline, " + gpu, plot: p, width: 7 * vg.Inch, height: 4.5 * vg.Inch}, nil
}

func addRoofs(p *plot.Plot, gpu string, copyBW, x1 float64) error {
	x0 := zeroFlopIntensity / 2
	if copyBW > 0 {
		l, err := hline(copyBW, x0, x1, blue, false)
		if err != nil {
			return err
		}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("measured copy %.0f GB/s", copyBW), l)
	}
	peak, ok := results.LookupPeaks(gpu)
	if !ok {
		return nil
	}
	l, err := hline(peak.BandwidthGBps, x0, x1, purple, true)
	if err != nil {
		return err
	}
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("data-sheet %.0f GB/s", peak.BandwidthGBps), l)
	top := 2.5 * peak.BandwidthGBps
	for _, r := range []struct {
		tflops float64
		name   string
		c      color.Color
	}{{peak.FP32TFLOPs, "FP32 peak", orange}, {peak.TensorTFLOPs, "dense bf16/f16 tensor peak", green}} {
		if r.tflops <= 0 || 1e3*r.tflops/top > x1 {
			continue
		}
		roof := plotter.XYs{{X: 1e3 * r.tflops / top, Y: top}}
		for x := 2 * roof[0].X; x <= x1; x *= 2 {
			roof = append(roof, plotter.XY{X: x, Y: 1e3 * r.tflops / x})
		}
		c, err := line(roof, r.c, true)
		if err != nil {
			return err
		}
		p.Add(c)
		p.Legend.Add(fmt.Sprintf("%s %.1f TFLOP/s", r.name, r.tflops), c)
	}
	p.Y.Max = top
	p.Legend.Left = true
	return nil
}

// Progress draws, per shape of the kernel, the best median so far against
// the number of evaluations in recorded order, relative to the final best.
func Progress(kernel string, shapes []*results.Shape) (*Chart, error) {
	p := newPlot(kernel+": best so far", "evaluations (recorded order)", "best so far / final best")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	colors := []color.Color{red, blue, green, orange, purple, grey}
	n := 0
	for _, sh := range shapes {
		if sh.Kernel != kernel || len(sh.Valid) == 0 {
			continue
		}
		final := sh.Valid[0].MedianUS
		best := math.Inf(1)
		var xys plotter.XYs
		for i, v := range sh.Order {
			if v.Rank > 0 && v.MedianUS < best {
				best = v.MedianUS
			}
			if !math.IsInf(best, 1) {
				xys = append(xys, plotter.XY{X: float64(i + 1), Y: best / final})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := line(xys, colors[n%len(colors)], n >= len(colors))
		if err != nil {
			return nil, err
		}
		p.Add(l)
		p.Legend.Add(sh.Size+" "+sh.DType, l)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no shape with a valid variant", kernel)
	}
	return &Chart{Name: "progress-" + slug(kernel), Title: kernel + ": best so far", plot: p, width: 6 * vg.Inch, height: 4 * vg.Inch}, nil
}

// FailureKind names a failure by status and the start of its message
// ("skipped: prescreen").
func FailureKind(v *results.Variant) string {
	kind := string(v.Status)
	if head, _, ok := strings.Cut(v.Message, ":"); ok && len(head) <= 32 {
		kind += ": " + head
	}
	return kind
}

// Failures counts the failed evaluations by kernel and kind, and draws
// them as horizontal bars; the chart is nil when nothing failed.
func Failures(shapes []*results.Shape) (*Chart, map[string]int, error) {
	counts := map[string]int{}
	for _, sh := range shapes {
		for _, v := range sh.Failed {
			counts[sh.Kernel+" — "+FailureKind(v)]++
		}
	}
	if len(counts) == 0 {
		return nil, counts, nil
	}
	var labels []string
	for k := range counts {
		labels = append(labels, k)
	}
	sort.Strings(labels)
	vals := make(plotter.Values, len(labels))
	for i, l := range labels {
		vals[i] = float64(counts[l])
	}
	p := newPlot("failures by kind", "evaluations", "")
	bars, err := plotter.NewBarChart(vals, vg.Points(14))
	if err != nil {
		return nil, nil, err
	}
	bars.Horizontal = true
	bars.Color = red
	p.Add(bars)
	p.NominalY(labels...)
	h := vg.Length(1.2*float64(len(labels))+1.5) * vg.Inch / 3
	return &Chart{Name: "failures", Title: "Failures by kind", plot: p, width: 7 * vg.Inch, height: max(h, 2*vg.Inch)}, counts, nil
}
