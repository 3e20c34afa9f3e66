package evidence

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/gradtune/gradtune/variants"
)

// TestLoraSearchRules recomputes the bound lora_bwd's pdl search rule
// states (kernels/lora/family.go) from the run it cites: over every shape
// of it, the best recorded median with pdl=0 divided by the best with
// pdl=1, whose minimum, rounded down to hundredths, is the bound; and no
// pdl=0 variant is a shape's fastest.
func TestLoraSearchRules(t *testing.T) {
	const db = "testdata/issue27/step-1206c-h100/step.db.gz"
	src := read(t, "kernels/lora/family.go")
	set := load(t, db)
	minRatio, shapes := math.Inf(1), 0
	for _, sh := range set.Shapes {
		if sh.Kernel != "lora_bwd" {
			continue
		}
		best := map[string]float64{}
		for _, v := range sh.Order {
			p, err := variants.ParseParams(v.Key.Params)
			if err != nil || v.MedianUS <= 0 || p["pdl"] == "" {
				continue
			}
			if b, ok := best[p["pdl"]]; !ok || v.MedianUS < b {
				best[p["pdl"]] = v.MedianUS
			}
		}
		if best["0"] == 0 || best["1"] == 0 {
			t.Errorf("%s %s: no variant with pdl=0 or pdl=1", db, sh.Key)
			continue
		}
		minRatio = min(minRatio, best["0"]/best["1"])
		shapes++
	}
	if shapes != 16 {
		t.Errorf("%s: %d lora_bwd shapes, want the 16 the rule cites", db, shapes)
	}
	m := regexp.MustCompile(`searchPDL = "search: pdl=0, at least ([\d.]+)× the best pdl=1 on an H100`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("family.go: no bound for pdl=0")
	}
	if want := math.Floor(minRatio*100) / 100; m[1] != strconv.FormatFloat(want, 'f', 2, 64) {
		t.Errorf("family.go states %s×; %s gives %.4f", m[1], db, minRatio)
	}
}
