package reports

import (
	"fmt"
	"image/color"
	"slices"
	"sort"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/internal/step"
)

// Step is a model's backward step as the report weighs it: per kernel
// shape its launches, our tuned time and each peer's.
type Step struct {
	Model string
	Rows  []StepRow
	// PeerNames are the peers with a row for some shape of the step.
	PeerNames []string
}

// StepRow is one kernel shape of the step. Times are µs per launch, 0
// where there is none.
type StepRow struct {
	step.Resolved
	OursUS float64
	PeerUS map[string]float64
}

// BuildStep matches the step's shapes with the winners of set and the
// rows of peers (nil for none).
func BuildStep(model string, rs []step.Resolved, set *results.Set, peers *Peers) *Step {
	st := &Step{Model: model}
	seen := map[string]bool{}
	for _, r := range rs {
		row := StepRow{Resolved: r, PeerUS: map[string]float64{}}
		if r.Key != "" {
			row.OursUS = winnerUS(set, r.Kernel, r.Key)
			for _, name := range peers.Names() {
				if p, ok := peers.LookupNamed(name, r.Kernel, r.Key); ok {
					row.PeerUS[name] = p.MedianUS
					if !seen[name] {
						seen[name] = true
						st.PeerNames = append(st.PeerNames, name)
					}
				}
			}
		}
		st.Rows = append(st.Rows, row)
	}
	sort.Strings(st.PeerNames)
	return st
}

// winnerUS is the median of the last winner of kernel at key in set, 0
// when there is none.
func winnerUS(set *results.Set, kernel, key string) float64 {
	us := 0.0
	for _, sh := range set.Shapes {
		if sh.Kernel == kernel && sh.Key == key && sh.Winner != nil {
			us = sh.Winner.MedianUS
		}
	}
	return us
}

// Totals are the step's ms per kernel of ours (row order) and of each
// peer: launches × time, summed over the shapes that have a time.
func (st *Step) Totals() (kernels []string, ours map[string]float64, peers map[string]map[string]float64) {
	ours, peers = map[string]float64{}, map[string]map[string]float64{}
	for _, name := range st.PeerNames {
		peers[name] = map[string]float64{}
	}
	for _, r := range st.Rows {
		if _, ok := ours[r.Kernel]; !ok {
			kernels = append(kernels, r.Kernel)
			ours[r.Kernel] = 0
		}
		ours[r.Kernel] += float64(r.Count) * r.OursUS / 1000
		for name, us := range r.PeerUS {
			peers[name][r.Kernel] += float64(r.Count) * us / 1000
		}
	}
	return kernels, ours, peers
}

// StepChart stacks, per implementation (ours, then each peer), the
// step's ms per kernel. A bar sums only the shapes that implementation
// has a time for; the step table says which.
func StepChart(st *Step) (*Chart, error) {
	kernels, ours, peers := st.Totals()
	names := append([]string{"gradtune (tuned)"}, st.PeerNames...)
	p := newPlot(st.Model+": backward step", "", "ms per step (launches × time)")
	var below *plotter.BarChart
	for i, k := range kernels {
		vals := plotter.Values{ours[k]}
		for _, name := range st.PeerNames {
			vals = append(vals, peers[name][k])
		}
		if slices.Max(vals) == 0 {
			continue // no time anywhere: the table lists it
		}
		b, err := plotter.NewBarChart(vals, vg.Points(40))
		if err != nil {
			return nil, fmt.Errorf("step chart: %w", err)
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Color = color.White
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(k, b)
	}
	p.NominalX(names...)
	p.X.Max = float64(len(names)) + 0.5 // room on the right for the legend
	return &Chart{Name: "step-" + slug(st.Model), Title: fmt.Sprintf("%s: the backward step", st.Model),
		plot: p, width: vg.Length(3.4+1.2*float64(len(names))) * vg.Inch, height: 4 * vg.Inch}, nil
}

// stepHead and stepRows are the step table: one row per kernel shape.
func (st *Step) head() []string {
	h := []string{"kernel", "shape", "where", "launches", "ours µs", "ours ms/step"}
	for _, n := range st.PeerNames {
		h = append(h, n+" ms/step")
	}
	return h
}

func (st *Step) rows() [][]string {
	var out [][]string
	for _, r := range st.Rows {
		row := []string{r.Kernel, r.Spec, r.What, fmt.Sprint(r.Count)}
		switch {
		case r.Missing != "":
			row = append(row, "—", r.Missing)
		case r.OursUS == 0:
			row = append(row, "—", "not tuned")
		default:
			row = append(row, f2(r.OursUS), num(float64(r.Count)*r.OursUS/1000, 3))
		}
		for _, n := range st.PeerNames {
			if us, ok := r.PeerUS[n]; ok {
				row = append(row, num(float64(r.Count)*us/1000, 3))
			} else {
				row = append(row, "—")
			}
		}
		out = append(out, row)
	}
	return out
}
