package softmax_test

import (
	"flag"
	"math"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/rowtest"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
	"github.com/gradtune/gradtune/variants"
)

// softmaxRows is the softmax of each row of z, in float64.
func softmaxRows(z []float64, m, n int) []float64 {
	y := make([]float64, len(z))
	for r := 0; r < m; r++ {
		top := math.Inf(-1)
		for _, v := range z[r*n : (r+1)*n] {
			top = math.Max(top, v)
		}
		var sum float64
		for i := r * n; i < (r+1)*n; i++ {
			y[i] = math.Exp(z[i] - top)
			sum += y[i]
		}
		for i := r * n; i < (r+1)*n; i++ {
			y[i] /= sum
		}
	}
	return y
}

// TestSoftmaxReferenceMatchesFiniteDifferences checks dx against central
// differences of L(z) = Σ dy ⊙ softmax(z) with respect to the logits.
func TestSoftmaxReferenceMatchesFiniteDifferences(t *testing.T) {
	f := rowtest.Family(t, "softmax_bwd")
	for _, c := range []struct{ m, n int }{{3, 1}, {2, 5}, {4, 37}, {1, 512}} {
		s := rowtest.Shape(t, f, "m=1,n=1", dtype.F32)
		s.Dims = []variants.Dim{{Name: "m", Value: c.m}, {Name: "n", Value: c.n}}
		z := kernels.Uniform(dtype.F64, c.m*c.n, -3, 3, 7, "z")
		dy := kernels.Uniform(dtype.F64, c.m*c.n, -1, 1, 7, "dy")
		dx := f.Reference(s, map[string][]float64{"y": softmaxRows(z, c.m, c.n), "dy": dy})["dx"]
		loss := func(z []float64) float64 {
			var l float64
			for i, v := range softmaxRows(z, c.m, c.n) {
				l += dy[i] * v
			}
			return l
		}
		worst := 0.0
		for i := range z {
			h := 1e-5
			zp, zm := append([]float64(nil), z...), append([]float64(nil), z...)
			zp[i] += h
			zm[i] -= h
			fd := (loss(zp) - loss(zm)) / (2 * h)
			d := math.Abs(dx[i] - fd)
			worst = math.Max(worst, d)
			if d > 1e-9 {
				t.Errorf("m=%d n=%d: dx[%d] = %.12g, finite differences %.12g", c.m, c.n, i, dx[i], fd)
			}
		}
		t.Logf("m=%d n=%d: worst difference %.2g", c.m, c.n, worst)
	}
}

func TestSoftmaxInputs(t *testing.T) {
	f := rowtest.Family(t, "softmax_bwd")
	for _, dt := range f.DTypes() {
		for _, sp := range []string{"m=5,n=512", "m=3,n=37", "m=1,n=1", "m=64,n=2", "m=200,n=16", "m=2,n=20000"} {
			s := rowtest.Shape(t, f, sp, dt)
			m, n := s.Get("m"), s.Get("n")
			in := f.Inputs(s, 1)
			again, other := f.Inputs(s, 1), f.Inputs(s, 2)
			for _, name := range []string{"y", "dy"} {
				if len(in[name]) != m*n || !rowtest.EqualFloats(in[name], again[name]) {
					t.Errorf("%s: input %s has %d values or is not deterministic", s.Key(), name, len(in[name]))
				}
				if m*n > 1 && rowtest.EqualFloats(in[name], other[name]) {
					t.Errorf("%s: input %s ignores the seed", s.Key(), name)
				}
				for _, v := range in[name] {
					if dt.Round(v) != v {
						t.Fatalf("%s: %s value %v is not a %v", s.Key(), name, v, dt)
					}
				}
			}
			ymax := 0.0
			for _, v := range in["y"] {
				ymax = math.Max(ymax, v)
			}
			e4 := math.Exp(4)
			if bound := math.Min(1, e4/(float64(n)-1+e4)) * (1 + dt.Epsilon()); ymax > bound {
				t.Errorf("%s: max y %v above %v", s.Key(), ymax, bound)
			}
			// The tolerance's bound (six sigma of the sum of e^z).
			if bound := f.Tolerance(s, "dx").Atol / ((1.01*(float64(n)/1024+56) + 8) * 0x1p-24); dt == dtype.F32 && ymax > bound*(1+1e-9) {
				t.Errorf("%s: max y %v above the tolerance's bound %v", s.Key(), ymax, bound)
			}
			for r := 0; r < m; r++ {
				var sum float64
				for _, v := range in["y"][r*n : (r+1)*n] {
					if v < 0 || v > ymax {
						t.Fatalf("%s: y = %v outside [0, %v]", s.Key(), v, ymax)
					}
					sum += v
				}
				if math.Abs(sum-1) > dt.Epsilon()*1.01 {
					t.Errorf("%s: row %d of y sums to %v", s.Key(), r, sum)
				}
			}
			for _, v := range in["dy"] {
				if math.Abs(v) > 1 {
					t.Fatalf("%s: dy = %v", s.Key(), v)
				}
			}
		}
	}
	s := rowtest.Shape(t, f, "m=24576,n=512", dtype.BF16)
	if c := f.Cost(s); c.Bytes != 3*24576*512*2 || c.Flops != 4*24576*512 {
		t.Errorf("Cost = %+v", c)
	}
}

// softmaxModel computes dx the way a kernel does in f32, with the row sum
// either in one sequential chain of fmas (the longest any variant has) or
// in 4 chains over a 32-thread butterfly, rounded to dt.
func softmaxModel(y, dy []float64, m, n int, dt dtype.DType, tree bool) []float64 {
	out := make([]float64, m*n)
	for r := 0; r < m; r++ {
		var dot float32
		if tree {
			var lanes [32][4]float32
			for i := 0; i < n; i++ {
				l, e := (i/4)%32, i%4
				lanes[l][e] = rowtest.FMA32(float32(y[r*n+i]), float32(dy[r*n+i]), lanes[l][e])
			}
			var part [32]float32
			for l := range lanes {
				part[l] = (lanes[l][0] + lanes[l][1]) + (lanes[l][2] + lanes[l][3])
			}
			for w := 16; w >= 1; w /= 2 {
				for l := 0; l < w; l++ {
					part[l] += part[l+w]
				}
			}
			dot = part[0]
		} else {
			for i := r * n; i < (r+1)*n; i++ {
				dot = rowtest.FMA32(float32(y[i]), float32(dy[i]), dot)
			}
		}
		for i := r * n; i < (r+1)*n; i++ {
			out[i] = dt.Round(float64(float32(y[i]) * (float32(dy[i]) - dot)))
		}
	}
	return out
}

// TestSoftmaxTolerance checks that the tolerance admits the f32 arithmetic
// of the kernels and rejects plausible mistakes.
func TestSoftmaxTolerance(t *testing.T) {
	f := rowtest.Family(t, "softmax_bwd")
	for _, dt := range f.DTypes() {
		for _, sp := range []string{"m=64,n=512", "m=16,n=37", "m=4,n=1", "m=2,n=20000", "m=256,n=64"} {
			s := rowtest.Shape(t, f, sp, dt)
			m, n := s.Get("m"), s.Get("n")
			in := f.Inputs(s, 1)
			ref := f.Reference(s, in)["dx"]
			tol := f.Tolerance(s, "dx")
			for _, tree := range []bool{false, true} {
				got := softmaxModel(in["y"], in["dy"], m, n, dt, tree)
				if a, r, bad := tol.Check(got, ref); bad >= 0 {
					t.Errorf("%s (tree %v): tolerance %+v rejects the f32 model at %d: %g, want %g", s.Key(), tree, tol, bad, got[bad], ref[bad])
				} else if tree {
					t.Logf("%s: tolerance %+v; model within %.2g abs, %.2g rel", s.Key(), tol, a, r)
				}
			}
			if n == 1 {
				continue
			}
			dots := make([]float64, m)
			for i := range ref {
				dots[i/n] += in["y"][i] * in["dy"][i]
			}
			last := func(r int) float64 { return in["y"][(r+1)*n-1] * in["dy"][(r+1)*n-1] }
			wrong := map[string]func(i, r int) float64{
				"y·dy (no row sum)":    func(i, r int) float64 { return in["y"][i] * in["dy"][i] },
				"dy − Σ (no y factor)": func(i, r int) float64 { return in["dy"][i] - dots[r] },
				"the row sum without its last term": func(i, r int) float64 {
					return in["y"][i] * (in["dy"][i] - dots[r] + last(r))
				},
			}
			refMax := 0.0
			for _, v := range ref {
				refMax = math.Max(refMax, math.Abs(v))
			}
			for what, w := range wrong {
				got := make([]float64, m*n)
				diff := 0.0
				for i := range got {
					got[i] = w(i, i/n)
					diff = math.Max(diff, math.Abs(got[i]-ref[i]))
					got[i] = dt.Round(got[i])
				}
				if diff < 4*dt.Epsilon()*refMax {
					continue // below what dt can show
				}
				if _, _, bad := tol.Check(got, ref); bad < 0 {
					t.Errorf("%s: tolerance %+v accepts %s", s.Key(), tol, what)
				}
			}
			// The largest element off by 4 ulp of dt (2^-11 relative in f32).
			big := 0
			for i := range ref {
				if math.Abs(ref[i]) > math.Abs(ref[big]) {
					big = i
				}
			}
			got := append([]float64(nil), ref...)
			got[big] = rowtest.PerturbULP(ref[big], 4, dt)
			if dt == dtype.F32 {
				got[big] = ref[big] * (1 + 0x1p-11)
			}
			if _, _, bad := tol.Check(got, ref); bad != big {
				t.Errorf("%s: tolerance %+v accepts %g for %g", s.Key(), tol, got[big], ref[big])
			}
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden pins softmax_bwd programs in testdata/: the model shape's H200
// winners in f32 and bf16, an odd shape stashed in shared memory, and a
// row of several tiles.
var golden = []pin{
	{"softmax_bwd", "f32", "m=24576,n=512", "vec=4,vpt=4,rows=4,rpg=1,unroll=1,prefetch=0,store=regs,maxnreg=0"},
	{"softmax_bwd", "bf16", "m=24576,n=512", "vec=8,vpt=2,rows=4,rpg=4,unroll=1,prefetch=1,store=regs,maxnreg=0"},
	{"softmax_bwd", "bf16", "m=3,n=37", "vec=1,vpt=2,rows=2,rpg=2,unroll=1,store=smem,maxnreg=0"},
	{"softmax_bwd", "f16", "m=2,n=20000", "vec=8,vpt=1,rows=1,rpg=1,unroll=1,store=reread,maxnreg=0"},
}

// pin is a rowtest.Golden, spelled unkeyed.
type pin struct{ Family, DType, Shape, Params string }

func TestGoldenPTX(t *testing.T) {
	for _, g := range golden {
		ptxtest.Golden(t, *update, rowtest.Golden(g).File(), rowtest.Golden(g).Text(t))
	}
}

// TestSoftmaxProgramBuffers: softmax programs need no buffers of their
// own.
func TestSoftmaxProgramBuffers(t *testing.T) {
	for _, v := range rowtest.EmitAll(t, "softmax_bwd") {
		if len(v.Prog.Buffers) != 0 {
			t.Fatalf("%v: program buffers %v", v, v.Prog.Buffers)
		}
	}
}
