package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gradtune/gradtune/kernels/ptx/isa"
)

// This file turns the syntax tree into pre-decoded kernels: opcodes as
// small integers, every operand a register slot (immediates, symbol
// addresses and special registers get slots of their own, filled when a
// warp starts), labels resolved to instruction indexes.

type opcode uint8

const (
	opNop opcode = iota
	opMov
	opMovPack
	opMovUnpack
	opLdParam
	opLd
	opSt
	opCvta
	opAdd
	opSub
	opMulLo
	opMulHi
	opMulWide
	opMad
	opMadHi
	opMadWide
	opFma
	opDiv
	opRem
	opMin
	opMax
	opNeg
	opAbs
	opRcp
	opSqrt
	opEx2
	opLg2
	opRcpApprox
	opRsqrt
	opSqrtApprox
	opTanh
	opSin
	opCos
	opAnd
	opOr
	opXor
	opNot
	opCnot
	opShl
	opShr
	opPopc
	opClz
	opBrev
	opBfind
	opBfe
	opPrmt
	opCopysign
	opSetp
	opSelp
	opCvt
	opCvtPack
	opBra
	opRet
	opBar
	opBarWarp
	opTrap
	opBrkpt
	opShfl
	opVote
	opActivemask
	opAtom
	opRed
	opMma
	opLdmatrix
	opCpAsync
	opCpCommit
	opCpWait
	opRedux
	opTestp
	opYield // nanosleep: the warp lets the others run before it goes on
	numOpcodes
)

// Memory spaces.
const (
	spGeneric uint8 = iota
	spGlobal
	spShared
	spLocal
	spParam
	spCluster // another CTA's shared memory (resolve's answer only)
)

// Flags.
const (
	flFtz uint8 = 1 << iota
	flSat
	flTrans // ldmatrix .trans
	flBF16  // mma with bf16 operands
	flBool  // setp with a boolean combination (mode2 in aux)
	flNegC  // setp/vote predicate operand negated
	flCG    // cp.async.cg
	flPipe  // shfl with a predicate destination
)

// Comparison operators of setp.
const (
	cmpEq uint8 = iota
	cmpNe
	cmpLt
	cmpLe
	cmpGt
	cmpGe
	cmpLo
	cmpLs
	cmpHi
	cmpHs
	cmpEqu
	cmpNeu
	cmpLtu
	cmpLeu
	cmpGtu
	cmpGeu
	cmpNum
	cmpNan
)

var cmpNames = map[string]uint8{"eq": cmpEq, "ne": cmpNe, "lt": cmpLt, "le": cmpLe, "gt": cmpGt, "ge": cmpGe,
	"lo": cmpLo, "ls": cmpLs, "hi": cmpHi, "hs": cmpHs, "equ": cmpEqu, "neu": cmpNeu, "ltu": cmpLtu,
	"leu": cmpLeu, "gtu": cmpGtu, "geu": cmpGeu, "num": cmpNum, "nan": cmpNan}

// Atomic operations.
const (
	atAdd uint8 = iota
	atMin
	atMax
	atInc
	atDec
	atAnd
	atOr
	atXor
	atExch
	atCas
)

var atomNames = map[string]uint8{"add": atAdd, "min": atMin, "max": atMax, "inc": atInc, "dec": atDec,
	"and": atAnd, "or": atOr, "xor": atXor, "exch": atExch, "cas": atCas}

// Shuffle and vote modes.
const (
	shIdx uint8 = iota
	shUp
	shDown
	shBfly
	vtAll
	vtAny
	vtUni
	vtBallot
)

// Special registers.
type sreg uint8

const (
	srTidX sreg = iota
	srTidY
	srTidZ
	srNtidX
	srNtidY
	srNtidZ
	srCtaidX
	srCtaidY
	srCtaidZ
	srNctaidX
	srNctaidY
	srNctaidZ
	srLaneid
	srWarpid
	srNwarpid
	srSmid
	srNsmid
	srLanemaskEq
	srLanemaskLt
	srLanemaskLe
	srLanemaskGt
	srLanemaskGe
	srGridid
	srClock
	srClock64
	srClusterCtarank
	srClusterNctarank
	srClusterCtaidX
	srClusterCtaidY
	srClusterCtaidZ
	srClusterNctaidX
	srClusterNctaidY
	srClusterNctaidZ
	srClusteridX
	srClusteridY
	srClusteridZ
	srNclusteridX
	srNclusteridY
	srNclusteridZ
	srIsExplicitCluster
)

var sregNames = map[string]sreg{"%tid.x": srTidX, "%tid.y": srTidY, "%tid.z": srTidZ,
	"%ntid.x": srNtidX, "%ntid.y": srNtidY, "%ntid.z": srNtidZ,
	"%ctaid.x": srCtaidX, "%ctaid.y": srCtaidY, "%ctaid.z": srCtaidZ,
	"%nctaid.x": srNctaidX, "%nctaid.y": srNctaidY, "%nctaid.z": srNctaidZ,
	"%laneid": srLaneid, "%warpid": srWarpid, "%nwarpid": srNwarpid, "%smid": srSmid, "%nsmid": srNsmid,
	"%lanemask_eq": srLanemaskEq, "%lanemask_lt": srLanemaskLt, "%lanemask_le": srLanemaskLe,
	"%lanemask_gt": srLanemaskGt, "%lanemask_ge": srLanemaskGe, "%gridid": srGridid,
	"%clock": srClock, "%clock64": srClock64,
	"%cluster_ctarank": srClusterCtarank, "%cluster_nctarank": srClusterNctarank,
	"%cluster_ctaid.x": srClusterCtaidX, "%cluster_ctaid.y": srClusterCtaidY, "%cluster_ctaid.z": srClusterCtaidZ,
	"%cluster_nctaid.x": srClusterNctaidX, "%cluster_nctaid.y": srClusterNctaidY, "%cluster_nctaid.z": srClusterNctaidZ,
	"%clusterid.x": srClusteridX, "%clusterid.y": srClusteridY, "%clusterid.z": srClusteridZ,
	"%nclusterid.x": srNclusteridX, "%nclusterid.y": srNclusteridY, "%nclusterid.z": srNclusteridZ,
	"%is_explicit_cluster": srIsExplicitCluster}

// inst is one decoded instruction. Register operands are slot numbers:
// the warp keeps slot s of lane l at r[s*32+l].
type inst struct {
	op     opcode
	t      ptype // the instruction type
	t2     ptype // cvt source, mul.wide source, mma ab type
	mode   uint8 // rounding mode, comparison, atomic op, shuffle mode
	mode2  uint8 // setp boolean op
	flags  uint8
	space  uint8
	vec    uint8
	nd, na uint8
	gneg   bool
	guard  int32 // predicate index, -1 when unguarded
	d      [4]int32
	a      [4]int32
	x      []int32 // more operands (mma: a0..a3 b0 b1 c0..c3)
	base   int32   // address base slot of memory instructions
	off    int64   // address offset; ld.param offset
	imm    int64   // bar id, shfl mask, cp.async size, wait_group count
	target int32   // branch target
	rchk   []int32 // register slots that must be initialized in the executing lanes
	pchk   []int32 // predicate indexes likewise
	dmark  []int32 // register slots written
	pmark  []int32 // predicates written
	line   int32
	text   string
}

type kparam struct {
	name string
	t    ptype
	off  int
	size int
}

type constSlot struct {
	slot int32
	val  uint64
}

type sregSlot struct {
	slot int32
	kind sreg
}

// kernel is a decoded entry.
type kernel struct {
	name       string
	params     []kparam
	paramBytes int
	nslots     int // register slots, including constants and special registers
	nregs      int // declared registers (slots 0..nregs-1)
	npreds     int
	regBits    int        // declared register bits, excluding predicates
	names      []regRange // for messages: register names by slot
	pnames     []regRange // predicate names by index
	consts     []constSlot
	sregs      []sregSlot
	staticSmem int
	dynOff     int // offset of the dynamic shared memory
	localBytes int
	reqntid    []int
	maxntid    []int
	maxnreg    int
	reqncta    []int // .reqnctapercluster
	code       []inst
	hopper     bool // uses sm_90 async machinery: warps and CTAs need its state
}

// regRange names registers: a %r<N> range (prefix, first slot, count) or
// a single register.
type regRange struct {
	name         string
	first, count int
	isRange      bool
}

// regName returns the PTX name of slot s in rs.
func regName(rs []regRange, s int) string {
	for _, r := range rs {
		if s >= r.first && s < r.first+r.count {
			if r.isRange {
				return fmt.Sprintf("%s%d", r.name, s-r.first)
			}
			return r.name
		}
	}
	return fmt.Sprintf("slot %d", s)
}

// Module is a parsed and decoded PTX module.
type Module struct {
	kernels map[string]*kernel
	names   []string
	target  string
	version string
}

// Parse reads and decodes PTX text. Errors wrap ErrParse and name the line.
func Parse(src string) (*Module, error) {
	ast, err := parseModule(src)
	if err != nil {
		return nil, err
	}
	if ast.target != "" {
		sm, err := strconv.Atoi(strings.TrimRight(strings.TrimPrefix(ast.target, "sm_"), "abf"))
		if err != nil || !strings.HasPrefix(ast.target, "sm_") {
			return nil, parseError(1, "", ".target %s: want sm_NN", ast.target)
		}
		_ = sm
	}
	m := &Module{kernels: map[string]*kernel{}, target: ast.target, version: ast.version}
	for _, k := range ast.kernels {
		if _, dup := m.kernels[k.name]; dup {
			return nil, parseError(k.line, "", "kernel %s defined twice", k.name)
		}
		dk, err := decodeKernel(ast, k, src)
		if err != nil {
			return nil, err
		}
		m.kernels[k.name] = dk
		m.names = append(m.names, k.name)
	}
	return m, nil
}

// Entries lists the kernels of the module in order.
func (m *Module) Entries() []string { return append([]string(nil), m.names...) }

type symbol struct {
	space uint8 // spShared, spLocal, spParam
	addr  uint64
	param int // index into params for spParam
}

type decoder struct {
	k      *kernel
	regs   map[string]int32 // register name -> slot
	preds  map[string]int32
	ranges map[string][2]int // prefix -> (first slot or pred, count) for %r<N>
	rpred  map[string]bool   // prefix is a predicate range
	syms   map[string]symbol
	consts map[uint64]int32
	sregs  map[sreg]int32
	labels map[string]int32
	st     stmt
}

func decodeKernel(ast *modAST, ka *kernelAST, src string) (*kernel, error) {
	k := &kernel{name: ka.name, maxnreg: ka.maxnreg, reqntid: ka.reqntid, maxntid: ka.maxntid, reqncta: ka.reqncta}
	d := &decoder{k: k, regs: map[string]int32{}, preds: map[string]int32{}, ranges: map[string][2]int{},
		rpred: map[string]bool{}, syms: map[string]symbol{}, consts: map[uint64]int32{}, sregs: map[sreg]int32{},
		labels: map[string]int32{}}
	// Registers.
	nslots, npreds := 0, 0
	for _, r := range ka.regs {
		bits := regBits(r.typ)
		if r.prefix != "" {
			if _, dup := d.ranges[r.prefix]; dup {
				return nil, parseError(r.line, lineText(src, r.line), "register range %s declared twice", r.prefix)
			}
			if bits == 1 {
				d.ranges[r.prefix] = [2]int{npreds, r.count}
				k.pnames = append(k.pnames, regRange{r.prefix, npreds, r.count, true})
				d.rpred[r.prefix] = true
				npreds += r.count
			} else {
				d.ranges[r.prefix] = [2]int{nslots, r.count}
				k.names = append(k.names, regRange{r.prefix, nslots, r.count, true})
				nslots += r.count
				k.regBits += bits * max(r.count-1, 0)
			}
			continue
		}
		for _, n := range r.names {
			if bits == 1 {
				d.preds[n] = int32(npreds)
				k.pnames = append(k.pnames, regRange{n, npreds, 1, false})
				npreds++
			} else {
				d.regs[n] = int32(nslots)
				k.names = append(k.names, regRange{n, nslots, 1, false})
				nslots++
				k.regBits += bits
			}
		}
	}
	k.nregs, k.npreds = nslots, npreds
	// Parameters.
	off := 0
	for i, p := range ka.params {
		t, ok := parseType(p.typ)
		if !ok || t == tyPred {
			return nil, parseError(ka.line, "", "parameter %s: type .%s not supported", p.name, p.typ)
		}
		off = (off + p.align - 1) / p.align * p.align
		k.params = append(k.params, kparam{name: p.name, t: t, off: off, size: p.bytes})
		d.syms[p.name] = symbol{space: spParam, addr: uint64(off), param: i}
		off += p.bytes
	}
	k.paramBytes = off
	// Shared memory: static arrays in order, then the dynamic arrays.
	soff := 0
	for _, a := range ka.shared {
		if a.count < 0 {
			continue
		}
		soff = (soff + a.align - 1) / a.align * a.align
		d.syms[a.name] = symbol{space: spShared, addr: uint64(soff)}
		soff += a.count * typeBytes(a.typ)
	}
	k.staticSmem = soff
	dynAlign := 16
	var dyn []arrDecl
	dyn = append(dyn, ast.externs...)
	for _, a := range ka.shared {
		if a.count < 0 {
			dyn = append(dyn, a)
		}
	}
	for _, a := range dyn {
		dynAlign = max(dynAlign, a.align)
	}
	k.dynOff = (soff + dynAlign - 1) / dynAlign * dynAlign
	for _, a := range dyn {
		d.syms[a.name] = symbol{space: spShared, addr: uint64(k.dynOff)}
	}
	loff := 0
	for _, a := range ka.local {
		loff = (loff + a.align - 1) / a.align * a.align
		d.syms[a.name] = symbol{space: spLocal, addr: uint64(loff)}
		loff += a.count * typeBytes(a.typ)
	}
	k.localBytes = loff
	// Labels.
	pc := int32(0)
	for _, s := range ka.body {
		if s.label != "" {
			if _, dup := d.labels[s.label]; dup {
				return nil, parseError(s.line, s.text, "label %s defined twice", s.label)
			}
			d.labels[s.label] = pc
			continue
		}
		pc++
	}
	k.nslots = nslots
	for _, s := range ka.body {
		if s.label != "" {
			continue
		}
		d.st = s
		in, err := d.inst(s)
		if err != nil {
			return nil, err
		}
		in.line, in.text = int32(s.line), s.text
		k.code = append(k.code, in)
	}
	// Falling off the end is an implicit ret.
	k.code = append(k.code, inst{op: opRet, guard: -1, line: int32(ka.line), text: "(end of " + ka.name + ")"})
	return k, nil
}

func (d *decoder) errf(format string, args ...any) error {
	return parseError(d.st.line, d.st.text, format, args...)
}

// lookup finds a register or predicate by name.
func (d *decoder) lookup(name string) (slot int32, pred bool, ok bool) {
	if s, ok := d.regs[name]; ok {
		return s, false, true
	}
	if s, ok := d.preds[name]; ok {
		return s, true, true
	}
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	if i == len(name) {
		return 0, false, false
	}
	r, ok := d.ranges[name[:i]]
	if !ok {
		return 0, false, false
	}
	n, err := strconv.Atoi(name[i:])
	if err != nil || n >= r[1] || (len(name[i:]) > 1 && name[i] == '0') {
		return 0, false, false
	}
	return int32(r[0] + n), d.rpred[name[:i]], true
}

func (d *decoder) constant(v uint64) int32 {
	if s, ok := d.consts[v]; ok {
		return s
	}
	s := int32(d.k.nslots)
	d.k.nslots++
	d.consts[v] = s
	d.k.consts = append(d.k.consts, constSlot{s, v})
	return s
}

func (d *decoder) sreg(kind sreg) int32 {
	if s, ok := d.sregs[kind]; ok {
		return s
	}
	s := int32(d.k.nslots)
	d.k.nslots++
	d.sregs[kind] = s
	d.k.sregs = append(d.k.sregs, sregSlot{s, kind})
	return s
}

// floatImm is the value of a float immediate (oFloat) operand.
func floatImm(o operand) float64 {
	if o.fbits == 32 {
		return float64(math.Float32frombits(uint32(o.u)))
	}
	return math.Float64frombits(o.u)
}

// src resolves a source operand of an instruction of type t to a slot.
// Registers and special registers are checked for initialization by the
// caller through rchk; constants never need it.
func (d *decoder) src(o operand, t ptype, in *inst) (int32, error) {
	switch o.kind {
	case oReg:
		if o.neg || o.pipe != "" {
			return 0, d.errf("operand %s: ! and | are not allowed here", o.name)
		}
		if s, pred, ok := d.lookup(o.name); ok {
			if pred {
				return 0, d.errf("predicate %s used as a value", o.name)
			}
			in.rchk = append(in.rchk, s)
			return s, nil
		}
		if k, ok := sregNames[o.name]; ok {
			return d.sreg(k), nil
		}
		if sym, ok := d.syms[o.name]; ok {
			switch sym.space {
			case spShared, spLocal:
				return d.constant(sym.addr), nil
			}
			if t == tyU64 || t == tyB64 || t == tyS64 {
				// The address of a by-value parameter (a tensor map), in
				// the generic window of the parameter space.
				return d.constant(paramWindow + sym.addr), nil
			}
			return 0, d.errf("parameter %s can only be read with ld.param (or its address taken as a 64-bit value)", o.name)
		}
		return 0, d.errf("unknown register or symbol %s", o.name)
	case oImm:
		v := uint64(o.i)
		switch {
		case t == tyF32:
			v = uint64(math.Float32bits(float32(o.i)))
		case t == tyF64:
			v = math.Float64bits(float64(o.i))
		case t != tyNone:
			v &= t.mask()
		}
		return d.constant(v), nil
	case oFloat:
		f := floatImm(o)
		switch t {
		case tyF32:
			if o.fbits == 32 {
				return d.constant(o.u), nil
			}
			return d.constant(uint64(math.Float32bits(float32(f)))), nil
		case tyF64:
			if o.fbits == 64 {
				return d.constant(o.u), nil
			}
			return d.constant(math.Float64bits(f)), nil
		case tyF16, tyBF16:
			return d.constant(halfRound(f, t)), nil
		case tyB32, tyU32, tyS32:
			if o.fbits == 32 {
				return d.constant(o.u), nil
			}
		case tyB64, tyU64, tyS64:
			if o.fbits == 64 {
				return d.constant(o.u), nil
			}
		}
		return 0, d.errf("float immediate not allowed for .%v", t)
	}
	return 0, d.errf("operand kind not allowed here (want a register or an immediate)")
}

// dst resolves a destination register.
func (d *decoder) dst(o operand, in *inst) (int32, error) {
	if o.kind != oReg || o.neg {
		return 0, d.errf("destination must be a register")
	}
	s, pred, ok := d.lookup(o.name)
	if !ok {
		if _, sr := sregNames[o.name]; sr {
			return 0, d.errf("special register %s is read-only", o.name)
		}
		return 0, d.errf("unknown register %s", o.name)
	}
	if pred {
		return 0, d.errf("predicate %s given as a value destination", o.name)
	}
	in.dmark = append(in.dmark, s)
	return s, nil
}

func (d *decoder) pdst(o operand, in *inst) (int32, error) {
	s, pred, ok := d.lookup(o.name)
	if o.kind != oReg || !ok || !pred || o.neg {
		return 0, d.errf("destination %s must be a predicate register", o.name)
	}
	in.pmark = append(in.pmark, s)
	return s, nil
}

func (d *decoder) psrc(o operand, in *inst) (int32, bool, error) {
	s, pred, ok := d.lookup(o.name)
	if o.kind != oReg || !ok || !pred {
		return 0, false, d.errf("operand %s must be a predicate register", o.name)
	}
	in.pchk = append(in.pchk, s)
	return s, o.neg, nil
}

// addr resolves [base+off] into a base slot and offset, and the space a
// symbol base implies.
func (d *decoder) addr(o operand, in *inst) (base int32, off int64, symSpace uint8, err error) {
	if o.kind != oAddr {
		return 0, 0, 0, d.errf("want an address [base+offset]")
	}
	if o.name == "" {
		return d.constant(uint64(o.off)), 0, spGeneric, nil
	}
	if s, pred, ok := d.lookup(o.name); ok && !pred {
		in.rchk = append(in.rchk, s)
		return s, o.off, spGeneric, nil
	}
	if sym, ok := d.syms[o.name]; ok {
		if sym.space == spParam {
			return -1, int64(sym.addr) + o.off, spParam, nil
		}
		return d.constant(sym.addr), o.off, sym.space, nil
	}
	return 0, 0, 0, d.errf("unknown address base %s", o.name)
}

func (d *decoder) vec(o operand) ([]operand, error) {
	if o.kind != oVec {
		return []operand{o}, nil
	}
	out := make([]operand, len(o.elems))
	for i, e := range o.elems {
		out[i] = operand{kind: oReg, name: e, line: o.line}
	}
	return out, nil
}

// quals splits an opcode into its base and qualifiers.
func quals(op string) (string, []string) {
	parts := strings.Split(op, ".")
	return parts[0], parts[1:]
}

func lastType(q []string) (ptype, bool) {
	if len(q) == 0 {
		return tyNone, false
	}
	t, ok := parseType(q[len(q)-1])
	return t, ok
}

func has(q []string, s string) bool {
	for _, x := range q {
		if x == s {
			return true
		}
	}
	return false
}

func (d *decoder) nargs(n ...int) error {
	got := len(d.st.args)
	for _, x := range n {
		if got == x {
			return nil
		}
	}
	return d.errf("%s takes %v operands, found %d", d.st.op, n, got)
}

// mmNaN marks min.NaN and max.NaN (inst.mode): a NaN operand gives NaN.
const mmNaN uint8 = 100

var rndNames = map[string]uint8{"rn": rndRN, "rz": rndRZ, "rm": rndRM, "rp": rndRP,
	"rni": rndRNI, "rzi": rndRZI, "rmi": rndRMI, "rpi": rndRPI}

// ignoredQual are qualifiers without meaning for a sequential interpreter:
// cache operators, memory-order and scope qualifiers, .uni, .aligned, .sync.
func ignoredQual(q string) bool {
	switch q {
	case "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "volatile", "relaxed", "acquire", "release",
		"acq_rel", "weak", "gpu", "cta", "sys", "uni", "aligned", "sync", "full", "noftz":
		return true
	}
	return strings.Contains(q, "::")
}

func (d *decoder) inst(s stmt) (inst, error) {
	in := inst{guard: -1}
	if s.guard != "" {
		g, pred, ok := d.lookup(s.guard)
		if !ok || !pred {
			return in, d.errf("guard %s is not a predicate register", s.guard)
		}
		in.guard, in.gneg = g, s.gneg
		in.pchk = append(in.pchk, g)
	}
	base, q := quals(s.op)
	r, ok := isa.Lookup(s.op)
	if !ok {
		return in, d.errf("instruction %s is not supported: the ISA table (kernels/ptx/isa) has no row for %s", base, s.op)
	}
	dec, ok := semantics[r.Name]
	if !ok {
		return in, d.errf("instruction %s is not supported by the interpreter", r.Name)
	}
	if lo, hi := r.Arity(); len(s.args) < lo || len(s.args) > hi {
		return in, d.errf("%s takes %s operands, found %d", r.Name, r.ArityString(), len(s.args))
	}
	return in, dec(d, &in, base, q)
}

// decodeFn decodes the statement d.st into in: base is its opcode's first
// component, q the components after it.
type decodeFn func(d *decoder, in *inst, base string, q []string) error

// semantics maps the name of a row of the ISA table to the decoder of its
// instructions; adding an instruction to the interpreter is registering
// its row here, with a decoder and whatever execution it needs.
var semantics = map[string]decodeFn{}

func init() {
	reg := func(fn decodeFn, names ...string) {
		for _, n := range names {
			semantics[n] = fn
		}
	}
	q := func(f func(*decoder, *inst, []string) error) decodeFn {
		return func(d *decoder, in *inst, _ string, q []string) error { return f(d, in, q) }
	}
	reg(q((*decoder).decMov), "mov")
	reg((*decoder).decMem, "ld", "st")
	reg(q((*decoder).decCvta), "cvta")
	reg((*decoder).decBinary, "add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "and", "or", "xor",
		"shl", "shr", "copysign")
	reg((*decoder).decUnary, "neg", "abs", "not", "cnot", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "tanh", "sin", "cos",
		"popc", "clz", "brev", "bfind")
	reg((*decoder).decTernaryBits, "bfe", "prmt")
	reg(q((*decoder).decSetp), "setp")
	reg(q((*decoder).decSelp), "selp")
	reg(q((*decoder).decCvt), "cvt")
	reg(decBra, "bra")
	reg(decOp(opRet), "ret", "exit")
	reg(decOp(opTrap), "trap")
	reg(decOp(opBrkpt), "brkpt")
	// griddepcontrol (PDL): launches run one after another here, so the
	// previous grid is always complete when a kernel starts: wait has
	// nothing to wait for and launch_dependents nothing to allow.
	reg(decOp(opNop), "membar", "prefetch", "prefetchu", "griddepcontrol")
	reg(decOp(opYield), "nanosleep")
	reg((*decoder).decBar, "bar.sync", "bar.arrive", "bar.red", "bar.cta.sync", "bar.cta.arrive", "bar.cta.red",
		"barrier.sync", "barrier.arrive", "barrier.red", "barrier.cta.sync", "barrier.cta.arrive", "barrier.cta.red",
		"bar.warp.sync")
	reg(q((*decoder).decShfl), "shfl.sync")
	reg(q((*decoder).decRedux), "redux.sync")
	reg(q((*decoder).decTestp), "testp")
	reg(q((*decoder).decVote), "vote.sync")
	reg(decActivemask, "activemask")
	reg((*decoder).decAtom, "atom", "red")
	reg(q((*decoder).decMma), "mma.sync")
	reg(q((*decoder).decLdmatrix), "ldmatrix.sync")
	reg(q((*decoder).decCp), "cp.async", "cp.async.commit_group", "cp.async.wait_group", "cp.async.wait_all")
}

// decOp decodes an instruction without operands the interpreter needs.
func decOp(op opcode) decodeFn {
	return func(_ *decoder, in *inst, _ string, _ []string) error {
		in.op = op
		return nil
	}
}

func decBra(d *decoder, in *inst, _ string, _ []string) error {
	a := d.st.args[0]
	t, ok := d.labels[a.name]
	if !ok || a.kind != oReg {
		return d.errf("branch to undefined label %s", a.name)
	}
	in.op, in.target = opBra, t
	return nil
}

func decActivemask(d *decoder, in *inst, _ string, _ []string) error {
	in.op = opActivemask
	var err error
	in.d[0], err = d.dst(d.st.args[0], in)
	return err
}

func (d *decoder) decMov(in *inst, q []string) error {
	if err := d.nargs(2); err != nil {
		return err
	}
	t, ok := lastType(q)
	if !ok || len(q) != 1 {
		return d.errf("mov needs one type")
	}
	in.t = t
	dsts, _ := d.vec(d.st.args[0])
	srcs, _ := d.vec(d.st.args[1])
	switch {
	case t == tyPred:
		// mov.pred p, q
		p, err := d.pdst(dsts[0], in)
		if err != nil {
			return err
		}
		s, neg, err := d.psrc(srcs[0], in)
		if err != nil {
			return err
		}
		in.op, in.d[0], in.a[0] = opMov, p, s
		if neg {
			in.flags |= flNegC
		}
		in.t = tyPred
		return nil
	case len(dsts) > 1 && len(srcs) == 1:
		in.op = opMovUnpack
		a, err := d.src(srcs[0], t, in)
		if err != nil {
			return err
		}
		in.a[0] = a
		for i, o := range dsts {
			if in.d[i], err = d.dst(o, in); err != nil {
				return err
			}
		}
		in.nd = uint8(len(dsts))
		if len(dsts) > 4 || t.bits()%len(dsts) != 0 {
			return d.errf("cannot unpack .%v into %d parts", t, len(dsts))
		}
		return nil
	case len(srcs) > 1 && len(dsts) == 1:
		in.op = opMovPack
		var err error
		if in.d[0], err = d.dst(dsts[0], in); err != nil {
			return err
		}
		for i, o := range srcs {
			if in.a[i], err = d.src(o, tyNone, in); err != nil {
				return err
			}
		}
		in.na = uint8(len(srcs))
		if len(srcs) > 4 || t.bits()%len(srcs) != 0 {
			return d.errf("cannot pack %d parts into .%v", len(srcs), t)
		}
		return nil
	case len(srcs) == 1 && len(dsts) == 1:
		in.op = opMov
		var err error
		if in.d[0], err = d.dst(dsts[0], in); err != nil {
			return err
		}
		in.a[0], err = d.src(srcs[0], t, in)
		return err
	}
	return d.errf("mov operands do not match")
}

func (d *decoder) decMem(in *inst, base string, q []string) error {
	if err := d.nargs(2); err != nil {
		return err
	}
	t, ok := lastType(q)
	if !ok {
		return d.errf("%s needs a type", base)
	}
	in.t = t
	in.space = spGeneric
	in.vec = 1
	for _, x := range q[:len(q)-1] {
		switch x {
		case "global":
			in.space = spGlobal
		case "shared":
			in.space = spShared
		case "local":
			in.space = spLocal
		case "param":
			in.space = spParam
		case "const":
			return d.errf("the .const space is not supported")
		case "v2":
			in.vec = 2
		case "v4":
			in.vec = 4
		case "v8":
			in.vec = 8
		default:
			if !ignoredQual(x) && !strings.HasPrefix(x, "shared::") {
				return d.errf("%s: unknown qualifier .%s", base, x)
			}
			if strings.HasPrefix(x, "shared::") {
				in.space = spShared
			}
		}
	}
	if in.vec > 4 {
		return d.errf("%s.v8 is not supported", base)
	}
	if t.bits() == 1 || t == tyB128 {
		return d.errf("%s.%v is not supported", base, t)
	}
	if int(in.vec)*t.bytes() > 16 {
		return d.errf("%s: %d × .%v is wider than 128 bits", base, in.vec, t)
	}
	dataArg, addrArg := d.st.args[0], d.st.args[1]
	if base == "st" {
		dataArg, addrArg = addrArg, dataArg
	}
	regs, _ := d.vec(dataArg)
	if len(regs) != int(in.vec) {
		return d.errf("%s: %d registers for a .v%d access", base, len(regs), in.vec)
	}
	b, off, symSpace, err := d.addr(addrArg, in)
	if err != nil {
		return err
	}
	if symSpace == spParam {
		if base != "ld" || in.space != spParam {
			return d.errf("parameter %s can only be read with ld.param", addrArg.name)
		}
		if in.vec != 1 {
			return d.errf("vector ld.param is not supported")
		}
		in.op, in.off = opLdParam, off
		in.d[0], err = d.dst(regs[0], in)
		return err
	}
	if in.space == spParam {
		return d.errf("ld.param needs a parameter symbol")
	}
	if symSpace != spGeneric && in.space != symSpace && in.space != spGeneric {
		return d.errf("%s symbol %s used with .%s", spaceName(symSpace), addrArg.name, spaceName(in.space))
	}
	if in.space == spGeneric && symSpace != spGeneric {
		in.space = symSpace
	}
	in.base, in.off = b, off
	for i, r := range regs {
		if base == "ld" {
			if in.d[i], err = d.dst(r, in); err != nil {
				return err
			}
		} else {
			if in.a[i], err = d.src(r, t, in); err != nil {
				return err
			}
		}
	}
	if base == "ld" {
		in.op = opLd
	} else {
		in.op = opSt
	}
	return nil
}

func spaceName(s uint8) string {
	return [...]string{"generic", "global", "shared", "local", "param"}[s]
}

func (d *decoder) decCvta(in *inst, q []string) error {
	if err := d.nargs(2); err != nil {
		return err
	}
	in.op = opCvta
	t, ok := lastType(q)
	if !ok || (t != tyU64 && t != tyU32) {
		return d.errf("cvta needs .u32 or .u64")
	}
	in.t = t
	to := has(q, "to")
	sp := uint8(255)
	for _, x := range q {
		switch x {
		case "global":
			sp = spGlobal
		case "shared":
			sp = spShared
		case "local":
			sp = spLocal
		case "param":
			sp = spParam // addresses of parameters are generic already (paramWindow)
		}
	}
	if sp == 255 {
		return d.errf("cvta needs .global, .shared, .local or .param")
	}
	in.space = sp
	if to {
		in.mode = 1
	}
	var err error
	if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
		return err
	}
	in.a[0], err = d.src(d.st.args[1], t, in)
	return err
}

func (d *decoder) decBinary(in *inst, base string, q []string) error {
	t, ok := lastType(q)
	if !ok {
		return d.errf("%s needs a type", base)
	}
	in.t = t
	n := 3
	switch base {
	case "add":
		in.op = opAdd
	case "sub":
		in.op = opSub
	case "mul":
		in.op = opMulLo
		if t.isInt() || t.isBits() {
			switch {
			case has(q, "hi"):
				in.op = opMulHi
			case has(q, "wide"):
				in.op = opMulWide
			case has(q, "lo"):
			default:
				return d.errf("integer mul needs .lo, .hi or .wide")
			}
		}
	case "mad":
		n = 4
		in.op = opMad
		if t.isFloat() {
			in.op = opFma
		} else {
			switch {
			case has(q, "hi"):
				in.op = opMadHi
			case has(q, "wide"):
				in.op = opMadWide
			case has(q, "lo"):
			default:
				return d.errf("integer mad needs .lo, .hi or .wide")
			}
		}
	case "fma":
		n = 4
		in.op = opFma
	case "div":
		in.op = opDiv
	case "rem":
		in.op = opRem
	case "min":
		in.op = opMin
	case "max":
		in.op = opMax
	case "and":
		in.op = opAnd
	case "or":
		in.op = opOr
	case "xor":
		in.op = opXor
	case "shl":
		in.op = opShl
	case "shr":
		in.op = opShr
	case "copysign":
		in.op = opCopysign
	}
	if err := d.nargs(n); err != nil {
		return err
	}
	for _, x := range q[:len(q)-1] {
		switch x {
		case "rn", "rz", "rm", "rp":
			in.mode = rndNames[x]
			if x != "rn" && t != tyF64 && t != tyF32 {
				return d.errf("rounding .%s on .%v is not supported", x, t)
			}
		case "ftz":
			in.flags |= flFtz
		case "sat":
			in.flags |= flSat
		case "approx", "full":
			in.mode = rndNone // div.approx/div.full: computed exactly rounded
		case "NaN":
			if base != "min" && base != "max" {
				return d.errf(".NaN applies to min and max only")
			}
			in.mode = mmNaN
		case "lo", "hi", "wide", "noftz":
		default:
			return d.errf("%s: unknown qualifier .%s", base, x)
		}
	}
	if in.mode != rndNone && in.mode != rndRN && in.mode != mmNaN && t == tyF32 {
		if in.op != opAdd && in.op != opSub && in.op != opMulLo && in.op != opFma && in.op != opDiv {
			return d.errf("rounding mode on %s", base)
		}
	}
	if t.isFloat() && (in.op == opRem || in.op == opAnd || in.op == opOr || in.op == opXor || in.op == opShl || in.op == opShr) {
		return d.errf("%s has no floating-point form", base)
	}
	if t == tyPred {
		if in.op != opAnd && in.op != opOr && in.op != opXor {
			return d.errf("%s.pred is not an instruction", base)
		}
		var err error
		if in.d[0], err = d.pdst(d.st.args[0], in); err != nil {
			return err
		}
		for i := 1; i < 3; i++ {
			s, neg, err := d.psrc(d.st.args[i], in)
			if err != nil {
				return err
			}
			if neg {
				return d.errf("negated predicate operand in %s", base)
			}
			in.a[i-1] = s
		}
		return nil
	}
	if in.flags&flSat != 0 && !(t == tyF32 || t == tyS32) {
		return d.errf(".sat on .%v is not supported", t)
	}
	var err error
	if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
		return err
	}
	st := t
	if in.op == opShl || in.op == opShr {
		// shift amount is always .u32
		if in.a[0], err = d.src(d.st.args[1], t, in); err != nil {
			return err
		}
		in.a[1], err = d.src(d.st.args[2], tyU32, in)
		return err
	}
	if in.op == opMulWide || in.op == opMadWide {
		if t.bits() > 32 {
			return d.errf("%s.wide on a 64-bit type", base)
		}
	}
	for i := 1; i < n; i++ {
		at := st
		if i == 3 && in.op == opMadWide {
			at = widen(t)
		}
		if in.a[i-1], err = d.src(d.st.args[i], at, in); err != nil {
			return err
		}
	}
	return nil
}

func widen(t ptype) ptype {
	switch t {
	case tyU16:
		return tyU32
	case tyS16:
		return tyS32
	case tyU32:
		return tyU64
	case tyS32:
		return tyS64
	}
	return t
}

func (d *decoder) decUnary(in *inst, base string, q []string) error {
	if err := d.nargs(2); err != nil {
		return err
	}
	t, ok := lastType(q)
	if !ok {
		return d.errf("%s needs a type", base)
	}
	in.t = t
	approxQ := has(q, "approx")
	switch base {
	case "neg":
		in.op = opNeg
	case "abs":
		in.op = opAbs
	case "not":
		in.op = opNot
	case "cnot":
		in.op = opCnot
	case "rcp":
		in.op = opRcp
		if approxQ {
			in.op = opRcpApprox
		}
	case "sqrt":
		in.op = opSqrt
		if approxQ {
			in.op = opSqrtApprox
		}
	case "rsqrt":
		in.op = opRsqrt
	case "ex2":
		in.op = opEx2
	case "lg2":
		in.op = opLg2
	case "tanh":
		in.op = opTanh
	case "sin":
		in.op = opSin
	case "cos":
		in.op = opCos
	case "popc":
		in.op = opPopc
	case "clz":
		in.op = opClz
	case "brev":
		in.op = opBrev
	case "bfind":
		in.op = opBfind
	}
	for _, x := range q[:len(q)-1] {
		switch x {
		case "ftz":
			in.flags |= flFtz
		case "rn":
			in.mode = rndRN
		case "approx", "shiftamt", "noftz":
			if x == "shiftamt" {
				in.mode = 1
			}
		default:
			return d.errf("%s: unknown or unsupported qualifier .%s", base, x)
		}
	}
	switch in.op {
	case opRsqrt, opEx2, opLg2, opTanh, opSin, opCos, opRcpApprox, opSqrtApprox:
		if !approxQ {
			return d.errf("%s needs .approx", base)
		}
		if t != tyF32 {
			return d.errf("%s.approx.%v is not supported (f32 only)", base, t)
		}
	case opRcp, opSqrt:
		if !approxQ && in.mode != rndRN {
			return d.errf("%s needs .rn or .approx", base)
		}
		if t != tyF32 && t != tyF64 {
			return d.errf("%s.%v is not supported", base, t)
		}
	}
	if t == tyPred && in.op == opNot {
		var err error
		if in.d[0], err = d.pdst(d.st.args[0], in); err != nil {
			return err
		}
		s, _, err := d.psrc(d.st.args[1], in)
		in.a[0] = s
		return err
	}
	var err error
	if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
		return err
	}
	in.a[0], err = d.src(d.st.args[1], t, in)
	return err
}

func (d *decoder) decTernaryBits(in *inst, base string, q []string) error {
	if err := d.nargs(4); err != nil {
		return err
	}
	t, ok := lastType(q)
	if !ok {
		return d.errf("%s needs a type", base)
	}
	in.t = t
	if base == "bfe" {
		in.op = opBfe
		if t != tyU32 && t != tyS32 && t != tyU64 && t != tyS64 {
			return d.errf("bfe.%v is not supported", t)
		}
	} else {
		in.op = opPrmt
		if t != tyB32 || len(q) != 1 {
			return d.errf("only the default mode of prmt.b32 is supported")
		}
	}
	var err error
	if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
		return err
	}
	for i := 1; i < 4; i++ {
		at := t
		if base == "bfe" && i > 1 {
			at = tyU32
		}
		if in.a[i-1], err = d.src(d.st.args[i], at, in); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) decSetp(in *inst, q []string) error {
	in.op = opSetp
	t, ok := lastType(q)
	if !ok || len(q) < 2 {
		return d.errf("setp needs a comparison and a type")
	}
	in.t = t
	c, ok := cmpNames[q[0]]
	if !ok {
		return d.errf("setp: unknown comparison .%s", q[0])
	}
	in.mode = c
	for _, x := range q[1 : len(q)-1] {
		switch x {
		case "and", "or", "xor":
			in.flags |= flBool
			in.mode2 = map[string]uint8{"and": 0, "or": 1, "xor": 2}[x]
		case "ftz":
			in.flags |= flFtz
		default:
			return d.errf("setp: unknown qualifier .%s", x)
		}
	}
	if t.isHalf2() || t == tyPred {
		return d.errf("setp.%v is not supported", t)
	}
	if c >= cmpEqu && !t.isFloat() {
		return d.errf("setp.%s needs a float type", q[0])
	}
	n := 3
	if in.flags&flBool != 0 {
		n = 4
	}
	if err := d.nargs(n); err != nil {
		return err
	}
	var err error
	if in.d[0], err = d.pdst(d.st.args[0], in); err != nil {
		return err
	}
	if p := d.st.args[0].pipe; p != "" {
		in.d[1], err = d.pdst(operand{kind: oReg, name: p}, in)
		if err != nil {
			return err
		}
		in.nd = 2
	}
	if in.a[0], err = d.src(d.st.args[1], t, in); err != nil {
		return err
	}
	if in.a[1], err = d.src(d.st.args[2], t, in); err != nil {
		return err
	}
	if n == 4 {
		s, neg, err := d.psrc(d.st.args[3], in)
		if err != nil {
			return err
		}
		in.a[2] = s
		if neg {
			in.flags |= flNegC
		}
	}
	return nil
}

func (d *decoder) decSelp(in *inst, q []string) error {
	if err := d.nargs(4); err != nil {
		return err
	}
	in.op = opSelp
	t, ok := lastType(q)
	if !ok || len(q) != 1 {
		return d.errf("selp needs one type")
	}
	in.t = t
	var err error
	if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
		return err
	}
	if in.a[0], err = d.src(d.st.args[1], t, in); err != nil {
		return err
	}
	if in.a[1], err = d.src(d.st.args[2], t, in); err != nil {
		return err
	}
	s, neg, err := d.psrc(d.st.args[3], in)
	if neg {
		in.flags |= flNegC
	}
	in.a[2] = s
	return err
}

func (d *decoder) decCvt(in *inst, q []string) error {
	in.op = opCvt
	var types []ptype
	for _, x := range q {
		if t, ok := parseType(x); ok {
			types = append(types, t)
			continue
		}
		switch {
		case rndNames[x] != 0:
			in.mode = rndNames[x]
		case x == "ftz":
			in.flags |= flFtz
		case x == "sat":
			in.flags |= flSat
		case x == "relu":
			return d.errf("cvt .relu is not supported")
		default:
			return d.errf("cvt: unknown qualifier .%s", x)
		}
	}
	if len(types) != 2 {
		return d.errf("cvt needs a destination and a source type")
	}
	in.t, in.t2 = types[0], types[1]
	if in.t.isHalf2() {
		if in.t2 != tyF32 || in.mode != rndRN {
			return d.errf("cvt to .%v needs .rn and an .f32 source", in.t)
		}
		if err := d.nargs(3); err != nil {
			return err
		}
		in.op = opCvtPack
		var err error
		if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
			return err
		}
		if in.a[0], err = d.src(d.st.args[1], tyF32, in); err != nil {
			return err
		}
		in.a[1], err = d.src(d.st.args[2], tyF32, in)
		return err
	}
	if err := d.nargs(2); err != nil {
		return err
	}
	to, from := in.t, in.t2
	if to == tyPred || from == tyPred || to.isHalf2() || from.isHalf2() || to == tyB128 || from == tyB128 {
		return d.errf("cvt.%v.%v is not supported", to, from)
	}
	if in.flags&flSat != 0 && !to.isFloat() && !from.isFloat() {
		return d.errf("cvt.sat between integers is not supported")
	}
	switch {
	case to.isFloat() && from.isFloat():
		if to == from {
			if in.mode != rndNone && in.mode < rndRNI {
				return d.errf("cvt.%v.%v takes an integer rounding mode", to, from)
			}
		} else if to.bits() < from.bits() || to.bits() == from.bits() {
			if in.mode == rndNone || in.mode >= rndRNI {
				return d.errf("cvt.%v.%v needs a float rounding mode", to, from)
			}
		}
	case to.isFloat():
		if in.mode == rndNone || in.mode >= rndRNI {
			return d.errf("cvt.%v.%v needs a float rounding mode", to, from)
		}
	case from.isFloat():
		if in.mode < rndRNI {
			return d.errf("cvt.%v.%v needs an integer rounding mode", to, from)
		}
	}
	var err error
	if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
		return err
	}
	in.a[0], err = d.src(d.st.args[1], from, in)
	return err
}

func (d *decoder) decBar(in *inst, base string, q []string) error {
	if has(q, "warp") {
		in.op = opBarWarp
		if err := d.nargs(1); err != nil {
			return err
		}
		a, err := d.src(d.st.args[0], tyB32, in)
		in.a[0] = a
		return err
	}
	if has(q, "red") {
		in.mode = barMode(base, q)
		return d.decBarRed(in, q)
	}
	in.op = opBar
	in.mode = barMode(base, q)
	for _, x := range q {
		switch x {
		case "sync", "arrive", "aligned", "cta": // arrive: the ISA table asks for the count
		default:
			return d.errf("%s: unknown qualifier .%s", base, x)
		}
	}
	if len(d.st.args) == 0 {
		return nil
	}
	if err := d.nargs(1, 2); err != nil {
		return err
	}
	return d.barOperands(in, d.st.args)
}

// barMode returns the form of a barrier instruction (inst.mode): bar.*
// is always .aligned, barrier.* only when it says so.
func barMode(base string, q []string) uint8 {
	var m uint8
	if base == "bar" || has(q, "aligned") {
		m |= barAligned
	}
	if has(q, "arrive") {
		m |= barArrive
	}
	return m
}

// Reductions of bar.red (inst.mode2).
const (
	barRedPopc uint8 = 1 + iota
	barRedAnd
	barRedOr
)

// decBarRed: bar.red.popc.u32 d, a{, b}, {!}c; bar.red.{and,or}.pred p, a{, b}, {!}c.
func (d *decoder) decBarRed(in *inst, q []string) error {
	in.op = opBar
	for _, x := range q {
		switch x {
		case "red", "sync", "aligned", "cta", "u32", "pred":
		case "popc":
			in.mode2 = barRedPopc
		case "and":
			in.mode2 = barRedAnd
		case "or":
			in.mode2 = barRedOr
		default:
			return d.errf("bar.red: unknown qualifier .%s", x)
		}
	}
	if in.mode2 == 0 {
		return d.errf("bar.red needs .popc, .and or .or")
	}
	if err := d.nargs(3, 4); err != nil {
		return err
	}
	args := d.st.args
	var err error
	if in.mode2 == barRedPopc {
		if !has(q, "u32") {
			return d.errf("bar.red.popc needs .u32")
		}
		in.d[0], err = d.dst(args[0], in)
	} else {
		if !has(q, "pred") {
			return d.errf("bar.red.%s needs .pred", q[1])
		}
		in.d[0], err = d.pdst(args[0], in)
	}
	if err != nil {
		return err
	}
	p, neg, err := d.psrc(args[len(args)-1], in)
	if err != nil {
		return err
	}
	in.a[0] = p
	if neg {
		in.flags |= flNegC
	}
	return d.barOperands(in, args[1:len(args)-1])
}

// barOperands reads a barrier's id and optional thread count.
func (d *decoder) barOperands(in *inst, args []operand) error {
	if args[0].kind != oImm {
		return d.errf("a barrier id in a register is not supported")
	}
	in.imm = args[0].i
	if in.imm < 0 || in.imm > 15 {
		return d.errf("barrier id %d out of range 0..15", in.imm)
	}
	if len(args) == 2 {
		if args[1].kind != oImm {
			return d.errf("a barrier thread count in a register is not supported")
		}
		in.off = args[1].i // checked against the block when executed
		in.flags |= flSat  // marks "count given"
	}
	return nil
}

// Operations of redux.sync (inst.mode).
const (
	rdAdd uint8 = iota
	rdMin
	rdMax
	rdAnd
	rdOr
	rdXor
)

// decRedux: redux.sync.{add,min,max}.{u32,s32} d, a, mask;
// redux.sync.{and,or,xor}.b32 d, a, mask.
func (d *decoder) decRedux(in *inst, q []string) error {
	in.op = opRedux
	if err := d.nargs(3); err != nil {
		return err
	}
	t, ok := lastType(q)
	if !ok || len(q) != 3 || q[0] != "sync" {
		return d.errf("want redux.sync.op.type")
	}
	ops := map[string]uint8{"add": rdAdd, "min": rdMin, "max": rdMax, "and": rdAnd, "or": rdOr, "xor": rdXor}
	op, ok := ops[q[1]]
	if !ok {
		return d.errf("redux.sync.%s is not supported", q[1])
	}
	if (op <= rdMax && t != tyU32 && t != tyS32) || (op > rdMax && t != tyB32) {
		return d.errf("redux.sync.%s.%v is not an instruction", q[1], t)
	}
	in.mode, in.t = op, t
	var err error
	if in.d[0], err = d.dst(d.st.args[0], in); err != nil {
		return err
	}
	if in.a[0], err = d.src(d.st.args[1], t, in); err != nil {
		return err
	}
	in.a[1], err = d.src(d.st.args[2], tyB32, in)
	return err
}

// Tests of testp (inst.mode).
const (
	tpFinite uint8 = iota
	tpInfinite
	tpNumber
	tpNotANumber
	tpNormal
	tpSubnormal
)

// decTestp: testp.{finite,infinite,number,notanumber,normal,subnormal}.{f32,f64} p, a.
func (d *decoder) decTestp(in *inst, q []string) error {
	in.op = opTestp
	if err := d.nargs(2); err != nil {
		return err
	}
	t, ok := lastType(q)
	tests := map[string]uint8{"finite": tpFinite, "infinite": tpInfinite, "number": tpNumber,
		"notanumber": tpNotANumber, "normal": tpNormal, "subnormal": tpSubnormal}
	if !ok || len(q) != 2 || (t != tyF32 && t != tyF64) {
		return d.errf("want testp.op.{f32,f64}")
	}
	op, ok := tests[q[0]]
	if !ok {
		return d.errf("testp.%s is not an instruction", q[0])
	}
	in.mode, in.t = op, t
	var err error
	if in.d[0], err = d.pdst(d.st.args[0], in); err != nil {
		return err
	}
	in.a[0], err = d.src(d.st.args[1], t, in)
	return err
}

func (d *decoder) decShfl(in *inst, q []string) error {
	if err := d.nargs(5); err != nil {
		return err
	}
	in.op = opShfl
	if !has(q, "sync") {
		return d.errf("shfl without .sync is not supported (sm_70+ needs shfl.sync)")
	}
	var found bool
	if in.mode, found = pickMode(q, map[string]uint8{"idx": shIdx, "up": shUp, "down": shDown, "bfly": shBfly}); !found {
		return d.errf("shfl needs .idx, .up, .down or .bfly")
	}
	t, _ := lastType(q)
	if t.bits() != 32 {
		return d.errf("shfl needs .b32")
	}
	in.t = tyB32
	var err error
	if in.d[0], err = d.dst(operand{kind: oReg, name: d.st.args[0].name}, in); err != nil {
		return err
	}
	if p := d.st.args[0].pipe; p != "" {
		if in.d[1], err = d.pdst(operand{kind: oReg, name: p}, in); err != nil {
			return err
		}
		in.flags |= flPipe
	}
	for i := 1; i < 5; i++ {
		if in.a[i-1], err = d.src(d.st.args[i], tyB32, in); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) decVote(in *inst, q []string) error {
	if err := d.nargs(3); err != nil {
		return err
	}
	in.op = opVote
	if !has(q, "sync") {
		return d.errf("vote without .sync is not supported")
	}
	var found bool
	if in.mode, found = pickMode(q, map[string]uint8{"all": vtAll, "any": vtAny, "uni": vtUni, "ballot": vtBallot}); !found {
		return d.errf("vote needs .all, .any, .uni or .ballot")
	}
	var err error
	if in.mode == vtBallot {
		in.d[0], err = d.dst(d.st.args[0], in)
	} else {
		in.d[0], err = d.pdst(d.st.args[0], in)
	}
	if err != nil {
		return err
	}
	s, neg, err := d.psrc(d.st.args[1], in)
	if err != nil {
		return err
	}
	in.a[0] = s
	if neg {
		in.flags |= flNegC
	}
	in.a[1], err = d.src(d.st.args[2], tyB32, in)
	return err
}

// atomRelease (inst.mode2 of atom and red) marks a release: the warp
// yields after it, so that warps waiting on the flag it raises run before
// it writes anything more.
const atomRelease uint8 = 1

func (d *decoder) decAtom(in *inst, base string, q []string) error {
	if base == "atom" {
		in.op = opAtom
	} else {
		in.op = opRed
	}
	// red{.sem}{.scope}.global.add{.level::cache_hint}.{v2,v4}.f32 (PTX
	// ISA 8.1, sm_90): the vector qualifier follows the operation and
	// comes right before the type.
	for i, x := range q {
		if x == "v2" || x == "v4" || x == "v8" {
			if base == "atom" {
				return d.errf("atom.%s: vector atomics are not supported (only red.global.add.{v2,v4}.f32)", x)
			}
			afterOp := slices.ContainsFunc(q[:i], func(y string) bool { _, ok := atomNames[y]; return ok })
			if !afterOp || i != len(q)-2 {
				return d.errf("red: .%s must follow the operation, right before the type (red.global.add.%s.f32)", x, x)
			}
		}
	}
	t, ok := lastType(q)
	if !ok {
		return d.errf("%s needs a type", base)
	}
	in.t = t
	in.space = spGeneric
	in.vec = 1
	opFound := false
	for _, x := range q[:len(q)-1] {
		switch x {
		case "global":
			in.space = spGlobal
		case "shared":
			in.space = spShared
		case "v2", "v4", "v8": // placed and refused for atom above
			in.vec = map[string]uint8{"v2": 2, "v4": 4, "v8": 8}[x]
		default:
			if a, ok := atomNames[x]; ok {
				in.mode, opFound = a, true
				continue
			}
			if x == "release" || x == "acq_rel" {
				in.mode2 = atomRelease
			}
			if strings.HasPrefix(x, "shared::") {
				in.space = spShared
				continue
			}
			if !ignoredQual(x) {
				return d.errf("%s: unknown qualifier .%s", base, x)
			}
		}
	}
	if !opFound {
		return d.errf("%s needs an operation (.add, .min, .max, .inc, .dec, .and, .or, .xor, .exch, .cas)", base)
	}
	switch in.mode {
	case atAdd:
		if t == tyS64 || t.isBits() {
			return d.errf("%s.add.%v is not an instruction", base, t)
		}
	case atMin, atMax:
		if !t.isInt() && !t.isFloat() {
			return d.errf("%s.%v on .%v", base, q, t)
		}
	case atInc, atDec:
		if t != tyU32 {
			return d.errf("%s.inc/dec need .u32", base)
		}
	}
	if t.bits() < 16 {
		return d.errf("%s on .%v is not supported", base, t)
	}
	if in.vec > 1 {
		return d.decRedVec(in, t)
	}
	n := 3
	if base == "red" {
		n = 2
	}
	if in.mode == atCas {
		n++
	}
	if err := d.nargs(n); err != nil {
		return err
	}
	args := d.st.args
	var err error
	if base == "atom" {
		if in.d[0], err = d.dst(args[0], in); err != nil {
			return err
		}
		in.nd = 1
		args = args[1:]
	}
	b, off, symSpace, err := d.addr(args[0], in)
	if err != nil {
		return err
	}
	if symSpace == spParam || symSpace == spLocal {
		return d.errf("%s on .%s memory", base, spaceName(symSpace))
	}
	if symSpace == spShared {
		in.space = spShared
	}
	in.base, in.off = b, off
	for i, o := range args[1:] {
		if in.a[i], err = d.src(o, t, in); err != nil {
			return err
		}
	}
	return nil
}

// decRedVec decodes the vector reduction red.global.add.{v2,v4}.f32
// [a], {b0, ...}: the only vector form supported (.global, .add, .f32).
func (d *decoder) decRedVec(in *inst, t ptype) error {
	v := fmt.Sprintf("v%d", in.vec)
	if in.vec > 4 {
		return d.errf("red.%s is not supported (only red.global.add.{v2,v4}.f32)", v)
	}
	if in.mode != atAdd {
		return d.errf("red: vector reductions exist only for .add (red.global.add.%s.f32)", v)
	}
	if t != tyF32 {
		return d.errf("red.global.add.%s.%v is not supported: vector reductions need .f32", v, t)
	}
	if in.space != spGlobal {
		return d.errf("red.add.%s.f32 needs the .global space (found .%s)", v, spaceName(in.space))
	}
	if err := d.nargs(2); err != nil {
		return err
	}
	b, off, symSpace, err := d.addr(d.st.args[0], in)
	if err != nil {
		return err
	}
	if symSpace != spGeneric && symSpace != spGlobal {
		return d.errf("red.global.add.%s.f32 on .%s symbol %s", v, spaceName(symSpace), d.st.args[0].name)
	}
	in.base, in.off = b, off
	if d.st.args[1].kind != oVec {
		return d.errf("red.global.add.%s.f32 needs a vector of %d registers", v, in.vec)
	}
	regs, _ := d.vec(d.st.args[1])
	if len(regs) != int(in.vec) {
		return d.errf("red.global.add.%s.f32: %d registers for a .%s reduction", v, len(regs), v)
	}
	for i, r := range regs {
		if in.a[i], err = d.src(r, t, in); err != nil {
			return err
		}
	}
	return nil
}

// decMma: mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32.
func (d *decoder) decMma(in *inst, q []string) error {
	want := []string{"sync", "aligned", "m16n8k16", "row", "col", "f32"}
	if len(q) != 9 || strings.Join(q[:6], ".") != strings.Join(want, ".") || q[8] != "f32" || q[6] != q[7] ||
		(q[6] != "f16" && q[6] != "bf16") {
		return d.errf("only mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 is supported")
	}
	in.op = opMma
	if q[6] == "bf16" {
		in.flags |= flBF16
	}
	if err := d.nargs(4); err != nil {
		return err
	}
	want4 := []int{4, 4, 2, 4}
	for i, o := range d.st.args {
		if o.kind != oVec || len(o.elems) != want4[i] {
			return d.errf("mma operand %d: want a vector of %d registers", i+1, want4[i])
		}
	}
	dv, _ := d.vec(d.st.args[0])
	for i, o := range dv {
		s, err := d.dst(o, in)
		if err != nil {
			return err
		}
		in.d[i] = s
	}
	for _, arg := range d.st.args[1:] {
		ov, _ := d.vec(arg)
		for _, o := range ov {
			s, err := d.src(o, tyB32, in)
			if err != nil {
				return err
			}
			in.x = append(in.x, s)
		}
	}
	return nil
}

// decLdmatrix: ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared{::cta}.b16.
func (d *decoder) decLdmatrix(in *inst, q []string) error {
	in.op = opLdmatrix
	num := 0
	shape := false
	for _, x := range q {
		switch x {
		case "sync", "aligned", "b16":
		case "m8n8":
			shape = true
		case "x1":
			num = 1
		case "x2":
			num = 2
		case "x4":
			num = 4
		case "trans":
			in.flags |= flTrans
		case "shared", "shared::cta":
			in.space = spShared
		default:
			return d.errf("ldmatrix: unsupported qualifier .%s", x)
		}
	}
	if !shape || num == 0 || !has(q, "b16") || !has(q, "sync") || !has(q, "aligned") {
		return d.errf("only ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 is supported")
	}
	in.space = spShared
	in.vec = uint8(num)
	if err := d.nargs(2); err != nil {
		return err
	}
	regs, _ := d.vec(d.st.args[0])
	if len(regs) != num {
		return d.errf("ldmatrix .x%d needs %d destination registers", num, num)
	}
	for i, o := range regs {
		s, err := d.dst(o, in)
		if err != nil {
			return err
		}
		in.d[i] = s
	}
	b, off, sp, err := d.addr(d.st.args[1], in)
	if err != nil {
		return err
	}
	if sp != spGeneric && sp != spShared {
		return d.errf("ldmatrix reads shared memory")
	}
	in.base, in.off = b, off
	return nil
}

// decCp: cp.async.{ca,cg}.shared{::cta}.global [dst], [src], size{, srcsize};
// cp.async.commit_group; cp.async.wait_group N; cp.async.wait_all.
func (d *decoder) decCp(in *inst, q []string) error {
	if len(q) < 2 || q[0] != "async" {
		return d.errf("only cp.async is supported")
	}
	switch q[1] {
	case "commit_group":
		in.op = opCpCommit
		return d.nargs(0)
	case "wait_all":
		in.op = opCpWait
		in.imm = 0
		in.flags |= flSat // wait_all: commit pending copies first
		return d.nargs(0)
	case "wait_group":
		in.op = opCpWait
		if err := d.nargs(1); err != nil {
			return err
		}
		if d.st.args[0].kind != oImm || d.st.args[0].i < 0 {
			return d.errf("cp.async.wait_group needs a non-negative immediate")
		}
		in.imm = d.st.args[0].i
		return nil
	case "ca", "cg":
	default:
		return d.errf("cp.async.%s is not supported", q[1])
	}
	in.op = opCpAsync
	if q[1] == "cg" {
		in.flags |= flCG
	}
	hasShared, hasGlobal := false, false
	for _, x := range q[2:] {
		switch {
		case x == "shared" || x == "shared::cta":
			hasShared = true
		case x == "global":
			hasGlobal = true
		case strings.HasPrefix(x, "L2::"):
		default:
			return d.errf("cp.async: unsupported qualifier .%s", x)
		}
	}
	if !hasShared || !hasGlobal {
		return d.errf("cp.async needs .shared.global")
	}
	if err := d.nargs(3, 4); err != nil {
		return err
	}
	db, doff, dsp, err := d.addr(d.st.args[0], in)
	if err != nil {
		return err
	}
	sb, soff, ssp, err := d.addr(d.st.args[1], in)
	if err != nil {
		return err
	}
	if (dsp != spGeneric && dsp != spShared) || ssp != spGeneric {
		return d.errf("cp.async: destination must be shared, source global")
	}
	in.a[0], in.off = db, doff
	in.a[1], in.imm = sb, soff
	sz := d.st.args[2]
	if sz.kind != oImm || (sz.i != 4 && sz.i != 8 && sz.i != 16) {
		return d.errf("cp.async size must be 4, 8 or 16")
	}
	if in.flags&flCG != 0 && sz.i != 16 {
		return d.errf("cp.async.cg copies 16 bytes only")
	}
	in.vec = uint8(sz.i)
	in.a[2] = -1
	if len(d.st.args) == 4 {
		if in.a[2], err = d.src(d.st.args[3], tyU32, in); err != nil {
			return err
		}
	}
	return nil
}

// String describes a decoding for debugging.
func (in *inst) String() string { return fmt.Sprintf("line %d: %s", in.line, in.text) }

// pickMode returns the mode of the last qualifier in q that modes names.
func pickMode(q []string, modes map[string]uint8) (mode uint8, found bool) {
	for _, x := range q {
		if m, ok := modes[x]; ok {
			mode, found = m, true
		}
	}
	return mode, found
}
