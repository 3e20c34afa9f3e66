package elementwise_test

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/kernels/elementwise"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

// TestRopeExactInputsCatchHalfMixup plants a kernel that pairs dx_lo with
// the low half of the sin table. Hugging Face's tables have equal halves,
// so the random inputs cannot see it; the exact inputs, whose halves are
// drawn apart, must fail it, and the right kernel must pass both.
func TestRopeExactInputsCatchHalfMixup(t *testing.T) {
	f, err := catalog.Lookup("rope_bwd")
	if err != nil {
		t.Fatal(err)
	}
	s := simtest.Shape(t, f, "t=3,hq=3,hk=2,d=16", dtype.BF16)
	ss := simtest.Session(t, f, s, 1)
	// One head a unit, and a unit of a query head's and a key head's columns
	// (heads=5 of 3 + 2), which load the tables once for both.
	for _, params := range []string{"block=128,vec=4,ept=2,grid=once,maxnreg=0,cache=default,heads=1", "block=128,vec=2,ept=1,grid=stride,maxnreg=0,cache=default,heads=5"} {
		p, err := variants.ParseParams(params)
		if err != nil {
			t.Fatal(err)
		}
		checkHalfMixup(t, ss, f, s, p)
	}
}

// checkHalfMixup: the kernel of params p passes both input sets; the
// planted one passes the random set and fails the exact one.
func checkHalfMixup(t *testing.T, ss *runner.Session, f kernels.Family, s variants.Shape, p variants.Params) {
	t.Helper()
	good, err := f.Emit(s, p)
	if err != nil {
		t.Fatal(err)
	}
	if c := simtest.CheckBothSets(t, ss, good); !c.OK {
		t.Fatalf("rope_bwd %s as emitted: %s", p, c.Message)
	}
	bad, err := elementwise.RopeSwappedSinHalves(s, p)
	if err != nil {
		t.Fatal(err)
	}
	c := simtest.CheckBothSets(t, ss, bad)
	if !c.Sets[0].OK {
		t.Errorf("random inputs (equal table halves) failed the planted kernel: %s; the test no longer shows what the exact set adds", c.Sets[0].Message)
	}
	if c.Sets[1].OK || !strings.Contains(c.Sets[1].Message, "dq[") && !strings.Contains(c.Sets[1].Message, "dk[") {
		t.Errorf("exact inputs passed a kernel that reads sin_lo for dx_lo (sets %+v)", c.Sets)
	}
}
