package lppool

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// Emit writes one variant: gather as one launch; scatter as a launch that
// zeroes its target, the scatter launch and, for 16-bit dtypes, a launch
// that rounds the f32 accumulator the program declares into dx. Every
// launch takes the batch dim n at run time (batch.go).
func (def) Emit(s Shape, p Params) (kernels.Program, error) {
	g := geomOf(s)
	m := ptx.NewModule()
	var launches []kernels.Launch
	var own []kernels.Buffer
	if p.Form == Gather {
		launches = emitGather(m, s.DType, g, p)
	} else {
		launches, own = emitScatter(m, s.DType, g, p)
	}
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	return kernels.Program{PTX: built.String(), Launches: launches, Buffers: own, RuntimeDims: []string{batchDim}}, nil
}

// entry is the name of a dtype's main kernel; the others add a suffix.
func entry(dt dtype.DType) string { return name + "_" + dt.String() }

// mainKernel is what the gather and scatter kernels share: the pointers
// to x, dy, y and the buffer they write (out), the power math, and the
// item grid over their items (units or groups) of every batch element.
type mainKernel struct {
	k             *ptx.Func
	x, dy, y, out ptx.Reg
	e             *powMath
	ig            itemGrid
}

// newMainKernel begins main kernel ent of variant p, which writes buffer
// out and has per items per batch element.
func newMainKernel(m *ptx.Module, ent string, dt dtype.DType, g geom, p Params, out string, per int) mainKernel {
	k := m.Func(ent)
	k.ReqNTid(p.Block)
	k.MaxNReg(p.MaxNReg)
	mk := mainKernel{k: k, x: gen.Param(k, "x"), dy: gen.Param(k, "dy"), y: gen.Param(k, "y"), out: gen.Param(k, out)}
	mk.e = newPowMath(k, g, dt, p.Pow)
	mk.ig = newItemGrid(k, batchParam(k), per, p.Block, p.EPT)
	return mk
}

// mainLaunch is the launch of main kernel ent of variant p.
func mainLaunch(ent, out string, per int, p Params) kernels.Launch {
	return kernels.Launch{Entry: ent, Grid: batchGrid(per, p.Block*p.EPT), Block: [3]int{p.Block, 1, 1},
		Args: []kernels.Arg{{Buffer: "x"}, {Buffer: "dy"}, {Buffer: "y"}, {Buffer: out}, batchArg}}
}

// loadThenUse emits, in each body of the item grid (itemGrid.each), the
// loads of every one of a thread's ept items first, then the use of each.
func loadThenUse[T any](mk mainKernel, ept int, load func(idx, ok ptx.Reg) T, use func(T)) {
	mk.ig.each(mk.k, func(item items) {
		loaded := make([]T, ept)
		for j := range loaded {
			loaded[j] = load(item(j))
		}
		for _, l := range loaded {
			use(l)
		}
	})
}

// gatherKernel is the gather kernel being written; it writes dx.
type gatherKernel struct {
	mainKernel
	dt dtype.DType
	g  geom
	pl gatherPlan
}

// gatherUnit is one unit of a thread once its loads are issued.
type gatherUnit struct {
	q, xoff          ptx.Reg
	vok, xs, dys, ys []ptx.Reg
}

// emitGather writes the gather kernel: one launch.
func emitGather(m *ptx.Module, dt dtype.DType, g geom, p Params) []kernels.Launch {
	pl := newGatherPlan(g, p.SPT, p.Vec)
	units := g.c * pl.U // per batch element
	gk := gatherKernel{mainKernel: newMainKernel(m, entry(dt), dt, g, p, "dx", units), dt: dt, g: g, pl: pl}
	gk.k.Comment("gather: unit of %d elements (%d windows of stride %d), %d window slots, %d units per row", pl.E, pl.G, g.s, pl.nw, pl.U)
	loadThenUse(gk.mainKernel, p.EPT, gk.load, gk.store)
	return []kernels.Launch{mainLaunch(entry(dt), "dx", units, p)}
}

// load issues the loads of unit u (ok: u is a unit of the grid): its
// x vectors and the dy and y of its window slots.
func (gk *gatherKernel) load(u, ok ptx.Reg) gatherUnit {
	k, g, pl, dt := gk.k, gk.g, gk.pl, gk.dt
	size := dt.Size()
	r, q := split(k, u, pl.U)
	un := gatherUnit{q: q}
	un.xoff = k.MulWide(ptx.U32, rowIndex(k, r, q, g.l, pl.E), ptx.Imm(size))
	xa := k.Add(ptx.U64, gk.x, un.xoff)
	for v := 0; v < pl.E/pl.V; v++ {
		vok := gen.Both(k, ok, qLess(k, q, pl.tailQ[v]))
		un.vok = append(un.vok, vok)
		un.xs = append(un.xs, gen.LdVals(k, ptx.Global, dt, pl.V, ptx.At(xa, int64(v*pl.V*size)), vok, gen.LdNC)...)
	}
	woff := k.MulWide(ptx.U32, rowIndex(k, r, q, g.lout, pl.G), ptx.Imm(size))
	dya, ya := k.Add(ptx.U64, gk.dy, woff), k.Add(ptx.U64, gk.y, woff)
	for d := 0; d < pl.nw; d++ {
		wok := gen.Both(k, ok, gen.Both(k, qAtLeast(k, q, pl.loQ[d]), qLess(k, q, pl.hiQ[d])))
		off := int64((d - pl.back) * size)
		un.dys = append(un.dys, gen.LdVals(k, ptx.Global, dt, 1, ptx.At(dya, off), wok, gen.LdNC)[0])
		un.ys = append(un.ys, gen.LdVals(k, ptx.Global, dt, 1, ptx.At(ya, off), wok, gen.LdNC)[0])
	}
	return un
}

// store computes a unit's dx from its windows and stores it in vectors.
func (gk *gatherKernel) store(u gatherUnit) {
	k, pl, e := gk.k, gk.pl, gk.e
	size := gk.dt.Size()
	ws := e.windows(u.dys, u.ys, u.q, pl.lastQ)
	dxa := k.Add(ptx.U64, gk.out, u.xoff)
	for v := 0; v < pl.E/pl.V; v++ {
		out := make([]ptx.Reg, pl.V)
		for i := range out {
			el := v*pl.V + i
			var cw []win
			for _, d := range pl.cover[el] {
				cw = append(cw, ws[d])
			}
			out[i] = e.element(u.xs[el], cw)
		}
		gen.StVals(k, gk.dt, ptx.At(dxa, int64(v*pl.V*size)), out, u.vok[v])
	}
}

// scatterKernel is the scatter kernel being written: it adds into its out
// buffer, of type tt.
type scatterKernel struct {
	mainKernel
	dt    dtype.DType
	g     geom
	pl    scatterPlan
	edges bool
	tt    ptx.Type
}

// scatterGroup is one group of windows of a thread once its loads are
// issued; eok and xs are set for the elements its windows cover.
type scatterGroup struct {
	q, aoff          ptx.Reg
	eok, xs, dys, ys []ptx.Reg
}

// emitScatter writes the scatter program: zero the target, add every
// window's contributions into it and, for 16-bit dtypes, whose target is
// the program's f32 accumulator acc, convert acc into dx. It returns the
// launches and the program's own buffers.
func emitScatter(m *ptx.Module, dt dtype.DType, g geom, p Params) ([]kernels.Launch, []kernels.Buffer) {
	elems := g.c * g.l // per batch element
	target, tt := "dx", ptx.F32
	if dt == dtype.F64 {
		tt = ptx.F64
	}
	if dt.Size() == 2 {
		target = "acc"
	}
	launches := []kernels.Launch{zeroKernel(m, entry(dt)+"_zero", target, elems*tt.Bits()/32, p.Block)}
	launches = append(launches, scatterLaunch(m, dt, g, p, target, tt))
	if target != "acc" {
		return launches, nil
	}
	launches = append(launches, convertKernel(m, entry(dt)+"_convert", dt, elems, p.Block))
	return launches, []kernels.Buffer{{Name: "acc", DType: dtype.F32, Elems: batchElems(elems), Role: kernels.Scratch}}
}

// scatterLaunch writes the kernel that adds the windows' contributions
// into target.
func scatterLaunch(m *ptx.Module, dt dtype.DType, g geom, p Params, target string, tt ptx.Type) kernels.Launch {
	ent := entry(dt) + "_scatter"
	pl := newScatterPlan(g, p.SPT)
	groups := g.c * pl.WG // per batch element
	sk := scatterKernel{mainKernel: newMainKernel(m, ent, dt, g, p, target, groups), dt: dt, g: g, pl: pl, edges: p.Form == ScatterEdges, tt: tt}
	sk.k.Comment("scatter: %d windows per thread covering %d elements, %d groups per row", pl.G, pl.span, pl.WG)
	loadThenUse(sk.mainKernel, p.EPT, sk.load, sk.add)
	return mainLaunch(ent, target, groups, p)
}

// load issues the loads of group t (ok: t is a group of the grid): the dy
// and y of its windows and the x its windows cover.
func (sk *scatterKernel) load(t, ok ptx.Reg) scatterGroup {
	k, g, pl, dt := sk.k, sk.g, sk.pl, sk.dt
	size := dt.Size()
	r, q := split(k, t, pl.WG)
	gr := scatterGroup{q: q}
	xe := rowIndex(k, r, q, g.l, pl.G*g.s)
	xa := k.Add(ptx.U64, sk.x, k.MulWide(ptx.U32, xe, ptx.Imm(size)))
	gr.aoff = k.MulWide(ptx.U32, xe, ptx.Imm(sk.tt.Bits()/8))
	woff := k.MulWide(ptx.U32, rowIndex(k, r, q, g.lout, pl.G), ptx.Imm(size))
	dya, ya := k.Add(ptx.U64, sk.dy, woff), k.Add(ptx.U64, sk.y, woff)
	for w := 0; w < pl.G; w++ {
		wok := gen.Both(k, ok, qLess(k, q, pl.winHiQ[w]))
		gr.dys = append(gr.dys, gen.LdVals(k, ptx.Global, dt, 1, ptx.At(dya, int64(w*size)), wok, gen.LdNC)[0])
		gr.ys = append(gr.ys, gen.LdVals(k, ptx.Global, dt, 1, ptx.At(ya, int64(w*size)), wok, gen.LdNC)[0])
	}
	gr.eok = make([]ptx.Reg, pl.span)
	gr.xs = make([]ptx.Reg, pl.span)
	for el := 0; el < pl.span; el++ {
		if len(pl.cover[el]) == 0 {
			continue
		}
		gr.eok[el] = gen.Both(k, ok, qLess(k, q, pl.elemHiQ[el]))
		gr.xs[el] = gen.LdVals(k, ptx.Global, dt, 1, ptx.At(xa, int64(el*size)), gr.eok[el], gen.LdNC)[0]
	}
	return gr
}

// add adds a group's contributions into the target: red.add, or with
// scatter_edges a plain store for the elements no other group covers.
func (sk *scatterKernel) add(gr scatterGroup) {
	k, pl, e := sk.k, sk.pl, sk.e
	tsize := sk.tt.Bits() / 8
	ws := e.windows(gr.dys, gr.ys, gr.q, pl.lastQ)
	aa := k.Add(ptx.U64, sk.out, gr.aoff)
	for el := 0; el < pl.span; el++ {
		if len(pl.cover[el]) == 0 {
			continue
		}
		var cw []win
		for _, w := range pl.cover[el] {
			cw = append(cw, ws[w])
		}
		v := e.element(gr.xs[el], cw)
		at := ptx.At(aa, int64(el*tsize))
		if sk.edges && pl.excl[el] {
			k.St(ptx.Global, sk.tt, at, []ptx.Reg{v})
		} else {
			k.Red(ptx.Global, "add", sk.tt, at, v)
		}
		if gr.eok[el].Valid() {
			k.Guard(gr.eok[el], false)
		}
	}
}

// qLess returns the predicate q < t, or "always" for t < 0.
func qLess(k *ptx.Func, q ptx.Reg, t int) ptx.Reg {
	if t < 0 {
		return ptx.Reg{}
	}
	return k.Setp("lt", ptx.U32, q, ptx.Imm(t))
}

// qAtLeast returns the predicate q ≥ t, or "always" for t ≤ 0.
func qAtLeast(k *ptx.Func, q ptx.Reg, t int) ptx.Reg {
	if t <= 0 {
		return ptx.Reg{}
	}
	return k.Setp("ge", ptx.U32, q, ptx.Imm(t))
}

// split splits a flat index u into row r = u / per and q = u mod per.
func split(k *ptx.Func, u ptx.Reg, per int) (r, q ptx.Reg) {
	r = k.Div(ptx.U32, u, ptx.Imm(per))
	return r, k.Sub(ptx.U32, u, k.Mul(ptx.U32, r, ptx.Imm(per)))
}

// rowIndex returns r·rowLen + q·step (U32).
func rowIndex(k *ptx.Func, r, q ptx.Reg, rowLen, step int) ptx.Reg {
	qs := k.Mul(ptx.U32, q, ptx.Imm(step))
	return k.Mad(ptx.U32, r, ptx.Imm(rowLen), qs)
}

// zeroKernel writes a kernel that zeroes n·words 4-byte words of buffer
// buf, 16 bytes per thread (quads).
func zeroKernel(m *ptx.Module, name, buf string, words, block int) kernels.Launch {
	k := m.Func(name)
	k.ReqNTid(block)
	b := gen.Param(k, "buf")
	q := newQuads(k, batchParam(k), words, block)
	z := k.Mov(ptx.B32, ptx.Imm(0))
	a := k.Add(ptx.U64, b, k.MulWide(ptx.U32, q.u, ptx.Imm(16)))
	k.St(ptx.Global, ptx.B32, ptx.At(a, 0), []ptx.Reg{z, z, z, z})
	if q.ok.Valid() {
		k.Guard(q.ok, false)
	}
	q.tail(func(i int, ok ptx.Reg) {
		k.St(ptx.Global, ptx.B32, ptx.At(a, int64(4*i)), []ptx.Reg{z})
		k.Guard(ok, false)
	})
	return kernels.Launch{Entry: name, Grid: batchGrid(words, 4*block), Block: [3]int{block, 1, 1}, Args: []kernels.Arg{{Buffer: buf}, batchArg}}
}

// convertKernel writes a kernel that rounds the n·elems elements of the
// f32 accumulator acc to dx of dtype dt (16-bit), 4 per thread (quads).
func convertKernel(m *ptx.Module, name string, dt dtype.DType, elems, block int) kernels.Launch {
	k := m.Func(name)
	k.ReqNTid(block)
	acc, dx := gen.Param(k, "acc"), gen.Param(k, "dx")
	q := newQuads(k, batchParam(k), elems, block)
	aa := k.Add(ptx.U64, acc, k.MulWide(ptx.U32, q.u, ptx.Imm(16)))
	da := k.Add(ptx.U64, dx, k.MulWide(ptx.U32, q.u, ptx.Imm(4*dt.Size())))
	v := gen.LdVals(k, ptx.Global, dtype.F32, 4, ptx.At(aa, 0), q.ok, gen.LdNC)
	gen.StVals(k, dt, ptx.At(da, 0), v, q.ok)
	q.tail(func(i int, ok ptx.Reg) {
		v := gen.LdVals(k, ptx.Global, dtype.F32, 1, ptx.At(aa, int64(4*i)), ok, gen.LdNC)
		gen.StVals(k, dt, ptx.At(da, int64(i*dt.Size())), v, ok)
	})
	return kernels.Launch{Entry: name, Grid: batchGrid(elems, 4*block), Block: [3]int{block, 1, 1},
		Args: []kernels.Arg{{Buffer: "acc"}, {Buffer: "dx"}, batchArg}}
}
