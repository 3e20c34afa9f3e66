package kernels

// rmsnorm_bwd (and, through the same generator, layernorm_bwd): the
// backward of y = x·rstd·γ over [m tokens × n hidden], from dy, x, γ [n]
// and the forward's saved per-row rstd [m] (f32):
//
//	x̂ = x·rstd, g = γ⊙dy
//	dx = rstd·(g − x̂·mean_row(g⊙x̂))
//	dγ = Σ_rows dy⊙x̂
//
// (the same as rstd·(γ⊙dy − x·rstd²·mean(γ⊙dy⊙x))). dx has the storage
// dtype; dγ (and layernorm's dβ) are f32 whatever the storage dtype: a
// column sum over thousands of rows accumulated in f32, kept as f32 (an
// f32 master gradient); PyTorch would round it to the parameter's dtype.
//
// Shapes. From a preset, [Tokens × Hidden]: qwen1.5b gives [2048 × 1536].
// Specs name m and n; a row must fit one tile (1024 threads holding at
// most 32 elements each: n ≤ 32768 when 4 or 8 divides it).
//
// Byte floor. x and dy read once, dx written once, plus γ, rstd and dγ:
// 3·m·n elements. At [2048 × 1536]: 37.7 MB in f32, 8.9 µs at the H200's
// 4.25 TB/s; 18.9 MB in bf16, 4.4 µs. PyTorch eager takes 42.5 µs (f32)
// and 81.4 µs (bf16), so the targets (3× and 5×: 14.2 and 16.3 µs, launch
// and events included, about 3 µs) leave the f32 program about 11 µs. The
// activation families, which move the same 37.7 MB at [2048 × 1536] f32,
// take 13.9 µs on that harness (testdata/h200-activations.md): the f32
// target needs one launch running at an elementwise kernel's speed. Hence
// one pass over x and dy with the row in registers or shared memory,
// 16-byte loads, γ loaded once per thread, the next rows' loads in flight
// during a row's reduction (prefetch, unroll 2, or store=async with all
// of a group's rows in flight), and column sums that cost as little as
// possible (dgamma=partial with pdl=1, or atomic1 in one launch; measured
// on the H200, every strategy still adds about 2 µs to the row kernel:
// testdata/h200-rows.md and bench/research).
//
// Column sums (axis dgamma). Each thread owns the same columns in every
// row it handles, so it keeps its share of dγ in registers across its
// rows; the row groups of a CTA are added in shared memory, so a CTA
// contributes one value per column. Then
//   - atomic: one red.global.add.f32 per column per CTA into dγ (with
//     pdl=1, one red.global.add.v4.f32 per four columns), which a first
//     launch of the program zeroes (a tiny kernel of the same module);
//   - partial: each CTA stores its column sums in a Scratch buffer
//     [CTAs × n] and a second launch (finalize) adds them: 32 columns per
//     CTA, up to 32 slices of the CTAs per column, a shared-memory
//     transpose and a warp butterfly;
//   - ticket: one launch. Each CTA red.adds its sums into colsum, an f32
//     accumulator that is zero before every run; every thread then
//     executes membar.gl, and after a barrier thread 0 takes a ticket
//     with atom.inc on a counter (wrapping at G−1, so that it is 0 again
//     after the run). The CTA that draws G−1 finishes last: all the other
//     CTAs' sums are in colsum; it copies them to dγ and writes zeros
//     back. A second launch or a zeroing costs about as much as that tail
//     (1–2 µs), which matters where the f32 targets leave no room.
//   - atomic1: one launch and no tail. Thread 0 of each CTA draws a
//     start ticket (atom.inc on ticket[0]) as the kernel starts; the CTA
//     that draws 0 started first, and its warp 0 zeroes dγ (and dβ) while
//     its first rows' loads are in flight, then raises a flag (membar.gl,
//     red.inc on ticket[1]). Every other CTA's thread 0 waits for the flag
//     (an acquire read) only when its column sums are ready, long after
//     the zeros landed (waiting before the last row instead, to hide the
//     read behind it, measured about 0.6 µs slower on the H200: thread 0's
//     group stalls on the read; testdata/research/h200-atomic1-late.log),
//     and the CTA then adds them with vector red.adds
//     (sm_90; scalar ones where vec is 1). No CTA waits for one that has
//     not started, so the wait cannot deadlock. Both words count to G and
//     wrap to 0, so every run leaves them zero. It takes store=async, where
//     the zeroing hides behind the rows' copies (with store=regs it
//     measured 0.6 µs slower on the H200).
//
// Axis pdl (sm_90): with pdl=1 the second launch is a programmatic
// dependent launch (Launch.Dependent). The finalize of partial may then be
// launched while the row kernel's last CTAs run, and starts with
// griddepcontrol.wait, which returns once the row kernel has completed and
// its partials are visible: the second launch's latency (about 2 µs of
// the 5 µs two empty launches cost) overlaps the first one's tail. For
// atomic, the zeroing kernel lets its dependent start at once
// (griddepcontrol.launch_dependents) and the row kernel waits only before
// its red.adds. The finalize gets no early trigger from the row kernel:
// its CTAs would sit in the wait on SM slots the rows need (measured
// slower). pdl=1 programs target sm_90, and there atomic adds its column
// sums with vector reductions (red.global.add.v4.f32: a quarter of the
// atomic operations, which contend for the same n addresses from every
// CTA). Ticket has one launch and no pdl.
//
// dγ has the role Output under every strategy (Buffers cannot depend on
// params, and an Accumulate dγ would charge the runner's memset to the
// strategies that overwrite it); validation poisons it with NaN, so the
// zeroing launch, the ticket copy and atomic1's zeroing are checked too.
// colsum and ticket are Input buffers whose generated data are zeros,
// and every run leaves them zero: uploaded once per session or before
// every run, they hold zeros when a program starts. (A role "zeroed once,
// left zeroed by every run" would say so more plainly than Input.) The number of CTAs
// (rows·rpg rows each) sets the trade-off: more CTAs fill the SMs better
// but add column sums (G·n atomics, or G·n·8 bytes of partials).
//
// Tolerance (per output; Tolerance returns the loosest, for a runner that
// checks every output with one). Inputs are built so that rstd ≤ 2
// (rows of RMS, or standard deviation, in [0.5, 2]), |g| ≤ 1.5 and
// mean(x̂²) ≤ 1; |x̂| ≤ min(√n, 4). The row sum S = Σ g·x̂ is added along
// chains of K ≤ min(n, 32) + 40 additions (vpt·vec ≤ 32 terms per thread,
// vec accumulators added pairwise, the butterfly, the warps), so |δS|/n ≤
// (K+4)·u·gmax with u = 2⁻²⁴, and dx is off by at most
// rmax·gmax·u·(x̂max·(K+8) + K + 13) plus 4u relative (plus the rounding of
// the stored dx for f16 and bf16). dγ is a sum over m rows along chains
// of at most G + 24 additions (rows per thread, row groups, then one per
// CTA, G ≤ ⌈m/2⌉), each off by u times a running sum; the running sums
// are random walks of terms dy·x̂ with E[(dy·x̂)²] ≤ 1/3, bounded (but for
// a 4.8-sigma event) by 4.8·√(m/3) plus one term: Atol = (G+24)·u·
// (4.8·√(m/3) + x̂max), Rtol = 8u; dβ likewise with terms |dy| ≤ 1.

import (
	"fmt"
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)


// normBwd is rmsnorm_bwd or, with layer set, layernorm_bwd.
type normBwd struct {
	cfg   rowCfg
	name  string
	doc   string
	layer bool
	eps   float64
}

var rmsNormBwd = &normBwd{
	cfg: rowCfg{name: "rmsnorm_bwd", minTPR: 32, rowsVals: []int{1, 2, 4}, rpgVals: []int{2, 4, 8},
		blockMax: 1024, sums: 1, cols: 1, async: true},
	name: "rmsnorm_bwd",
	doc:  "RMSNorm backward over rows: dx and dγ from dy, x, γ and the saved rstd",
	eps:  1e-6,
}

// normMaxN is the longest row the norm families take when vw is the
// widest vector dividing it: one tile of maxTPR threads with vpt ≤ 16 and
// 2·vpt·vw ≤ maxHeld.
func normMaxN(vw int) int { return maxTPR * min(16, maxHeld/2/vw) * vw }

func (f *normBwd) Name() string          { return f.name }
func (f *normBwd) Doc() string           { return f.doc }
func (f *normBwd) Dims() []string        { return []string{"m", "n"} }
func (f *normBwd) DTypes() []dtype.DType { return []dtype.DType{dtype.F32, dtype.F16, dtype.BF16} }

// Shapes yields the hidden states [Tokens × Hidden].
func (f *normBwd) Shapes(p variants.Preset, dts []dtype.DType) []variants.Shape {
	return rowShapes(f, p.Tokens, p.Hidden, dts)
}

// Shape accepts m=M,n=N with n short enough for one row tile.
func (f *normBwd) Shape(sp variants.Spec, dt dtype.DType) (variants.Shape, error) {
	s, err := parseRowShape(f, sp, dt)
	if err != nil {
		return s, err
	}
	n := s.Get("n")
	if vw := widestVec(dt, n); n > normMaxN(vw) {
		return variants.Shape{}, fmt.Errorf("%s: n=%d is too long: a row must fit one tile of %d threads holding at most %d elements each (n ≤ %d when n is a multiple of %d)",
			f.name, n, maxTPR, normMaxN(vw)/maxTPR, normMaxN(vw), vw)
	}
	return s, nil
}

// ncols is the number of column sums: dγ, and dβ for layernorm.
func (f *normBwd) ncols() int { return f.cfg.cols }

// partRows is the row count of the partials buffer: the most CTAs a
// partial variant may have.
func partRows(m int) int { return min(gen.CeilDiv(m, 2), 2048) }

func (f *normBwd) Space(s variants.Shape) variants.Space {
	axes := append(f.cfg.axes(s),
		variants.Axis{Name: "dgamma", Values: []string{"atomic", "partial", "ticket", "atomic1"},
			Doc: "column sums: red.add per column per CTA into dγ zeroed by a first launch; per-CTA partials added by a second launch; red.add into a zeroed accumulator that the CTA finishing last copies to dγ and clears (one launch); or (store=async) vector red.adds into dγ zeroed by the CTA that starts first, which the others wait for before their red.adds (one launch)"},
		variants.IntAxis("maxnreg", "register cap (0 = none)", 0, 64),
		variants.IntAxis("pdl", "1: the second launch (atomic: the row kernel; partial: the finalize) is a programmatic dependent launch (sm_90) that starts during the first one's tail and waits in griddepcontrol.wait", 0, 1))
	cons := append(f.cfg.constraints(s), variants.Constraint{Name: "partials fit", OK: func(p variants.Params) error {
		g, err := f.cfg.geom(s, p)
		if err != nil {
			return err
		}
		if g.dgamma == "partial" && g.grid > partRows(g.m) {
			return fmt.Errorf("%d CTAs of partial sums (the buffer holds %d)", g.grid, partRows(g.m))
		}
		return nil
	}}, variants.Constraint{Name: "pdl needs two launches", OK: func(p variants.Params) error {
		g, err := f.cfg.geom(s, p)
		if err != nil {
			return err
		}
		if g.pdl && (g.dgamma == "ticket" || g.dgamma == "atomic1") {
			return fmt.Errorf("pdl=1 with dgamma=%s (one launch: nothing to overlap)", g.dgamma)
		}
		return nil
	}}, variants.Constraint{Name: "atomic1 zeroes behind the copies", OK: func(p variants.Params) error {
		if p["dgamma"] == "atomic1" && p["store"] != "async" {
			return fmt.Errorf("dgamma=atomic1 with store=%s (it zeroes dγ while the group's rows are in flight, which store=async issues first; with store=regs it measured 0.6 µs slower on the H200)", p["store"])
		}
		return nil
	}})
	return variants.Space{Axes: axes, Constraints: cons}
}

func (f *normBwd) Buffers(s variants.Shape) []Buffer {
	m, n := s.Get("m"), s.Get("n")
	b := []Buffer{{"dy", s.DType, m * n, Input}, {"x", s.DType, m * n, Input}, {"gamma", s.DType, n, Input}}
	if f.layer {
		b = append(b, Buffer{"mean", dtype.F32, m, Input})
	}
	b = append(b, Buffer{"rstd", dtype.F32, m, Input}, Buffer{"dx", s.DType, m * n, Output}, Buffer{"dgamma", dtype.F32, n, Output})
	if f.layer {
		b = append(b, Buffer{"dbeta", dtype.F32, n, Output})
	}
	// colsum and ticket are the ticket strategy's accumulator and counter
	// (ticket[0]), and atomic1's counters (both words): zeros that every
	// run leaves zero (see the file comment).
	return append(b, Buffer{"partials", dtype.F32, partRows(m) * f.ncols() * n, Scratch},
		Buffer{"colsum", dtype.F32, f.ncols() * n, Input}, Buffer{"ticket", dtype.F32, 2, Input})
}

// Inputs: dy uniform in [−1, 1], γ uniform in [0.5, 1.5]; each row of x is
// uniform noise scaled to a row RMS (rmsnorm) or standard deviation around
// a row mean uniform in [−1, 1] (layernorm) uniform in [0.5, 2], rounded
// to the dtype; rstd (and mean) are computed from the rounded x in float64
// and rounded to f32, as the forward saves them.
func (f *normBwd) Inputs(s variants.Shape, seed uint64) map[string][]float64 {
	m, n := s.Get("m"), s.Get("n")
	dt := s.DType
	key := s.Key() + "/"
	raw := Uniform(dtype.F64, m*n, -2, 2, seed, key+"x")
	scale := Uniform(dtype.F64, m, 0.5, 2, seed, key+"scale")
	center := Uniform(dtype.F64, m, -1, 1, seed, key+"center")
	x := make([]float64, m*n)
	rstd := make([]float64, m)
	mean := make([]float64, m)
	for r := 0; r < m; r++ {
		row := raw[r*n : (r+1)*n]
		mu, ss := f.moments(row)
		sd := math.Sqrt(ss / float64(n))
		for i, v := range row {
			switch {
			case f.layer && sd == 0:
				x[r*n+i] = dt.Round(center[r])
			case f.layer:
				x[r*n+i] = dt.Round(center[r] + scale[r]*(v-mu)/sd)
			case sd == 0:
				x[r*n+i] = dt.Round(scale[r])
			default:
				x[r*n+i] = dt.Round(scale[r] * v / sd)
			}
		}
		xm, xv := f.moments(x[r*n : (r+1)*n])
		mean[r] = dtype.F32.Round(xm)
		rstd[r] = dtype.F32.Round(1 / math.Sqrt(xv/float64(n)+f.eps))
	}
	in := map[string][]float64{
		"dy":    Uniform(dt, m*n, -1, 1, seed, key+"dy"),
		"x":     x,
		"gamma": Uniform(dt, n, 0.5, 1.5, seed, key+"gamma"),
		"rstd":  rstd,
	}
	if f.layer {
		in["mean"] = mean
	}
	in["colsum"] = make([]float64, f.ncols()*n)
	in["ticket"] = []float64{0, 0}
	return in
}

// moments returns a row's mean (layernorm; 0 for rmsnorm, which does not
// center) and the sum of squared deviations from it, in float64.
func (f *normBwd) moments(row []float64) (mu, ss float64) {
	if f.layer {
		for _, v := range row {
			mu += v
		}
		mu /= float64(len(row))
	}
	for _, v := range row {
		ss += (v - mu) * (v - mu)
	}
	return mu, ss
}

// Reference computes dx, dγ (and dβ) in float64 from the saved rstd (and
// mean) as given.
func (f *normBwd) Reference(s variants.Shape, in map[string][]float64) map[string][]float64 {
	m, n := s.Get("m"), s.Get("n")
	dy, x, gamma, rstd := in["dy"], in["x"], in["gamma"], in["rstd"]
	dx := make([]float64, m*n)
	dg := make([]float64, n)
	db := make([]float64, n)
	xh := make([]float64, n)
	for r := 0; r < m; r++ {
		var mu float64
		if f.layer {
			mu = in["mean"][r]
		}
		var s1, s2 float64
		for i := 0; i < n; i++ {
			xh[i] = (x[r*n+i] - mu) * rstd[r]
			g := gamma[i] * dy[r*n+i]
			s1 += g
			s2 += g * xh[i]
			dg[i] += dy[r*n+i] * xh[i]
			db[i] += dy[r*n+i]
		}
		s1, s2 = s1/float64(n), s2/float64(n)
		if !f.layer {
			s1 = 0
		}
		for i := 0; i < n; i++ {
			dx[r*n+i] = rstd[r] * (gamma[i]*dy[r*n+i] - s1 - xh[i]*s2)
		}
	}
	out := map[string][]float64{"dx": dx, "dgamma": dg}
	if f.layer {
		out["dbeta"] = db
	}
	return out
}

// Cost: read dy, x (m·n each), γ (n), rstd (and mean) (m f32); write dx
// (m·n) and the column sums (n f32 each). Flops per element: rmsnorm 7
// (x̂, g, g·x̂, dy·x̂, r·g, the fma of dx), layernorm 10.
func (f *normBwd) Cost(s variants.Shape) Cost {
	m, n := int64(s.Get("m")), int64(s.Get("n"))
	sz := int64(s.DType.Size())
	stats, cols, flops := int64(1), int64(1), int64(7)
	if f.layer {
		stats, cols, flops = 2, 2, 10
	}
	return Cost{Bytes: 3*m*n*sz + n*sz + 4*stats*m + 4*cols*n, Flops: flops * m * n}
}

// normBounds returns rmax, x̂max and the longest row-sum chain K of the
// generated inputs (see the file comment).
func (f *normBwd) normBounds(s variants.Shape) (rmax, xhmax, k float64) {
	n := s.Get("n")
	rmax = 2 * (1 + 4*s.DType.Epsilon())
	xhmax = math.Min(math.Sqrt(float64(n)), 4)
	if f.layer && n == 1 {
		rmax, xhmax = 1/math.Sqrt(f.eps), 0
	}
	return rmax, xhmax, float64(min(n, maxHeld/2) + 40)
}

// Tolerance gives dx and the column sums their own tolerances.
func (f *normBwd) Tolerance(s variants.Shape, buffer string) Tolerance {
	rmax, xhmax, k := f.normBounds(s)
	const gmax = 1.5
	m := s.Get("m")
	// Column sums: G ≤ ⌈m/2⌉ CTAs (rows·rpg ≥ 2), and running sums within
	// 4.8 standard deviations (√(m/3): E[dy²] = 1/3, E[x̂²] ≤ 1) plus a term.
	kg := float64(gen.CeilDiv(m, 2) + 24)
	walk := 4.8 * math.Sqrt(float64(m)/3)
	switch buffer {
	case "dgamma":
		return Tolerance{Atol: kg * U32 * (walk + math.Max(xhmax, 1)), Rtol: 8 * U32}
	case "dbeta":
		return Tolerance{Atol: kg * U32 * (walk + 1), Rtol: 8 * U32}
	}
	return StoreTol(Tolerance{Atol: rmax * gmax * U32 * (xhmax*(k+8) + k + 13), Rtol: 4 * U32}, s.DType)
}

// Emit generates one variant: zero + main (atomic), main + finalize
// (partial), or main alone (ticket, atomic1).
func (f *normBwd) Emit(s variants.Shape, p variants.Params) (Program, error) {
	g, err := f.cfg.checkedGeom(f, s, p)
	if err != nil {
		return Program{}, err
	}
	entry := f.name + "_" + s.DType.String()
	mod := ptx.NewModule()
	var launches []Launch
	if g.dgamma == "atomic" {
		launches = append(launches, f.emitZero(mod, entry+"_zero", g))
	}
	launches = append(launches, f.emitMain(mod, entry, g))
	if g.dgamma == "partial" {
		launches = append(launches, f.emitFinalize(mod, entry+"_finalize", g))
	}
	// With pdl the second launch overlaps the first one's tail (see
	// Launch.Dependent); its kernel waits before it touches what the first
	// writes.
	if g.pdl {
		launches[1].Dependent = true
	}
	built, err := mod.Build()
	if err != nil {
		return Program{}, errorf(f, "%s: %w", p, err)
	}
	return Program{PTX: built.String(), Launches: launches}, nil
}

// colArgs are the column-sum buffers: dgamma (and dbeta).
func (f *normBwd) colArgs() []Arg {
	a := []Arg{{Buffer: "dgamma"}}
	if f.layer {
		a = append(a, Arg{Buffer: "dbeta"})
	}
	return a
}

// emitZero writes the kernel that zeroes the column sums: one thread per
// column.
func (f *normBwd) emitZero(mod *ptx.Module, entry string, g rowGeom) Launch {
	const block = 256
	k := mod.Func(entry)
	k.ReqNTid(block)
	if g.pdl {
		// The row kernel waits for this one before its red.adds, and may
		// start streaming rows at once.
		k.GridDepLaunch()
	}
	var bases []ptx.Reg
	for _, a := range f.colArgs() {
		bases = append(bases, gen.Param(k, a.Buffer))
	}
	i := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(block), k.Mov(ptx.U32, ptx.TidX))
	off := k.MulWide(ptx.U32, i, ptx.Imm(4))
	var ok ptx.Reg
	if g.n%block != 0 {
		ok = k.Setp("lt", ptx.U32, i, ptx.Imm(g.n))
	}
	zero := k.Mov(ptx.F32, ptx.F32Imm(0))
	for _, b := range bases {
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, b, off), 0), []ptx.Reg{zero})
		if ok.Valid() {
			k.Guard(ok, false)
		}
	}
	return Launch{Entry: entry, Grid: [3]int{gen.CeilDiv(g.n, block), 1, 1}, Block: [3]int{block, 1, 1}, Args: f.colArgs()}
}

// emitMain writes the row kernel: dx, and the CTA's column sums.
func (f *normBwd) emitMain(mod *ptx.Module, entry string, g rowGeom) Launch {
	k := mod.Func(entry)
	args := []Arg{{Buffer: "dy"}, {Buffer: "x"}, {Buffer: "gamma"}}
	dy, x, gamma := gen.Param(k, "dy"), gen.Param(k, "x"), gen.Param(k, "gamma")
	var mean ptx.Reg
	if f.layer {
		mean = gen.Param(k, "mean")
		args = append(args, Arg{Buffer: "mean"})
	}
	rstd, dx := gen.Param(k, "rstd"), gen.Param(k, "dx")
	args = append(args, Arg{Buffer: "rstd"}, Arg{Buffer: "dx"})
	// cols: where the CTA adds its column sums (atomic: dgamma and dbeta;
	// ticket: the halves of colsum) or stores them (partial: partials).
	var cols, outs []ptx.Reg
	var ticket ptx.Reg
	switch g.dgamma {
	case "atomic", "atomic1":
		for _, a := range f.colArgs() {
			cols = append(cols, gen.Param(k, a.Buffer))
			args = append(args, a)
		}
		if g.dgamma == "atomic1" {
			ticket = gen.Param(k, "ticket")
			args = append(args, Arg{Buffer: "ticket"})
		}
	case "partial":
		cols = append(cols, gen.Param(k, "partials"))
		args = append(args, Arg{Buffer: "partials"})
	case "ticket":
		acc := gen.Param(k, "colsum")
		ticket = gen.Param(k, "ticket")
		args = append(args, Arg{Buffer: "colsum"}, Arg{Buffer: "ticket"})
		for i, a := range f.colArgs() {
			cols = append(cols, k.Add(ptx.U64, acc, ptx.Imm(i*g.n*4)))
			outs = append(outs, gen.Param(k, a.Buffer))
			args = append(args, a)
		}
	}

	rk := newRowKernel(k, g)
	dt, vec, vpt, n := g.dt, g.vec, g.vpt, g.n
	na := f.ncols()
	tile := rk.oneTile()
	var elect ptx.Reg
	if g.dgamma == "atomic1" {
		elect = f.atomic1Elect(k, rk, ticket, cols)
	}

	// γ of this thread's columns, and its column sums.
	gp := k.Add(ptx.U64, gamma, rk.laneOff)
	gam := make([][]ptx.Reg, vpt)
	for j := range gam {
		gam[j] = gen.Widen(k, dt, gen.LdRaw(k, ptx.Global, dt, vec, rk.chunkAt(gp, j), tile.ok[j], rk.ld))
	}
	acc := make([][][]ptx.Reg, na) // [column sum][chunk][element]
	for a := range acc {
		acc[a] = make([][]ptx.Reg, vpt)
		for j := range acc[a] {
			for range vec {
				acc[a][j] = append(acc[a][j], k.Mov(ptx.F32, ptx.F32Imm(0)))
			}
		}
	}
	invN := gen.F32Imm(1 / float64(n))

	type rowStats struct{ r, mu ptx.Reg }
	stats := func(r rowRef) rowStats {
		var st rowStats
		off := k.MulWide(ptx.U32, r.idx, ptx.Imm(4))
		st.r = k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Add(ptx.U64, rstd, off), 0), rk.ld)[0]
		if f.layer {
			st.mu = k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Add(ptx.U64, mean, off), 0), rk.ld)[0]
		}
		return st
	}
	// xhat returns x̂ and g = γ·dy of one element.
	xhat := func(xv, dyv, gm ptx.Reg, st rowStats) (xh, gg ptx.Reg) {
		if f.layer {
			xh = k.Mul(ptx.F32, k.Sub(ptx.F32, xv, st.mu), st.r)
		} else {
			xh = k.Mul(ptx.F32, xv, st.r)
		}
		return xh, k.Mul(ptx.F32, gm, dyv)
	}
	// Row sums in vec chains, started by the first chunk: s2 = Σ g·x̂
	// and, for layernorm, s1 = Σ g.
	type chains struct{ s1, s2 []ptx.Reg }
	newChains := func() *chains { return &chains{s1: make([]ptx.Reg, vec), s2: make([]ptx.Reg, vec)} }
	addChains := func(c *chains, e int, xh, gg ptx.Reg) {
		if !c.s2[e].Valid() {
			c.s2[e], c.s1[e] = k.Mul(ptx.F32, gg, xh), gg
			return
		}
		c.s2[e] = k.Fma(ptx.F32, gg, xh, c.s2[e])
		if f.layer {
			c.s1[e] = k.Add(ptx.F32, c.s1[e], gg)
		}
	}
	sumsOf := func(c *chains) []ptx.Reg {
		if f.layer {
			return []ptx.Reg{gen.SumTree(k, c.s2), gen.SumTree(k, c.s1)}
		}
		return []ptx.Reg{gen.SumTree(k, c.s2)}
	}
	// colSums adds the row's contribution to the column sums (not for
	// clamped rows past m).
	colSums := func(r rowRef, j int, dyv, xh []ptx.Reg) {
		for e := 0; e < vec; e++ {
			k.MovTo(acc[0][j][e], k.Fma(ptx.F32, dyv[e], xh[e], acc[0][j][e]))
			if r.valid.Valid() {
				k.Guard(r.valid, false)
			}
			if f.layer {
				k.MovTo(acc[1][j][e], k.Add(ptx.F32, acc[1][j][e], dyv[e]))
				if r.valid.Valid() {
					k.Guard(r.valid, false)
				}
			}
		}
	}
	// coefs turns the row sums into dx = fma(x̂, ca, r·g + cb).
	type coef struct{ ca, cb ptx.Reg }
	coefs := func(sums []ptx.Reg, st rowStats) coef {
		rn := k.Mul(ptx.F32, st.r, invN)
		c := coef{ca: k.Neg(ptx.F32, k.Mul(ptx.F32, rn, sums[0]))}
		if f.layer {
			c.cb = k.Neg(ptx.F32, k.Mul(ptx.F32, rn, sums[1]))
		}
		return c
	}
	dxOf := func(xh, gg ptx.Reg, st rowStats, c coef) ptx.Reg {
		var t ptx.Reg
		if f.layer {
			t = k.Fma(ptx.F32, st.r, gg, c.cb)
		} else {
			t = k.Mul(ptx.F32, st.r, gg)
		}
		return k.Fma(ptx.F32, xh, c.ca, t)
	}

	_, nw := gen.RawType(dt, vec)
	nst := 1 // registers of a row's saved statistics
	if f.layer {
		nst = 2
	}
	// load issues the loads of a batch (store=regs): per row, the words of
	// x and dy of each chunk, then rstd (and mean).
	load := func(rows []rowRef) []ptx.Reg {
		if g.store != "regs" {
			return nil
		}
		var regs []ptx.Reg
		for _, r := range rows {
			xp, dyp := rk.rowPtr(x, r, tile), rk.rowPtr(dy, r, tile)
			for j := 0; j < vpt; j++ {
				regs = append(regs, gen.LdRaw(k, ptx.Global, dt, vec, rk.chunkAt(xp, j), tile.ok[j], rk.ld)...)
				regs = append(regs, gen.LdRaw(k, ptx.Global, dt, vec, rk.chunkAt(dyp, j), tile.ok[j], rk.ld)...)
			}
			st := stats(r)
			regs = append(regs, st.r)
			if f.layer {
				regs = append(regs, st.mu)
			}
		}
		return regs
	}
	compute := func(rows []rowRef, regs []ptx.Reg) {
		if g.store == "regs" || g.store == "async" {
			xs := make([][][]ptx.Reg, len(rows))
			dys := make([][][]ptx.Reg, len(rows))
			sts := make([]rowStats, len(rows))
			for q := range rows {
				for j := 0; j < vpt; j++ {
					xs[q] = append(xs[q], gen.Widen(k, dt, regs[:nw]))
					dys[q] = append(dys[q], gen.Widen(k, dt, regs[nw:2*nw]))
					regs = regs[2*nw:]
				}
				sts[q].r = regs[0]
				if f.layer {
					sts[q].mu = regs[1]
				}
				regs = regs[nst:]
			}
			xhs := make([][][]ptx.Reg, len(rows))
			ggs := make([][][]ptx.Reg, len(rows))
			var sums []ptx.Reg
			for q, r := range rows {
				c := newChains()
				for j := 0; j < vpt; j++ {
					xh, gg := make([]ptx.Reg, vec), make([]ptx.Reg, vec)
					for e := 0; e < vec; e++ {
						xh[e], gg[e] = xhat(xs[q][j][e], dys[q][j][e], gam[j][e], sts[q])
						addChains(c, e, xh[e], gg[e])
					}
					xhs[q], ggs[q] = append(xhs[q], xh), append(ggs[q], gg)
					colSums(r, j, dys[q][j], xh)
				}
				sums = append(sums, sumsOf(c)...)
			}
			sums = rk.red.sum(sums)
			for q, r := range rows {
				c := coefs(sums[q*f.cfg.sums:], sts[q])
				dxp := rk.rowPtr(dx, r, tile)
				for j := 0; j < vpt; j++ {
					out := make([]ptx.Reg, vec)
					for e := range out {
						out[e] = dxOf(xhs[q][j][e], ggs[q][j][e], sts[q], c)
					}
					gen.StVals(k, dt, rk.chunkAt(dxp, j), out, gen.Both(k, r.valid, tile.ok[j]))
				}
			}
			return
		}

		// reread or smem: one row, two passes.
		r := rows[0]
		st := stats(r)
		xp, dyp := rk.rowPtr(x, r, tile), rk.rowPtr(dy, r, tile)
		t := tile
		t.stash = rk.stashBase()
		c := newChains()
		for j := 0; j < vpt; j++ {
			xv, dyv := rk.loadPair(t, j, xp, dyp)
			xh := make([]ptx.Reg, vec)
			for e := 0; e < vec; e++ {
				var gg ptx.Reg
				xh[e], gg = xhat(xv[e], dyv[e], gam[j][e], st)
				addChains(c, e, xh[e], gg)
			}
			colSums(r, j, dyv, xh)
		}
		sums := rk.red.sum(sumsOf(c))
		cf := coefs(sums, st)
		dxp := rk.rowPtr(dx, r, tile)
		for j := 0; j < vpt; j++ {
			xv, dyv := rk.reloadPair(t, j, xp, dyp)
			out := make([]ptx.Reg, vec)
			for e := range out {
				xh, gg := xhat(xv[e], dyv[e], gam[j][e], st)
				out[e] = dxOf(xh, gg, st, cf)
			}
			gen.StVals(k, dt, rk.chunkAt(dxp, j), out, gen.Both(k, r.valid, t.ok[j]))
		}
	}
	if g.store == "async" {
		// Row i's x and dy go to this thread's stash with cp.async; rstd
		// (and mean) are loaded into registers at once.
		stash := rk.stashBase()
		cache := "ca"
		if g.vb == 16 {
			cache = "cg" // L2 only: the rows are read once
		}
		issue := func(r rowRef, i int) []ptx.Reg {
			xp, dyp := rk.rowPtr(x, r, tile), rk.rowPtr(dy, r, tile)
			for j := 0; j < vpt; j++ {
				for ten, p := range []ptx.Reg{xp, dyp} {
					k.CpAsync(cache, rk.asyncAt(stash, i, j, ten), rk.chunkAt(p, j), g.vb)
					if tile.ok[j].Valid() {
						k.Guard(tile.ok[j], false)
					}
				}
			}
			st := stats(r)
			if f.layer {
				return []ptx.Reg{st.r, st.mu}
			}
			return []ptx.Reg{st.r}
		}
		fetch := func(r rowRef, i int, held []ptx.Reg) []ptx.Reg {
			var regs []ptx.Reg
			for j := 0; j < vpt; j++ {
				regs = append(regs, gen.LdRaw(k, ptx.Shared, dt, vec, rk.asyncAt(stash, i, j, 0), tile.ok[j])...)
				regs = append(regs, gen.LdRaw(k, ptx.Shared, dt, vec, rk.asyncAt(stash, i, j, 1), tile.ok[j])...)
			}
			return append(regs, held...)
		}
		rk.forRowsAsync(issue, fetch, compute)
	} else {
		rk.forRows(load, compute)
	}

	// The CTA's column sums.
	if g.pdl && g.dgamma == "atomic" {
		k.GridDepWait() // dγ (and dβ) are zero from here on
	}
	vred := g.pdl || g.dgamma == "atomic1" // vector red.adds (sm_90)
	cta := k.Mov(ptx.U32, ptx.CtaidX)
	var partBase ptx.Reg
	if g.dgamma == "partial" {
		partBase = k.Add(ptx.U64, cols[0], k.MulWide(ptx.U32, cta, ptx.Imm(na*n*4)))
	}
	if g.rows == 1 {
		if g.dgamma == "atomic1" {
			f.atomic1Wait(k, rk, elect, ticket)
			k.BarSync(0)
		}
		// This thread's columns are the CTA's.
		lane4 := k.MulWide(ptx.U32, rk.lt, ptx.Imm(vec*4))
		for a := 0; a < na; a++ {
			var base ptx.Reg
			if g.dgamma != "partial" {
				base = k.Add(ptx.U64, cols[a], lane4)
			} else {
				base = k.Add(ptx.U64, k.Add(ptx.U64, partBase, lane4), ptx.Imm(a*n*4))
			}
			for j := 0; j < vpt; j++ {
				off := int64(j * g.tpr * vec * 4)
				if g.dgamma != "partial" {
					redCols(k, base, off, acc[a][j], tile.ok[j], vred)
				} else {
					gen.StF32(k, ptx.Global, ptx.At(base, off), acc[a][j], tile.ok[j])
				}
			}
		}
	} else {
		// Add the row groups' sums in shared memory: [group][column sum][n].
		if g.store == "async" {
			k.BarSync(0) // every thread has read its rows back: the stash is free
		}
		comb := k.Add(ptx.U32, rk.smem, ptx.Imm(g.combOff))
		mine := k.Mad(ptx.U32, rk.grp, ptx.Imm(na*n*4), k.Mad(ptx.U32, rk.lt, ptx.Imm(vec*4), comb))
		for a := 0; a < na; a++ {
			for j := 0; j < vpt; j++ {
				gen.StF32(k, ptx.Shared, ptx.At(mine, int64((a*n+j*g.tpr*vec)*4)), acc[a][j], tile.ok[j])
			}
		}
		if g.dgamma == "atomic1" {
			f.atomic1Wait(k, rk, elect, ticket)
		}
		k.BarSync(0)
		q := na * g.nv // column vectors of all sums
		for i := 0; i < gen.CeilDiv(q, g.block); i++ {
			qi := k.Add(ptx.U32, rk.tid, ptx.Imm(i*g.block))
			var ok ptx.Reg
			if (i+1)*g.block > q {
				ok = k.Setp("lt", ptx.U32, qi, ptx.Imm(q))
			}
			at := k.Mad(ptx.U32, qi, ptx.Imm(vec*4), comb)
			sum := gen.LdF32(k, ptx.Shared, ptx.At(at, 0), vec, ok)
			for gi := 1; gi < g.rows; gi++ {
				more := gen.LdF32(k, ptx.Shared, ptx.At(at, int64(gi*na*n*4)), vec, ok)
				for e := range sum {
					sum[e] = k.Add(ptx.F32, sum[e], more[e])
				}
			}
			off64 := k.MulWide(ptx.U32, qi, ptx.Imm(vec*4))
			if g.dgamma == "partial" {
				gen.StF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, partBase, off64), 0), sum, ok)
				continue
			}
			base := cols[0]
			if na == 2 {
				isB := k.Setp("ge", ptx.U32, qi, ptx.Imm(g.nv))
				base = k.Selp(ptx.U64, k.Sub(ptx.U64, cols[1], ptx.Imm(n*4)), cols[0], isB)
			}
			redCols(k, k.Add(ptx.U64, base, off64), 0, sum, ok, vred)
		}
	}
	if g.dgamma == "ticket" {
		f.emitTicket(k, rk, cols[0], ticket, outs)
	}
	return Launch{Entry: entry, Grid: [3]int{g.grid, 1, 1}, Block: [3]int{g.block, 1, 1}, SharedBytes: g.smem, Args: args}
}

// redCols adds vals into consecutive f32 column sums at base+off, under
// ok when it is valid: scalar red.adds, or with vector (sm_90) as few
// red.global.add.v4/.v2.f32 as the count allows. Each vector is aligned:
// a chunk starts at a multiple of its vec·4 bytes.
func redCols(k *ptx.Func, base ptx.Reg, off int64, vals []ptx.Reg, ok ptx.Reg, vector bool) {
	for e := 0; e < len(vals); {
		w := 1
		if vector {
			for _, c := range []int{4, 2} {
				if e%c == 0 && e+c <= len(vals) {
					w = c
					break
				}
			}
		}
		k.RedAddF32(ptx.At(base, off+int64(4*e)), vals[e:e+w])
		if ok.Valid() {
			k.Guard(ok, false)
		}
		e += w
	}
}

// atomic1Elect starts an atomic1 kernel: thread 0 draws a start ticket
// (atom.inc on ticket[0], wrapping at G−1 so that it is 0 again after the
// run) and returns it; every other thread holds 1. The CTA that draws 0
// started first, so it is running: its warp 0 zeroes dγ (and dβ) once
// the first rows' loads are in flight (rk.early, which hides the atom's
// latency behind them), makes the zeros visible at gpu scope (membar.gl)
// and counts itself on ticket[1], the flag the others wait for
// (atomic1Wait). No CTA waits for one that has not started, so the wait
// cannot deadlock whatever the grid size.
func (f *normBwd) atomic1Elect(k *ptx.Func, rk *rowKernel, ticket ptx.Reg, cols []ptx.Reg) ptx.Reg {
	g := rk.g
	t := k.Mov(ptx.U32, ptx.Imm(1))
	k.If(k.Setp("eq", ptx.U32, rk.tid, ptx.Imm(0)), func() {
		k.MovTo(t, k.Atom(ptx.Global, "inc", ptx.U32, ptx.At(ticket, 0), ptx.Imm(g.grid-1)))
	})
	rk.early = func() {
		// Lane 0 of warp 0 holds thread 0's ticket, lane 0 of every other
		// warp 1: only warp 0 of the electing CTA zeroes.
		t0 := k.ShflSync("idx", t, ptx.Imm(0), ptx.Imm(31), 0xffffffff)
		k.If(k.Setp("eq", ptx.U32, t0, ptx.Imm(0)), func() {
			w := widestVec(dtype.F32, g.n)
			zeros := make([]ptx.Reg, w)
			zero := k.Mov(ptx.F32, ptx.F32Imm(0))
			for e := range zeros {
				zeros[e] = zero
			}
			for _, c := range cols {
				k.For(ptx.U32, rk.tid, ptx.Imm(g.n/w), ptx.Imm(32), func(i ptx.Reg) {
					k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, c, k.MulWide(ptx.U32, i, ptx.Imm(4*w))), 0), zeros)
				})
			}
			k.Membar("gl")
			lane0 := k.Setp("eq", ptx.U32, rk.tid, ptx.Imm(0))
			k.Red(ptx.Global, "inc", ptx.U32, ptx.At(ticket, 4), ptx.Imm(g.grid-1))
			k.Guard(lane0, false)
		})
	}
	return t
}

// atomic1Wait holds thread 0 of every CTA but the electing one until the
// flag ticket[1] is non-zero (an acquire read: dγ's zeros are visible
// after it; the caller's bar.sync passes that on to the CTA's threads),
// then counts the CTA on the flag. The G counts (the electing CTA's
// included) wrap it to 0: the CTA that counts last is the last to read
// it, so the run leaves both words zero.
func (f *normBwd) atomic1Wait(k *ptx.Func, rk *rowKernel, elect, ticket ptx.Reg) {
	g := rk.g
	waits := k.And(ptx.Pred, k.Setp("eq", ptx.U32, rk.tid, ptx.Imm(0)), k.Setp("ne", ptx.U32, elect, ptx.Imm(0)))
	k.If(waits, func() {
		k.While(func() ptx.Reg {
			v := k.Atom(ptx.Global, "or", ptx.B32, ptx.At(ticket, 4), ptx.Imm(0), ptx.AtomOpts{Sem: "acquire"})
			return k.Setp("eq", ptx.B32, v, ptx.Imm(0))
		}, nil)
		k.Red(ptx.Global, "inc", ptx.U32, ptx.At(ticket, 4), ptx.Imm(g.grid-1))
	})
}

// emitTicket ends a ticket variant: every thread's red.adds into colsum
// are performed at gpu scope (membar.gl) before the CTA takes a ticket
// (atom.inc, wrapping at G−1 so that the counter is 0 again after the
// run); the CTA that draws G−1 is the last, so every other CTA's sums are
// in colsum: it copies them to dγ (and dβ) and clears colsum for the next
// run. The copy loads first, eight vectors per thread at a time, then
// stores, so that the loads are in flight together.
func (f *normBwd) emitTicket(k *ptx.Func, rk *rowKernel, acc, ticket ptx.Reg, outs []ptx.Reg) {
	g := rk.g
	k.Membar("gl")
	k.BarSync(0)
	flag := k.SharedArray("last", ptx.U32, 1, 0)
	k.If(k.Setp("eq", ptx.U32, rk.tid, ptx.Imm(0)), func() {
		old := k.Atom(ptx.Global, "inc", ptx.U32, ptx.At(ticket, 0), ptx.Imm(g.grid-1))
		v := k.Selp(ptx.U32, ptx.Imm(1), ptx.Imm(0), k.Setp("eq", ptx.U32, old, ptx.Imm(g.grid-1)))
		k.St(ptx.Shared, ptx.U32, ptx.At(flag, 0), []ptx.Reg{v})
	})
	k.BarSync(0)
	last := k.Setp("ne", ptx.U32, k.Ld(ptx.Shared, ptx.U32, 1, ptx.At(flag, 0))[0], ptx.Imm(0))
	k.If(last, func() {
		k.Membar("gl")
		na, vec := f.ncols(), g.vec
		q := na * g.nv // column vectors
		iters := gen.CeilDiv(q, g.block)
		zero := k.Mov(ptx.F32, ptx.F32Imm(0))
		zeros := make([]ptx.Reg, vec)
		for e := range zeros {
			zeros[e] = zero
		}
		for i0 := 0; i0 < iters; i0 += 8 {
			type vecRef struct {
				qi, ok, at ptx.Reg
				vals       []ptx.Reg
			}
			var vs []vecRef
			for i := i0; i < min(iters, i0+8); i++ {
				var v vecRef
				v.qi = k.Add(ptx.U32, rk.tid, ptx.Imm(i*g.block))
				if (i+1)*g.block > q {
					v.ok = k.Setp("lt", ptx.U32, v.qi, ptx.Imm(q))
				}
				v.at = k.Add(ptx.U64, acc, k.MulWide(ptx.U32, v.qi, ptx.Imm(vec*4)))
				v.vals = gen.LdF32(k, ptx.Global, ptx.At(v.at, 0), vec, v.ok, ptx.LdOpts{Cache: ptx.CacheGlobal})
				vs = append(vs, v)
			}
			for _, v := range vs {
				base := outs[0]
				if na == 2 {
					isB := k.Setp("ge", ptx.U32, v.qi, ptx.Imm(g.nv))
					base = k.Selp(ptx.U64, k.Sub(ptx.U64, outs[1], ptx.Imm(g.n*4)), outs[0], isB)
				}
				gen.StF32(k, ptx.Global, ptx.At(k.Add(ptx.U64, base, k.MulWide(ptx.U32, v.qi, ptx.Imm(vec*4))), 0), v.vals, v.ok)
				gen.StF32(k, ptx.Global, ptx.At(v.at, 0), zeros, v.ok)
			}
		}
	})
}

// emitFinalize writes the kernel that adds the CTAs' partial column sums:
// a CTA takes 32 columns (of the na·n) and S = min(32, 2^⌈log2 G⌉) slices
// of the G partial rows; slice s adds rows s, s+S, …; a shared-memory
// transpose lets warp w add the slices of columns w, w+S, … with a
// butterfly.
func (f *normBwd) emitFinalize(mod *ptx.Module, entry string, g rowGeom) Launch {
	k := mod.Func(entry)
	na := f.ncols()
	c := na * g.n
	gr := g.grid
	sl := min(32, gen.Pow2Ceil(gr))
	block := 32 * sl
	k.ReqNTid(block)
	if g.pdl {
		k.GridDepWait() // the row kernel's partials are complete from here on
	}
	part := gen.Param(k, "partials")
	var outs []ptx.Reg
	for _, a := range f.colArgs() {
		outs = append(outs, gen.Param(k, a.Buffer))
	}
	tid := k.Mov(ptx.U32, ptx.TidX)
	lane := k.And(ptx.U32, tid, ptx.Imm(31))
	slice := k.Shr(ptx.U32, tid, ptx.Imm(5))
	col0 := k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(32))
	col := k.Add(ptx.U32, col0, lane)
	colc := col
	if c%32 != 0 {
		colc = k.Min(ptx.U32, col, ptx.Imm(c-1))
	}
	ptr := k.Add(ptx.U64, part, k.MulWide(ptx.U32, k.Mad(ptx.U32, slice, ptx.Imm(c), colc), ptx.Imm(4)))
	loads := gen.CeilDiv(gr, sl) // partial rows per slice, at most
	rowOK := func(i ptx.Operand) ptx.Reg {
		// slice + i < G
		return k.Setp("lt", ptx.U32, k.Add(ptx.U32, slice, i), ptx.Imm(gr))
	}
	nc := ptx.LdOpts{NC: true}
	var acc ptx.Reg
	if loads <= 16 {
		var vals []ptx.Reg
		for i := 0; i < loads; i++ {
			var ok ptx.Reg
			if (i+1)*sl > gr {
				ok = rowOK(ptx.Imm(i * sl))
			}
			vals = append(vals, gen.LdRaw(k, ptx.Global, dtype.F32, 1, ptx.At(ptr, int64(i*sl*c*4)), ok, nc)[0])
		}
		acc = gen.SumTree(k, vals)
	} else {
		const unroll = 8
		acc = k.Mov(ptx.F32, ptx.F32Imm(0))
		k.For(ptx.U32, ptx.Imm(0), ptx.Imm(gen.CeilDiv(loads, unroll)), ptx.Imm(1), func(it ptx.Reg) {
			first := k.Mul(ptx.U32, it, ptx.Imm(unroll*sl))
			at := k.Add(ptx.U64, ptr, k.MulWide(ptx.U32, first, ptx.Imm(c*4)))
			var vals []ptx.Reg
			for i := 0; i < unroll; i++ {
				ok := rowOK(k.Add(ptx.U32, first, ptx.Imm(i*sl)))
				vals = append(vals, gen.LdRaw(k, ptx.Global, dtype.F32, 1, ptx.At(at, int64(i*sl*c*4)), ok, nc)[0])
			}
			k.MovTo(acc, k.Add(ptx.F32, acc, gen.SumTree(k, vals)))
		})
	}
	store := func(colr ptx.Reg, v ptx.Reg, ok ptx.Reg) {
		base := outs[0]
		if na == 2 {
			isB := k.Setp("ge", ptx.U32, colr, ptx.Imm(g.n))
			base = k.Selp(ptx.U64, k.Sub(ptx.U64, outs[1], ptx.Imm(g.n*4)), outs[0], isB)
		}
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, base, k.MulWide(ptx.U32, colr, ptx.Imm(4))), 0), []ptx.Reg{v})
		if ok.Valid() {
			k.Guard(ok, false)
		}
	}
	if sl == 1 {
		var ok ptx.Reg
		if c%32 != 0 {
			ok = k.Setp("lt", ptx.U32, col, ptx.Imm(c))
		}
		store(col, acc, ok)
	} else {
		const pitch = 33 // floats per slice row: conflict-free columns
		sm := k.Mov(ptx.U32, k.SharedArray("t", ptx.F32, sl*pitch, 0))
		k.St(ptx.Shared, ptx.F32, ptx.At(k.Mad(ptx.U32, k.Mad(ptx.U32, slice, ptx.Imm(pitch), lane), ptx.Imm(4), sm), 0), []ptx.Reg{acc})
		k.BarSync(0)
		var laneOK ptx.Reg
		if sl < 32 {
			laneOK = k.Setp("lt", ptx.U32, lane, ptx.Imm(sl))
		}
		lane0 := k.Setp("eq", ptx.U32, lane, ptx.Imm(0))
		// Lane l reads slice l of each column (lanes ≥ S read zeros; their
		// address is clamped so that it stays in the array).
		lc := lane
		if sl < 32 {
			lc = k.Min(ptx.U32, lane, ptx.Imm(sl-1))
		}
		for i := 0; i < 32/sl; i++ {
			cc := k.Add(ptx.U32, slice, ptx.Imm(i*sl)) // column in the CTA
			at := k.Mad(ptx.U32, k.Mad(ptx.U32, lc, ptx.Imm(pitch), cc), ptx.Imm(4), sm)
			v := gen.LdRaw(k, ptx.Shared, dtype.F32, 1, ptx.At(at, 0), laneOK)[0]
			for off := 16; off >= 1; off /= 2 {
				v = k.Add(ptx.F32, v, k.BitsToF32(k.ShflSync("bfly", v, ptx.Imm(off), ptx.Imm(31), 0xffffffff)))
			}
			colr := k.Add(ptx.U32, col0, cc)
			ok := lane0
			if c%32 != 0 {
				ok = k.And(ptx.Pred, lane0, k.Setp("lt", ptx.U32, colr, ptx.Imm(c)))
			}
			store(colr, v, ok)
		}
	}
	return Launch{Entry: entry, Grid: [3]int{gen.CeilDiv(c, 32), 1, 1}, Block: [3]int{block, 1, 1},
		Args: append([]Arg{{Buffer: "partials"}}, f.colArgs()...)}
}
