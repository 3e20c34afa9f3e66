package elementwise_test

import (
	"fmt"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// TestRuntimeTokens runs programs emitted at one shape on the interpreter
// at awkward values of their runtime dim: a single token, fewer elements
// than one vector, one CTA's chunk and one unit either side of it, token
// counts whose element count leaves every possible leftover, and, for
// grid=stride, a grid of three CTAs that walks many iterations and ends in
// a partial one.
func TestRuntimeTokens(t *testing.T) {
	cases := []struct {
		family string
		dt     dtype.DType
		shape  string // where the program is emitted
		params string
		dim    string
		values []int
	}{
		// 20 elements per token: 2.5 vectors of 8, so m·20 mod 8 is 0 or 4.
		{"relu_bwd", dtype.BF16, "m=64,n=20", "block=128,vec=8,ept=4,grid=stride,maxnreg=0,cache=stream", "m", []int{1, 2, 3, 51, 205, 206}},
		{"silu_bwd", dtype.F32, "m=16,n=1536", "block=128,vec=4,ept=2,grid=once,maxnreg=0,cache=default", "m", []int{1, 5, 33}},
		{"gelu_bwd", dtype.F16, "n=1003", "block=128,vec=8,ept=2,grid=stride,maxnreg=0,cache=default", "n", []int{1, 7, 8, 9, 2047, 2048, 2049, 2055, 20001}},
		// A chunk is 4·128 units of 4 elements: 2048 elements per CTA.
		{"relu_bwd", dtype.F32, "n=7", "block=128,vec=4,ept=4,grid=once,maxnreg=0,cache=default", "n", []int{1, 3, 4, 5, 1536, 2047, 2048, 2049, 4097}},
		{"gelu_bwd", dtype.F32, "m=3,n=7", "block=256,vec=1,ept=1,grid=stride,maxnreg=0,cache=default", "m", []int{1, 37, 300}},
		// 3·1003 elements leave 3 of every 8 over at m = 1: both outputs' leftovers.
		{"swiglu_bwd", dtype.BF16, "m=2,n=1003", "block=128,vec=8,ept=2,grid=stride,maxnreg=0,cache=default", "m", []int{1, 3, 5}},
		// (3+2) heads · 8 pairs / vec 2 = 20 units per token, chunk 256 units.
		{"rope_bwd", dtype.F16, "t=4,hq=3,hk=2,d=16", "block=128,vec=2,ept=2,grid=stride,maxnreg=0,cache=stream,heads=1", "t", []int{1, 12, 13, 26}},
		// A unit of all 3 heads: 16 units per token, one CTA 256 of them.
		{"rope_bwd", dtype.F32, "t=4,hq=2,hk=1,d=128", "block=256,vec=4,ept=1,grid=once,maxnreg=0,cache=default,heads=3", "t", []int{1, 7, 16, 17, 22}},
	}
	ss := runner.NewSession(sim.New(sim.Options{Workers: 1}))
	defer ss.Release()
	for _, c := range cases {
		f, err := catalog.Lookup(c.family)
		if err != nil {
			t.Fatal(err)
		}
		s := simtest.Shape(t, f, c.shape, c.dt)
		p, err := variants.ParseParams(c.params)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := f.Emit(s, p)
		if err != nil {
			t.Fatalf("%s %s %s: %v", c.family, s.Key(), p, err)
		}
		if fmt.Sprint(prog.RuntimeDims) != "["+c.dim+"]" {
			t.Errorf("%s %s: runtime dims %v, want [%s]", c.family, s.Key(), prog.RuntimeDims, c.dim)
		}
		progs := map[string]kernels.Program{"as emitted": prog}
		if p["grid"] == "stride" {
			progs["on 3 CTAs"] = onCTAs(prog, 3)
		}
		for _, v := range c.values {
			o := simtest.Shape(t, f, withDim(c.shape, c.dim, v), c.dt)
			if err := ss.Prepare(f, o, 1); err != nil {
				t.Fatalf("%s: %v", o.Key(), err)
			}
			for how, pr := range progs {
				if err := simtest.ValidateProgram(ss, pr); err != nil {
					t.Errorf("%s %s emitted at %s, %s: %v", c.family, o.Key(), s.Key(), how, err)
				}
			}
		}
	}
}

// onCTAs is prog with its one launch on a fixed grid of n CTAs.
func onCTAs(prog kernels.Program, n int) kernels.Program {
	l := prog.Launches[0]
	l.Grid, l.GridPerSM = configs.Grid(n, 1, 1), 0
	prog.Launches = []kernels.Launch{l}
	return prog
}

// withDim is the spec with dim d at v: "m=64,n=20" → "m=v,n=20".
func withDim(spec, d string, v int) string {
	sp, _ := variants.ParseSpecs(spec)
	out := ""
	for i, x := range sp[0].Dims {
		if i > 0 {
			out += ","
		}
		if x.Name == d {
			x.Value = v
		}
		out += fmt.Sprintf("%s=%d", x.Name, x.Value)
	}
	return out
}
