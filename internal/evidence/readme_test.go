package evidence

import (
	"math"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeNF4Figures: the ranges the README quotes under its headline
// (the fused kernel against cuBLASLt's best in the headline's run, and
// against dequantize + cuBLAS in the register-A session) are those
// runs' databases'. The headline's tables themselves are
// cmd/tune's TestReadmeHeadline's.
func TestReadmeNF4Figures(t *testing.T) {
	text := strings.Join(strings.Fields(read(t, "README.md")), " ")
	c := checker{t, "README.md"}

	m := regexp.MustCompile(`weight, timed and validated the same way \(([\d.]+–[\d.]+)×\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README.md does not quote the headline's range against cuBLASLt's best")
	}
	head := load(t, "testdata/issue21/h200-nf4.db")
	lo, hi := math.Inf(1), 0.0
	for _, sh := range head.Shapes {
		if sh.Kernel == "nf4_gemm_bwd" && sh.Winner != nil {
			lo, hi = math.Min(lo, sh.Speedup()), math.Max(hi, sh.Speedup())
		}
	}
	c.span("nf4_gemm_bwd vs its baseline in testdata/issue21/h200-nf4.db", m[1], lo, hi)

	m = regexp.MustCompile(`wins on k·v \(([\d.]+–[\d.]+)×\), is level on q·o \(([\d.]+)×\) and loses on gate·up and down \(([\d.]+–[\d.]+)×\) \(\x60testdata/nf4/h200-nf4-rs-ratios.txt\x60`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README.md does not quote the register-A session's unfused/fused figures")
	}
	set := load(t, "testdata/nf4/h200-nf4-rs.db")
	span := func(n, k string) (float64, float64) {
		lo, hi := math.Inf(1), 0.0
		for _, sc := range []string{"f32", "dq"} {
			r := nf4Shapes(t, set, n, k, sc).unfusFused
			lo, hi = math.Min(lo, r), math.Max(hi, r)
		}
		return lo, hi
	}
	kvLo, kvHi := span("256", "1536")
	c.span("k·v unfused/fused", m[1], kvLo, kvHi)
	qoLo, qoHi := span("1536", "1536")
	c.span("q·o unfused/fused", m[2], qoLo, qoHi)
	guLo, guHi := span("8960", "1536")
	dnLo, dnHi := span("1536", "8960")
	c.span("gate·up and down unfused/fused", m[3], math.Min(guLo, dnLo), math.Max(guHi, dnHi))
}
