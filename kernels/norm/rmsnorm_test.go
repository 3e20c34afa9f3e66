package norm_test

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/rowtest"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/variants"
)

// normForward is RMSNorm (layer false: y = x·rstd·γ, rstd =
// 1/√(mean(x²)+eps)) or LayerNorm (y = (x−mean)·rstd·γ + β, rstd =
// 1/√(var+eps)) of each row, in float64, with the saved mean and rstd.
func normForward(layer bool, eps float64, x, gamma, beta []float64, m, n int) (y, mean, rstd []float64) {
	y = make([]float64, m*n)
	mean, rstd = make([]float64, m), make([]float64, m)
	for r := 0; r < m; r++ {
		row := x[r*n : (r+1)*n]
		var mu, ss float64
		if layer {
			for _, v := range row {
				mu += v
			}
			mu /= float64(n)
		}
		for _, v := range row {
			ss += (v - mu) * (v - mu)
		}
		rs := 1 / math.Sqrt(ss/float64(n)+eps)
		mean[r], rstd[r] = mu, rs
		for i, v := range row {
			y[r*n+i] = (v - mu) * rs * gamma[i]
			if layer {
				y[r*n+i] += beta[i]
			}
		}
	}
	return y, mean, rstd
}

// checkNormFiniteDifferences checks a norm family's Reference against
// central differences of L = Σ dy ⊙ y(x, γ, β) for x, γ and β.
func checkNormFiniteDifferences(t *testing.T, name string, layer bool, eps float64) {
	f := rowtest.Family(t, name)
	for _, c := range []struct{ m, n int }{{3, 1}, {2, 2}, {2, 7}, {3, 64}} {
		s := rowtest.Shape(t, f, "m=1,n=1", dtype.F32)
		s.Dims = []variants.Dim{{Name: "m", Value: c.m}, {Name: "n", Value: c.n}}
		m, n := c.m, c.n
		x := kernels.Uniform(dtype.F64, m*n, -2, 2, 3, "x")
		gamma := kernels.Uniform(dtype.F64, n, 0.5, 1.5, 3, "gamma")
		beta := kernels.Uniform(dtype.F64, n, -1, 1, 3, "beta")
		dy := kernels.Uniform(dtype.F64, m*n, -1, 1, 3, "dy")
		_, mean, rstd := normForward(layer, eps, x, gamma, beta, m, n)
		in := map[string][]float64{"dy": dy, "x": x, "gamma": gamma, "rstd": rstd}
		if layer {
			in["mean"] = mean
		}
		ref := f.Reference(s, in)
		loss := func(x, gamma, beta []float64) float64 {
			y, _, _ := normForward(layer, eps, x, gamma, beta, m, n)
			var l float64
			for i := range y {
				l += dy[i] * y[i]
			}
			return l
		}
		fd := func(v []float64, i int) float64 {
			h := 1e-6 * math.Max(1, math.Abs(v[i]))
			old := v[i]
			v[i] = old + h
			lp := loss(x, gamma, beta)
			v[i] = old - h
			lm := loss(x, gamma, beta)
			v[i] = old
			return (lp - lm) / (2 * h)
		}
		worst := 0.0
		check := func(what string, got float64, want float64) {
			d := math.Abs(got - want)
			worst = math.Max(worst, d)
			if d > 1e-7*(1+math.Abs(want)) || math.IsNaN(got) {
				t.Errorf("%s m=%d n=%d: %s = %.12g, finite differences %.12g", name, m, n, what, got, want)
			}
		}
		for i := range x {
			check("dx", ref["dx"][i], fd(x, i))
		}
		for i := range gamma {
			check("dγ", ref["dgamma"][i], fd(gamma, i))
			if layer {
				check("dβ", ref["dbeta"][i], fd(beta, i))
			}
		}
		t.Logf("%s m=%d n=%d: worst difference %.2g", name, m, n, worst)
	}
}

func TestRMSNormReferenceMatchesFiniteDifferences(t *testing.T) {
	checkNormFiniteDifferences(t, "rmsnorm_bwd", false, 1e-6)
}

// checkNormInputs checks the generated inputs: deterministic, rounded to
// their dtypes, and rstd (and mean) those of the rounded x, as the
// forward saves them; rstd and x̂ within the tolerance's bounds.
func checkNormInputs(t *testing.T, name string, layer bool, eps float64) {
	f := rowtest.Family(t, name)
	for _, dt := range f.DTypes() {
		for _, sp := range []string{"m=5,n=1536", "m=3,n=37", "m=4,n=1", "m=64,n=2"} {
			s := rowtest.Shape(t, f, sp, dt)
			m, n := s.Get("m"), s.Get("n")
			in := f.Inputs(s, 1)
			again, other := f.Inputs(s, 1), f.Inputs(s, 2)
			for _, b := range f.Buffers(s) {
				if b.Role != kernels.Input {
					if _, ok := in[b.Name]; ok {
						t.Errorf("%s: Inputs fills the %s buffer %s", s.Key(), b.Role, b.Name)
					}
					continue
				}
				v := in[b.Name]
				if len(v) != kernels.Elems(b, s) || !rowtest.EqualFloats(v, again[b.Name]) {
					t.Fatalf("%s: input %s: %d values (want %d) or not deterministic", s.Key(), b.Name, len(v), kernels.Elems(b, s))
				}
				if len(v) > 1 && rowtest.EqualFloats(v, other[b.Name]) && !(layer && n == 1 && b.Name == "rstd") { // 1/√eps
					t.Errorf("%s: input %s ignores the seed", s.Key(), b.Name)
				}
				for _, x := range v {
					if b.DType.Round(x) != x {
						t.Fatalf("%s: %s value %v is not a %v", s.Key(), b.Name, x, b.DType)
					}
				}
			}
			_, mean, rstd := normForward(layer, eps, in["x"], in["gamma"], make([]float64, n), m, n)
			for r := 0; r < m; r++ {
				if got := in["rstd"][r]; got != dtype.F32.Round(rstd[r]) {
					t.Errorf("%s: rstd[%d] = %v, want %v", s.Key(), r, got, dtype.F32.Round(rstd[r]))
				}
				if layer && in["mean"][r] != dtype.F32.Round(mean[r]) {
					t.Errorf("%s: mean[%d] = %v, want %v", s.Key(), r, in["mean"][r], dtype.F32.Round(mean[r]))
				}
				if !(layer && n == 1) && rstd[r] > 2*(1+4*dt.Epsilon()) {
					t.Errorf("%s: rstd[%d] = %v above 2", s.Key(), r, rstd[r])
				}
				for i := 0; i < n; i++ {
					xh := (in["x"][r*n+i] - mean[r]) * rstd[r]
					if math.Abs(xh) > math.Min(4, math.Sqrt(float64(n))) {
						t.Errorf("%s: x̂[%d,%d] = %v", s.Key(), r, i, xh)
					}
				}
			}
		}
	}
}

func TestRMSNormInputs(t *testing.T) { checkNormInputs(t, "rmsnorm_bwd", false, 1e-6) }

// normModel computes the outputs as a kernel does in f32 (tree: vec
// chains of 4 over a 32-lane butterfly; else one sequential chain), the
// column sums in one sequential chain over the rows, dx rounded to dt.
func normModel(layer bool, in map[string][]float64, m, n int, dt dtype.DType, tree bool) map[string][]float64 {
	dx := make([]float64, m*n)
	dg := make([]float32, n)
	db := make([]float32, n)
	invN := float32(1 / float64(n))
	xh := make([]float32, n)
	g := make([]float32, n)
	for r := 0; r < m; r++ {
		rs := float32(in["rstd"][r])
		var mu float32
		if layer {
			mu = float32(in["mean"][r])
		}
		for i := 0; i < n; i++ {
			x, dy, gm := float32(in["x"][r*n+i]), float32(in["dy"][r*n+i]), float32(in["gamma"][i])
			if layer {
				xh[i] = (x - mu) * rs
			} else {
				xh[i] = x * rs
			}
			g[i] = gm * dy
			dg[i] = rowtest.FMA32(dy, xh[i], dg[i])
			db[i] += dy
		}
		var s1, s2 float32
		if tree {
			var l1, l2 [32][4]float32
			for i := 0; i < n; i++ {
				l, e := (i/4)%32, i%4
				l1[l][e] += g[i]
				l2[l][e] = rowtest.FMA32(g[i], xh[i], l2[l][e])
			}
			var p1, p2 [32]float32
			for l := range p1 {
				p1[l] = (l1[l][0] + l1[l][1]) + (l1[l][2] + l1[l][3])
				p2[l] = (l2[l][0] + l2[l][1]) + (l2[l][2] + l2[l][3])
			}
			for w := 16; w >= 1; w /= 2 {
				for l := 0; l < w; l++ {
					p1[l] += p1[l+w]
					p2[l] += p2[l+w]
				}
			}
			s1, s2 = p1[0], p2[0]
		} else {
			for i := 0; i < n; i++ {
				s1 += g[i]
				s2 = rowtest.FMA32(g[i], xh[i], s2)
			}
		}
		rn := rs * invN
		ca, cb := -(rn * s2), -(rn * s1)
		for i := 0; i < n; i++ {
			var v float32
			if layer {
				v = rowtest.FMA32(xh[i], ca, rowtest.FMA32(rs, g[i], cb))
			} else {
				v = rowtest.FMA32(xh[i], ca, rs*g[i])
			}
			dx[r*n+i] = dt.Round(float64(v))
		}
	}
	out := map[string][]float64{"dx": dx, "dgamma": make([]float64, n), "dbeta": make([]float64, n)}
	for i := range dg {
		out["dgamma"][i], out["dbeta"][i] = float64(dg[i]), float64(db[i])
	}
	return out
}

// checkNormTolerance checks that each output's tolerance admits the f32
// model of the kernels and rejects plausible mistakes.
func checkNormTolerance(t *testing.T, name string, layer bool, wrongs map[string]func(ref, in map[string][]float64, m, n int) (string, []float64)) {
	f := rowtest.Family(t, name)
	outs := []string{"dx", "dgamma"}
	if layer {
		outs = append(outs, "dbeta")
	}
	for _, dt := range f.DTypes() {
		for _, sp := range []string{"m=64,n=1536", "m=2048,n=32", "m=5,n=1", "m=16,n=37"} {
			s := rowtest.Shape(t, f, sp, dt)
			m, n := s.Get("m"), s.Get("n")
			in := f.Inputs(s, 1)
			ref := f.Reference(s, in)
			for _, tree := range []bool{false, true} {
				got := normModel(layer, in, m, n, dt, tree)
				for _, o := range outs {
					tol := f.Tolerance(s, o)
					if a, r, bad := tol.Check(got[o], ref[o]); bad >= 0 {
						t.Errorf("%s %s (tree %v): tolerance %+v rejects the f32 model at %d: %g, want %g", s.Key(), o, tree, tol, bad, got[o][bad], ref[o][bad])
					} else if tree {
						t.Logf("%s %s: tolerance %+v; model within %.2g abs, %.2g rel", s.Key(), o, tol, a, r)
					}
				}
			}
			if n == 1 {
				continue
			}
			for what, w := range wrongs {
				o, got := w(ref, in, m, n)
				if o == "dx" {
					for i := range got {
						got[i] = dt.Round(got[i])
					}
				}
				if _, _, bad := f.Tolerance(s, o).Check(got, ref[o]); bad < 0 {
					t.Errorf("%s: the tolerance of %s accepts %s", s.Key(), o, what)
				}
			}
			// The largest element of each output off by 4 ulp of dt (2^-11
			// relative in f32).
			for _, o := range outs {
				big := 0
				for i := range ref[o] {
					if math.Abs(ref[o][i]) > math.Abs(ref[o][big]) {
						big = i
					}
				}
				got := append([]float64(nil), ref[o]...)
				got[big] = ref[o][big] * (1 + 0x1p-11)
				if o == "dx" && dt != dtype.F32 {
					got[big] = rowtest.PerturbULP(ref[o][big], 4, dt)
				}
				if _, _, bad := f.Tolerance(s, o).Check(got, ref[o]); bad != big {
					t.Errorf("%s: the tolerance of %s accepts %g for %g", s.Key(), o, got[big], ref[o][big])
				}
			}
		}
	}
}

// rowSums returns Σ_i v(r, i) for each row.
func rowSums(m, n int, v func(r, i int) float64) []float64 {
	s := make([]float64, m)
	for r := range s {
		for i := 0; i < n; i++ {
			s[r] += v(r, i)
		}
	}
	return s
}

func TestRMSNormTolerance(t *testing.T) {
	checkNormTolerance(t, "rmsnorm_bwd", false, map[string]func(ref, in map[string][]float64, m, n int) (string, []float64){
		"dx = rstd·γ·dy (no mean term)": func(ref, in map[string][]float64, m, n int) (string, []float64) {
			dx := make([]float64, m*n)
			for i := range dx {
				dx[i] = in["rstd"][i/n] * in["gamma"][i%n] * in["dy"][i]
			}
			return "dx", dx
		},
		"dx with one rstd short in the mean term": func(ref, in map[string][]float64, m, n int) (string, []float64) {
			s := rowSums(m, n, func(r, i int) float64 { return in["gamma"][i] * in["dy"][r*n+i] * in["x"][r*n+i] })
			dx := make([]float64, m*n)
			for i := range dx {
				r := in["rstd"][i/n]
				dx[i] = r * (in["gamma"][i%n]*in["dy"][i] - in["x"][i]*r*s[i/n]/float64(n))
			}
			return "dx", dx
		},
		"dγ = Σ dy·x (no rstd)": func(ref, in map[string][]float64, m, n int) (string, []float64) {
			dg := make([]float64, n)
			for i := 0; i < m*n; i++ {
				dg[i%n] += in["dy"][i] * in["x"][i]
			}
			return "dgamma", dg
		},
		"dγ without the last row": func(ref, in map[string][]float64, m, n int) (string, []float64) {
			dg := append([]float64(nil), ref["dgamma"]...)
			for i := 0; i < n; i++ {
				j := (m-1)*n + i
				dg[i] -= in["dy"][j] * in["x"][j] * in["rstd"][m-1]
			}
			return "dgamma", dg
		},
	})
}

func TestRMSNormCost(t *testing.T) {
	f := rowtest.Family(t, "rmsnorm_bwd")
	s := rowtest.Shape(t, f, "m=2048,n=1536", dtype.BF16)
	if c := f.Cost(s); c.Bytes != 3*2048*1536*2+1536*2+2048*4+1536*4 || c.Flops != 7*2048*1536 {
		t.Errorf("Cost = %+v", c)
	}
	var names []string
	for _, b := range f.Buffers(s) {
		names = append(names, b.Name+":"+b.Role.String()+":"+b.DType.String())
	}
	if got, want := strings.Join(names, " "), "dy:input:bf16 x:input:bf16 gamma:input:bf16 rstd:input:f32 dx:output:bf16 dgamma:output:f32"; got != want {
		t.Errorf("Buffers = %s, want %s", got, want)
	}
}

// TestNormPDL checks the dependent launches of the norm families: exactly
// the second launch of a pdl=1 variant is dependent, its kernel executes
// griddepcontrol.wait before it touches what the first launch writes (the
// finalize: before any global access; the row kernel of dgamma=atomic:
// before its red.adds into the zeroed sums), and pdl=0 programs use
// neither griddepcontrol instruction, so that they still run on sm_80.
func TestNormPDL(t *testing.T) {
	seen := 0
	for _, v := range rowtest.EmitAll(t, "rmsnorm_bwd", "layernorm_bwd") {
		pdl, err := v.Params.Int("pdl")
		if err != nil {
			t.Fatal(err)
		}
		kernelsText := map[string]string{}
		for _, body := range ptxtest.Kernels(v.Prog.PTX) {
			kernelsText[body[:strings.IndexByte(body, '(')]] = body
		}
		for i, ln := range v.Prog.Launches {
			if want := pdl == 1 && i == 1; ln.Dependent != want {
				t.Fatalf("%s %s %s: launch %d (%s) dependent=%v, want %v", v.Family, v.Shape.Key(), v.Params, i, ln.Entry, ln.Dependent, want)
			}
			body := kernelsText[ln.Entry]
			wait := strings.Index(body, "griddepcontrol.wait")
			if !ln.Dependent {
				if wait >= 0 {
					t.Fatalf("%s %s: %s waits but is not dependent", v.Family, v.Params, ln.Entry)
				}
				continue
			}
			seen++
			if wait < 0 {
				t.Fatalf("%s %s: dependent %s never waits", v.Family, v.Params, ln.Entry)
			}
			guarded := "red.global"
			if strings.HasSuffix(ln.Entry, "_finalize") {
				guarded = "ld.global"
			}
			// An instruction that starts with it (cp.async…shared.global
			// contains "red.global").
			if regexp.MustCompile(`(?m)^\t(@!?%p\d+ )?` + regexp.QuoteMeta(guarded)).MatchString(body[:wait]) {
				t.Fatalf("%s %s: %s has %s before griddepcontrol.wait", v.Family, v.Params, ln.Entry, guarded)
			}
		}
		if pdl == 0 && strings.Contains(v.Prog.PTX, "griddepcontrol") {
			t.Fatalf("%s %s: griddepcontrol without pdl", v.Family, v.Params)
		}
	}
	if seen == 0 {
		t.Fatal("no dependent launches among the norm variants")
	}
}

// TestNormAtomic1 checks, in the atomic1 variants (dgamma=atomic1) of the
// model and odd shapes (sweep.Pick of each shape's: every axis value, then
// one in 16; all of them with GRADTUNE_SWEEP=ci or full), the order of an
// atomic1 kernel:
// one launch; thread 0's start ticket (atom.inc wrapping at G−1, G the
// CTAs launched) before the rows' copies; in each copy of the rows (the
// full CTAs' and the last CTA's, package rows), the copies before the
// zeroing (which hides behind them), the zeros made visible (membar.gl)
// before the flag is raised; and the wait for the flag (an acquire atom)
// after both copies, so after every row's dx store, and before the first
// column-sum red.add.
func TestNormAtomic1(t *testing.T) {
	seen := 0
	for _, name := range []string{"rmsnorm_bwd", "layernorm_bwd"} {
		f := rowtest.Family(t, name)
		for _, dt := range f.DTypes() {
			for _, sp := range append([]string{rowtest.ModelShape[name]}, rowtest.OddShapes...) {
				s := rowtest.Shape(t, f, sp, dt)
				for _, p := range sweep.Pick(variants.Filter(simtest.Enumerate(f, s), variants.Params{"dgamma": "atomic1"}), 4) {
					prog, err := f.Emit(s, p)
					if err != nil {
						t.Fatalf("%s %s %s: %v", name, s.Key(), p, err)
					}
					if len(prog.Launches) != 1 {
						t.Fatalf("%s %s: %d launches", name, p, len(prog.Launches))
					}
					checkAtomic1Order(t, fmt.Sprintf("%s %s %s", name, s.Key(), p), prog.PTX)
					seen++
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no atomic1 variants")
	}
	t.Logf("%d atomic1 variants", seen)
}

// checkAtomic1Order checks the order TestNormAtomic1 describes in the
// PTX of one atomic1 variant.
func checkAtomic1Order(t *testing.T, what, text string) {
	t.Helper()
	lastCTA := lastCTAReg(t, text)
	// The rows' two copies: the first if-else of the kernel.
	split := regexp.MustCompile(`(?m)^\$L_if(\d+)_else:$`).FindStringSubmatchIndex(text)
	if split == nil {
		t.Fatalf("%s: no copy of the rows for the last CTA", what)
	}
	elseAt := split[0]
	endAt := strings.Index(text, "$L_if"+text[split[2]:split[3]]+"_end:")
	find := func(lo, hi int, re string, lastOne bool) int {
		locs := regexp.MustCompile(`(?m)^\t(@!?%p\d+ )?`+re).FindAllStringIndex(text[lo:hi], -1)
		if locs == nil {
			t.Fatalf("%s: no %s in [%d, %d)", what, re, lo, hi)
		}
		if lastOne {
			return lo + locs[len(locs)-1][0]
		}
		return lo + locs[0][0]
	}
	ticket := find(0, len(text), `atom\.global\.inc\.u32 %r\d+, \[%rd\d+\], `+lastCTA+`;`, false)
	wait := find(endAt, len(text), `atom\.acquire\.gpu\.global\.or\.b32`, false)
	firstRed := find(endAt, len(text), `red\.global\.add`, false)
	type order struct {
		what string
		a, b int
	}
	checks := []order{{"wait before the red.adds", wait, firstRed}}
	for _, c := range [][2]int{{0, elseAt}, {elseAt, endAt}} {
		copies, lastCopy := find(c[0], c[1], `cp\.async\.`, false), find(c[0], c[1], `cp\.async\.commit_group`, true)
		zero, fence := find(c[0], c[1], `st\.global\.v?\d?\.?f32 \[%rd\d+\], \{?%f\d+`, false), find(c[0], c[1], `membar\.gl;`, false)
		raise := find(c[0], c[1], `red\.global\.inc\.u32 \[%rd\d+\+4\], `+lastCTA+`;`, false)
		lastDx := find(c[0], c[1], `st\.global\.`, true)
		checks = append(checks, []order{
			{"ticket before the copies", ticket, copies},
			{"copies before the zeroing", lastCopy, zero},
			{"zeroing before membar.gl", zero, fence},
			{"membar.gl before the flag", fence, raise},
			{"flag before the wait", raise, wait},
			{"dx stores before the wait", lastDx, wait},
		}...)
	}
	for _, o := range checks {
		if o.a >= o.b {
			t.Fatalf("%s: want %s", what, o.what)
		}
	}
}
