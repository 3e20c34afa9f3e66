package norm_test

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/rowtest"
)

func TestLayerNormReferenceMatchesFiniteDifferences(t *testing.T) {
	checkNormFiniteDifferences(t, "layernorm_bwd", true, 1e-5)
}

func TestLayerNormInputs(t *testing.T) { checkNormInputs(t, "layernorm_bwd", true, 1e-5) }

func TestLayerNormTolerance(t *testing.T) {
	xhat := func(in map[string][]float64, i, n int) float64 {
		return (in["x"][i] - in["mean"][i/n]) * in["rstd"][i/n]
	}
	checkNormTolerance(t, "layernorm_bwd", true, map[string]func(ref, in map[string][]float64, m, n int) (string, []float64){
		"dx without mean(γ·dy)": func(ref, in map[string][]float64, m, n int) (string, []float64) {
			s := rowSums(m, n, func(r, i int) float64 { return in["gamma"][i] * in["dy"][r*n+i] * xhat(in, r*n+i, n) })
			dx := make([]float64, m*n)
			for i := range dx {
				dx[i] = in["rstd"][i/n] * (in["gamma"][i%n]*in["dy"][i] - xhat(in, i, n)*s[i/n]/float64(n))
			}
			return "dx", dx
		},
		"dx without the x̂ term": func(ref, in map[string][]float64, m, n int) (string, []float64) {
			s := rowSums(m, n, func(r, i int) float64 { return in["gamma"][i] * in["dy"][r*n+i] })
			dx := make([]float64, m*n)
			for i := range dx {
				dx[i] = in["rstd"][i/n] * (in["gamma"][i%n]*in["dy"][i] - s[i/n]/float64(n))
			}
			return "dx", dx
		},
		"dγ = Σ dy·(x − mean) (no rstd)": func(ref, in map[string][]float64, m, n int) (string, []float64) {
			dg := make([]float64, n)
			for i := 0; i < m*n; i++ {
				dg[i%n] += in["dy"][i] * (in["x"][i] - in["mean"][i/n])
			}
			return "dgamma", dg
		},
		"dβ without the last row": func(ref, in map[string][]float64, m, n int) (string, []float64) {
			db := append([]float64(nil), ref["dbeta"]...)
			for i := 0; i < n; i++ {
				db[i] -= in["dy"][(m-1)*n+i]
			}
			return "dbeta", db
		},
	})
}

func TestLayerNormCost(t *testing.T) {
	f := rowtest.Family(t, "layernorm_bwd")
	s := rowtest.Shape(t, f, "m=2048,n=1536", dtype.F32)
	if c := f.Cost(s); c.Bytes != 3*2048*1536*4+1536*4+2*2048*4+2*1536*4 || c.Flops != 10*2048*1536 {
		t.Errorf("Cost = %+v", c)
	}
	var names []string
	for _, b := range f.Buffers(s) {
		names = append(names, b.Name+":"+b.Role.String())
	}
	want := "dy:input x:input gamma:input mean:input rstd:input dx:output dgamma:output dbeta:output"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("Buffers = %s, want %s", got, want)
	}
}
