package ptx

import (
	"math/bits"
	"strings"

	"github.com/gradtune/gradtune/kernels/ptx/isa"
)

// inf stands for an unbounded end of an interval; arithmetic saturates
// there.
const inf = int64(1) << 62

// aval is the abstract value of a register (see analysis.go).
type aval struct {
	lvl    uint8  // uniformity
	lane   bool   // the value is the lane index
	lkind  uint8  // predicates: which lanes of each warp it selects
	sym    int16  // shared array index+1 the value points into; -1 dynamic
	why    int32  // reason for lvl
	tdiv   int32  // the value is floor(%tid.x / tdiv) (0: no)
	lmask  uint32 // predicates: the lanes (see lkind)
	factsT int32  // predicates: facts when true
	factsF int32  // predicates: facts when false
	ver    int32  // version, new at every definition; 0: never defined
	lo, hi int64  // interval of the value (of the offset from the symbol when sym != 0)
	cm, cr int32  // congruence: value ≡ cr (mod cm) when cm ≥ 2
	f      lin    // affine form of the value (of the offset)
}

// maxTerms bounds the registers an affine form may combine.
const maxTerms = 3

// lin is an affine form c + Σ a[j]·st[b[j]], valid while every st[b[j]]
// has version ver[j]. A stored form has at least one term.
type lin struct {
	has bool
	n   int8
	b   [maxTerms]int32
	ver [maxTerms]int32
	a   [maxTerms]int32
	c   int64
}

// linConst is the form of the constant c.
func linConst(c int64) lin { return lin{has: true, c: c} }

// valid reports whether every term of f still has its version.
func (a *analyzer) valid(f *lin) bool {
	if !f.has {
		return false
	}
	for j := int8(0); j < f.n; j++ {
		if a.st[f.b[j]].ver != f.ver[j] {
			return false
		}
	}
	return true
}

// formEval returns the interval of a valid form.
func (a *analyzer) formEval(f *lin) (int64, int64) {
	lo, hi := f.c, f.c
	for j := int8(0); j < f.n; j++ {
		b := a.st[f.b[j]]
		bl, bh := tight(b.lo, b.hi, int64(b.cm), int64(b.cr))
		l, h := affine(bl, bh, int64(f.a[j]), 0)
		lo, hi = sadd(lo, l), sadd(hi, h)
	}
	return lo, hi
}

// linSum returns sx·x + sy·y, or no form when a coefficient overflows or
// the terms are too many.
func linSum(x lin, sx int64, y lin, sy int64) lin {
	if !x.has || !y.has {
		return lin{}
	}
	var b, ver [maxTerms]int32
	var k [maxTerms]int64
	n := 0
	add := func(bj, vj int32, kj int64) bool {
		for j := 0; j < n; j++ {
			if b[j] == bj && ver[j] == vj {
				k[j] = sadd(k[j], kj)
				return true
			}
		}
		if n == maxTerms {
			return false
		}
		b[n], ver[n], k[n] = bj, vj, kj
		n++
		return true
	}
	for j := int8(0); j < x.n; j++ {
		if !add(x.b[j], x.ver[j], smul(sx, int64(x.a[j]))) {
			return lin{}
		}
	}
	for j := int8(0); j < y.n; j++ {
		if !add(y.b[j], y.ver[j], smul(sy, int64(y.a[j]))) {
			return lin{}
		}
	}
	r := lin{has: true, c: sadd(smul(sx, x.c), smul(sy, y.c))}
	if r.c <= -inf || r.c >= inf {
		return lin{}
	}
	for j := 0; j < n; j++ {
		if k[j] == 0 {
			continue // cancelled
		}
		if k[j] < -1<<31 || k[j] >= 1<<31 {
			return lin{}
		}
		r.b[r.n], r.ver[r.n], r.a[r.n] = b[j], ver[j], int32(k[j])
		r.n++
	}
	return r
}

// linScale returns k·x.
func linScale(x lin, k int64) lin { return linSum(x, k, lin{has: true}, 0) }

// stored returns f as kept in a register: only forms with terms.
func stored(f lin) lin {
	if !f.has || f.n == 0 {
		return lin{}
	}
	return f
}

// fact is a bound on a register value at a version.
type fact struct {
	idx, ver int32
	lo, hi   int64
}

// opv is an operand as read by an instruction.
type opv struct {
	aval
	idx  int32 // state index of a register operand, else -1
	rt   Type  // register's type
	cnst bool  // lo == hi; f (the form of the value) is then the constant
}

func sat(x int64) int64 { return max(-inf, min(inf, x)) }

func sadd(x, y int64) int64 {
	if x >= inf || y >= inf {
		if x <= -inf || y <= -inf {
			return 0 // undefined; callers never mix them
		}
		return inf
	}
	if x <= -inf || y <= -inf {
		return -inf
	}
	return sat(x + y)
}

func smul(x, y int64) int64 {
	if x == 0 || y == 0 {
		return 0
	}
	neg := (x < 0) != (y < 0)
	ax, ay := x, y
	if ax < 0 {
		ax = -ax
	}
	if ay < 0 {
		ay = -ay
	}
	hi, lo := bits.Mul64(uint64(ax), uint64(ay))
	if hi != 0 || lo >= uint64(inf) || ax >= inf || ay >= inf {
		if neg {
			return -inf
		}
		return inf
	}
	if neg {
		return -int64(lo)
	}
	return int64(lo)
}

// affine returns the interval of a·[lo, hi] + c.
func affine(lo, hi, a, c int64) (int64, int64) {
	l, h := sadd(smul(a, lo), c), sadd(smul(a, hi), c)
	if a < 0 {
		l, h = h, l
	}
	return l, h
}

func mulIv(xl, xh, yl, yh int64) (int64, int64) {
	p := [4]int64{smul(xl, yl), smul(xl, yh), smul(xh, yl), smul(xh, yh)}
	lo, hi := p[0], p[0]
	for _, v := range p[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func floorDiv(x, d int64) int64 {
	if x >= inf || x <= -inf {
		return x
	}
	q := x / d
	if (x%d != 0) && ((x < 0) != (d < 0)) {
		q--
	}
	return q
}

func ceilDiv(x, d int64) int64 {
	if x >= inf || x <= -inf {
		return x
	}
	return -floorDiv(-x, d)
}

func isIntOrBit(t Type) bool {
	return t.IsInt() || t.IsBits()
}

// rangeOf returns the values of integer or bit type t (bit types read as
// unsigned), capped at ±inf.
func rangeOf(t Type) (int64, int64, bool) {
	switch t {
	case U8, B8:
		return 0, 1<<8 - 1, true
	case S8:
		return -1 << 7, 1<<7 - 1, true
	case U16, B16:
		return 0, 1<<16 - 1, true
	case S16:
		return -1 << 15, 1<<15 - 1, true
	case U32, B32:
		return 0, 1<<32 - 1, true
	case S32:
		return -1 << 31, 1<<31 - 1, true
	case U64, B64:
		return 0, inf - 1, true
	case S64:
		return -inf + 1, inf - 1, true
	}
	return 0, 0, false
}

// fits reports whether [lo, hi] lies within type t.
func fits(lo, hi int64, t Type) bool {
	tl, th, ok := rangeOf(t)
	return ok && lo >= tl && hi <= th && lo <= hi
}

// eval returns the interval of state index i, sharpened by its affine
// form and congruence.
func (a *analyzer) eval(i int32) (int64, int64) {
	v := a.st[i]
	if v.ver == 0 {
		return -inf, inf
	}
	lo, hi := v.lo, v.hi
	if v.f.has && a.valid(&v.f) {
		l, h := a.formEval(&v.f)
		lo, hi = max(lo, l), min(hi, h)
	}
	return tight(lo, hi, int64(v.cm), int64(v.cr))
}

// tight narrows [lo, hi] to its ends congruent to r modulo m.
func tight(lo, hi, m, r int64) (int64, int64) {
	if m < 2 {
		return lo, hi
	}
	if lo > -inf && lo < inf {
		lo += pmod(r-lo, m)
	}
	if hi > -inf && hi < inf {
		hi -= pmod(hi-r, m)
	}
	return lo, hi
}

func pmod(x, m int64) int64 {
	x %= m
	if x < 0 {
		x += m
	}
	return x
}

func gcd(x, y int64) int64 {
	if x < 0 {
		x = -x
	}
	if y < 0 {
		y = -y
	}
	for y != 0 {
		x, y = y, x%y
	}
	return x
}

// cong returns x's congruence (m, r): m = 0 for the constant r, m = 1 for
// no information.
func cong(lo, hi int64, cm, cr int32) (int64, int64) {
	switch {
	case lo == hi && lo > -inf && lo < inf:
		return 0, lo
	case cm >= 2:
		return int64(cm), int64(cr)
	}
	return 1, 0
}

// setCong stores congruence (m, r) in v, dropping it when trivial or
// when it overflowed.
func setCong(v *aval, m, r int64) {
	if m < 2 || m >= 1<<31 || r <= -inf || r >= inf {
		v.cm, v.cr = 0, 0
		return
	}
	v.cm, v.cr = int32(m), int32(pmod(r, m))
}

// congSum sets v's congruence to that of x + s·y.
func congSum(v *aval, x, y *opv, s int64) {
	mx, rx := cong(x.lo, x.hi, x.cm, x.cr)
	my, ry := cong(y.lo, y.hi, y.cm, y.cr)
	setCong(v, gcd(mx, my), sadd(rx, smul(s, ry)))
}

// congMul sets v's congruence to that of x·y.
func congMul(v *aval, x, y *opv) {
	mx, rx := cong(x.lo, x.hi, x.cm, x.cr)
	my, ry := cong(y.lo, y.hi, y.cm, y.cr)
	setCong(v, gcd(gcd(smul(mx, my), smul(mx, ry)), smul(my, rx)), smul(rx, ry))
}

func top(v *aval) {
	v.lo, v.hi = -inf, inf
	v.f = lin{}
	v.cm, v.cr = 0, 0
}

// operand reads o for an instruction of type t.
func (a *analyzer) operand(o Operand, t Type) (x opv) {
	a.read(&x, o, t, false)
	return x
}

// ringOperand reads o for add, sub, mul.lo, mad.lo or shl of type t: the
// bits of the result do not depend on how the operands' bits are read, so
// a register whose interval fits the other signedness of t's width is read
// as it is.
func (a *analyzer) ringOperand(o Operand, t Type) (x opv) {
	a.read(&x, o, t, true)
	return x
}

// read sets *x to operand o as read by an instruction of type t (see
// ringOperand for ring).
func (a *analyzer) read(x *opv, o Operand, t Type, ring bool) {
	if v, ok := o.(Reg); ok {
		i := a.idx(v)
		x.aval = a.st[i]
		x.idx, x.rt, x.cnst = i, v.t, false
		x.lo, x.hi = a.eval(i)
		if x.ver == 0 {
			x.lvl = ctaUniform
		}
		switch {
		case x.sym == 0 && !fits(x.lo, x.hi, t) && !(ring && fits(x.lo, x.hi, flipSign(t))):
			top(&x.aval)
		case x.lo == x.hi:
			x.cnst, x.f = true, linConst(x.lo)
		case a.valid(&x.f):
		case x.sym == 0 && x.ver != 0:
			x.f = lin{has: true, n: 1}
			x.f.b[0], x.f.ver[0], x.f.a[0] = i, x.ver, 1
		default:
			x.f = lin{}
		}
		return
	}
	*x = opv{idx: -1}
	top(&x.aval)
	switch v := o.(type) {
	case Imm:
		c := int64(v)
		if !t.Signed() {
			switch t.Bits() {
			case 16:
				c &= 1<<16 - 1
			case 32:
				c &= 1<<32 - 1
			}
		}
		if c > -inf && c < inf {
			x.lo, x.hi, x.cnst, x.f = c, c, true, linConst(c)
		}
	case SReg:
		a.sreg(x, v)
	case Sym:
		if s := a.shared[v.Name]; s != 0 {
			x.sym, x.lo, x.hi, x.cnst, x.f = s, 0, 0, true, linConst(0)
		}
	case Vec:
		for _, r := range v {
			if w := &a.st[a.idx(r)]; w.lvl > x.lvl {
				x.lvl, x.why = w.lvl, w.why
			}
		}
	case Addr:
		b := a.operand(v.Base, U64)
		x.lvl, x.why = b.lvl, b.why
	}
}

// sreg gives the value of a special register.
func (a *analyzer) sreg(x *opv, s SReg) {
	set := func(lvl uint8, lo, hi int64) {
		x.lvl, x.lo, x.hi = lvl, lo, hi
		if lvl != ctaUniform {
			x.why = a.src(string(s))
		}
	}
	dim := func(i int) (int64, bool) { return a.ntid[i], a.known }
	switch s {
	case TidX, TidY, TidZ:
		i := int(s[len(s)-1] - 'x')
		n, ok := dim(i)
		switch {
		case !ok:
			set(varying, 0, inf)
		case n == 1:
			set(ctaUniform, 0, 0)
		case i > 0 && a.ntid[0]%128 == 0:
			set(wgUniform, 0, n-1)
		case i > 0 && a.xWarp:
			set(warpUniform, 0, n-1)
		default:
			set(varying, 0, n-1)
		}
		if i == 0 {
			x.tdiv = 1
			x.lane = ok && a.ntid[0]*a.ntid[1]*a.ntid[2] <= 32
		}
	case NTidX, NTidY, "%ntid.z":
		n, ok := dim(int(s[len(s)-1] - 'x'))
		if ok {
			set(ctaUniform, n, n)
		} else {
			set(ctaUniform, 1, 1024)
		}
	case CtaidX, CtaidY, CtaidZ, SMID:
		set(ctaUniform, 0, inf)
	case NCtaidX, NCtaidY, "%nctaid.z":
		set(ctaUniform, 1, inf)
	case LaneID:
		set(varying, 0, 31)
		x.lane = true
	case WarpID:
		set(warpUniform, 0, inf)
	case ClusterCtaRank, ClusterCtaidX, ClusterCtaidY, ClusterCtaidZ:
		set(ctaUniform, 0, 15)
	case ClusterNCtaRank, ClusterNCtaidX, ClusterNCtaidY, ClusterNCtaidZ:
		set(ctaUniform, 1, 16)
	case ClusterIDX, ClusterIDY, ClusterIDZ:
		set(ctaUniform, 0, inf)
	case NClusterIDX, NClusterIDY, NClusterIDZ:
		set(ctaUniform, 1, inf)
	default:
		set(varying, -inf, inf)
	}
	if x.lo == x.hi {
		x.cnst, x.f = true, linConst(x.lo)
	}
}

// joinLvl returns the higher level of x and y with its reason.
func joinLvl(l uint8, w int32, y *opv) (uint8, int32) {
	if y.lvl > l {
		return y.lvl, y.why
	}
	return l, w
}

// join returns the abstract value of a register that holds x on some
// paths and y on others; phi, when not zero, is the version to give a
// register whose versions differ (at a loop head).
func (a *analyzer) join(x, y aval, phi int32) aval {
	if x.ver == 0 {
		return y
	}
	if y.ver == 0 {
		return x
	}
	r := x
	if y.lvl > r.lvl {
		r.lvl, r.why = y.lvl, y.why
	}
	if x.sym != y.sym {
		r.sym = 0
		top(&r)
	} else {
		r.lo, r.hi = min(x.lo, y.lo), max(x.hi, y.hi)
		mx, rx := cong(x.lo, x.hi, x.cm, x.cr)
		my, ry := cong(y.lo, y.hi, y.cm, y.cr)
		setCong(&r, gcd(gcd(mx, my), rx-ry), rx)
	}
	if x.tdiv != y.tdiv {
		r.tdiv = 0
	}
	r.lane = x.lane && y.lane
	if x.lkind != y.lkind || x.lmask != y.lmask {
		r.lkind, r.lmask = laneNone, 0
	}
	if x.factsT != y.factsT {
		r.factsT = 0
	}
	if x.factsF != y.factsF {
		r.factsF = 0
	}
	if x.f != y.f {
		r.f = lin{}
	}
	if x.ver != y.ver {
		if phi != 0 {
			r.ver = phi
		} else {
			a.ver++
			r.ver = a.ver
		}
	}
	return r
}

// joinHead joins the head value x of a loop with the value y at the end
// of its body: the register gets version phi, and a register first
// written in the body (x undefined) keeps no form or facts, which refer to
// one iteration's versions (it is written again before any use).
func (a *analyzer) joinHead(x, y aval, phi int32) aval {
	if x.ver == 0 {
		y.ver, y.f, y.factsT, y.factsF = phi, lin{}, 0, 0
		return y
	}
	return a.join(x, y, phi)
}

// def writes value v to register d.
func (a *analyzer) def(d Reg, v aval, c *ctx, guarded bool) {
	i := a.idx(d)
	if v.sym == 0 && !fits(v.lo, v.hi, d.t) {
		top(&v)
	}
	if v.lo == v.hi {
		v.lvl, v.why = ctaUniform, 0 // one value in every thread
	}
	if c.lvl > v.lvl {
		v.lvl, v.why = c.lvl, c.assign
	}
	a.ver++
	v.ver = a.ver
	if guarded {
		v = a.join(a.st[i], v, 0)
	}
	// A new version: always a change.
	a.log = append(a.log, undoEntry{i, a.st[i]})
	a.st[i] = v
}

// opType returns the type named by the last component of op.
func opType(op string) Type {
	t, _ := ParseType(op[strings.LastIndexByte(op, '.')+1:])
	return t
}

// component returns the n-th dot-separated component of op.
func component(op string, n int) string {
	for ; n > 0; n-- {
		i := strings.IndexByte(op, '.')
		if i < 0 {
			return ""
		}
		op = op[i+1:]
	}
	if i := strings.IndexByte(op, '.'); i >= 0 {
		return op[:i]
	}
	return op
}

// transfer applies the effect of instruction in on its destination.
func (a *analyzer) transfer(in *Inst, cls *opClass, c *ctx) {
	guarded := in.Guard.Valid()
	switch d := in.Args[0].(type) {
	case Reg:
		a.def(d, a.compute(in, cls, d.t), c, guarded)
	case Vec:
		v := a.compute(in, cls, invalidType)
		top(&v)
		v.sym, v.tdiv, v.lane, v.lkind, v.factsT, v.factsF = 0, 0, false, laneNone, 0, 0
		for _, r := range d {
			a.def(r, v, c, guarded)
		}
	case DstPair:
		// elect.sync: the elected lane and whether this lane is it.
		v := a.varyK(srcKey{kind: kResult, s: cls.head})
		if r, ok := d.D.(Reg); ok {
			a.def(r, v, c, guarded)
		}
		a.def(d.P, v, c, guarded)
	}
}

// argsLvl returns the highest level of in's source operands.
func (a *analyzer) argsLvl(in *Inst) (uint8, int32) {
	var l uint8
	var w int32
	for _, o := range in.Args[1:] {
		ol, ow := a.lvlOf(o)
		if ol > l {
			l, w = ol, ow
		}
	}
	return l, w
}

// lvlOf returns the level of an operand and its reason.
func (a *analyzer) lvlOf(o Operand) (uint8, int32) {
	switch v := o.(type) {
	case Reg:
		x := &a.st[a.idx(v)]
		return x.lvl, x.why
	case Addr:
		return a.lvlOf(v.Base)
	case TensorAddr:
		l, w := a.lvlOf(v.Map)
		for _, o := range v.Coords {
			if ol, ow := a.lvlOf(o); ol > l {
				l, w = ol, ow
			}
		}
		return l, w
	case Vec:
		var l uint8
		var w int32
		for _, r := range v {
			if x := &a.st[a.idx(r)]; x.lvl > l {
				l, w = x.lvl, x.why
			}
		}
		return l, w
	case SReg:
		x := opv{idx: -1}
		a.sreg(&x, v)
		return x.lvl, x.why
	}
	return ctaUniform, 0
}

func (a *analyzer) pure(in *Inst) aval {
	var v aval
	top(&v)
	v.lvl, v.why = a.argsLvl(in)
	return v
}

func (a *analyzer) varyK(k srcKey) aval {
	var v aval
	top(&v)
	v.lvl, v.why = varying, a.srcK(k)
	return v
}

// compute returns the value instruction in gives its destination (of
// type dt when a single register).
func (a *analyzer) compute(in *Inst, cls *opClass, dt Type) aval {
	op, head, t := in.Op, cls.head, cls.t
	arg := func(i int, t Type) opv {
		if i < len(in.Args) {
			return a.operand(in.Args[i], t)
		}
		x := opv{idx: -1}
		top(&x.aval)
		return x
	}
	switch head {
	case "mov":
		if _, ok := in.Args[1].(Vec); ok || dt == invalidType {
			return a.pure(in)
		}
		x := arg(1, t)
		v := x.aval
		v.f = stored(x.f)
		return v
	case "ld", "ldu":
		sp := cls.row.Space(op)
		if sp&(isa.Param|isa.Const) != 0 {
			return a.pure(in)
		}
		return a.varyK(srcKey{kind: kLoad, s: sp.String()})
	case "atom":
		return a.varyK(srcKey{kind: kResult, s: "an atomic"})
	case "shfl":
		x, lane := arg(1, B32), arg(2, B32)
		v := x.aval
		v.f, v.sym, v.tdiv, v.lane, v.lkind, v.factsT, v.factsF = lin{}, 0, 0, false, laneNone, 0, 0
		switch {
		case x.lvl <= warpUniform:
		case component(op, 2) == "idx" && lane.lvl <= warpUniform:
			v.lvl, v.why = warpUniform, a.src("a shfl.sync.idx from one lane, which is uniform within each warp only")
		}
		return v
	case "vote", "redux":
		v := a.pure(in)
		if v.lvl > warpUniform {
			v.lvl, v.why = warpUniform, a.srcK(srcKey{kind: kWarp, s: head})
		}
		return v
	case "bar", "barrier":
		var v aval
		top(&v)
		if strings.Contains(op, ".popc") {
			v.lo, v.hi = 0, 1024
		}
		if len(in.Args) == 4 {
			v.lvl, v.why = warpUniform, a.src("a bar.red over part of the CTA")
		}
		return v
	case "setp":
		return a.setp(in, op, t)
	case "selp":
		x, y, p := arg(1, t), arg(2, t), arg(3, Pred)
		v := a.join(x.aval, y.aval, 0)
		v.lvl, v.why = joinLvl(v.lvl, v.why, &p)
		v.f = lin{}
		if x.f == y.f {
			v.f = stored(x.f)
		}
		return v
	}
	switch {
	case cls.row == nil:
		return a.varyK(srcKey{kind: kUnmod, s: op})
	case cls.flags&cPure == 0:
		// Memory, other lanes or state: mma, ldmatrix, match, activemask.
		return a.varyK(srcKey{kind: kResult, s: head})
	}
	return a.arith(in, cls, arg)
}

// arith returns the value of an arithmetic, logic or conversion result.
func (a *analyzer) arith(in *Inst, cls *opClass, arg func(int, Type) opv) aval {
	op, head, t := in.Op, cls.head, cls.t
	if t == Pred {
		return a.predLogic(in, head)
	}
	if !isIntOrBit(t) && head != "cvt" {
		if cls.flags&cPure != 0 || t.IsFloat() {
			return a.pure(in)
		}
		return a.varyK(srcKey{kind: kUnmod, s: op})
	}
	var v aval
	top(&v)
	v.lvl, v.why = a.argsLvl(in)
	switch head {
	case "add", "sub":
		x, y := a.ringOperand(in.Args[1], t), a.ringOperand(in.Args[2], t)
		sy := int64(1)
		if head == "sub" {
			sy = -1
		}
		switch {
		case x.sym != 0 && y.sym == 0:
			v.sym = x.sym
		case y.sym != 0 && x.sym == 0 && head == "add":
			v.sym = y.sym
		case x.sym != 0 || y.sym != 0:
			return v
		}
		if sy > 0 {
			v.lo, v.hi = sadd(x.lo, y.lo), sadd(x.hi, y.hi)
		} else {
			v.lo, v.hi = sadd(x.lo, -y.hi), sadd(x.hi, -y.lo)
		}
		v.f = stored(linSum(x.f, 1, y.f, sy))
		congSum(&v, &x, &y, sy)
		return a.clamp(v, t)
	case "mul", "mad":
		mode := component(op, 1)
		rt := t
		if mode == "wide" {
			rt = wide(t)
		} else if mode != "lo" {
			return v
		}
		x, y := arg(1, t), arg(2, t)
		if mode == "lo" {
			x, y = a.ringOperand(in.Args[1], t), a.ringOperand(in.Args[2], t)
		}
		if x.sym != 0 || y.sym != 0 {
			return v
		}
		v.lo, v.hi = mulIv(x.lo, x.hi, y.lo, y.hi)
		congMul(&v, &x, &y)
		var pf lin
		switch {
		case x.cnst:
			pf = linScale(y.f, x.lo)
		case y.cnst:
			pf = linScale(x.f, y.lo)
		}
		if v.lo == v.hi {
			pf = linConst(v.lo)
		}
		v.f = stored(pf)
		if head == "mad" {
			z := a.ringOperand(in.Args[3], rt)
			p := opv{aval: v, idx: -1, cnst: v.lo == v.hi}
			p.f = pf
			v.sym = z.sym
			v.lo, v.hi = sadd(v.lo, z.lo), sadd(v.hi, z.hi)
			v.f = stored(linSum(pf, 1, z.f, 1))
			congSum(&v, &p, &z, 1)
		}
		if v.sym != 0 {
			return v
		}
		return a.clamp(v, rt)
	case "shl":
		x, k := a.ringOperand(in.Args[1], t), arg(2, U32)
		if x.sym != 0 || !k.cnst || k.lo < 0 || k.lo >= int64(t.Bits()) {
			return v
		}
		m := int64(1) << k.lo
		v.lo, v.hi = smul(x.lo, m), smul(x.hi, m)
		v.f = stored(linScale(x.f, m))
		mv := opv{idx: -1}
		mv.lo, mv.hi = m, m
		congMul(&v, &x, &mv)
		return a.clamp(v, t)
	case "shr":
		x, k := arg(1, t), arg(2, U32)
		if x.sym != 0 || !k.cnst || k.lo < 0 || k.lo >= int64(t.Bits()) {
			return v
		}
		if x.lo > -inf && x.hi < inf {
			v.lo, v.hi = x.lo>>k.lo, x.hi>>k.lo
		} else if x.lo >= 0 {
			v.lo = x.lo >> k.lo
			v.hi = inf
		}
		if x.tdiv != 0 && k.lo < 20 {
			a.tdivOf(&v, x.tdiv<<k.lo)
		}
		return a.clamp(v, t)
	case "div":
		x, y := arg(1, t), arg(2, t)
		if x.sym != 0 || y.sym != 0 || x.lo < 0 || y.lo <= 0 {
			return v
		}
		v.lo = x.lo / y.hi
		v.hi = x.hi / y.lo
		if x.hi >= inf {
			v.hi = inf
		}
		if x.tdiv != 0 && y.cnst && y.lo < 1<<20 {
			a.tdivOf(&v, x.tdiv*int32(y.lo))
		}
		return a.clamp(v, t)
	case "rem":
		x, y := arg(1, t), arg(2, t)
		if x.sym != 0 || y.sym != 0 || x.lo < 0 || y.lo <= 0 {
			return v
		}
		if x.hi < y.lo {
			v = x.aval
			v.f = stored(x.f)
			return v
		}
		v.lo, v.hi = 0, min(y.hi-1, x.hi)
		if y.cnst && y.lo == 32 && (x.lane || x.tdiv == 1 && a.xWarp) {
			v.lane = true
		}
		return a.clamp(v, t)
	case "and":
		x, y := arg(1, t), arg(2, t)
		// A constant mask is a number: a shared symbol plus a constant
		// offset is an address unknown at build time.
		if y.cnst && y.sym == 0 && !(x.cnst && x.sym == 0) {
			x, y = y, x
		}
		if tz := roundMask(x.lo, t); x.cnst && x.sym == 0 && y.sym != 0 && y.lo == y.hi && tz > 0 {
			// A shared address rounded down to 2^tz bytes: the base of
			// a pseudo-array aligned so.
			v.sym, v.lo, v.hi = alignedSym(tz), 0, 0
			return v
		}
		if !x.cnst || x.sym != 0 || x.lo < 0 || y.sym != 0 {
			// Neither side constant: bounded by a non-negative side.
			if x.sym == 0 && y.sym == 0 && x.lo >= 0 && y.lo >= 0 {
				v.lo, v.hi = 0, min(x.hi, y.hi)
				return a.clamp(v, t)
			}
			return v
		}
		m := x.lo // the mask; y the value
		v.lo, v.hi = 0, m
		if y.lo >= 0 && y.hi < m {
			v.hi = y.hi
		}
		if m == 31 && (y.lane || y.tdiv == 1 && a.xWarp) {
			v.lane = true
		}
		if y.tdiv != 0 && m != 0 {
			if g := int64(y.tdiv) << bits.TrailingZeros64(uint64(m)); g%32 == 0 && g < 1<<30 && a.xWarp {
				v.lvl, v.why = a.tdivLevel(g), a.srcK(srcKey{kind: kTdiv, n: g})
			}
		}
		return a.clamp(v, t)
	case "or", "xor":
		x, y := arg(1, t), arg(2, t)
		if x.sym == 0 && y.sym == 0 && x.lo >= 0 && y.lo >= 0 && x.hi < inf && y.hi < inf {
			v.lo, v.hi = 0, int64(1)<<bits.Len64(uint64(max(x.hi, y.hi)))-1
			if head == "or" {
				v.lo = max(x.lo, y.lo)
			}
			return a.clamp(v, t)
		}
		return v
	case "min", "max":
		x, y := arg(1, t), arg(2, t)
		if x.sym != 0 || y.sym != 0 {
			return v
		}
		if head == "min" {
			v.lo, v.hi = min(x.lo, y.lo), min(x.hi, y.hi)
		} else {
			v.lo, v.hi = max(x.lo, y.lo), max(x.hi, y.hi)
		}
		return a.clamp(v, t)
	case "neg", "abs":
		x := arg(1, t)
		if x.sym != 0 {
			return v
		}
		lo, hi := -x.hi, -x.lo
		if head == "abs" {
			switch {
			case x.lo >= 0:
				lo, hi = x.lo, x.hi
			case x.hi > 0:
				lo, hi = 0, max(-x.lo, x.hi)
			}
		}
		v.lo, v.hi = lo, hi
		return a.clamp(v, t)
	case "popc", "clz":
		v.lo, v.hi = 0, int64(t.Bits())
		return v
	case "cvt":
		from := t
		to, _ := ParseType(component(op, strings.Count(op, ".")-1))
		if !isIntOrBit(from) || !isIntOrBit(to) {
			return a.pure(in)
		}
		x := arg(1, from)
		if x.sym == 0 && !fits(x.lo, x.hi, to) {
			return v
		}
		v = x.aval
		v.f = stored(x.f)
		return v
	}
	if cls.flags&cPure != 0 {
		return v
	}
	return a.varyK(srcKey{kind: kUnmod, s: op})
}

// wide returns the type twice as wide as integer type t.
func wide(t Type) Type {
	switch t {
	case U16:
		return U32
	case S16:
		return S32
	case U32:
		return U64
	case S32:
		return S64
	}
	return invalidType
}

// clamp makes v unknown when it may not fit type t (it would wrap).
func (a *analyzer) clamp(v aval, t Type) aval {
	if v.sym == 0 && !fits(v.lo, v.hi, t) {
		top(&v)
	}
	return v
}

// tdivOf marks v as floor(%tid.x / d).
func (a *analyzer) tdivOf(v *aval, d int32) {
	v.tdiv = d
	if a.xWarp && d%32 == 0 {
		v.lvl, v.why = a.tdivLevel(int64(d)), a.srcK(srcKey{kind: kTdiv, n: int64(d)})
	}
}

// tdivLevel returns the level of floor(%tid.x / d), d a multiple of 32,
// when warps are rows of x: warpgroup-uniform when d is a multiple of 128
// and so is ntid.x (warpgroups never straddle rows of x).
func (a *analyzer) tdivLevel(d int64) uint8 {
	if d%128 == 0 && a.ntid[0]%128 == 0 {
		return wgUniform
	}
	return warpUniform
}

// Pseudo-arrays: a shared address (a symbol plus a constant) rounded down
// to a power of two with and is the base of no declared array, but is
// aligned. Its value carries sym = alignedSym(tz) (below -1, dynamic
// shared memory's sym) with offset 0; additions keep it, the bounds rule
// skips it (sym < 0), and the wgmma alignment rule reads tz.
const symAligned0 = -32

func alignedSym(tz int) int16 { return int16(symAligned0 - tz) }

// alignedOf returns the alignment exponent of pseudo-array sym, or 0.
func alignedOf(sym int16) int {
	if sym <= symAligned0 && sym > symAligned0-32 {
		return int(symAligned0 - sym)
	}
	return 0
}

// roundMask returns tz when m, read in type t's width, is -2^tz (4 ≤ tz ≤
// 20: an and with it rounds down to 2^tz), or 0.
func roundMask(m int64, t Type) int {
	w := t.Bits()
	if w != 32 && w != 64 || m <= 0 {
		return 0
	}
	tz := bits.TrailingZeros64(uint64(m))
	if tz < 4 || tz > 20 {
		return 0
	}
	want := uint64(1)<<w - uint64(1)<<tz
	if w == 64 {
		want = -(uint64(1) << tz)
	}
	if uint64(m) != want {
		return 0
	}
	return tz
}

// endFacts makes the facts appended to a.factBuf since s a set and
// returns its index (0 for none).
func (a *analyzer) endFacts(s int) int32 {
	if len(a.factBuf) == s {
		return 0
	}
	if len(a.factSet) == 0 {
		a.factSet = append(a.factSet, [2]int32{})
	}
	a.factSet = append(a.factSet, [2]int32{int32(s), int32(len(a.factBuf))})
	return int32(len(a.factSet) - 1)
}

// factsOf returns the facts of set i.
func (a *analyzer) factsOf(i int32) []fact {
	if i == 0 {
		return nil
	}
	r := a.factSet[i]
	return a.factBuf[r[0]:r[1]]
}

// unionFacts returns a set of the facts of sets i and j.
func (a *analyzer) unionFacts(i, j int32) int32 {
	s := len(a.factBuf)
	for _, k := range [2]int32{i, j} {
		if k != 0 {
			r := a.factSet[k]
			a.factBuf = append(a.factBuf, a.factBuf[r[0]:r[1]]...)
		}
	}
	return a.endFacts(s)
}

// setp returns the value of a comparison: its level, the bounds it
// implies on its operands, and the lanes it selects.
func (a *analyzer) setp(in *Inst, op string, t Type) aval {
	var v aval
	top(&v)
	v.lvl, v.why = a.argsLvl(in)
	if len(in.Args) != 3 || !isIntOrBit(t) {
		return v
	}
	cmp := component(op, 1)
	x, y := a.operand(in.Args[1], t), a.operand(in.Args[2], t)
	s := len(a.factBuf)
	a.sideFacts(cmp, t, &x, &y, true)
	a.sideFacts(mirror(cmp), t, &y, &x, true)
	v.factsT = a.endFacts(s)
	s = len(a.factBuf)
	a.sideFacts(cmp, t, &x, &y, false)
	a.sideFacts(mirror(cmp), t, &y, &x, false)
	v.factsF = a.endFacts(s)
	switch {
	case x.lane && y.cnst:
		v.lkind, v.lmask = laneExact, laneSet(cmp, y.lo, false)
	case y.lane && x.cnst:
		v.lkind, v.lmask = laneExact, laneSet(cmp, x.lo, true)
	}
	return v
}

func mirror(cmp string) string {
	switch cmp {
	case "lt":
		return "gt"
	case "le":
		return "ge"
	case "gt":
		return "lt"
	case "ge":
		return "le"
	}
	return cmp
}

// laneSet returns the lanes l with l cmp c (or c cmp l when rev).
func laneSet(cmp string, c int64, rev bool) uint32 {
	var m uint32
	for l := int64(0); l < 32; l++ {
		x, y := l, c
		if rev {
			x, y = c, l
		}
		var ok bool
		switch cmp {
		case "eq":
			ok = x == y
		case "ne":
			ok = x != y
		case "lt":
			ok = x < y
		case "le":
			ok = x <= y
		case "gt":
			ok = x > y
		case "ge":
			ok = x >= y
		}
		if ok {
			m |= 1 << l
		}
	}
	return m
}

// sideFacts appends to a.factBuf the bounds on x that x cmp y implies
// when it is true (or false), for x itself and for the base of its affine
// form.
func (a *analyzer) sideFacts(cmp string, t Type, x, y *opv, truth bool) {
	if x.idx < 0 || x.ver == 0 || y.sym != 0 || x.sym != 0 {
		return
	}
	yl, yh := y.lo, y.hi
	tl, th, fl, fh := -inf, inf, -inf, inf
	tOK, fOK := true, true
	switch cmp {
	case "lt":
		th, fl = sadd(yh, -1), yl
	case "le":
		th, fl = yh, sadd(yl, 1)
	case "gt":
		tl, fh = sadd(yl, 1), yh
	case "ge":
		tl, fh = yl, sadd(yh, -1)
	case "eq":
		tl, th, fOK = yl, yh, false
	case "ne":
		fl, fh, tOK = yl, yh, false
	default:
		return
	}
	if tl <= -inf && th >= inf {
		tOK = false
	}
	if fl <= -inf && fh >= inf {
		fOK = false
	}
	if !t.Signed() {
		ul, uh, _ := rangeOf(t)
		tl, th, fl, fh = max(tl, ul), min(th, uh), max(fl, ul), min(fh, uh)
	}
	add := func(lo, hi int64) {
		// The bound holds in t's reading of the bits; it holds in the
		// register's own reading when both agree on it.
		_, smax, _ := rangeOf(signedOf(t))
		if !(lo >= 0 && hi <= smax) && t.Signed() != x.rt.Signed() {
			return
		}
		a.factBuf = append(a.factBuf, fact{x.idx, x.ver, lo, hi})
		// x = fa·b + fc bounds b too.
		if f := &a.st[x.idx].f; f.n == 1 && a.valid(f) {
			fa, fc := int64(f.a[0]), f.c
			bl, bh := -inf, inf
			if fa > 0 {
				if lo > -inf {
					bl = ceilDiv(sadd(lo, -fc), fa)
				}
				if hi < inf {
					bh = floorDiv(sadd(hi, -fc), fa)
				}
			} else {
				if hi < inf {
					bl = ceilDiv(sadd(hi, -fc), fa)
				}
				if lo > -inf {
					bh = floorDiv(sadd(lo, -fc), fa)
				}
			}
			a.factBuf = append(a.factBuf, fact{f.b[0], f.ver[0], bl, bh})
		}
	}
	if truth && tOK {
		add(tl, th)
	}
	if !truth && fOK {
		add(fl, fh)
	}
}

// flipSign returns the integer type of t's width and the other signedness.
func flipSign(t Type) Type {
	if t.Signed() {
		switch t.Bits() {
		case 16:
			return U16
		case 32:
			return U32
		}
		return U64
	}
	return signedOf(t)
}

func signedOf(t Type) Type {
	switch t.Bits() {
	case 16:
		return S16
	case 32:
		return S32
	}
	return S64
}

// predLogic combines predicates: and, or, xor, not.
func (a *analyzer) predLogic(in *Inst, head string) aval {
	var v aval
	top(&v)
	v.lvl, v.why = a.argsLvl(in)
	if len(in.Args) < 2 {
		return v
	}
	x := a.st[a.idx2(in.Args[1])]
	kx, mx := laneOf(x)
	switch head {
	case "not":
		v.factsT, v.factsF = x.factsF, x.factsT
		v.lkind, v.lmask = complement(kx, mx)
		return v
	case "and", "or":
	default:
		return v
	}
	if len(in.Args) < 3 {
		return v
	}
	y := a.st[a.idx2(in.Args[2])]
	ky, my := laneOf(y)
	if head == "and" {
		v.factsT = a.unionFacts(x.factsT, y.factsT)
		if kx != laneNone && ky != laneNone {
			v.lkind, v.lmask = laneOrEmpty, mx&my
			if kx == laneExact && ky == laneExact {
				v.lkind = laneExact
			}
		}
	} else {
		v.factsF = a.unionFacts(x.factsF, y.factsF)
		switch {
		case kx == laneExact && ky == laneExact:
			v.lkind, v.lmask = laneExact, mx|my
		case kx != laneNone && ky != laneNone && mx == my:
			v.lkind, v.lmask = laneOrEmpty, mx
		}
	}
	return v
}

// idx2 returns the state index of a register operand (0 otherwise: the
// exit taint, which is never a predicate with facts or lanes).
func (a *analyzer) idx2(o Operand) int32 {
	if r, ok := o.(Reg); ok {
		return a.idx(r)
	}
	return exitTaint
}
