package results

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/store"
	"github.com/gradtune/gradtune/variants"
)

// ErrNoResults is returned (wrapped) by Load when the selection matches
// nothing: an empty database, an empty run, or filters that match no
// recorded kernel or shape. It is a fault of the request, not of the
// program.
var ErrNoResults = errors.New("no results")

// Options selects what Load reads.
type Options struct {
	// RunID selects one run; 0 takes each shape from its newest run.
	RunID int64
	// Kernels keeps only these families; empty keeps all.
	Kernels []string
	// Shapes keeps only shapes matching one of these specs (dims and an
	// optional dtype, as --shapes takes them); empty keeps all.
	Shapes []variants.Spec
}

// Set is the loaded results, shapes in the order they were first
// evaluated.
type Set struct {
	// Path is the database file.
	Path string
	// Runs are the runs the shapes come from, by id.
	Runs   []store.Run
	Shapes []*Shape
}

// Shape is the outcome of tuning one kernel at one shape in one run.
type Shape struct {
	Kernel string
	// Key is the canonical shape key ("m=2048,n=8960,dtype=f32"), Dims the
	// same without the dtype, Size the extents alone ("2048×8960").
	Key, Dims, DType, Size string
	Run                    store.Run
	// Winner is the run's choice, nil when it chose none.
	Winner *Variant
	// Baseline is what the winner is compared with, nil when none.
	Baseline *Baseline
	// Others are the vendor baselines the run also timed that are
	// comparisons of their own (eval.OneComparison: not the other GEMM
	// library pick), their latest valid median, in the order the run
	// first timed them: nf4_gemm_bwd's dequant+cublas beside its dense
	// cuBLAS.
	Others []Baseline
	// Rule is how the run chose the winner among statistical ties, as it
	// recorded it ("" in databases from before it did).
	Rule string
	// Valid are the timed variants, fastest first; Failed the others in
	// recorded order; Order all of them in recorded order.
	Valid, Failed, Order []*Variant
	// Bytes and Flops are the family's cost model of one run at the
	// shape, zero when the kernel is not in this build's catalog.
	Bytes, Flops int64
}

// WinnerExtra is the device memory the winner's program allocates beside
// the shape's operands (its State and Scratch buffers), in bytes; -1
// without a winner or when this build cannot emit it (a kernel or a
// point it no longer has). It emits the program: a table that shows it
// asks, loading results does not.
func (s *Shape) WinnerExtra() int64 {
	if s.Winner == nil {
		return -1
	}
	f, sh, ok := familyShape(s.Kernel, s.Key)
	if !ok {
		return -1
	}
	return extraBytes(f, sh, s.Winner.Key.Params)
}

// Variant is one evaluation of a shape.
type Variant struct {
	store.Evaluation
	// Rank is the 1-based position in Shape.Valid, 0 for a failure.
	Rank int
	// Reused marks a winner recorded in an earlier run.
	Reused bool
	// Tie marks a variant other than the winner whose confidence interval
	// overlaps the winner's.
	Tie bool
}

// Baseline is what a winner is compared with.
type Baseline struct {
	// Name is "default" (the family's untuned variant) or the name
	// recorded with the winner ("cublas", "seed").
	Name     string
	Params   string
	MedianUS float64
}

// Bytes is the number of bytes the variant moves per run, from its
// throughput and median; 0 when either is unknown.
func (v *Variant) Bytes() float64 { return v.ThroughputGBps * v.MedianUS * 1e3 }

// Flops is the number of floating-point operations per run; 0 when unknown.
func (v *Variant) Flops() float64 { return v.TFLOPs * v.MedianUS * 1e6 }

// Intensity is flops per byte; 0 when unknown.
func (v *Variant) Intensity() float64 {
	if v.ThroughputGBps <= 0 {
		return 0
	}
	return 1e3 * v.TFLOPs / v.ThroughputGBps
}

// CI returns the confidence interval of the median, or the median itself
// at both ends when the interval was not recorded.
func (v *Variant) CI() (lo, hi float64) {
	lo, hi = v.CILoUS, v.CIHiUS
	if lo <= 0 || hi <= 0 {
		return v.MedianUS, v.MedianUS
	}
	return lo, hi
}

// Ties counts the variants tied with the winner.
func (s *Shape) Ties() int {
	n := 0
	for _, v := range s.Valid {
		if v.Tie {
			n++
		}
	}
	return n
}

// Skipped counts the failed variants that were skipped (status skipped:
// stopped early by the abandon rule, or over the local-memory prescreen):
// not timed in full rather than wrong.
func (s *Shape) Skipped() int {
	n := 0
	for _, v := range s.Failed {
		if v.Status == eval.Skipped {
			n++
		}
	}
	return n
}

// Why says why the shape has no winner (for a bench run: why the table's
// variant has no valid result): each failed evaluation's params, status
// and the first line of its message, "; "-separated, or "no failed
// evaluation recorded" when there is none; "" when it has a winner.
func (s *Shape) Why() string {
	if s.Winner != nil {
		return ""
	}
	if len(s.Failed) == 0 {
		return "no winner and no failed evaluation recorded"
	}
	var parts []string
	for _, v := range s.Failed {
		msg, _, _ := strings.Cut(strings.TrimSpace(v.Message), "\n")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		p := fmt.Sprintf("[%s] %s", v.Key.Params, v.Status)
		if msg != "" {
			p += ": " + msg
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// Speedup is the baseline's median over the winner's, 0 without either.
func (s *Shape) Speedup() float64 {
	if s.Winner == nil || s.Baseline == nil || s.Winner.MedianUS <= 0 {
		return 0
	}
	return s.Baseline.MedianUS / s.Winner.MedianUS
}

// SpeedupOver is other's median over the winner's; 0 without a winner.
func (s *Shape) SpeedupOver(other Baseline) float64 {
	if s.Winner == nil || s.Winner.MedianUS <= 0 || other.MedianUS <= 0 {
		return 0
	}
	return other.MedianUS / s.Winner.MedianUS
}

// Bound says how close v comes to what limits it: the percentage of the
// run's measured copy bandwidth ("BW") for a kernel below the ridge point
// of the GPU's compute peak for the shape's dtype (Peaks.Compute), else
// of that peak ("TC" or "FP32"). It returns 0 and "" when the figures are
// missing.
func (s *Shape) Bound(v *Variant) (pct float64, of string) {
	peak, hasPeak := LookupPeaks(s.Run.GPUName)
	bw := s.Run.CopyGBps
	if bw <= 0 && hasPeak {
		bw = peak.BandwidthGBps
	}
	if top, name := peak.Compute(s.DType); hasPeak && top > 0 && bw > 0 && v.Intensity() > 1e3*top/bw {
		return 100 * v.TFLOPs / top, name
	}
	if bw <= 0 || v.ThroughputGBps <= 0 {
		return 0, ""
	}
	return 100 * v.ThroughputGBps / bw, "BW"
}

// Kernels lists the kernels of the set in order of appearance.
func (s *Set) Kernels() []string {
	var out []string
	seen := map[string]bool{}
	for _, sh := range s.Shapes {
		if !seen[sh.Kernel] {
			seen[sh.Kernel] = true
			out = append(out, sh.Kernel)
		}
	}
	return out
}

// splitKey splits a shape key into its dims and dtype.
func splitKey(key string) (dims, dt string) {
	i := strings.LastIndex(key, "dtype=")
	if i < 0 {
		return key, ""
	}
	return strings.TrimSuffix(key[:i], ","), key[i+len("dtype="):]
}

// size prints the values of "a=1,b=2" as "1×2".
func size(dims string) string {
	var vals []string
	for _, kv := range strings.Split(dims, ",") {
		if _, v, ok := strings.Cut(kv, "="); ok {
			vals = append(vals, v)
		}
	}
	return strings.Join(vals, "×")
}

// Matches reports whether kernel's shape key has every dim of sp with the
// same value, and its dtype when sp names one. A dim the key leaves out
// matches the value the family gives it by default (block=64, scales=f32,
// ceil=0): the key with that dim added names the same shape.
func Matches(kernel, key string, sp variants.Spec) bool {
	dims, dt := splitKey(key)
	if sp.DType.Valid() && sp.DType.String() != dt {
		return false
	}
	have := map[string]string{}
	for _, kv := range strings.Split(dims, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			have[k] = v
		}
	}
	var absent []string
	for _, d := range sp.Dims {
		v, ok := have[d.Name]
		switch {
		case !ok:
			absent = append(absent, d.Name+"="+d.ValueString())
		case v != d.ValueString():
			return false
		}
	}
	if len(absent) == 0 {
		return true
	}
	f, err := catalog.Lookup(kernel)
	if err != nil {
		return false
	}
	specs, err := variants.ParseSpecs(dims + "," + strings.Join(absent, ",") + ",dtype=" + dt)
	if err != nil || len(specs) != 1 {
		return false
	}
	s, err := f.Shape(specs[0], specs[0].DType)
	return err == nil && s.Key() == key
}

// rank sorts the valid variants, numbers them and marks ties.
func (s *Shape) rank() {
	sort.SliceStable(s.Valid, func(i, j int) bool {
		if s.Valid[i].MedianUS != s.Valid[j].MedianUS {
			return s.Valid[i].MedianUS < s.Valid[j].MedianUS
		}
		return s.Valid[i].ID < s.Valid[j].ID
	})
	for i, v := range s.Valid {
		v.Rank = i + 1
	}
	if s.Winner == nil {
		return
	}
	_, hi := s.Winner.CI()
	for _, v := range s.Valid {
		if v != s.Winner && v.VariantID != s.Winner.VariantID {
			lo, _ := v.CI()
			v.Tie = lo <= hi
		}
	}
}

// valid reports whether e was timed.
func valid(e store.Evaluation) bool {
	return e.Status == "ok" && e.MedianUS > 0 && !math.IsInf(e.MedianUS, 0)
}

// describe names the selection for messages.
func (o Options) describe() string {
	var parts []string
	if o.RunID != 0 {
		parts = append(parts, fmt.Sprintf("run %d", o.RunID))
	}
	if len(o.Kernels) > 0 {
		parts = append(parts, "kernel "+strings.Join(o.Kernels, ","))
	}
	if len(o.Shapes) > 0 {
		var ss []string
		for _, sp := range o.Shapes {
			var ds []string
			for _, d := range sp.Dims {
				ds = append(ds, d.Name+"="+d.ValueString())
			}
			if sp.DType.Valid() {
				ds = append(ds, "dtype="+sp.DType.String())
			}
			ss = append(ss, strings.Join(ds, ","))
		}
		parts = append(parts, "shapes "+strings.Join(ss, ";"))
	}
	if len(parts) == 0 {
		return "all runs"
	}
	return strings.Join(parts, ", ")
}
