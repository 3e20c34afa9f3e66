package attn_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/variants"
)

// TestRegisterSplit: the wgmma kernel's setmaxnreg.inc never asks for
// fewer registers than its .maxnreg gives a thread at launch (undefined
// in the PTX ISA): one consumer at 256 threads runs without the split,
// two at 384 threads raise 168 to 232.
func TestRegisterSplit(t *testing.T) {
	s := simtest.Shape(t, fam, qwen, dtype.BF16)
	maxnreg := regexp.MustCompile(`\.maxnreg (\d+)`)
	inc := regexp.MustCompile(`setmaxnreg\.inc\.sync\.aligned\.u32 (\d+)`)
	for ps, want := range map[string]string{
		"mma=wgmma,bm=64,bn=64,warps=8,stages=2,heads=0,dq=red":   "",
		"mma=wgmma,bm=64,bn=128,warps=12,stages=2,heads=0,dq=red": "232",
	} {
		p, err := variants.ParseParams(ps)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := fam.Emit(s, p)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if m := inc.FindStringSubmatch(prog.PTX); m != nil {
			got = m[1]
			held, _ := strconv.Atoi(maxnreg.FindStringSubmatch(prog.PTX)[1])
			if n, _ := strconv.Atoi(got); n < held {
				t.Errorf("%s: setmaxnreg.inc %d below the %d held at launch", ps, n, held)
			}
		}
		if got != want {
			t.Errorf("%s: setmaxnreg.inc to %q, want %q", ps, got, want)
		}
	}
}
