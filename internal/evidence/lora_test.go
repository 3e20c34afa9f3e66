package evidence

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/gradtune/gradtune/variants"
)

// TestLoraSearchRules recomputes the bounds lora_bwd's search rules state
// (kernels/lora/family.go) from the runs they cite: over every shape of
// the runs, the best recorded median of the variants a rule leaves out
// divided by the best of those it compares them with, whose minimum,
// rounded down to hundredths, is the bound.
func TestLoraSearchRules(t *testing.T) {
	src := read(t, "kernels/lora/family.go")
	type run struct {
		db     string
		shapes int
	}
	for _, r := range []struct {
		name, bound string
		runs        []run
		out, cmp    func(p variants.Params) bool
	}{
		{"pdl", `searchPDL = "search: pdl=0, at least ([\d.]+)× the best pdl=1 on an H100`,
			[]run{{"testdata/issue27/step-1206c-h100/step.db.gz", 16}},
			func(p variants.Params) bool { return p["pdl"] == "0" },
			func(p variants.Params) bool { return p["pdl"] == "1" }},
		{"wgmma rows", `searchWGMMARows = "search: mma=wgmma with tparts=0 and xload=cp, at least ([\d.]+)× the best mma=sync on an H100`,
			[]run{{"testdata/issue27/lora-1206d-h100/wg.db.gz", 16}, {"testdata/issue27/lora-1206d-h100/w8.db.gz", 4}},
			func(p variants.Params) bool {
				return p["mma"] == "wgmma" && (p["tparts"] == "" || p["tparts"] == "0") && p["xload"] != "tma"
			},
			func(p variants.Params) bool { return p["mma"] == "sync" }},
	} {
		minRatio := math.Inf(1)
		for _, run := range r.runs {
			ratio, shapes := bestRatio(t, run.db, r.out, r.cmp)
			if shapes != run.shapes {
				t.Errorf("%s: %s: %d lora_bwd shapes, want the %d the rule cites", r.name, run.db, shapes, run.shapes)
			}
			minRatio = min(minRatio, ratio)
		}
		m := regexp.MustCompile(r.bound).FindStringSubmatch(src)
		if m == nil {
			t.Fatalf("family.go: no bound for %s", r.name)
		}
		if want := math.Floor(minRatio*100) / 100; m[1] != strconv.FormatFloat(want, 'f', 2, 64) {
			t.Errorf("%s: family.go states %s×; the runs give %.4f", r.name, m[1], minRatio)
		}
	}
}

// bestRatio is, over the lora_bwd shapes of db, the least ratio of the
// best median of the variants out selects to the best of those cmp
// selects, and the number of shapes.
func bestRatio(t *testing.T, db string, out, cmp func(p variants.Params) bool) (float64, int) {
	t.Helper()
	minRatio, shapes := math.Inf(1), 0
	for _, sh := range load(t, db).Shapes {
		if sh.Kernel != "lora_bwd" {
			continue
		}
		o, c := math.Inf(1), math.Inf(1)
		for _, v := range sh.Order {
			p, err := variants.ParseParams(v.Key.Params)
			if err != nil || v.MedianUS <= 0 {
				continue
			}
			switch {
			case out(p):
				o = min(o, v.MedianUS)
			case cmp(p):
				c = min(c, v.MedianUS)
			}
		}
		if math.IsInf(o, 1) || math.IsInf(c, 1) {
			t.Errorf("%s %s: no variant on one side of the rule", db, sh.Key)
			continue
		}
		minRatio = min(minRatio, o/c)
		shapes++
	}
	return minRatio, shapes
}
