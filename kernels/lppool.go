package kernels

import (
	"fmt"
	"math"
	"strings"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// lp_pool1d_bwd: the backward of PyTorch's torch.nn.functional.lp_pool1d
// over x of shape [N, C, L], pooling along L.
//
// # Forward, as PyTorch computes it
//
// torch/nn/functional.py (lp_pool1d) computes
//
//	out = avg_pool1d(x.pow(p), k, stride, 0, ceil_mode)
//	y   = (sign(out) * relu(abs(out))).mul(k).pow(1/p)
//
// and avg_pool1d (ATen avg_pool2d with padding 0 and count_include_pad,
// aten/src/ATen/native/cuda/AveragePool2d.cu) divides window w by its size
// clipped to the input, c_w = min(k, L − w·s): with padding 0 the
// "pool_size" of count_include_pad is the clipped window. The output length
// is pooling_output_shape (aten/src/ATen/native/Pool.h):
//
//	Lout = floor((L − k + (ceil ? s−1 : 0)) / s) + 1, and in ceil mode one
//	less when (Lout−1)·s ≥ L (the last window must start inside the row).
//
// Only the last window can be clipped (ceil mode). So
//
//	y_w = ((k/c_w) · Σ_{i∈w} |x_i|^p)^(1/p)
//
// sign·relu(abs(out)) equals out; it only zeroes the gradient where out = 0.
// This family uses |x|^p where PyTorch writes x.pow(p): the two agree for
// every even integer p (the benchmark's p = 2) and for x ≥ 0. For odd or
// fractional p with negative x PyTorch raises x signed, which for p = 1 is
// sum pooling and otherwise gives NaN wherever the window sum is negative
// (pow of a negative base to 1/p); the family computes the LP norm that the
// LPPool1d documentation states instead.
//
// # Backward
//
// The derivative of that forward, with g_w = dy_w · k/c_w:
//
//	dx_i = Σ_{w ∋ i} g_w · sgn(x_i) · (|x_i| / y_w)^(p−1)
//	     = Σ_{w ∋ i} g_w · |x_i|^(p−1) · sgn(x_i) · y_w^(1−p)
//
// Edge cases, as PyTorch's autograd gives them where it is finite:
//   - y_w = 0 (as stored): window w contributes 0. PyTorch's relu backward
//     masks the inf·0 there (threshold_backward on relu(|out|) = 0).
//   - x_i = 0: dx_i = 0 for every p (sgn(0) = 0). PyTorch agrees for p > 1
//     (p·0^(p−1) = 0); for p < 1 its pow_backward gives p·0^(p−1) = inf
//     (inf or NaN in dx), which this family clamps to 0; for p = 1 it gives
//     x⁰ = 1 of the signed sum pooling, which the LP norm replaces by the
//     subgradient 0.
//
// The saved output y is an input of the kernel: the runner's inputs compute
// it in float64 from x and round it to the dtype, as a forward pass would
// have stored it.
//
// # Shapes
//
// Dims n, c, l, window, stride (default: window), p (0.25 ≤ p ≤ 16, up to
// three decimals, e.g. p=1.5) and ceil (ceil=1 for ceil_mode; absent for
// floor). window and stride are at most 64, since the kernels unroll the
// windows that cover a thread's elements. f64 needs an integer p: PTX has no
// f64 lg2/ex2, so f64 takes only the multiply form of the power.
//
// # Kernels
//
// gather (deterministic, no atomics): a thread owns a unit of spt·stride
// consecutive elements of one row, starting at a multiple of the stride, so
// which of the unit's windows cover which element is the same for every
// unit and known when the kernel is generated; only the windows and
// vectors at the ends of a row need runtime guards, which compare the
// unit's index in its row against constants. x and dx move in vector
// accesses of vec elements; dy and y (whose rows of odd length Lout are not
// vector-aligned) in scalar loads that neighbouring threads share through
// L1.
//
// scatter: a thread owns spt consecutive windows and adds each covered
// element's contribution into dx with red.global.add (f32, f64). The program
// first zeroes dx with a kernel of its own (the runner times it), so dx
// stays an Output buffer and gather variants pay no zeroing. 16-bit dtypes
// accumulate into an f32 scratch buffer (acc) zeroed the same way and
// convert it to dx in a third launch: PTX's f16x2/bf16x2 atomic adds would
// round every partial sum to 16 bits, and the cancellation of the two
// windows' terms then exceeds the 16-bit tolerance. scatter_edges stores
// the elements no other thread's window touches with plain stores and
// uses atomics only for the k − s elements shared with each neighbour.
//
// pow=mul (integer p, 1 ≤ p ≤ 4 with f32 math, ≤ 16 with f64): per window
// g_w·y_w^(1−p) by multiplies and one reciprocal (rcp.approx.f32, 1 ulp;
// rcp.rn.f64), per element x·|x|^(p−2) (sgn(x) for p = 1; x for p = 2), and
// dx_i = that · Σ_w. y^(p−1) underflows f32 for y < 2^(−126/(p−1)), which
// the inputs never reach. pow=exp2: (|x_i|/y_w)^(p−1) per (element, window)
// pair as ex2.approx((p−1)·(lg2.approx|x_i| − lg2.approx y_w)); the ratio is
// at most about 1 for p ≥ 1, so nothing overflows.


var lpPoolBwd = &lpPool{}

type lpPool struct{}

// Limits of the shapes the family takes.
const (
	lpName       = "lp_pool1d_bwd"
	lpMinPMilli  = 250   // p ≥ 0.25
	lpMaxPMilli  = 16000 // p ≤ 16
	lpMaxWindow  = 64    // window and stride
	lpMulMaxP32  = 4     // the mul form with f32 math takes p ≤ 4
	lpMulMaxP64  = 16    // and with f64 math p ≤ 16
	lpInputMax   = 2.0   // |x| ≤ 2 in the inputs
	lpInputMinLT = 0.25  // |x| ≥ 0.25 (or x = 0) in the inputs when p < 1
	lpF16Max     = 65504.0
)

var lpDims = []string{"n", "c", "l", "window", "stride", "p", "ceil"}

func (f *lpPool) Name() string { return lpName }
func (f *lpPool) Doc() string {
	return "LPPool1d backward (PyTorch lp_pool1d): dx from x, dy and the saved y over [N, C, L]"
}
func (f *lpPool) Dims() []string { return lpDims }
func (f *lpPool) DTypes() []dtype.DType {
	return []dtype.DType{dtype.F32, dtype.F16, dtype.BF16, dtype.F64}
}

// lpGeom is a shape's pooling geometry.
type lpGeom struct {
	rows, l, k, s, lout int
	ceil                bool
	pm                  int     // p in thousandths
	p                   float64 // p
	lastC               int     // elements of the last window (< k only when ceil mode clips it)
}

func lpGeomOf(s variants.Shape) lpGeom {
	g := lpGeom{rows: s.Get("n") * s.Get("c"), l: s.Get("l"), k: s.Get("window"), s: s.Get("stride"), ceil: s.Get("ceil") == 1}
	for _, d := range s.Dims {
		if d.Name == "p" {
			g.pm = d.Value*1000 + d.Milli
		}
	}
	g.p = float64(g.pm) / 1000
	g.lout = lpOutLen(g.l, g.k, g.s, g.ceil)
	g.lastC = min(g.k, g.l-(g.lout-1)*g.s)
	return g
}

// lpOutLen is PyTorch's pooling_output_shape with padding 0 and dilation 1.
func lpOutLen(l, k, s int, ceil bool) int {
	num := l - k
	if ceil {
		num += s - 1
	}
	o := lpFloorDiv(num, s) + 1
	if ceil && (o-1)*s >= l {
		o--
	}
	return o
}

func lpFloorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func lpCeilDiv(a, b int) int { return lpFloorDiv(a+b-1, b) }

// intP returns p as an integer and whether it is one.
func (g lpGeom) intP() (int, bool) { return g.pm / 1000, g.pm%1000 == 0 }

// scale is k/c_w, the factor of a window clipped to c_w elements.
func (g lpGeom) scale(w int) float64 { return float64(g.k) / float64(min(g.k, g.l-w*g.s)) }

// partial reports whether the last window is clipped.
func (g lpGeom) partial() bool { return g.lastC < g.k }

// ymax bounds y over the inputs: (k/c)·Σ_c |x|^p ≤ k·max|x|^p.
func (g lpGeom) ymax() float64 { return lpInputMax * math.Pow(float64(g.k), 1/g.p) }

// Shapes: LPPool1d is not part of a transformer preset; every preset gives
// the seeds' benchmark shape, x of [32, 256, 4096] pooled with window 4,
// stride 2 and p = 2.
func (f *lpPool) Shapes(p variants.Preset, dts []dtype.DType) []variants.Shape {
	var out []variants.Shape
	for _, dt := range dts {
		sp := variants.Spec{Dims: []variants.Dim{{Name: "n", Value: 32}, {Name: "c", Value: 256}, {Name: "l", Value: 4096},
			{Name: "window", Value: 4}, {Name: "stride", Value: 2}, {Name: "p", Value: 2}}}
		if s, err := f.Shape(sp, dt); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// Shape accepts n, c, l, window and p, and optionally stride (default:
// window) and ceil=1.
func (f *lpPool) Shape(sp variants.Spec, dt dtype.DType) (variants.Shape, error) {
	usage := fmt.Sprintf("%s takes n=N,c=C,l=L,window=K,p=P[,stride=S][,ceil=1]", lpName)
	val := map[string]variants.Dim{}
	for _, d := range sp.Dims {
		known := false
		for _, n := range lpDims {
			known = known || n == d.Name
		}
		if !known {
			return variants.Shape{}, fmt.Errorf("%s (got %s)", usage, strings.Join(dimNames(sp), ","))
		}
		val[d.Name] = d
	}
	for _, n := range []string{"n", "c", "l", "window", "p"} {
		if _, ok := val[n]; !ok {
			return variants.Shape{}, fmt.Errorf("%s: %s missing (got %s)", usage, n, strings.Join(dimNames(sp), ","))
		}
	}
	if err := checkDType(f, dt); err != nil {
		return variants.Shape{}, err
	}
	if _, ok := val["stride"]; !ok {
		val["stride"] = variants.Dim{Name: "stride", Value: val["window"].Value}
	}
	for _, n := range []string{"n", "c", "l"} {
		if v := val[n].Value; v <= 0 || v > gen.MaxElems {
			return variants.Shape{}, fmt.Errorf("%s: %s=%d must be in 1..%d", lpName, n, v, gen.MaxElems)
		}
	}
	for _, n := range []string{"window", "stride"} {
		if v := val[n].Value; v <= 0 || v > lpMaxWindow {
			return variants.Shape{}, fmt.Errorf("%s: %s=%d must be in 1..%d", lpName, n, v, lpMaxWindow)
		}
	}
	ceil := 0
	if d, ok := val["ceil"]; ok {
		if d.Value != 1 {
			return variants.Shape{}, fmt.Errorf("%s: ceil=%d: give ceil=1 for ceil_mode, or leave it out", lpName, d.Value)
		}
		ceil = 1
	}
	pd := val["p"]
	pm := pd.Value*1000 + pd.Milli
	if pm < lpMinPMilli || pm > lpMaxPMilli {
		return variants.Shape{}, fmt.Errorf("%s: p=%s must be in 0.25..16", lpName, pd.ValueString())
	}
	if dt == dtype.F64 && pm%1000 != 0 {
		return variants.Shape{}, fmt.Errorf("%s: f64 needs an integer p, not %s (PTX has no f64 lg2/ex2)", lpName, pd.ValueString())
	}
	s := variants.Shape{Dims: []variants.Dim{val["n"], val["c"], val["l"], val["window"], val["stride"], pd}, DType: dt}
	if ceil == 1 {
		s.Dims = append(s.Dims, variants.Dim{Name: "ceil", Value: 1})
	}
	g := lpGeomOf(s)
	if g.rows > gen.MaxElems || g.rows*g.l > gen.MaxElems {
		return variants.Shape{}, fmt.Errorf("%s: %d×%d elements is more than %d", lpName, g.rows, g.l, gen.MaxElems)
	}
	if g.lout < 1 {
		return variants.Shape{}, fmt.Errorf("%s: l=%d, window=%d, stride=%d give no output (PyTorch: output size is too small)", lpName, g.l, g.k, g.s)
	}
	if dt == dtype.F16 && g.ymax() > lpF16Max/2 {
		return variants.Shape{}, fmt.Errorf("%s: f16 cannot hold y (up to %.3g for window=%d, p=%s)", lpName, g.ymax(), g.k, pd.ValueString())
	}
	return s, nil
}

// lpPowForms lists the ways a shape's power can be computed.
func lpPowForms(g lpGeom, dt dtype.DType) []string {
	ip, isInt := g.intP()
	switch {
	case dt == dtype.F64:
		return []string{"mul"}
	case isInt && ip == 1:
		return []string{"mul"}
	case isInt && ip <= lpMulMaxP32:
		return []string{"mul", "exp2"}
	}
	return []string{"exp2"}
}

func lpVecs(dt dtype.DType) []int {
	switch dt {
	case dtype.F64:
		return []int{1, 2}
	case dtype.F16, dtype.BF16:
		return []int{1, 2, 4, 8}
	}
	return []int{1, 2, 4}
}

// Space: the formulation; windows per unit (spt: a gather unit is
// spt·stride elements, a scatter thread spt windows); the vector width of
// x and dx in gather (it must divide the unit and the row; scatter moves
// scalars); units per thread (ept, all loads issued before any math);
// threads per block; how the power is computed; the register cap.
func (f *lpPool) Space(s variants.Shape) variants.Space {
	g := lpGeomOf(s)
	return variants.Space{Axes: []variants.Axis{
		{Name: "form", Values: []string{"gather", "scatter", "scatter_edges"},
			Doc: "gather: each dx element sums its windows (no atomics); scatter: windows add into a zeroed dx with atomics; scatter_edges: atomics only where neighbours' windows overlap"},
		variants.IntAxis("spt", "windows per thread (gather: a unit of spt·stride elements)", 1, 2, 4),
		variants.IntAxis("vec", "x/dx elements per vector access (gather; 16 bytes at most)", lpVecs(s.DType)...),
		variants.IntAxis("ept", "units per thread", 1, 2, 4),
		variants.IntAxis("block", "threads per block", 128, 256),
		{Name: "pow", Values: lpPowForms(g, s.DType), Doc: "mul: integer p by multiplies and a reciprocal; exp2: ex2/lg2 approximations"},
		variants.IntAxis("maxnreg", "register cap (0 = none)", 0, 32, 64),
	}, Constraints: []variants.Constraint{{Name: "vector width divides the unit and the row", OK: func(p variants.Params) error {
		vec, _ := p.Int("vec")
		spt, _ := p.Int("spt")
		if p["form"] != "gather" {
			if vec != 1 {
				return fmt.Errorf("form=%s moves scalars (vec=1), not vec=%d", p["form"], vec)
			}
			return nil
		}
		if (spt*g.s)%vec != 0 || g.l%vec != 0 {
			return fmt.Errorf("vec=%d does not divide the unit of %d elements and the row of %d", vec, spt*g.s, g.l)
		}
		return nil
	}}}}
}

func (f *lpPool) Buffers(s variants.Shape) []Buffer {
	g := lpGeomOf(s)
	n, no := g.rows*g.l, g.rows*g.lout
	b := []Buffer{{"x", s.DType, n, Input}, {"dy", s.DType, no, Input}, {"y", s.DType, no, Input}, {"dx", s.DType, n, Output}}
	if s.DType.Size() == 2 {
		b = append(b, Buffer{"acc", dtype.F32, n, Scratch})
	}
	return b
}

// Inputs: x uniform in [−2, 2] (for p < 1 with |x| ≥ 0.25, so that
// (|x|/y)^(p−1) stays bounded) with exact zeros at every 37th element and
// in the whole first window of the second row (so y = 0 there), dy uniform
// in [−1, 1], and y the forward output of x in float64 rounded to the
// dtype.
func (f *lpPool) Inputs(s variants.Shape, seed uint64) map[string][]float64 {
	g := lpGeomOf(s)
	dt := s.DType
	n := g.rows * g.l
	var x []float64
	if g.pm < 1000 {
		x = Uniform(dtype.F64, n, -(lpInputMax - lpInputMinLT), lpInputMax-lpInputMinLT, seed, s.Key()+"/x")
		for i, v := range x {
			x[i] = dt.Round(v + math.Copysign(lpInputMinLT, v))
		}
	} else {
		x = Uniform(dt, n, -lpInputMax, lpInputMax, seed, s.Key()+"/x")
	}
	for i := 5; i < n; i += 37 {
		x[i] = 0
	}
	zr := min(1, g.rows-1)
	for i := 0; i < min(g.k, g.l); i++ {
		x[zr*g.l+i] = 0
	}
	y := lpForward(g, x)
	for i := range y {
		y[i] = dt.Round(y[i])
	}
	return map[string][]float64{
		"x":  x,
		"dy": Uniform(dt, g.rows*g.lout, -1, 1, seed, s.Key()+"/dy"),
		"y":  y,
	}
}

// lpForward is the forward in float64: y_w = ((k/c_w)·Σ|x_i|^p)^(1/p).
func lpForward(g lpGeom, x []float64) []float64 {
	y := make([]float64, g.rows*g.lout)
	for r := 0; r < g.rows; r++ {
		row := x[r*g.l : (r+1)*g.l]
		for w := 0; w < g.lout; w++ {
			var sum float64
			for i := w * g.s; i < min(w*g.s+g.k, g.l); i++ {
				sum += math.Pow(math.Abs(row[i]), g.p)
			}
			y[r*g.lout+w] = math.Pow(g.scale(w)*sum, 1/g.p)
		}
	}
	return y
}

// lpBackward is the reference backward in float64 with the edge cases of
// the package doc.
func lpBackward(g lpGeom, x, dy, y []float64) []float64 {
	dx := make([]float64, len(x))
	for r := 0; r < g.rows; r++ {
		for w := 0; w < g.lout; w++ {
			yw := y[r*g.lout+w]
			if yw == 0 {
				continue
			}
			gw := dy[r*g.lout+w] * g.scale(w)
			for i := r*g.l + w*g.s; i < r*g.l+min(w*g.s+g.k, g.l); i++ {
				if x[i] == 0 {
					continue
				}
				t := gw * math.Pow(math.Abs(x[i])/yw, g.p-1)
				if x[i] < 0 {
					t = -t
				}
				dx[i] += t
			}
		}
	}
	return dx
}

func (f *lpPool) Reference(s variants.Shape, in map[string][]float64) map[string][]float64 {
	return map[string][]float64{"dx": lpBackward(lpGeomOf(s), in["x"], in["dy"], in["y"])}
}

// Cost: x, dy and y read once, dx written once; two flops per (element,
// window) pair and one per element.
func (f *lpPool) Cost(s variants.Shape) Cost {
	g := lpGeomOf(s)
	n, no := int64(g.rows)*int64(g.l), int64(g.rows)*int64(g.lout)
	return Cost{Bytes: (2*n + 2*no) * int64(s.DType.Size()), Flops: 2*no*int64(g.k) + n}
}

// Tolerance: the error of each (element, window) term is a few units of
// the math type's precision times the term, and a dx element sums at most
// ceil(k/s) terms each bounded by max|dy| · k/c_w · (|x|/y)^(p−1), where
// |x|/y ≤ 1 for p ≥ 1 and ≤ ymax/0.25 for p < 1 (the inputs keep |x| ≥
// 0.25). atol scales with that bound; 16-bit outputs add one rounding.
func (f *lpPool) Tolerance(s variants.Shape, _ string) Tolerance {
	g := lpGeomOf(s)
	bound := float64(lpCeilDiv(g.k, g.s)) * float64(g.k) / float64(g.lastC)
	if g.pm < 1000 {
		bound *= math.Pow(g.ymax()/lpInputMinLT, 1-g.p)
	}
	switch s.DType {
	case dtype.F64:
		return Tolerance{Atol: 1e-12 * bound, Rtol: 1e-12}
	case dtype.F16, dtype.BF16:
		return Tolerance{Atol: 1e-5 * bound, Rtol: 2 * s.DType.Epsilon()}
	}
	return Tolerance{Atol: 1e-5 * bound, Rtol: 1e-5}
}

// lpGatherPlan is what a gather unit computes, fixed when the kernel is
// generated. Unit q of a row owns elements [q·E, q·E+E), E = G·s, and
// window slot d is window q·G − back + d.
type lpGatherPlan struct {
	G, E, V, back, nw, U int
	cover                [][]int // cover[e]: the slots whose windows cover element e
	loQ                  []int   // slot d is a window (≥ 0) iff q ≥ loQ[d]; 0: always
	hiQ                  []int   // slot d is a window (< Lout) iff q < hiQ[d]; −1: always
	lastQ                []int   // slot d is the clipped last window iff q == lastQ[d]; −1: never
	tailQ                []int   // vector v lies inside the row iff q < tailQ[v]; −1: always
}

func lpNewGatherPlan(g lpGeom, G, V int) lpGatherPlan {
	pl := lpGatherPlan{G: G, E: G * g.s, V: V, back: (g.k - 1) / g.s}
	pl.nw = G + pl.back
	pl.U = lpCeilDiv(g.l, pl.E)
	pl.cover = make([][]int, pl.E)
	for e := range pl.cover {
		for d := 0; d < pl.nw; d++ {
			if lo := (d - pl.back) * g.s; lo <= e && e < lo+g.k {
				pl.cover[e] = append(pl.cover[e], d)
			}
		}
	}
	for d := 0; d < pl.nw; d++ {
		lo := 0
		if d < pl.back {
			lo = lpCeilDiv(pl.back-d, G) // q·G ≥ back − d
		}
		pl.loQ = append(pl.loQ, lo)
		hi := -1
		if (pl.U-1)*G-pl.back+d >= g.lout { // q·G − back + d < Lout
			hi = max(0, lpCeilDiv(g.lout+pl.back-d, G))
		}
		pl.hiQ = append(pl.hiQ, hi)
		last := -1
		if t := g.lout - 1 + pl.back - d; g.partial() && t >= 0 && t%G == 0 && t/G < pl.U {
			last = t / G
		}
		pl.lastQ = append(pl.lastQ, last)
	}
	for v := 0; v < pl.E/V; v++ {
		t := -1
		if (pl.U-1)*pl.E+v*V >= g.l { // q·E + v·V < L
			t = max(0, lpCeilDiv(g.l-v*V, pl.E))
		}
		pl.tailQ = append(pl.tailQ, t)
	}
	return pl
}

// lpScatterPlan is what a scatter thread computes. Group q of a row owns
// windows q·G + j, j < G, which cover elements q·G·s + e, e < span.
type lpScatterPlan struct {
	G, span, WG int
	cover       [][]int // cover[e]: the slots j whose windows cover element e
	winHiQ      []int   // slot j is a window (< Lout) iff q < winHiQ[j]; −1: always
	elemHiQ     []int   // element e lies inside the row iff q < elemHiQ[e]; −1: always
	lastQ       []int   // slot j is the clipped last window iff q == lastQ[j]; −1: never
	excl        []bool  // no other group's window covers element e
}

func lpNewScatterPlan(g lpGeom, G int) lpScatterPlan {
	pl := lpScatterPlan{G: G, span: (G-1)*g.s + g.k, WG: lpCeilDiv(g.lout, G)}
	pl.cover = make([][]int, pl.span)
	for e := range pl.cover {
		for j := 0; j < G; j++ {
			if j*g.s <= e && e < j*g.s+g.k {
				pl.cover[e] = append(pl.cover[e], j)
			}
		}
		hi := -1
		if (pl.WG-1)*G*g.s+e >= g.l {
			hi = max(0, lpCeilDiv(g.l-e, G*g.s))
		}
		pl.elemHiQ = append(pl.elemHiQ, hi)
		pl.excl = append(pl.excl, e >= max(0, g.k-g.s) && e < G*g.s)
	}
	for j := 0; j < G; j++ {
		hi := -1
		if (pl.WG-1)*G+j >= g.lout {
			hi = max(0, lpCeilDiv(g.lout-j, G))
		}
		pl.winHiQ = append(pl.winHiQ, hi)
		last := -1
		if t := g.lout - 1 - j; g.partial() && t >= 0 && t%G == 0 {
			last = t / G
		}
		pl.lastQ = append(pl.lastQ, last)
	}
	return pl
}

// lpOpts are one variant's parameters.
type lpOpts struct {
	form                         string
	spt, vec, ept, block, maxreg int
	pow                          string
}

func (f *lpPool) Emit(s variants.Shape, p variants.Params) (Program, error) {
	if err := f.Space(s).Check(p); err != nil {
		return Program{}, fmt.Errorf("%s: %w", lpName, err)
	}
	r := variants.NewReader(p)
	o := lpOpts{form: r.String("form"), spt: r.Int("spt"), vec: r.Int("vec"), ept: r.Int("ept"),
		block: r.Int("block"), maxreg: r.Int("maxnreg"), pow: r.String("pow")}
	if err := r.Err(); err != nil {
		return Program{}, err
	}
	g := lpGeomOf(s)
	m := ptx.NewModule()
	var launches []Launch
	if o.form == "gather" {
		launches = lpEmitGather(m, s.DType, g, o)
	} else {
		launches = lpEmitScatter(m, s.DType, g, o)
	}
	built, err := m.Build()
	if err != nil {
		return Program{}, fmt.Errorf("%s %s: %w", lpName, p, err)
	}
	return Program{PTX: built.String(), Launches: launches}, nil
}

// lpMath emits the family's arithmetic in the math type of a dtype (f32,
// or f64 for f64).
type lpMath struct {
	k   *ptx.Func
	g   lpGeom
	dt  dtype.DType
	mt  ptx.Type
	pow string
}

func newLPMath(k *ptx.Func, g lpGeom, dt dtype.DType, pow string) *lpMath {
	mt := ptx.F32
	if dt == dtype.F64 {
		mt = ptx.F64
	}
	if ip, isInt := g.intP(); isInt && ip == 1 {
		pow = "mul" // no power at all
	}
	return &lpMath{k: k, g: g, dt: dt, mt: mt, pow: pow}
}

func (e *lpMath) imm(v float64) ptx.Operand {
	if e.mt == ptx.F64 {
		return ptx.F64Imm(v)
	}
	return ptx.F32Imm(float32(v))
}

// ipow returns a^n (n ≥ 1) by repeated squaring.
func (e *lpMath) ipow(a ptx.Reg, n int) ptx.Reg {
	var out ptx.Reg
	sq := a
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			if out.Valid() {
				out = e.k.Mul(e.mt, out, sq)
			} else {
				out = sq
			}
		}
		if n > 1 {
			sq = e.k.Mul(e.mt, sq, sq)
		}
	}
	return out
}

// lpWin is one window prepared for the sums over its elements: the mul
// form's factor g = dy·k/c·y^(1−p), or the exp2 form's gd = dy·k/c and
// ly = (p−1)·log2 y. Windows with y = 0 (including slots that are no
// window, whose dy and y load as 0) get g = gd = 0.
type lpWin struct{ g, ly ptx.Reg }

// windows prepares the windows of one unit from their dy and y: slot d is
// the clipped last window where q == lastQ[d] (never where lastQ[d] < 0).
func (e *lpMath) windows(dys, ys []ptx.Reg, q ptx.Reg, lastQ []int) []lpWin {
	k := e.k
	ws := make([]lpWin, len(dys))
	for d := range ws {
		var last ptx.Reg
		if lastQ[d] >= 0 {
			last = k.Setp("eq", ptx.U32, q, ptx.Imm(lastQ[d]))
		}
		ws[d] = e.window(dys[d], ys[d], last)
	}
	return ws
}

// window prepares a window from dy and y; last, when valid, says it is the
// clipped last window.
func (e *lpMath) window(dy, y, last ptx.Reg) lpWin {
	k, mt := e.k, e.mt
	yz := k.Setp("eq", mt, y, e.imm(0))
	dys := dy
	if last.Valid() {
		dys = k.Selp(mt, k.Mul(mt, dy, e.imm(float64(e.g.k)/float64(e.g.lastC))), dy, last)
	}
	ip, _ := e.g.intP()
	if e.pow == "mul" {
		if ip > 1 {
			yp := e.ipow(y, ip-1)
			var inv ptx.Reg
			if mt == ptx.F64 {
				inv = k.Rcp(ptx.F64, yp)
			} else {
				inv = k.RcpApprox(yp)
			}
			dys = k.Mul(mt, dys, inv)
		}
		return lpWin{g: k.Selp(mt, e.imm(0), dys, yz)}
	}
	y1 := k.Selp(mt, e.imm(1), y, yz)
	return lpWin{g: k.Selp(mt, e.imm(0), dys, yz), ly: k.Mul(mt, k.Lg2Approx(y1), e.imm(e.g.p-1))}
}

// element returns dx of an element x covered by the windows ws.
func (e *lpMath) element(x ptx.Reg, ws []lpWin) ptx.Reg {
	k, mt := e.k, e.mt
	if len(ws) == 0 {
		return k.Mov(mt, e.imm(0))
	}
	ip, _ := e.g.intP()
	var acc ptx.Reg
	if e.pow == "mul" {
		acc = ws[0].g
		for _, w := range ws[1:] {
			acc = k.Add(mt, acc, w.g)
		}
		switch {
		case ip == 2:
			return k.Mul(mt, x, acc)
		case ip > 2:
			return k.Mul(mt, k.Mul(mt, x, e.ipow(k.Abs(mt, x), ip-2)), acc)
		}
		// p = 1: sgn(x)·acc.
	} else {
		lx := k.Mul(mt, k.Lg2Approx(k.Abs(mt, x)), e.imm(e.g.p-1))
		for i, w := range ws {
			t := k.Ex2Approx(k.Sub(mt, lx, w.ly))
			if i == 0 {
				acc = k.Mul(mt, w.g, t)
			} else {
				acc = k.Fma(mt, w.g, t, acc)
			}
		}
	}
	neg := k.Setp("lt", mt, x, e.imm(0))
	out := k.Selp(mt, k.Neg(mt, acc), acc, neg)
	if e.g.pm <= 1000 {
		// sgn(0) = 0, and for p < 1 the power of 0 is infinite.
		out = k.Selp(mt, e.imm(0), out, k.Setp("eq", mt, x, e.imm(0)))
	}
	return out
}

// lpQLess returns the predicate q < t, or "always" for t < 0.
func lpQLess(k *ptx.Func, q ptx.Reg, t int) ptx.Reg {
	if t < 0 {
		return ptx.Reg{}
	}
	return k.Setp("lt", ptx.U32, q, ptx.Imm(t))
}

// lpQAtLeast returns the predicate q ≥ t, or "always" for t ≤ 0.
func lpQAtLeast(k *ptx.Func, q ptx.Reg, t int) ptx.Reg {
	if t <= 0 {
		return ptx.Reg{}
	}
	return k.Setp("ge", ptx.U32, q, ptx.Imm(t))
}

// lpSplit splits a flat index u into row r = u / per and q = u mod per
// (r invalid when there is one row).
func lpSplit(k *ptx.Func, u ptx.Reg, per, rows int) (r, q ptx.Reg) {
	if rows == 1 {
		return ptx.Reg{}, u
	}
	r = k.Div(ptx.U32, u, ptx.Imm(per))
	return r, k.Sub(ptx.U32, u, k.Mul(ptx.U32, r, ptx.Imm(per)))
}

// lpRowIndex returns r·rowLen + q·step (U32).
func lpRowIndex(k *ptx.Func, r, q ptx.Reg, rowLen, step int) ptx.Reg {
	qs := k.Mul(ptx.U32, q, ptx.Imm(step))
	if !r.Valid() {
		return qs
	}
	return k.Mad(ptx.U32, r, ptx.Imm(rowLen), qs)
}

// lpBase loads a pointer parameter and converts it to a global address.
func lpBase(k *ptx.Func, name string) ptx.Reg {
	return k.Cvta(ptx.Global, k.LdParam(k.Param(name, ptx.U64)))
}

// lpEmitGather writes the gather kernel: one launch.
func lpEmitGather(m *ptx.Module, dt dtype.DType, g lpGeom, o lpOpts) []Launch {
	pl := lpNewGatherPlan(g, o.spt, o.vec)
	entry := lpName + "_" + dt.String()
	k := m.Func(entry)
	k.ReqNTid(o.block)
	k.MaxNReg(o.maxreg)
	x, dy, y, dx := lpBase(k, "x"), lpBase(k, "dy"), lpBase(k, "y"), lpBase(k, "dx")
	e := newLPMath(k, g, dt, o.pow)
	size := dt.Size()
	chunk := o.block * o.ept
	units := g.rows * pl.U
	tid := k.Mov(ptx.U32, ptx.TidX)
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	first := k.Mad(ptx.U32, cta, ptx.Imm(chunk), tid)
	k.Comment("gather: unit of %d elements (%d windows of stride %d), %d window slots, %d units per row", pl.E, pl.G, g.s, pl.nw, pl.U)

	type unit struct {
		q, xoff   ptx.Reg
		vok       []ptx.Reg
		xs        []ptx.Reg
		dys, ys   []ptx.Reg
		last      []ptx.Reg
		unitValid ptx.Reg
	}
	us := make([]unit, o.ept)
	// Issue every load of every unit first.
	for j := range us {
		u, ok := lpItem(k, first, j, o.block, units, chunk)
		r, q := lpSplit(k, u, pl.U, g.rows)
		us[j].q, us[j].unitValid = q, ok
		xoff := k.MulWide(ptx.U32, lpRowIndex(k, r, q, g.l, pl.E), ptx.Imm(size))
		us[j].xoff = xoff
		xa := k.Add(ptx.U64, x, xoff)
		for v := 0; v < pl.E/o.vec; v++ {
			vok := gen.Both(k, ok, lpQLess(k, q, pl.tailQ[v]))
			us[j].vok = append(us[j].vok, vok)
			us[j].xs = append(us[j].xs, gen.LdVals(k, ptx.Global, dt, o.vec, ptx.At(xa, int64(v*o.vec*size)), vok, gen.LdNC)...)
		}
		woff := k.MulWide(ptx.U32, lpRowIndex(k, r, q, g.lout, pl.G), ptx.Imm(size))
		dya, ya := k.Add(ptx.U64, dy, woff), k.Add(ptx.U64, y, woff)
		for d := 0; d < pl.nw; d++ {
			wok := gen.Both(k, ok, gen.Both(k, lpQAtLeast(k, q, pl.loQ[d]), lpQLess(k, q, pl.hiQ[d])))
			off := int64((d - pl.back) * size)
			us[j].dys = append(us[j].dys, gen.LdVals(k, ptx.Global, dt, 1, ptx.At(dya, off), wok, gen.LdNC)[0])
			us[j].ys = append(us[j].ys, gen.LdVals(k, ptx.Global, dt, 1, ptx.At(ya, off), wok, gen.LdNC)[0])
		}
	}
	for j := range us {
		u := &us[j]
		ws := e.windows(u.dys, u.ys, u.q, pl.lastQ)
		dxa := k.Add(ptx.U64, dx, u.xoff)
		for v := 0; v < pl.E/o.vec; v++ {
			out := make([]ptx.Reg, o.vec)
			for i := range out {
				el := v*o.vec + i
				var cw []lpWin
				for _, d := range pl.cover[el] {
					cw = append(cw, ws[d])
				}
				out[i] = e.element(u.xs[el], cw)
			}
			gen.StVals(k, dt, ptx.At(dxa, int64(v*o.vec*size)), out, u.vok[v])
		}
	}
	return []Launch{{Entry: entry, Grid: [3]int{lpCeilDiv(units, chunk), 1, 1}, Block: [3]int{o.block, 1, 1},
		Args: []Arg{{Buffer: "x"}, {Buffer: "dy"}, {Buffer: "y"}, {Buffer: "dx"}}}}
}

// lpEmitScatter writes the scatter program: zero the accumulator, add
// every window's contributions into it, and for 16-bit dtypes convert the
// f32 accumulator into dx.
func lpEmitScatter(m *ptx.Module, dt dtype.DType, g lpGeom, o lpOpts) []Launch {
	pl := lpNewScatterPlan(g, o.spt)
	entry := lpName + "_" + dt.String()
	n := g.rows * g.l
	target, tt := "dx", ptx.F32
	if dt == dtype.F64 {
		tt = ptx.F64
	}
	if dt.Size() == 2 {
		target = "acc"
	}
	tsize := tt.Bits() / 8
	launches := []Launch{lpZeroKernel(m, entry+"_zero", target, n*tsize, o.block)}

	k := m.Func(entry + "_scatter")
	k.ReqNTid(o.block)
	k.MaxNReg(o.maxreg)
	x, dy, y, acc := lpBase(k, "x"), lpBase(k, "dy"), lpBase(k, "y"), lpBase(k, target)
	e := newLPMath(k, g, dt, o.pow)
	size := dt.Size()
	chunk := o.block * o.ept
	groups := g.rows * pl.WG
	tid := k.Mov(ptx.U32, ptx.TidX)
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	first := k.Mad(ptx.U32, cta, ptx.Imm(chunk), tid)
	k.Comment("scatter: %d windows per thread covering %d elements, %d groups per row", pl.G, pl.span, pl.WG)

	type group struct {
		q, aoff ptx.Reg
		eok     []ptx.Reg
		xs      []ptx.Reg
		dys, ys []ptx.Reg
	}
	gs := make([]group, o.ept)
	for j := range gs {
		t, ok := lpItem(k, first, j, o.block, groups, chunk)
		r, q := lpSplit(k, t, pl.WG, g.rows)
		gs[j].q = q
		xe := lpRowIndex(k, r, q, g.l, pl.G*g.s)
		xa := k.Add(ptx.U64, x, k.MulWide(ptx.U32, xe, ptx.Imm(size)))
		gs[j].aoff = k.MulWide(ptx.U32, xe, ptx.Imm(tsize))
		woff := k.MulWide(ptx.U32, lpRowIndex(k, r, q, g.lout, pl.G), ptx.Imm(size))
		dya, ya := k.Add(ptx.U64, dy, woff), k.Add(ptx.U64, y, woff)
		for w := 0; w < pl.G; w++ {
			wok := gen.Both(k, ok, lpQLess(k, q, pl.winHiQ[w]))
			gs[j].dys = append(gs[j].dys, gen.LdVals(k, ptx.Global, dt, 1, ptx.At(dya, int64(w*size)), wok, gen.LdNC)[0])
			gs[j].ys = append(gs[j].ys, gen.LdVals(k, ptx.Global, dt, 1, ptx.At(ya, int64(w*size)), wok, gen.LdNC)[0])
		}
		gs[j].eok = make([]ptx.Reg, pl.span)
		gs[j].xs = make([]ptx.Reg, pl.span)
		for el := 0; el < pl.span; el++ {
			if len(pl.cover[el]) == 0 {
				continue
			}
			gs[j].eok[el] = gen.Both(k, ok, lpQLess(k, q, pl.elemHiQ[el]))
			gs[j].xs[el] = gen.LdVals(k, ptx.Global, dt, 1, ptx.At(xa, int64(el*size)), gs[j].eok[el], gen.LdNC)[0]
		}
	}
	for j := range gs {
		gr := &gs[j]
		ws := e.windows(gr.dys, gr.ys, gr.q, pl.lastQ)
		aa := k.Add(ptx.U64, acc, gr.aoff)
		for el := 0; el < pl.span; el++ {
			if len(pl.cover[el]) == 0 {
				continue
			}
			var cw []lpWin
			for _, w := range pl.cover[el] {
				cw = append(cw, ws[w])
			}
			v := e.element(gr.xs[el], cw)
			at := ptx.At(aa, int64(el*tsize))
			if o.form == "scatter_edges" && pl.excl[el] {
				k.St(ptx.Global, tt, at, []ptx.Reg{v})
			} else {
				k.Red(ptx.Global, "add", tt, at, v)
			}
			if gr.eok[el].Valid() {
				k.Guard(gr.eok[el], false)
			}
		}
	}
	launches = append(launches, Launch{Entry: entry + "_scatter", Grid: [3]int{lpCeilDiv(groups, chunk), 1, 1}, Block: [3]int{o.block, 1, 1},
		Args: []Arg{{Buffer: "x"}, {Buffer: "dy"}, {Buffer: "y"}, {Buffer: target}}})
	if target == "acc" {
		launches = append(launches, lpConvertKernel(m, entry+"_convert", dt, n, o.block))
	}
	return launches
}

// lpZeroKernel writes a kernel that zeroes bytes (a multiple of 4) of
// buffer buf, 16 bytes per thread; thread 0 of CTA 0 does the 4-byte tail.
func lpZeroKernel(m *ptx.Module, name, buf string, bytes, block int) Launch {
	k := m.Func(name)
	k.ReqNTid(block)
	b := lpBase(k, "buf")
	tid := k.Mov(ptx.U32, ptx.TidX)
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	u := k.Mad(ptx.U32, cta, ptx.Imm(block), tid)
	z := k.Mov(ptx.B32, ptx.Imm(0))
	nvec := bytes / 16
	if nvec > 0 {
		var ok ptx.Reg
		if nvec%block != 0 {
			ok = k.Setp("lt", ptx.U32, u, ptx.Imm(nvec))
		}
		a := k.Add(ptx.U64, b, k.MulWide(ptx.U32, u, ptx.Imm(16)))
		k.St(ptx.Global, ptx.B32, ptx.At(a, 0), []ptx.Reg{z, z, z, z})
		if ok.Valid() {
			k.Guard(ok, false)
		}
	}
	if nvec*16 < bytes {
		k.If(k.Setp("eq", ptx.U32, u, ptx.Imm(0)), func() {
			for i := nvec * 16; i < bytes; i += 4 {
				k.St(ptx.Global, ptx.B32, ptx.At(b, int64(i)), []ptx.Reg{z})
			}
		})
	}
	return Launch{Entry: name, Grid: [3]int{max(1, lpCeilDiv(nvec, block)), 1, 1}, Block: [3]int{block, 1, 1}, Args: []Arg{{Buffer: buf}}}
}

// lpConvertKernel writes a kernel that rounds the f32 accumulator acc to dx
// of dtype dt (16-bit), 4 elements per thread; thread 0 of CTA 0 does the
// tail.
func lpConvertKernel(m *ptx.Module, name string, dt dtype.DType, n, block int) Launch {
	k := m.Func(name)
	k.ReqNTid(block)
	acc, dx := lpBase(k, "acc"), lpBase(k, "dx")
	tid := k.Mov(ptx.U32, ptx.TidX)
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	u := k.Mad(ptx.U32, cta, ptx.Imm(block), tid)
	units := n / 4
	if units > 0 {
		var ok ptx.Reg
		if units%block != 0 {
			ok = k.Setp("lt", ptx.U32, u, ptx.Imm(units))
		}
		v := gen.LdVals(k, ptx.Global, dtype.F32, 4, ptx.At(k.Add(ptx.U64, acc, k.MulWide(ptx.U32, u, ptx.Imm(16))), 0), ok, gen.LdNC)
		gen.StVals(k, dt, ptx.At(k.Add(ptx.U64, dx, k.MulWide(ptx.U32, u, ptx.Imm(8))), 0), v, ok)
	}
	if units*4 < n {
		k.If(k.Setp("eq", ptx.U32, u, ptx.Imm(0)), func() {
			for i := units * 4; i < n; i++ {
				v := gen.LdVals(k, ptx.Global, dtype.F32, 1, ptx.At(acc, int64(i*4)), ptx.Reg{}, gen.LdNC)
				gen.StVals(k, dt, ptx.At(dx, int64(i*dt.Size())), v, ptx.Reg{})
			}
		})
	}
	return Launch{Entry: name, Grid: [3]int{max(1, lpCeilDiv(units, block)), 1, 1}, Block: [3]int{block, 1, 1},
		Args: []Arg{{Buffer: "acc"}, {Buffer: "dx"}}}
}

// lpItem returns the index of a thread's j-th item (first + j·block) and,
// when the grid's last chunk is partial, the predicate index < total.
func lpItem(k *ptx.Func, first ptx.Reg, j, block, total, chunk int) (idx, ok ptx.Reg) {
	idx = first
	if j > 0 {
		idx = k.Add(ptx.U32, first, ptx.Imm(j*block))
	}
	if total%chunk != 0 {
		ok = k.Setp("lt", ptx.U32, idx, ptx.Imm(total))
	}
	return idx, ok
}
