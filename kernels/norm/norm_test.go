package norm_test

import (
	"flag"
	"fmt"
	"github.com/gradtune/gradtune/kernels"
	"regexp"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/rowtest"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden pins norm programs in testdata/: every strategy and store, the
// H200 winners (PDL finalize, vector atomics, rows copied with cp.async,
// atomic1).
var golden = []pin{
	{"rmsnorm_bwd", "f32", "m=2048,n=1536", "vec=4,vpt=3,rows=1,rpg=4,unroll=2,store=regs,dgamma=atomic,maxnreg=0"},
	{"rmsnorm_bwd", "bf16", "m=2048,n=1536", "vec=8,vpt=1,rows=2,rpg=4,unroll=1,prefetch=1,store=regs,dgamma=partial,maxnreg=0"},
	{"layernorm_bwd", "f16", "m=3,n=37", "vec=1,vpt=2,rows=2,rpg=2,unroll=1,store=reread,dgamma=partial,maxnreg=0"},
	{"layernorm_bwd", "bf16", "m=2048,n=1536", "vec=8,vpt=2,rows=2,rpg=4,unroll=1,store=smem,dgamma=atomic,maxnreg=0"},
	{"layernorm_bwd", "f32", "m=2048,n=1536", "vec=4,vpt=3,rows=1,rpg=4,unroll=1,prefetch=1,store=regs,dgamma=ticket,maxnreg=0"},
	{"rmsnorm_bwd", "f32", "m=2048,n=1536", "vec=4,vpt=3,rows=4,rpg=2,unroll=1,prefetch=1,store=regs,dgamma=partial,maxnreg=64,pdl=1"},
	{"layernorm_bwd", "f32", "m=2048,n=1536", "vec=4,vpt=4,rows=4,rpg=4,unroll=1,prefetch=1,store=regs,dgamma=atomic,maxnreg=0,pdl=1"},
	{"layernorm_bwd", "f32", "m=2048,n=1536", "vec=4,vpt=4,rows=4,rpg=4,unroll=1,prefetch=0,store=async,dgamma=atomic1,maxnreg=0,pdl=0"},
	{"rmsnorm_bwd", "bf16", "m=2048,n=1536", "vec=8,vpt=1,rows=2,rpg=4,unroll=1,prefetch=0,store=async,dgamma=partial,maxnreg=0,pdl=1"},
}

// pin is a rowtest.Golden, spelled unkeyed.
type pin struct{ Family, DType, Shape, Params string }

func TestGoldenPTX(t *testing.T) {
	for _, g := range golden {
		ptxtest.Golden(t, *update, rowtest.Golden(g).File(), rowtest.Golden(g).Text(t))
	}
}

// TestProgramBuffers checks that each program declares exactly the
// buffers its strategy uses: partials (Scratch, one row of na·n f32 per
// CTA of the row kernel) for partial, colsum (State, na·n) and a
// one-word ticket (State) for ticket, a two-word ticket for atomic1,
// nothing for atomic.
func TestProgramBuffers(t *testing.T) {
	for _, v := range rowtest.EmitAll(t, "rmsnorm_bwd", "layernorm_bwd") {
		na, n := 1, v.Shape.Get("n")
		if v.Family == "layernorm_bwd" {
			na = 2
		}
		main := v.Prog.Launches[0]
		if v.Params["dgamma"] == "atomic" {
			main = v.Prog.Launches[1]
		}
		var want []string
		switch v.Params["dgamma"] {
		case "partial":
			grid, err := main.Grid[0].EvalInt(kernels.Env(v.Shape))
			if err != nil {
				t.Fatal(err)
			}
			want = []string{fmt.Sprintf("partials:scratch:f32:%d", grid*na*n)}
		case "ticket":
			want = []string{fmt.Sprintf("colsum:state:f32:%d", na*n), "ticket:state:f32:1"}
		case "atomic1":
			want = []string{"ticket:state:f32:2"}
		}
		var got []string
		for _, b := range v.Prog.Buffers {
			got = append(got, fmt.Sprintf("%s:%v:%v:%d", b.Name, b.Role, b.DType, kernels.Elems(b, v.Shape)))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("%v: program buffers %v, want %v", v, got, want)
		}
	}
}

// TestStateLeftZero runs ticket and atomic1 variants twice in a row on
// the interpreter, with several workers so that CTAs start and finish in
// any order and atomic1's CTAs really wait for the one that zeroes dγ.
// Validation checks the outputs and that each run leaves the State
// buffers (colsum, ticket) zero, as the next run expects.
func TestStateLeftZero(t *testing.T) {
	for _, name := range []string{"rmsnorm_bwd", "layernorm_bwd"} {
		f := rowtest.Family(t, name)
		ss := runner.NewSession(sim.New(sim.Options{Workers: 4}))
		for _, sp := range []string{"m=67,n=200", "m=1,n=1"} {
			s := rowtest.Shape(t, f, sp, dtype.F32)
			if err := ss.Prepare(f, s, 1); err != nil {
				t.Fatal(err)
			}
			ref := f.Reference(s, f.Inputs(s, 1))
			var pts []variants.Params
			for _, strategy := range []string{"ticket", "atomic1"} {
				pts = append(pts, variants.Spread(variants.Filter(simtest.Enumerate(f, s), variants.Params{"dgamma": strategy}), 6)...)
			}
			for _, p := range pts {
				for run := 0; run < 2; run++ {
					if msg := rowtest.RunOnSim(ss, f, s, p, ref); msg != "" {
						t.Errorf("%s %s run %d: %s", s.Key(), p, run, msg)
					}
				}
			}
		}
		ss.Release()
	}
}

// TestStateCheckCatchesTicket breaks a ticket variant so that its counter
// wraps at G instead of G−1: the last CTA still draws G−1 and copies the
// right sums, but the run leaves the ticket at G. Validation must reject
// it for the State buffer alone.
func TestStateCheckCatchesTicket(t *testing.T) {
	f := rowtest.Family(t, "rmsnorm_bwd")
	s := rowtest.Shape(t, f, "m=67,n=200", dtype.F32)
	p := variants.Filter(simtest.Enumerate(f, s), variants.Params{"dgamma": "ticket"})[0]
	prog, err := f.Emit(s, p)
	if err != nil {
		t.Fatal(err)
	}
	g, err := prog.Launches[0].Grid[0].EvalInt(kernels.Env(s))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(atom\.global\.inc\.u32 %r\d+, \[%rd\d+\]), ` + lastCTAReg(t, prog.PTX) + `;`)
	if len(re.FindAllString(prog.PTX, -1)) != 1 {
		t.Fatalf("%s: want one ticket atom.inc wrapping at %%nctaid.x − 1", p)
	}
	broken := prog
	broken.PTX = re.ReplaceAllString(prog.PTX, fmt.Sprintf("$1, %d;", g))
	ss := runner.NewSession(sim.New(sim.Options{Workers: 4}))
	defer ss.Release()
	if err := ss.Prepare(f, s, 1); err != nil {
		t.Fatal(err)
	}
	ref := f.Reference(s, f.Inputs(s, 1))
	if msg := rowtest.RunProgram(ss, f, s, prog, ref); msg != "" {
		t.Fatalf("%s: the intact program fails: %s", p, msg)
	}
	msg := rowtest.RunProgram(ss, f, s, broken, ref)
	if !strings.Contains(msg, "state buffer ticket not left zero") {
		t.Errorf("%s with the counter wrapping at G: validation says %q, want the ticket left non-zero", p, msg)
	}
}

// lastCTAReg is the register of a row kernel's PTX that holds the CTAs
// launched less one (%nctaid.x − 1), where its counters wrap, as a
// regular expression.
func lastCTAReg(t *testing.T, text string) string {
	t.Helper()
	m := regexp.MustCompile(`\tmov\.u32 (%r\d+), %nctaid\.x;\n\tsub\.u32 (%r\d+), %r\d+, 1;\n`).FindAllStringSubmatch(text, -1)
	if len(m) != 1 || !strings.Contains(m[0][0], "sub.u32 "+m[0][2]+", "+m[0][1]+",") {
		t.Fatalf("want one %%nctaid.x − 1, found %q", m)
	}
	return regexp.QuoteMeta(m[0][2])
}

// TestRuleNames: a point outside the space is rejected by the rule that
// forbids it, named in the error.
func TestRuleNames(t *testing.T) {
	f := rowtest.Family(t, "layernorm_bwd")
	for _, c := range []struct{ shape, change, rule string }{
		{"m=2048,n=1536", "dgamma=atomic1,store=regs", "atomic1 zeroes behind the copies"},
		{"m=2048,n=1536", "dgamma=ticket,pdl=1", "pdl needs two launches"},
		{"m=8192,n=1536", "rows=1,rpg=2,unroll=1,prefetch=0,store=reread,maxnreg=0,dgamma=partial", "partials fit"},
	} {
		s := rowtest.Shape(t, f, c.shape, dtype.F32)
		p := f.Space(s).Enumerate()[0]
		q, err := variants.ParseParams(c.change)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range q {
			p[k] = v
		}
		_, err = f.Emit(s, p)
		if err == nil || !strings.Contains(err.Error(), "violate "+c.rule) {
			t.Errorf("Emit(%s) error = %v, want a violation of %q", p, err, c.rule)
		}
	}
}
