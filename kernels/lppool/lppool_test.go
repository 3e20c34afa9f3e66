package lppool

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/sweep"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// lpBench is the benchmark shape of issue 4.
const lpBench = "n=32,c=256,l=4096,window=4,stride=2,p=2"

// lpOddShapes exercise the guards: rows that are no multiple of a unit,
// ceil mode with a clipped last window, overlap, gaps, a single row, a
// window longer than the row, fractional and small p.
var lpOddShapes = []string{
	"n=3,c=5,l=1001,window=4,stride=2,p=2,ceil=1",
	"n=1,c=7,l=37,window=5,stride=3,p=1.5,ceil=1",
	"n=2,c=3,l=29,window=2,stride=3,p=3",
	"n=1,c=1,l=3,window=4,stride=2,p=0.5,ceil=1",
	"n=2,c=2,l=64,window=3,stride=1,p=1",
}

// fam is the family as commands and runners see it.
var fam = Families()[0]

// parseShape turns spec into the family's canonical shape and its typed
// form, or says why the family refuses it.
func parseShape(spec string, dt dtype.DType) (variants.Shape, Shape, error) {
	sp, err := variants.ParseSpecs(spec)
	if err != nil {
		return variants.Shape{}, Shape{}, err
	}
	s, err := fam.Shape(sp[0], dt)
	if err != nil {
		return variants.Shape{}, Shape{}, err
	}
	v, err := variants.DecodeShape[Shape](s.Dims, s.DType)
	return s, v, err
}

func lpShape(t testing.TB, spec string, dt dtype.DType) variants.Shape {
	t.Helper()
	s, _, err := parseShape(spec, dt)
	if err != nil {
		t.Fatalf("%s %v: %v", spec, dt, err)
	}
	return s
}

func lpGeom(t testing.TB, spec string, dt dtype.DType) geom {
	t.Helper()
	_, v, err := parseShape(spec, dt)
	if err != nil {
		t.Fatalf("%s %v: %v", spec, dt, err)
	}
	return geomOf(v)
}

func TestOutLen(t *testing.T) {
	// Values of PyTorch's pooling_output_shape (padding 0, dilation 1).
	cases := []struct {
		l, k, s int
		ceil    bool
		want    int
	}{
		{4096, 4, 2, false, 2047}, {4096, 4, 2, true, 2047},
		{5, 2, 2, false, 2}, {5, 2, 2, true, 3},
		{5, 3, 2, false, 2}, {5, 3, 2, true, 2},
		{11, 4, 3, false, 3}, {11, 4, 3, true, 4},
		{3, 4, 2, false, 0}, {3, 4, 2, true, 1},
		{4, 1, 4, false, 1}, {4, 1, 4, true, 1}, // ceil: 2, less the window starting at 4 ≥ L
		{29, 2, 3, false, 10}, {29, 2, 3, true, 10},
		{1, 4, 2, true, 0},
	}
	for _, c := range cases {
		if got := outLen(c.l, c.k, c.s, c.ceil); got != c.want {
			t.Errorf("outLen(l=%d, k=%d, s=%d, ceil=%v) = %d, want %d", c.l, c.k, c.s, c.ceil, got, c.want)
		}
	}
}

func TestShape(t *testing.T) {
	s := lpShape(t, lpBench, dtype.F32)
	if s.Key() != "n=32,c=256,l=4096,window=4,stride=2,p=2,dtype=f32" {
		t.Errorf("Key = %q", s.Key())
	}
	g := lpGeom(t, lpBench, dtype.F32)
	if g.rows != 8192 || g.lout != 2047 || g.lastC != 4 || g.p != 2 || g.partial() {
		t.Errorf("geometry %+v", g)
	}
	const ceilSpec = "n=1,c=2,l=10,window=3,p=1.5,ceil=1"
	if s := lpShape(t, ceilSpec, dtype.BF16); s.Key() != "n=1,c=2,l=10,window=3,stride=3,p=1.5,ceil=1,dtype=bf16" {
		t.Errorf("stride default / ceil: Key = %q", s.Key())
	} else if g := lpGeom(t, ceilSpec, dtype.BF16); g.lout != 4 || g.lastC != 1 || !g.partial() {
		t.Errorf("ceil geometry %+v", g)
	}
	if s := lpShape(t, "n=1,c=2,l=10,window=3,p=1.5,ceil=0", dtype.BF16); s.Key() != "n=1,c=2,l=10,window=3,stride=3,p=1.5,dtype=bf16" {
		t.Errorf("ceil=0 (floor mode, the default): Key = %q", s.Key())
	}
	bad := map[string]string{
		"n=1,c=1,l=8,window=2":                    "takes n=N,c=C,l=L,window=WINDOW,stride=STRIDE (optional),p=P,ceil=CEIL (optional, default 0)",
		"n=1,c=1,l=8,window=2,p=0":                "p=0 is not positive",
		"n=1,c=1,l=8.5,window=2,p=2":              "l=8.5 is not an integer",
		"n=1,c=1,l=8,window=2,p=2,m=3":            "takes n=N",
		"n=1,c=1,l=8,window=2,p=2,ceil=2":         "ceil=2",
		"n=1,c=1,l=3,window=4,p=2":                "no output",
		"n=1,c=1,l=8,window=65,p=2":               "window=65",
		"n=1,c=1,l=8,window=2,p=0.2":              "p=0.2",
		"n=1,c=1,l=8,window=2,p=17":               "p=17",
		"n=65536,c=65536,l=8,window=2,p=2":        "elements",
		"n=1,c=1,l=8,window=2,stride=100,p=2":     "stride=100",
		"n=1,c=1,l=64,window=64,p=0.25,dtype=f16": "f16 cannot hold y",
	}
	for spec, want := range bad {
		sp, err := variants.ParseSpecs(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		dt := dtype.F32
		if sp[0].DType != dtype.Invalid {
			dt = sp[0].DType
		}
		if _, err := fam.Shape(sp[0], dt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Shape(%s) error = %v, want one containing %q", spec, err, want)
		}
	}
	sp, _ := variants.ParseSpecs("n=1,c=1,l=8,window=2,p=1.5")
	if _, err := fam.Shape(sp[0], dtype.F64); err == nil || !strings.Contains(err.Error(), "integer p") {
		t.Errorf("f64 with p=1.5: %v", err)
	}
	p, _ := variants.LookupPreset("qwen1.5b", 0)
	if sh := fam.Shapes(p, []dtype.DType{dtype.F32, dtype.BF16}); len(sh) != 2 || sh[1].Key() != lpBench+",dtype=bf16" {
		t.Errorf("Shapes = %v", sh)
	}
}

// lpTorchForward is PyTorch's lp_pool1d written out step by step:
// avg_pool1d(x.pow(p)) with the clipped divisor, sign·relu(abs), ·k,
// pow(1/p). x.pow(p) is signed, as in PyTorch.
func lpTorchForward(g geom, x []float64) (out, z, y []float64) {
	out = make([]float64, g.rows*g.lout)
	z = make([]float64, len(out))
	y = make([]float64, len(out))
	for r := 0; r < g.rows; r++ {
		for w := 0; w < g.lout; w++ {
			start, end := w*g.s, min(w*g.s+g.k, g.l) // pool_size with padding 0
			var sum float64
			for i := start; i < end; i++ {
				sum += math.Pow(x[r*g.l+i], g.p)
			}
			o := sum / float64(end-start)
			sign := 0.0
			if o > 0 {
				sign = 1
			} else if o < 0 {
				sign = -1
			}
			out[r*g.lout+w] = o
			z[r*g.lout+w] = sign * math.Max(math.Abs(o), 0) * float64(g.k)
			y[r*g.lout+w] = math.Pow(z[r*g.lout+w], 1/g.p)
		}
	}
	return out, z, y
}

// lpTorchBackward is PyTorch's autograd through lpTorchForward: pow
// backward (1/p)·z^(1/p−1), mul by k, mul by sign(out), relu backward
// (threshold_backward: 0 where relu(|out|) ≤ 0), abs backward sgn(out),
// avg_pool backward /c, pow backward p·x^(p−1).
func lpTorchBackward(g geom, x, dy []float64) []float64 {
	out, z, _ := lpTorchForward(g, x)
	dx := make([]float64, len(x))
	for r := 0; r < g.rows; r++ {
		for w := 0; w < g.lout; w++ {
			o := out[r*g.lout+w]
			gz := dy[r*g.lout+w] * (1 / g.p) * math.Pow(z[r*g.lout+w], 1/g.p-1)
			gm := gz * float64(g.k)
			sign := math.Copysign(1, o)
			if o == 0 {
				sign = 0
			}
			grelu := gm * sign
			if math.Abs(o) <= 0 {
				grelu = 0
			}
			gout := grelu * sign
			start, end := w*g.s, min(w*g.s+g.k, g.l)
			for i := start; i < end; i++ {
				xi := x[r*g.l+i]
				dx[r*g.l+i] += gout / float64(end-start) * g.p * math.Pow(xi, g.p-1)
			}
		}
	}
	return dx
}

// lpRandX returns x in [−2, 2] with |x| ≥ 0.25 and every 7th element 0,
// and the whole first window of row 0 zero.
func lpRandX(g geom, seed uint64, nonneg bool) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, g.rows*g.l)
	for i := range x {
		v := 0.25 + 1.75*r.Float64()
		if !nonneg && r.IntN(2) == 0 {
			v = -v
		}
		x[i] = v
		if i%7 == 3 {
			x[i] = 0
		}
	}
	for i := 0; i < min(g.k, g.l); i++ {
		x[i] = 0
	}
	return x
}

func lpRandDy(g geom, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 11))
	dy := make([]float64, g.rows*g.lout)
	for i := range dy {
		dy[i] = 2*r.Float64() - 1
	}
	return dy
}

func lpClose(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

// TestMatchesTorch checks the forward against PyTorch's formula and,
// for p = 2 (and any p with x ≥ 0), the backward against PyTorch's
// autograd chain, zero windows and zero elements included. For p = 1 with
// signed x PyTorch computes sum pooling instead; that is shown, not
// matched.
func TestMatchesTorch(t *testing.T) {
	for _, spec := range []string{"n=1,c=2,l=13,window=4,stride=2,p=2,ceil=1", "n=1,c=1,l=11,window=3,stride=3,p=2,ceil=1",
		"n=1,c=2,l=12,window=2,stride=3,p=3", "n=1,c=2,l=13,window=4,stride=2,p=1.5,ceil=1", "n=1,c=2,l=13,window=4,stride=1,p=1"} {
		g := lpGeom(t, spec, dtype.F32)
		for _, nonneg := range []bool{true, false} {
			if !nonneg && g.p != 2 {
				continue
			}
			x := lpRandX(g, 1, nonneg)
			dy := lpRandDy(g, 2)
			_, _, yt := lpTorchForward(g, x)
			y := forward(g, x)
			for i := range y {
				if !lpClose(y[i], yt[i], 1e-13) {
					t.Errorf("%s nonneg=%v: y[%d] = %g, PyTorch's formula %g", spec, nonneg, i, y[i], yt[i])
				}
			}
			dx := backward(g, x, dy, y)
			dxt := lpTorchBackward(g, x, dy)
			for i := range dx {
				if g.p == 1 && x[i] == 0 {
					continue // PyTorch: x⁰ = 1; the LP norm's subgradient: 0
				}
				if !lpClose(dx[i], dxt[i], 1e-12) {
					t.Errorf("%s nonneg=%v: dx[%d] = %g, PyTorch's autograd %g (x %g)", spec, nonneg, i, dx[i], dxt[i], x[i])
				}
			}
		}
	}
	// p = 1 with a negative element: PyTorch sums signed values.
	g := lpGeom(t, "n=1,c=1,l=4,window=4,p=1", dtype.F64)
	_, _, yt := lpTorchForward(g, []float64{1, -1, 1, 1})
	if y := forward(g, []float64{1, -1, 1, 1}); y[0] != 4 || yt[0] != 2 {
		t.Errorf("p=1: LP norm %v, PyTorch's sum pooling %v; want 4 and 2", y, yt)
	}
}

// TestReferenceFiniteDifferences checks the reference backward
// against central differences of the float64 forward: dx_i must be
// ∂/∂x_i Σ_w dy_w·y_w(x), in floor and ceil mode, with overlapping
// windows, gaps, a window longer than the row, and p = 1, 2, 3, 1.5, 0.5.
// Zero elements and an all-zero window are included: the forward depends
// on x_i only through |x_i|, so the central difference there is exactly
// 0, the convention of the reference.
func TestReferenceFiniteDifferences(t *testing.T) {
	geoms := []string{
		"l=13,window=4,stride=2", "l=13,window=4,stride=2,ceil=1", "l=14,window=3,stride=1",
		"l=14,window=2,stride=3", "l=15,window=2,stride=3,ceil=1", "l=11,window=4,stride=3,ceil=1",
		"l=10,window=5,stride=5,ceil=1", "l=3,window=4,stride=2,ceil=1",
	}
	for _, gs := range geoms {
		for _, p := range []string{"1", "2", "3", "1.5", "0.5"} {
			spec := "n=1,c=2," + gs + ",p=" + p
			g := lpGeom(t, spec, dtype.F32)
			x := lpRandX(g, 3, false)
			dy := lpRandDy(g, 4)
			dx := backward(g, x, dy, forward(g, x))
			loss := func(x []float64) float64 {
				var l float64
				for i, v := range forward(g, x) {
					l += dy[i] * v
				}
				return l
			}
			const h = 1e-6
			xp := append([]float64(nil), x...)
			for i := range x {
				xp[i] = x[i] + h
				up := loss(xp)
				xp[i] = x[i] - h
				down := loss(xp)
				xp[i] = x[i]
				fd := (up - down) / (2 * h)
				if !lpClose(dx[i], fd, 1e-6) {
					t.Errorf("%s: dx[%d] = %.10g, central difference %.10g (x %g)", spec, i, dx[i], fd, x[i])
				}
			}
		}
	}
}

// lpTerm is the float64 value of one (element, window) term the kernels
// compute, with their edge cases: windows with y = 0 (and slots that are
// no window, loaded as dy = y = 0) give 0, x = 0 gives 0.
func lpTerm(g geom, x, dy, y float64, last bool) float64 {
	if y == 0 || x == 0 {
		return 0
	}
	if last {
		dy *= float64(g.k) / float64(g.lastC)
	}
	return dy * math.Copysign(math.Pow(math.Abs(x)/y, g.p-1), x)
}

// lpSimGather runs a gather plan in float64, checking each guard against
// the geometry it stands for.
func lpSimGather(t *testing.T, g geom, pl gatherPlan, x, dy, y []float64) []float64 {
	dx := make([]float64, len(x))
	writes := make([]int, len(x))
	for r := 0; r < g.rows; r++ {
		for q := 0; q < pl.U; q++ {
			wins := make([]struct {
				dy, y float64
				last  bool
			}, pl.nw)
			for d := range wins {
				w := q*pl.G - pl.back + d
				ok := q >= pl.loQ[d] && (pl.hiQ[d] < 0 || q < pl.hiQ[d])
				if ok != (w >= 0 && w < g.lout) {
					t.Fatalf("gather G=%d q=%d slot %d: guard says %v for window %d of %d", pl.G, q, d, ok, w, g.lout)
				}
				last := pl.lastQ[d] >= 0 && q == pl.lastQ[d]
				if last != (ok && w == g.lout-1 && g.partial()) {
					t.Fatalf("gather G=%d q=%d slot %d: last = %v for window %d", pl.G, q, d, last, w)
				}
				if ok {
					wins[d].dy, wins[d].y, wins[d].last = dy[r*g.lout+w], y[r*g.lout+w], last
				}
			}
			for e := 0; e < pl.E; e++ {
				v := e / pl.V
				in := pl.tailQ[v] < 0 || q < pl.tailQ[v]
				i := q*pl.E + e
				if in != (i < g.l) {
					t.Fatalf("gather G=%d V=%d q=%d element %d: tail guard says %v, L=%d", pl.G, pl.V, q, e, in, g.l)
				}
				if !in {
					continue
				}
				var sum float64
				for _, d := range pl.cover[e] {
					sum += lpTerm(g, x[r*g.l+i], wins[d].dy, wins[d].y, wins[d].last)
				}
				dx[r*g.l+i] = sum
				writes[r*g.l+i]++
			}
		}
	}
	for i, n := range writes {
		if n != 1 {
			t.Fatalf("gather G=%d: element %d written %d times", pl.G, i, n)
		}
	}
	return dx
}

// lpSimScatter runs a scatter plan in float64: adds for shared elements,
// plain stores for exclusive ones when edges is set (checking that no
// other group writes them).
func lpSimScatter(t *testing.T, g geom, pl scatterPlan, edges bool, x, dy, y []float64) []float64 {
	dx := make([]float64, len(x))
	writers := make([]int, len(x))
	stored := make([]bool, len(x))
	for r := 0; r < g.rows; r++ {
		for q := 0; q < pl.WG; q++ {
			for e := 0; e < pl.span; e++ {
				if len(pl.cover[e]) == 0 {
					continue
				}
				i := q*pl.G*g.s + e
				in := pl.elemHiQ[e] < 0 || q < pl.elemHiQ[e]
				if in != (i < g.l) {
					t.Fatalf("scatter G=%d q=%d element %d: guard says %v, L=%d", pl.G, q, e, in, g.l)
				}
				if !in {
					continue
				}
				var sum float64
				for _, j := range pl.cover[e] {
					w := q*pl.G + j
					ok := pl.winHiQ[j] < 0 || q < pl.winHiQ[j]
					if ok != (w < g.lout) {
						t.Fatalf("scatter G=%d q=%d slot %d: guard says %v for window %d of %d", pl.G, q, j, ok, w, g.lout)
					}
					last := pl.lastQ[j] >= 0 && q == pl.lastQ[j]
					if last != (w == g.lout-1 && g.partial()) {
						t.Fatalf("scatter G=%d q=%d slot %d: last = %v for window %d", pl.G, q, j, last, w)
					}
					if ok {
						sum += lpTerm(g, x[r*g.l+i], dy[r*g.lout+w], y[r*g.lout+w], last)
					}
				}
				k := r*g.l + i
				writers[k]++
				if edges && pl.excl[e] {
					dx[k] = sum
					stored[k] = true
				} else {
					dx[k] += sum
				}
			}
		}
	}
	for i := range dx {
		if stored[i] && writers[i] != 1 {
			t.Fatalf("scatter G=%d: element %d is stored plainly but written by %d groups", pl.G, i, writers[i])
		}
	}
	return dx
}

// TestPlans runs every gather and scatter plan of many geometries in
// float64 and compares it with the reference: the window slots, coverage
// tables and guards that the kernels are generated from.
func TestPlans(t *testing.T) {
	var specs []string
	for _, l := range []int{1, 2, 3, 7, 16, 29} {
		for _, k := range []int{1, 2, 3, 4, 7} {
			for _, s := range []int{1, 2, 3, 5} {
				for _, c := range []string{"", ",ceil=1"} {
					specs = append(specs, fmt.Sprintf("n=1,c=3,l=%d,window=%d,stride=%d,p=1.5%s", l, k, s, c))
				}
			}
		}
	}
	specs = append(specs, lpOddShapes...)
	checked := 0
	for _, spec := range specs {
		_, s, err := parseShape(spec, dtype.F64)
		if err != nil {
			_, s, err = parseShape(spec, dtype.F32)
		}
		if err != nil {
			continue // no output
		}
		g := geomOf(s)
		x := lpRandX(g, 5, false)
		dy := lpRandDy(g, 6)
		y := forward(g, x)
		ref := backward(g, x, dy, y)
		cmp := func(what string, got []float64) {
			for i := range ref {
				if !lpClose(got[i], ref[i], 1e-12) {
					t.Fatalf("%s %s: dx[%d] = %g, reference %g", spec, what, i, got[i], ref[i])
				}
			}
		}
		for _, G := range []int{1, 2, 4} {
			for _, V := range []int{1, 2, 4, 8} {
				if (G*g.s)%V != 0 || g.l%V != 0 {
					continue
				}
				cmp(fmt.Sprintf("gather spt=%d vec=%d", G, V), lpSimGather(t, g, newGatherPlan(g, G, V), x, dy, y))
			}
			pl := newScatterPlan(g, G)
			cmp(fmt.Sprintf("scatter spt=%d", G), lpSimScatter(t, g, pl, false, x, dy, y))
			cmp(fmt.Sprintf("scatter_edges spt=%d", G), lpSimScatter(t, g, pl, true, x, dy, y))
		}
		checked++
	}
	if checked < 100 {
		t.Errorf("only %d geometries checked", checked)
	}
}

func TestInputsAndCost(t *testing.T) {
	for _, dt := range fam.DTypes() {
		for _, spec := range append([]string{"n=2,c=3,l=40,window=4,stride=2,p=2"}, lpOddShapes...) {
			s, v, err := parseShape(spec, dt)
			if err != nil {
				continue // f64 with fractional p
			}
			g := geomOf(v)
			in := fam.Inputs(s, 1)
			again := fam.Inputs(s, 1)
			for _, b := range fam.Buffers(s) {
				if b.Role != kernels.Input {
					continue
				}
				if len(in[b.Name]) != kernels.Elems(b, s) {
					t.Fatalf("%s %v: input %s has %d values for %d elements", spec, dt, b.Name, len(in[b.Name]), kernels.Elems(b, s))
				}
				for i, v := range in[b.Name] {
					if v != again[b.Name][i] || v != dt.Round(v) || math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("%s %v: %s[%d] = %g (again %g) not reproducible, finite and of the dtype", spec, dt, b.Name, i, v, again[b.Name][i])
					}
				}
			}
			if g.rows > 1 && in["y"][g.lout] != 0 {
				t.Errorf("%s %v: the zero window of row 1 has y = %g", spec, dt, in["y"][g.lout])
			}
			ref := fam.Reference(s, in)["dx"]
			for i, v := range ref {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s %v: reference dx[%d] = %g", spec, dt, i, v)
				}
			}
			tol := fam.Tolerance(s, "dx")
			if tol.Atol <= 0 || tol.Rtol <= 0 {
				t.Errorf("%s %v: tolerance %+v", spec, dt, tol)
			}
		}
	}
	s := lpShape(t, lpBench, dtype.F32)
	// x 134 MB + dy 67 MB + y 67 MB + dx 134 MB.
	if c := fam.Cost(s); c.Bytes != 2*8192*4096*4+2*8192*2047*4 {
		t.Errorf("Cost = %+v", c)
	}
}

// TestBuffers checks that the shape's buffers are its data alone, sized
// by the runtime batch dim n, and that exactly the scatter variants of
// 16-bit dtypes declare their f32 accumulator, one element per x element,
// as scratch.
func TestBuffers(t *testing.T) {
	const spec = "n=2,c=3,l=40,window=4,stride=2,p=2"
	for _, dt := range fam.DTypes() {
		s := lpShape(t, spec, dt)
		var names []string
		for _, b := range fam.Buffers(s) {
			names = append(names, fmt.Sprintf("%s:%v:%v:%v=%d", b.Name, b.DType, b.Role, b.Elems, kernels.Elems(b, s)))
		}
		want := fmt.Sprintf("x:%[1]v:input:n*120=240 dy:%[1]v:input:n*57=114 y:%[1]v:input:n*57=114 dx:%[1]v:output:n*120=240", dt)
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%v: Buffers %s, want %s", dt, got, want)
		}
		for _, form := range []Form{Gather, Scatter, ScatterEdges} {
			p := Params{Form: form, SPT: 1, Vec: 1, EPT: 1, Block: 128, Pow: PowMul}
			prog, err := fam.Emit(s, variants.Encode(p))
			if err != nil {
				t.Fatalf("%v %s: %v", dt, form, err)
			}
			wantAcc := form != Gather && dt.Size() == 2
			acc := []kernels.Buffer{{Name: "acc", DType: dtype.F32, Elems: configs.Var("n").TimesInt(120), Role: kernels.Scratch}}
			if got := prog.Buffers; wantAcc && fmt.Sprint(got) != fmt.Sprint(acc) || !wantAcc && len(got) != 0 {
				t.Errorf("%v %s: program buffers %+v, want the accumulator: %v", dt, form, got, wantAcc)
			}
		}
	}
}

// TestSpace checks the axes of the benchmark shape and that
// constraints leave vector widths that fit.
func TestSpace(t *testing.T) {
	want := map[dtype.DType]int{dtype.F32: 504, dtype.BF16: 540, dtype.F16: 540, dtype.F64: 216}
	for dt, n := range want {
		sp := fam.Space(lpShape(t, lpBench, dt))
		if got := len(sp.Enumerate()); got != n {
			t.Errorf("%v: %d variants, want %d", dt, got, n)
		}
	}
	if a, _ := fam.Space(lpShape(t, "n=1,c=1,l=8,window=2,p=1.5", dtype.F32)).Axis("pow"); strings.Join(a.Values, ",") != "exp2" {
		t.Errorf("p=1.5 pow axis %v", a.Values)
	}
	if a, _ := fam.Space(lpShape(t, "n=1,c=1,l=8,window=2,p=1", dtype.F32)).Axis("pow"); strings.Join(a.Values, ",") != "mul" {
		t.Errorf("p=1 pow axis %v", a.Values)
	}
	for _, p := range fam.Space(lpShape(t, "n=1,c=1,l=37,window=5,stride=3,p=2", dtype.F32)).Enumerate() {
		if p["vec"] != "1" {
			t.Errorf("odd row accepts %v", p)
		}
	}
	s := lpShape(t, lpBench, dtype.F32)
	if _, err := fam.Emit(s, variants.Params{"form": "gather"}); err == nil {
		t.Error("Emit accepted incomplete params")
	}
	scalar := variants.Encode(Params{Form: Scatter, SPT: 1, Vec: 2, EPT: 1, Block: 128, Pow: PowMul})
	if err := fam.Space(s).Check(scalar); err == nil || !strings.Contains(err.Error(), "moves scalars") {
		t.Errorf("scatter with vec=2: %v", err)
	}
}

// TestSpaceOrder pins the axes in enumeration order (the last
// varies fastest; --budget picks by it) and the first and last variants.
func TestSpaceOrder(t *testing.T) {
	if got := strings.Join(variants.AxisNames[Params](), ","); got != "form,spt,vec,ept,block,pow,maxnreg" {
		t.Errorf("axes %s", got)
	}
	ps := fam.Space(lpShape(t, lpBench, dtype.F32)).Enumerate()
	first := Params{Form: Gather, SPT: 1, Vec: 1, EPT: 1, Block: 128, Pow: PowMul}
	second := first
	second.MaxNReg = 32
	last := Params{Form: ScatterEdges, SPT: 4, Vec: 1, EPT: 4, Block: 256, Pow: PowExp2, MaxNReg: 64}
	for i, want := range map[int]Params{0: first, 1: second, len(ps) - 1: last} {
		if got, err := variants.Decode[Params](ps[i]); err != nil || got != want {
			t.Errorf("variant %d: %v (%v), want %+v", i, ps[i], err, want)
		}
	}
}

type lpVariant struct {
	shape  variants.Shape
	geom   geom
	params Params
	key    variants.Params
}

var (
	lpVariantsOnce sync.Once
	lpVariants     []lpVariant
	lpVariantsErr  error
	lpPrograms     sync.Map // "shape params" → kernels.Program
)

// lpAllVariants lists every variant of the benchmark shape and the odd
// shapes in every dtype, once for all tests; lpProgram emits them.
func lpAllVariants(t *testing.T) []lpVariant {
	t.Helper()
	lpVariantsOnce.Do(func() { lpVariants, lpVariantsErr = lpListAll() })
	if lpVariantsErr != nil {
		t.Fatal(lpVariantsErr)
	}
	return lpVariants
}

func lpListAll() ([]lpVariant, error) {
	var out []lpVariant
	for _, dt := range fam.DTypes() {
		for _, spec := range append([]string{lpBench}, lpOddShapes...) {
			s, v, err := parseShape(spec, dt)
			if err != nil {
				if dt == dtype.F64 && strings.Contains(err.Error(), "integer p") {
					continue
				}
				return nil, fmt.Errorf("%s %v: %w", spec, dt, err)
			}
			ps := fam.Space(s).Enumerate()
			if len(ps) == 0 {
				return nil, fmt.Errorf("%s: empty space", s.Key())
			}
			for _, p := range ps {
				pv, err := variants.Decode[Params](p)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", s.Key(), p, err)
				}
				out = append(out, lpVariant{s, geomOf(v), pv, p})
			}
		}
	}
	return out, nil
}

// lpProgram is v's program, emitted once for all tests.
func lpProgram(t *testing.T, v lpVariant) kernels.Program {
	t.Helper()
	key := v.shape.Key() + " " + v.key.String()
	if prog, ok := lpPrograms.Load(key); ok {
		return prog.(kernels.Program)
	}
	prog, err := fam.Emit(v.shape, v.key)
	if err != nil {
		t.Fatalf("%s %s: %v", v.shape.Key(), v.key, err)
	}
	lpPrograms.Store(key, prog)
	return prog
}

// lpSample is the variants of all that TestPrograms checks: sweep.Pick
// of one in 4 of each shape's (every axis value of its space, then one
// in 16; all with GRADTUNE_SWEEP=ci or full), in all's order.
func lpSample(all []lpVariant) []lpVariant {
	var groups [][]variants.Params
	var members [][]lpVariant
	for i, v := range all {
		if i == 0 || v.shape.Key() != all[i-1].shape.Key() {
			groups, members = append(groups, nil), append(members, nil)
		}
		g := len(groups) - 1
		groups[g], members[g] = append(groups[g], v.key), append(members[g], v)
	}
	var out []lpVariant
	for g, points := range groups {
		j := 0
		for _, p := range sweep.Pick(points, 4) { // in the group's order
			for members[g][j].key.String() != p.String() {
				j++
			}
			out = append(out, members[g][j])
		}
	}
	return out
}

// TestPrograms checks the launches of the variants (lpSample: every axis
// value of each shape's space, then one in 16; every variant with
// GRADTUNE_SWEEP=ci or full): entries that exist in the module,
// arguments that name buffers of the shape or the program and end with
// the batch dim n, the zeroing launch first for scatter, grids that cover
// the work, and gather kernels of the benchmark shape that need no guard
// at any n and so never read it.
func TestPrograms(t *testing.T) {
	bench := map[string]bool{}
	for _, dt := range fam.DTypes() {
		bench[lpShape(t, lpBench, dt).Key()] = true
	}
	all := lpAllVariants(t)
	sample := lpSample(all)
	t.Logf("%d of %d variants", len(sample), len(all))
	for _, v := range sample {
		prog := lpProgram(t, v)
		bufs := map[string]bool{}
		for _, b := range append(fam.Buffers(v.shape), prog.Buffers...) {
			bufs[b.Name] = true
		}
		want := 1
		if v.params.Form != Gather {
			want = 2
			if v.shape.DType.Size() == 2 {
				want = 3
			}
		}
		if len(prog.Launches) != want {
			t.Fatalf("%s %s: %d launches, want %d", v.shape.Key(), v.key, len(prog.Launches), want)
		}
		plan, err := kernels.PlanAt(fam, v.shape, prog, 132)
		if err != nil {
			t.Fatalf("%s %s: %v", v.shape.Key(), v.key, err)
		}
		for _, l := range plan.Launches {
			if !strings.Contains(prog.PTX, ".visible .entry "+l.Entry+"(") {
				t.Fatalf("%s %s: launch %s has no kernel", v.shape.Key(), v.key, l.Entry)
			}
			if l.Grid[0] < 1 || l.Block[0] < 1 || l.SharedBytes != 0 {
				t.Fatalf("%s %s: launch %+v", v.shape.Key(), v.key, l)
			}
			if last := l.Args[len(l.Args)-1]; last.Kind != configs.ScalarArg || last.Type != configs.U32 || last.Scalar != uint64(v.shape.Get("n")) {
				t.Fatalf("%s %s: launch %s ends with %+v, not the batch dim n", v.shape.Key(), v.key, l.Entry, last)
			}
			for _, a := range l.Args[:len(l.Args)-1] {
				if !bufs[a.Buffer] {
					t.Fatalf("%s %s: launch %s names buffer %q", v.shape.Key(), v.key, l.Entry, a.Buffer)
				}
			}
		}
		if bench[v.shape.Key()] && v.params.Form == Gather && strings.Contains(prog.PTX, "ld.param.u32") {
			t.Fatalf("%s %s: reads n, though every n fills every chunk of the benchmark shape", v.shape.Key(), v.key)
		}
		if want > 1 && !strings.HasSuffix(prog.Launches[0].Entry, "_zero") {
			t.Fatalf("%s %s: scatter does not zero first", v.shape.Key(), v.key)
		}
		g := v.geom
		l := plan.Launches[min(1, want-1)]
		work := g.rows * ceilDiv(g.l, v.params.SPT*g.s)
		if want > 1 {
			work = g.rows * ceilDiv(g.lout, v.params.SPT)
		}
		if n := l.Grid[0] * l.Block[0] * v.params.EPT; n < work || n-work >= l.Block[0]*v.params.EPT {
			t.Fatalf("%s %s: grid %d × %d × %d for %d units", v.shape.Key(), v.key, l.Grid[0], l.Block[0], v.params.EPT, work)
		}
	}
}
