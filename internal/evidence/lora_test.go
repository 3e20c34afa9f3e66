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
// a run, the best recorded median of the variants a rule leaves out
// divided by the best of those it compares them with, whose minimum,
// rounded down to hundredths, is the bound.
func TestLoraSearchRules(t *testing.T) {
	src := read(t, "kernels/lora/family.go")
	for _, r := range []struct {
		name, db, bound string
		out, cmp        func(p variants.Params) bool
	}{
		{"pdl", "testdata/issue27/step-1206c-h100/step.db.gz",
			`searchPDL = "search: pdl=0, at least ([\d.]+)× the best pdl=1 on an H100`,
			func(p variants.Params) bool { return p["pdl"] == "0" },
			func(p variants.Params) bool { return p["pdl"] == "1" }},
		{"wgmma rows", "testdata/issue27/lora-1206d-h100/wg.db.gz",
			`searchWGMMARows = "search: mma=wgmma with tparts=0 and warps=4, at least ([\d.]+)× the best mma=sync on an H100`,
			func(p variants.Params) bool {
				return p["mma"] == "wgmma" && (p["tparts"] == "" || p["tparts"] == "0") && p["warps"] == "4"
			},
			func(p variants.Params) bool { return p["mma"] == "sync" }},
	} {
		minRatio, shapes := math.Inf(1), 0
		set := load(t, r.db)
		for _, sh := range set.Shapes {
			if sh.Kernel != "lora_bwd" {
				continue
			}
			out, cmp := math.Inf(1), math.Inf(1)
			for _, v := range sh.Order {
				p, err := variants.ParseParams(v.Key.Params)
				if err != nil || v.MedianUS <= 0 {
					continue
				}
				switch {
				case r.out(p):
					out = min(out, v.MedianUS)
				case r.cmp(p):
					cmp = min(cmp, v.MedianUS)
				}
			}
			if math.IsInf(out, 1) || math.IsInf(cmp, 1) {
				t.Errorf("%s: %s %s: no variant on one side of the rule", r.name, r.db, sh.Key)
				continue
			}
			minRatio = min(minRatio, out/cmp)
			shapes++
		}
		if shapes != 16 {
			t.Errorf("%s: %s: %d lora_bwd shapes, want the 16 the rule cites", r.name, r.db, shapes)
		}
		m := regexp.MustCompile(r.bound).FindStringSubmatch(src)
		if m == nil {
			t.Fatalf("family.go: no bound for %s", r.name)
		}
		if want := math.Floor(minRatio*100) / 100; m[1] != strconv.FormatFloat(want, 'f', 2, 64) {
			t.Errorf("%s: family.go states %s×; %s gives %.4f", r.name, m[1], r.db, minRatio)
		}
	}
}
