package sim

import (
	"strconv"
	"strings"
)

// Decoders of the sm_90 instructions: wgmma, mbarrier, bulk tensor copies
// (TMA), proxy fences, clusters, elect.sync, setmaxnreg and stmatrix.
// Their execution is in hopper.go, wgmma.go and tma.go.

const (
	opWgmma opcode = numOpcodes + iota
	opWgFence
	opWgCommit
	opWgWait
	opMbarInit
	opMbarArrive
	opMbarExpectTx
	opMbarCompleteTx
	opMbarWait
	opTmaLoad
	opBulkS2C // cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes
	opBulkG2S // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
	opBulkS2G // cp.async.bulk.global.shared::cta.bulk_group
	opTmaStore
	opBulkCommit
	opBulkWait
	opFenceProxy
	opClusterArrive
	opClusterWait
	opMapa
	opSetmaxnreg
	opElect
	opStmatrix
	numHopperOpcodes
)

// Flags of the sm_90 instructions (inst.mode2 unless said otherwise).
const (
	mbExpectTx   uint8 = 1 << iota // mbarrier.arrive.expect_tx
	mbCount                        // mbarrier.arrive with a count operand
	mbParity                       // try_wait.parity / test_wait.parity
	mbTest                         // test_wait: does not block
	mbSink                         // the destination is _
	tmaMulticast                   // .multicast::cluster
	tmaReduceAdd                   // cp.reduce.async.bulk.tensor .add
)

// wgmma operand modes (inst.mode).
const (
	wgNegA     uint8 = 1 << iota // imm-scale-a = -1
	wgNegB                       // imm-scale-b = -1
	wgTransA                     // imm-trans-a = 1 (A is MN-major)
	wgTransB                     // imm-trans-b = 1
	wgRegA                       // A in registers
	wgScaleImm                   // scale-d is the immediate in imm bit 32
)

func init() {
	q := func(f func(*decoder, *inst, []string) error) decodeFn {
		return func(d *decoder, in *inst, _ string, q []string) error { return f(d, in, q) }
	}
	reg := func(fn decodeFn, names ...string) {
		for _, n := range names {
			semantics[n] = fn
		}
	}
	reg(q((*decoder).decWgmma), "wgmma.mma_async")
	reg(q(func(d *decoder, in *inst, q []string) error { in.op = opWgFence; d.k.hopper = true; return nil }), "wgmma.fence")
	reg(q(func(d *decoder, in *inst, q []string) error { in.op = opWgCommit; d.k.hopper = true; return nil }), "wgmma.commit_group")
	reg(q(func(d *decoder, in *inst, q []string) error { return d.decWaitN(in, opWgWait) }), "wgmma.wait_group")
	reg(q((*decoder).decMbar), "mbarrier.init", "mbarrier.arrive", "mbarrier.expect_tx", "mbarrier.complete_tx",
		"mbarrier.try_wait", "mbarrier.test_wait")
	reg(q((*decoder).decTma), "cp.async.bulk.tensor")
	reg(q((*decoder).decCreatePolicy), "createpolicy")
	reg(q((*decoder).decTmaReduce), "cp.reduce.async.bulk.tensor")
	reg(q((*decoder).decBulk), "cp.async.bulk")
	reg(q(func(d *decoder, in *inst, q []string) error { in.op = opBulkCommit; d.k.hopper = true; return nil }), "cp.async.bulk.commit_group")
	reg(q(func(d *decoder, in *inst, q []string) error { return d.decWaitN(in, opBulkWait) }), "cp.async.bulk.wait_group")
	reg(q(func(d *decoder, in *inst, q []string) error {
		in.op = opClusterArrive
		d.k.hopper = true
		return nil
	}), "barrier.cluster.arrive")
	reg(q(func(d *decoder, in *inst, q []string) error {
		in.op = opClusterWait
		d.k.hopper = true
		return nil
	}), "barrier.cluster.wait")
	reg(q((*decoder).decMapa), "mapa")
	reg(q((*decoder).decSetmaxnreg), "setmaxnreg")
	reg(q((*decoder).decElect), "elect.sync")
	reg(q((*decoder).decStmatrix), "stmatrix.sync")
	reg(q((*decoder).decFence), "fence", "fence.proxy.async", "fence.mbarrier_init")
}

// decFence: fence.proxy.async{.space} orders the thread's generic-proxy
// shared-memory writes before later async-proxy reads; every other fence
// (and fence.mbarrier_init) has no effect in a sequential interpreter.
func (d *decoder) decFence(in *inst, q []string) error {
	in.op = opNop
	if len(q) >= 2 && q[0] == "proxy" && q[1] == "async" && (len(q) == 2 || strings.HasPrefix(q[2], "shared")) {
		in.op = opFenceProxy
		d.k.hopper = true
	}
	return nil
}

func (d *decoder) decWaitN(in *inst, op opcode) error {
	in.op = op
	d.k.hopper = true
	a := d.st.args[0]
	if a.kind != oImm || a.i < 0 || a.i > 63 {
		return d.errf("%s needs an immediate group count", d.st.op)
	}
	in.imm = a.i
	return nil
}

// sink reports whether o is the sink operand _.
func sink(o operand) bool { return o.kind == oReg && o.name == "_" }

// decWgmma: wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}.{bf16,f16}
// d, a-desc|{a-regs}, b-desc, scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}, imm-trans-b.
func (d *decoder) decWgmma(in *inst, q []string) error {
	in.op = opWgmma
	d.k.hopper = true
	if len(q) != 7 || q[1] != "sync" || q[2] != "aligned" || q[4] != "f32" || q[5] != q[6] || (q[5] != "bf16" && q[5] != "f16") {
		return d.errf("only wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}.{bf16,f16} is supported")
	}
	in.t2, _ = parseType(q[5])
	var n int
	if _, err := fmtSscan(q[3], &n); err != nil || n < 8 || n > 256 || n%8 != 0 {
		return d.errf("wgmma shape .%s: want m64nNk16 with N a multiple of 8 from 8 to 256", q[3])
	}
	in.imm = int64(n)
	args := d.st.args
	regA := args[1].kind == oVec
	want := 8
	if regA {
		want = 7
		in.mode |= wgRegA
	}
	if len(args) != want {
		return d.errf("wgmma with A in %s takes %d operands, found %d", map[bool]string{true: "registers", false: "shared memory"}[regA], want, len(args))
	}
	if args[0].kind != oVec || len(args[0].elems) != n/2 {
		return d.errf("wgmma m64n%dk16 accumulates into {%d registers}", n, n/2)
	}
	dv, _ := d.vec(args[0])
	for _, o := range dv {
		s, _, ok := d.lookup(o.name)
		if !ok {
			return d.errf("unknown register %s", o.name)
		}
		in.dmark = append(in.dmark, s)
		in.x = append(in.x, s)
	}
	if regA {
		av, _ := d.vec(args[1])
		if len(av) != 4 {
			return d.errf("wgmma register A is {4 registers}")
		}
		for _, o := range av {
			s, err := d.src(o, tyB32, in)
			if err != nil {
				return err
			}
			in.x = append(in.x, s)
		}
	} else {
		s, err := d.src(args[1], tyB64, in)
		if err != nil {
			return err
		}
		in.a[0] = s
	}
	s, err := d.src(args[2], tyB64, in)
	if err != nil {
		return err
	}
	in.a[1] = s
	// scale-d: a predicate or 0/1.
	switch sd := args[3]; {
	case sd.kind == oImm && (sd.i == 0 || sd.i == 1):
		in.mode |= wgScaleImm
		in.off = sd.i
	default:
		p, neg, err := d.psrc(sd, in)
		if err != nil {
			return d.errf("wgmma scale-d must be a predicate or 0 or 1")
		}
		in.a[2] = p
		if neg {
			in.flags |= flNegC
		}
	}
	imms := args[4:]
	for i, o := range imms {
		if o.kind != oImm {
			return d.errf("wgmma operand %d must be an immediate", 5+i)
		}
	}
	bit := func(o operand, one, minus1 int64, flag uint8, name string) error {
		switch o.i {
		case one:
		case minus1:
			in.mode |= flag
		default:
			return d.errf("wgmma %s must be %d or %d", name, one, minus1)
		}
		return nil
	}
	if err := bit(imms[0], 1, -1, wgNegA, "imm-scale-a"); err != nil {
		return err
	}
	if err := bit(imms[1], 1, -1, wgNegB, "imm-scale-b"); err != nil {
		return err
	}
	if !regA {
		if err := bit(imms[2], 0, 1, wgTransA, "imm-trans-a"); err != nil {
			return err
		}
	}
	return bit(imms[len(imms)-1], 0, 1, wgTransB, "imm-trans-b")
}

func fmtSscan(shape string, n *int) (int, error) {
	if !strings.HasPrefix(shape, "m64n") || !strings.HasSuffix(shape, "k16") {
		return 0, strconv.ErrSyntax
	}
	v, err := strconv.Atoi(shape[4 : len(shape)-3])
	*n = v
	return 1, err
}

// mbarAddr reads an mbarrier address operand into in.base/in.off.
func (d *decoder) mbarAddr(o operand, in *inst) error {
	b, off, sp, err := d.addr(o, in)
	if err != nil {
		return err
	}
	if sp != spGeneric && sp != spShared {
		return d.errf("an mbarrier lives in shared memory")
	}
	in.base, in.off = b, off
	return nil
}

// decMbar decodes mbarrier.{init,arrive{.expect_tx},expect_tx,complete_tx,try_wait,test_wait}.
func (d *decoder) decMbar(in *inst, q []string) error {
	d.k.hopper = true
	in.space = spGeneric
	for _, x := range q {
		if strings.HasPrefix(x, "shared") {
			in.space = spShared
		}
	}
	args := d.st.args
	switch q[0] {
	case "init", "expect_tx", "complete_tx":
		in.op = map[string]opcode{"init": opMbarInit, "expect_tx": opMbarExpectTx, "complete_tx": opMbarCompleteTx}[q[0]]
		if err := d.mbarAddr(args[0], in); err != nil {
			return err
		}
		s, err := d.src(args[1], tyU32, in)
		in.a[0] = s
		return err
	case "arrive":
		in.op = opMbarArrive
		if has(q, "expect_tx") {
			in.mode2 |= mbExpectTx
		}
		if sink(args[0]) {
			in.mode2 |= mbSink
		} else {
			s, err := d.dst(args[0], in)
			if err != nil {
				return err
			}
			in.d[0] = s
		}
		if err := d.mbarAddr(args[1], in); err != nil {
			return err
		}
		in.a[0] = -1
		if len(args) == 3 {
			s, err := d.src(args[2], tyU32, in)
			if err != nil {
				return err
			}
			in.a[0] = s
			if in.mode2&mbExpectTx == 0 {
				in.mode2 |= mbCount
			}
		} else if in.mode2&mbExpectTx != 0 {
			return d.errf("mbarrier.arrive.expect_tx needs a transaction count")
		}
		return nil
	case "try_wait", "test_wait":
		in.op = opMbarWait
		if q[0] == "test_wait" {
			in.mode2 |= mbTest
		}
		if has(q, "parity") {
			in.mode2 |= mbParity
		}
		p, err := d.pdst(args[0], in)
		if err != nil {
			return err
		}
		in.d[0] = p
		if err := d.mbarAddr(args[1], in); err != nil {
			return err
		}
		t := tyB64
		if in.mode2&mbParity != 0 {
			t = tyU32
		}
		in.a[0], err = d.src(args[2], t, in)
		return err
	}
	return d.errf("mbarrier.%s is not supported", q[0])
}

// decTma: cp.async.bulk.tensor.{2d,3d}.shared::cluster.global.tile.mbarrier::complete_tx::bytes{.multicast::cluster | .L2::cache_hint}
// [dst], [tmap, {c...}], [mbar]{, ctaMask | cachePolicy}; cp.async.bulk.tensor.{2d,3d}.global.shared::cta.tile.bulk_group{.L2::cache_hint}
// [tmap, {c...}], [src]{, cachePolicy}.
func (d *decoder) decTma(in *inst, q []string) error {
	d.k.hopper = true
	in.space = spShared // the shared-memory operands are shared::cta or shared::cluster addresses
	// q: async bulk tensor Nd dstSpace srcSpace ...
	if len(q) < 6 || (q[3] != "2d" && q[3] != "3d") {
		return d.errf("only cp.async.bulk.tensor.{2d,3d} is supported")
	}
	dims := int(q[3][0] - '0')
	load := strings.HasPrefix(q[4], "shared") && q[5] == "global"
	store := q[4] == "global" && strings.HasPrefix(q[5], "shared")
	for _, x := range q[6:] {
		switch {
		case x == "tile", x == "bulk_group", x == "mbarrier::complete_tx::bytes", x == "L2::cache_hint":
		case x == "multicast::cluster":
			in.mode2 |= tmaMulticast
		default:
			return d.errf("cp.async.bulk.tensor: unsupported qualifier .%s", x)
		}
	}
	args := d.st.args
	tmapArg := 1
	// An .L2::cache_hint form takes the policy as its last operand.
	policyArgs, policyName := 0, ""
	if has(q, "L2::cache_hint") {
		policyArgs, policyName = 1, ", cachePolicy"
	}
	switch {
	case load && has(q, "mbarrier::complete_tx::bytes"):
		in.op = opTmaLoad
		want := 3
		if in.mode2&tmaMulticast != 0 {
			want = 4
		}
		if policyArgs > 0 && want == 4 {
			return d.errf("cp.async.bulk.tensor: .multicast::cluster with .L2::cache_hint is not supported")
		}
		if len(args) != want+policyArgs {
			return d.errf("cp.async.bulk.tensor load takes [dst], [tensorMap, {coordinates}], [mbar]%s%s",
				map[bool]string{true: ", ctaMask", false: ""}[want == 4], policyName)
		}
		if err := d.policy(args[want:], in); err != nil {
			return err
		}
		b, off, _, err := d.addr(args[0], in)
		if err != nil {
			return err
		}
		in.a[0], in.imm = b, off
		if err := d.mbarAddr(args[2], in); err != nil {
			return err
		}
		if want == 4 {
			if in.a[2], err = d.src(args[3], tyU16, in); err != nil {
				return err
			}
		}
	case store && has(q, "bulk_group"):
		in.op = opTmaStore
		tmapArg = 0
		if len(args) != 2+policyArgs {
			return d.errf("cp.async.bulk.tensor store takes [tensorMap, {coordinates}], [src]%s", policyName)
		}
		if err := d.policy(args[2:], in); err != nil {
			return err
		}
		b, off, _, err := d.addr(args[1], in)
		if err != nil {
			return err
		}
		in.a[0], in.imm = b, off
	default:
		return d.errf("cp.async.bulk.tensor: only shared::cluster.global loads with mbarrier::complete_tx::bytes and global.shared::cta stores with bulk_group are supported")
	}
	return d.tmapOperand(args[tmapArg], dims, in)
}

// decTmaReduce: cp.reduce.async.bulk.tensor.{2d,3d}.global.shared::cta.add.tile.bulk_group
// [tmap, {c...}], [src]: a TMA store that adds (tmaStore).
func (d *decoder) decTmaReduce(in *inst, q []string) error {
	d.k.hopper = true
	in.space = spShared
	// q: reduce async bulk tensor Nd global shared::cta add ...
	if len(q) < 8 || (q[4] != "2d" && q[4] != "3d") || q[5] != "global" || q[6] != "shared::cta" || !has(q, "add") || !has(q, "bulk_group") {
		return d.errf("only cp.reduce.async.bulk.tensor.{2d,3d}.global.shared::cta.add{.tile}.bulk_group is supported")
	}
	for _, x := range q[7:] {
		if x != "add" && x != "tile" && x != "bulk_group" && !strings.HasPrefix(x, "L2::") {
			return d.errf("cp.reduce.async.bulk.tensor: unsupported qualifier .%s", x)
		}
	}
	args := d.st.args
	if len(args) < 2 {
		return d.errf("cp.reduce.async.bulk.tensor takes [tensorMap, {coordinates}], [src]")
	}
	in.op, in.mode2 = opTmaStore, in.mode2|tmaReduceAdd
	b, off, _, err := d.addr(args[1], in)
	if err != nil {
		return err
	}
	in.a[0], in.imm = b, off
	return d.tmapOperand(args[0], int(q[4][0]-'0'), in)
}

// decBulkS2C: cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes
// [dst], [src], size, [mbar]: dst and mbar shared::cluster addresses of one
// CTA, src this CTA's, size a u32.
func (d *decoder) decBulk(in *inst, q []string) error {
	d.k.hopper = true
	in.space = spShared
	form := strings.Join(q[2:], ".")
	args := d.st.args
	switch form {
	case "shared::cluster.shared::cta.mbarrier::complete_tx::bytes":
		in.op = opBulkS2C
	case "shared::cluster.global.mbarrier::complete_tx::bytes":
		in.op = opBulkG2S
	case "global.shared::cta.bulk_group":
		in.op = opBulkS2G
	default:
		return d.errf("cp.async.bulk.%s: only shared::cluster.shared::cta.mbarrier::complete_tx::bytes, "+
			"shared::cluster.global.mbarrier::complete_tx::bytes and global.shared::cta.bulk_group are supported", form)
	}
	want := 4
	if in.op == opBulkS2G {
		want = 3
	}
	if len(args) != want {
		return d.errf("cp.async.bulk.%s takes %d operands", form, want)
	}
	b, off, _, err := d.addr(args[0], in)
	if err != nil {
		return err
	}
	in.a[0], in.imm = b, off
	sb, soff, _, err := d.addr(args[1], in)
	if err != nil {
		return err
	}
	in.a[1], in.target = sb, int32(soff)
	if in.a[2], err = d.src(args[2], tyU32, in); err != nil {
		return err
	}
	if in.op == opBulkS2G {
		return nil
	}
	return d.mbarAddr(args[3], in)
}

// tmapOperand reads [tmap, {c0, ...}]: the tensor map is a kernel
// parameter (by value) or a register holding its generic address; the
// coordinates go to in.x.
func (d *decoder) tmapOperand(o operand, dims int, in *inst) error {
	if o.kind != oAddr || len(o.elems) != dims {
		return d.errf("want [tensorMap, {%d coordinates}]", dims)
	}
	if sym, ok := d.syms[o.name]; ok && sym.space == spParam {
		in.a[1], in.target = -1, int32(sym.addr)
	} else {
		b, _, _, err := d.addr(operand{kind: oAddr, name: o.name}, in)
		if err != nil {
			return err
		}
		in.a[1] = b
	}
	for _, e := range o.elems {
		eo := operand{kind: oReg, name: e}
		if v, err := parseInt(e); err == nil {
			eo = operand{kind: oImm, i: v}
		}
		s, err := d.src(eo, tyS32, in)
		if err != nil {
			return err
		}
		in.x = append(in.x, s)
	}
	return nil
}

// decMapa: mapa{.shared::cluster}.{u32,u64} d, a, rank.
func (d *decoder) decMapa(in *inst, q []string) error {
	d.k.hopper = true
	in.op = opMapa
	t, ok := lastType(q)
	if !ok || (t != tyU32 && t != tyU64) {
		return d.errf("mapa needs .u32 or .u64")
	}
	in.t = t
	in.space = spGeneric
	if has(q, "shared::cluster") {
		in.space = spShared
	}
	var err error
	if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
		return err
	}
	if in.a[0], err = d.src(d.st.args[1], t, in); err != nil {
		return err
	}
	in.a[1], err = d.src(d.st.args[2], tyU32, in)
	return err
}

// decSetmaxnreg: setmaxnreg.{inc,dec}.sync.aligned.u32 N.
func (d *decoder) decSetmaxnreg(in *inst, q []string) error {
	d.k.hopper = true
	in.op = opSetmaxnreg
	a := d.st.args[0]
	if len(q) == 0 || (q[0] != "inc" && q[0] != "dec") || a.kind != oImm {
		return d.errf("want setmaxnreg.{inc,dec}.sync.aligned.u32 imm")
	}
	if a.i < 24 || a.i > 256 || a.i%8 != 0 {
		return d.errf("setmaxnreg count %d: want a multiple of 8 from 24 to 256", a.i)
	}
	in.imm = a.i
	return nil
}

// decElect: elect.sync d|p, membermask (d may be _).
func (d *decoder) decElect(in *inst, q []string) error {
	in.op = opElect
	o := d.st.args[0]
	if o.pipe == "" {
		return d.errf("elect.sync needs d|p")
	}
	in.d[0] = -1
	if o.name != "_" {
		s, err := d.dst(operand{kind: oReg, name: o.name}, in)
		if err != nil {
			return err
		}
		in.d[0] = s
	}
	p, err := d.pdst(operand{kind: oReg, name: o.pipe}, in)
	if err != nil {
		return err
	}
	in.d[1] = p
	in.a[0], err = d.src(d.st.args[1], tyB32, in)
	return err
}

// decStmatrix: stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared{::cta}.b16 [addr], {r...}.
func (d *decoder) decStmatrix(in *inst, q []string) error {
	in.op = opStmatrix
	d.k.hopper = true
	num := 0
	for _, x := range q {
		switch x {
		case "sync", "aligned", "b16", "m8n8", "shared", "shared::cta":
		case "x1", "x2", "x4":
			num = int(x[1] - '0')
		case "trans":
			in.flags |= flTrans
		default:
			return d.errf("stmatrix: unsupported qualifier .%s", x)
		}
	}
	if num == 0 || !has(q, "m8n8") || !has(q, "b16") {
		return d.errf("only stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 is supported")
	}
	in.vec = uint8(num)
	b, off, sp, err := d.addr(d.st.args[0], in)
	if err != nil {
		return err
	}
	if sp != spGeneric && sp != spShared {
		return d.errf("stmatrix writes shared memory")
	}
	in.base, in.off = b, off
	regs, _ := d.vec(d.st.args[1])
	if len(regs) != num {
		return d.errf("stmatrix .x%d needs %d source registers", num, num)
	}
	for i, o := range regs {
		if in.a[i], err = d.src(o, tyB32, in); err != nil {
			return err
		}
	}
	return nil
}

// decCreatePolicy: createpolicy.fractional.L2::{evict_first, evict_normal,
// evict_last, evict_unchanged}.b64 d{, fraction}. A policy steers only L2's
// replacement, which the interpreter has none of: d gets an opaque value
// that the .L2::cache_hint operations it reaches ignore.
func (d *decoder) decCreatePolicy(in *inst, q []string) error {
	if len(q) != 3 || q[0] != "fractional" || q[2] != "b64" || !l2Priorities[q[1]] {
		return d.errf("only createpolicy.fractional.L2::evict_*.b64 is supported")
	}
	if err := d.nargs(1, 2); err != nil {
		return err
	}
	if len(d.st.args) == 2 {
		if o := d.st.args[1]; o.kind != oFloat || !(floatImm(o) > 0 && floatImm(o) <= 1) {
			return d.errf("createpolicy: the fraction must be a float constant in (0, 1]")
		}
	}
	in.op, in.t = opMov, tyB64
	var err error
	if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
		return err
	}
	in.a[0] = d.constant(policyValue)
	return nil
}

// l2Priorities are the priorities createpolicy.fractional takes.
var l2Priorities = map[string]bool{"L2::evict_first": true, "L2::evict_normal": true, "L2::evict_last": true, "L2::evict_unchanged": true}

// policy decodes the cache-policy operand of an .L2::cache_hint form, the
// one operand of rest (none without the hint): a b64 register read for
// the checks of its definition; the policy only steers L2's replacement,
// which the interpreter has none of.
func (d *decoder) policy(rest []operand, in *inst) error {
	for _, o := range rest {
		if _, err := d.src(o, tyB64, in); err != nil {
			return err
		}
	}
	return nil
}

// policyValue is the opaque value a createpolicy leaves in its register.
const policyValue = 0x10000000_00000000
