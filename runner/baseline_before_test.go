package runner_test

import (
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
)

// simGEMM is the interpreter with a vendor GEMM computed on the host: a
// backend on which a baseline's program before its call runs as PTX.
type simGEMM struct {
	*sim.Backend
	calls int
}

func (b *simGEMM) GEMM(c kernels.GEMMCall, a, bp, cp runner.Ptr) error {
	b.calls++
	get := func(p runner.Ptr, dt dtype.DType, n int) []float64 {
		buf := make([]byte, n*dt.Size())
		if err := b.Download(buf, p); err != nil {
			panic(err)
		}
		return dt.Decode(buf)
	}
	if c.TransA || c.TransB {
		panic("simGEMM: no transposes")
	}
	av, bv := get(a, c.In, c.M*c.LDA), get(bp, c.In, c.K*c.LDB)
	out := make([]float64, c.M*c.LDC)
	for i := range c.M {
		for k := range c.K {
			for j := range c.N {
				out[i*c.LDC+j] += av[i*c.LDA+k] * bv[k*c.LDB+j]
			}
		}
	}
	for i := range out {
		out[i] = c.Out.Round(out[i])
	}
	return b.Upload(cp, c.Out.Encode(out))
}

// TestBaselineProgramBefore: nf4_gemm_bwd's dequant+cublas baseline runs
// its dequantization (PTX, on the interpreter) into its own scratch
// weight, then the library's GEMM on it, as one timed run that validates;
// without the program before it, its call names a buffer that is not
// there.
func TestBaselineProgramBefore(t *testing.T) {
	f, err := catalog.Lookup("nf4_gemm_bwd")
	if err != nil {
		t.Fatal(err)
	}
	s := simtest.Shape(t, f, "m=20,n=128,k=64,scales=dq", dtype.BF16)
	be := &simGEMM{Backend: sim.New(sim.Options{Workers: 2})}
	ss := runner.NewSession(be)
	defer ss.Release()
	if err := ss.Prepare(f, s, 1); err != nil {
		t.Fatal(err)
	}
	var b kernels.Baseline
	for _, x := range f.(kernels.Baseliner).Baselines(s) {
		if x.Before != nil {
			b = x
		}
	}
	if b.Name != "dequant+cublas" || b.Lib() != runner.BaselineCuBLAS {
		t.Fatalf("no dequant+cublas baseline: %+v", b)
	}
	l, err := ss.LoadBaseline(b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ss.Validate(l)
	if err != nil || !c.OK || be.calls != 1 {
		t.Fatalf("Validate = %+v, %v after %d GEMM calls", c, err, be.calls)
	}
	if err := l.Unload(); err != nil {
		t.Fatal(err)
	}
	b.Before = nil
	if _, err := ss.LoadBaseline(b); err == nil || !strings.Contains(err.Error(), `unknown buffer "w_deq"`) {
		t.Errorf("a call on the scratch weight without the program that writes it: %v", err)
	}
}
