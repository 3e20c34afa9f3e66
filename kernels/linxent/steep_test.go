package linxent

import (
	"math"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
)

// steep is the family with every row of x the signs of one class's row of
// w past chunk 0 (steepClass), within the inputs' usual bounds: that
// class's logit is Σ|w| (about 3√h nats), far above chunk 0's largest,
// so ref=fixed takes that chunk's probabilities tens of bits over their
// reference (checkSteep measures how many).
type steep struct{ family }

const steepClass = 300

func (f steep) Inputs(s Shape, seed uint64) map[string][]float64 {
	in := f.family.Inputs(s, seed)
	w, x := in["w"], in["x"]
	for r := range s.T {
		for k := range s.H {
			x[r*s.H+k] = math.Copysign(1, w[steepClass*s.H+k])
		}
	}
	return in
}

// TestSteepRows: rows whose largest logit lies 45 to 95 bits over chunk
// 0's maximum (51 at h = 256) validate with either reference, under the
// bf16 clamp of 100 bits; with the clamp lowered to 40 bits they
// validate through the repair kernel, and fail where the clamped rows
// are not flagged.
func TestSteepRows(t *testing.T) {
	fam := kernels.Define(steep{})
	ss := runner.NewSession(sim.New(sim.Options{Workers: 2}))
	defer ss.Release()
	s := simtest.Shape(t, fam, "t=40,h=256,v=600", dtype.BF16)
	if err := ss.Prepare(fam, s, 1); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{refRunning, refFixed} {
		p, err := fam.Space(s).ParseRecorded("softmax=epilogue,ref=" + ref + ",pdl=1,chunk=256,zbm=128,zbn=128,zpers=0,dbm=128,dbn=128,dpers=0,sblock=128,wbm=128,wbn=128")
		if err != nil {
			t.Fatal(err)
		}
		sh, pv, err := kernels.DecodeVariant[Shape, Params](s, p)
		if err != nil {
			t.Fatal(err)
		}
		checkSteep(t, sh, steep{}.Inputs(sh, 1)) // the inputs Prepare made (seed 1)
		for _, c := range []struct {
			b    bugs
			fail bool
		}{{bugs{}, false}, {bugs{clamp: 40}, false}, {bugs{clamp: 40, noFlag: true}, true}} {
			prog, err := emit(sh, pv, c.b)
			if err != nil {
				t.Fatal(err)
			}
			err = simtest.ValidateProgram(ss, prog)
			if (err != nil) != c.fail {
				t.Errorf("ref=%s clamp %v noFlag %v: validation says %v", ref, c.b.clamp, c.b.noFlag, err)
			}
		}
	}
}

// checkSteep asserts the test's premise: in every row, the largest logit
// past chunk 0 (256 classes) lies 45 to 95 bits over chunk 0's largest.
func checkSteep(t *testing.T, s Shape, in map[string][]float64) {
	x, w := in["x"], in["w"]
	lo, hi := math.Inf(1), math.Inf(-1)
	defer func() { t.Logf("the rows' largest logits past chunk 0: %.1f to %.1f bits over chunk 0's", lo, hi) }()
	for r := range s.T {
		m0, m1 := math.Inf(-1), math.Inf(-1)
		for c := range s.V {
			z := 0.0
			for k := range s.H {
				z += x[r*s.H+k] * w[c*s.H+k]
			}
			if c < 256 {
				m0 = math.Max(m0, z)
			} else {
				m1 = math.Max(m1, z)
			}
		}
		bits := (m1 - m0) * math.Log2E
		lo, hi = math.Min(lo, bits), math.Max(hi, bits)
		if bits < 45 || bits > 95 {
			t.Fatalf("row %d: the largest logit past chunk 0 is %.1f bits over chunk 0's (want 45 to 95)", r, bits)
		}
	}
}
