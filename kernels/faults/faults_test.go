package faults

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/variants"
)

// TestFamilyStaysOutOfTheCatalog: normal runs never see the faults.
func TestFamilyStaysOutOfTheCatalog(t *testing.T) {
	if _, err := catalog.Lookup(Name); err == nil {
		t.Error("the fault family is in the catalog")
	}
}

func TestEmitEveryFault(t *testing.T) {
	f := Family()
	specs, _ := variants.ParseSpecs("n=4096")
	s, err := f.Shape(specs[0], dtype.F32)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"none": "ld.global", "hang": "ld.volatile.global.u32", "oob": "1099511627776", "trap": "trap;", "illegal": "brkpt;", "drift": "fault_drift_mark"}
	pts := f.Space(s).Enumerate()
	if len(pts) != len(want) {
		t.Fatalf("%d variants, want %d", len(pts), len(want))
	}
	for _, p := range pts {
		prog, err := f.Emit(s, p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if !strings.Contains(prog.PTX, want[p["fault"]]) || !prog.Launches[0].Grid[0].Equal(configs.Int(32)) {
			t.Errorf("%s: PTX lacks %q or grid %v", p, want[p["fault"]], prog.Launches[0].Grid)
		}
	}
}

func TestDelay(t *testing.T) {
	f := Family()
	specs, _ := variants.ParseSpecs("n=256")
	s, _ := f.Shape(specs[0], dtype.F32)
	prog, err := f.Emit(s, variants.Params{"fault": "none"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Delay(prog, 2500)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Launches) != 2 || d.Launches[1].Entry != DelayEntry || DelayNS(d) != 2500 || DelayNS(prog) != 0 ||
		!strings.Contains(d.PTX, "%globaltimer") || !strings.HasPrefix(d.PTX, prog.PTX[:40]) || len(prog.Launches) != 1 {
		t.Errorf("delayed program: %d launches, delay %d ns", len(d.Launches), DelayNS(d))
	}
	if _, err := Delay(d, 1); err == nil {
		t.Error("a second delay was planted")
	}
}
