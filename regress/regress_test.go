package regress

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/gradtune/gradtune/store"
)

// synth is a case with n samples around center, spread ±0.5%.
func synth(kernel string, center float64, n int, seed uint64) Case {
	r := rand.New(rand.NewPCG(seed, 1))
	c := Case{Kernel: kernel, ShapeKey: "m=2048,n=8960,dtype=f32", Dims: "m=2048,n=8960", DType: "f32", Params: "vec=4"}
	for range n {
		c.Samples = append(c.Samples, center*(1+0.005*r.NormFloat64()))
	}
	return c
}

func side(label string, cs ...Case) Side { return Side{Label: label, Cases: cs} }

func TestCompareVerdicts(t *testing.T) {
	base := side("a.db run 1", synth("relu_bwd", 50, 40, 1), synth("gelu_bwd", 50, 40, 2), synth("silu_bwd", 50, 40, 3),
		synth("small_bwd", 50, 40, 4), synth("gone_bwd", 50, 40, 5))
	cur := side("b.db run 1", synth("relu_bwd", 52.5, 40, 11), synth("gelu_bwd", 47, 40, 12), synth("silu_bwd", 50, 40, 13),
		synth("small_bwd", 50.5, 40, 14), synth("new_bwd", 50, 40, 15))
	rep, err := Compare(base, cur, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Verdict{}
	for _, r := range rep.Rows {
		c := r.Base
		if c == nil {
			c = r.New
		}
		got[c.Kernel] = r.Verdict
	}
	want := map[string]Verdict{"relu_bwd": Regressed, "gelu_bwd": Improved, "silu_bwd": Unchanged,
		"small_bwd": Unchanged, "gone_bwd": Missing, "new_bwd": Added}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
	if f := rep.Failed(); len(f) != 2 {
		t.Errorf("failed rows %v, want relu_bwd and gone_bwd", f)
	}
	for _, r := range rep.Rows {
		if r.Verdict == Regressed && !(r.Lo > 0 && r.Lo < r.Change && r.Change < r.Hi && r.Change > 0.04 && r.Change < 0.06) {
			t.Errorf("regressed %s: change %.3f, CI %.3f…%.3f", r.Key(), r.Change, r.Lo, r.Hi)
		}
	}
	if _, err := Compare(side("a", synth("x", 1, 10, 1)), side("b", synth("y", 1, 10, 1)), DefaultOptions); err == nil {
		t.Error("two runs without a common case compared")
	}
}

// TestCompareFailedCases: a case the new run measured without a valid
// result fails the gate whatever the baseline had; one valid in the new
// run alone is new; every error is in the report; a run is never
// compared with itself.
func TestCompareFailedCases(t *testing.T) {
	failed := func(kernel, why string) Case {
		return Case{Kernel: kernel, ShapeKey: "m=2048,n=8960,dtype=f32", Dims: "m=2048,n=8960", DType: "f32", Err: why}
	}
	base := side("a.db run 1", failed("both_bwd", "[vec=4] timeout: watchdog"), synth("now_bwd", 50, 40, 1),
		failed("fixed_bwd", "[vec=2] launch_error: illegal instruction"), synth("ok_bwd", 50, 40, 2))
	cur := side("b.db run 1", failed("both_bwd", "[vec=4] timeout: watchdog"), failed("now_bwd", "[vec=4] invalid: max rel err 3"),
		synth("fixed_bwd", 50, 40, 3), synth("ok_bwd", 50, 40, 4), failed("only_bwd", "[vec=1] timeout: watchdog"))
	rep, err := Compare(base, cur, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Verdict{"both_bwd": Failed, "now_bwd": Failed, "fixed_bwd": Added, "ok_bwd": Unchanged, "only_bwd": Failed}
	for _, r := range rep.Rows {
		c := r.New
		if got := r.Verdict; got != want[c.Kernel] {
			t.Errorf("%s: %s, want %s", c.Kernel, got, want[c.Kernel])
		}
	}
	if n := len(rep.Failed()); n != 3 {
		t.Errorf("%d rows fail the gate, want 3", n)
	}
	var md bytes.Buffer
	WriteMarkdown(&md, rep)
	for _, s := range []string{"| **failed** | both_bwd | f32 | m=2048,n=8960 |  | failed | failed | - |",
		"- fixed_bwd f32 m=2048,n=8960, baseline: [vec=2] launch_error: illegal instruction",
		"0 regressed, 3 failed, 0 missing, 0 improved, 1 unchanged, 1 new.",
		"- now_bwd f32 m=2048,n=8960, new run: [vec=4] invalid: max rel err 3"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, md.String())
		}
	}
	base.Run = store.Run{ID: 3, Started: time.Now(), Host: "gpu-host", GPUUUID: "GPU-1", Args: "tune bench"}
	if _, err := Compare(base, base, DefaultOptions); !errors.Is(err, ErrSameRun) {
		t.Errorf("a side compared with itself: %v, want ErrSameRun", err)
	}
}

// TestShiftCI: the Hodges–Lehmann estimate of a known shift is the
// shift, its interval holds it, and kth agrees with sorting.
func TestShiftCI(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = v + 3
	}
	shift, lo, hi, ok := hodgesLehmann(x, y, 0.95)
	if !ok || shift != 3 || !(lo < 3 && 3 < hi) || lo < 0 || hi > 6 {
		t.Errorf("shift of 3: %v, CI %v…%v (ok %v)", shift, lo, hi, ok)
	}
	if _, _, _, ok := hodgesLehmann([]float64{1}, []float64{2}, 0.95); ok {
		t.Error("a 95% interval from one sample each")
	}
	r := rand.New(rand.NewPCG(7, 7))
	a, b := make([]float64, 23), make([]float64, 17)
	for i := range a {
		a[i] = float64(r.IntN(50)) / 8
	}
	for i := range b {
		b[i] = float64(r.IntN(50)) / 8
	}
	var all []float64
	for _, u := range a {
		for _, v := range b {
			all = append(all, v-u)
		}
	}
	sort.Float64s(all)
	sort.Float64s(a)
	sort.Float64s(b)
	d := pairDiffs{x: a, y: b}
	for _, k := range []int{1, 2, 17, 196, 390, 391} {
		if got := d.kth(k); got != all[k-1] {
			t.Errorf("kth(%d) = %v, want %v", k, got, all[k-1])
		}
	}
}

// TestWriters: the Markdown names the failing case first, and benchstat's
// reader takes the benchmark format with both runs.
func TestWriters(t *testing.T) {
	rep, err := Compare(side("a.db run 1", synth("relu_bwd", 50, 20, 1), synth("gelu_bwd", 30, 20, 2)),
		side("b.db run 2", synth("relu_bwd", 50, 20, 3), synth("gelu_bwd", 33, 20, 4)), DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	WriteMarkdown(&md, rep)
	lines := strings.Split(md.String(), "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| **regressed** | gelu_bwd | f32 | m=2048,n=8960 |") })
	j := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "| ~ | relu_bwd") })
	if i < 0 || j < 0 || i > j || !strings.Contains(md.String(), "1 regressed, 0 failed, 0 missing, 0 improved, 1 unchanged, 0 new.") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var bf bytes.Buffer
	if err := WriteBenchfmt(&bf, rep); err != nil {
		t.Fatal(err)
	}
	rd := benchfmt.NewReader(&bf, "gate.txt")
	n := map[string]int{}
	for rd.Scan() {
		switch rec := rd.Result().(type) {
		case *benchfmt.Result:
			run := string(rec.GetConfig("run"))
			if !strings.HasPrefix(string(rec.Name), "Relu_bwd/") && !strings.HasPrefix(string(rec.Name), "Gelu_bwd/") {
				t.Errorf("benchmark name %q", rec.Name)
			}
			if v, ok := rec.Value("sec/op"); !ok || v < 25e-6 || v > 60e-6 {
				t.Errorf("value %v %v", v, ok)
			}
			n[run]++
		case *benchfmt.SyntaxError:
			t.Errorf("benchfmt: %v", rec)
		}
	}
	if n["baseline"] != 40 || n["new"] != 40 {
		t.Errorf("results per run: %v, want 40 each", n)
	}
}
