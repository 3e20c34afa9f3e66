package runner

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// A device check compares an output buffer with its reference where both
// already are: on the device. The reference is uploaded once per session
// as f64; a kernel per output dtype applies kernels.Tolerance.Check to
// every element and reduces the largest absolute and relative errors and
// the first index outside tolerance into three 64-bit words, the only
// bytes that come back (plus the one bad element, for the message). The
// arithmetic is Check's in f64, IEEE-rounded, so both report the same
// errors; TestDeviceCheckMatchesHost holds them to it.

// devCheckBlock is the check kernel's CTA; devCheckPerSM its CTAs per SM.
const (
	devCheckBlock = 256
	devCheckPerSM = 4
)

// devCheckDTypes are the output dtypes the check kernel reads.
var devCheckDTypes = []dtype.DType{dtype.F32, dtype.F64, dtype.F16, dtype.BF16}

func devCheckEntry(dt dtype.DType) string { return "check_" + dt.String() }

// devChecker holds the check kernels and the references on a backend.
type devChecker struct {
	be   Backend
	mod  Module
	fns  map[dtype.DType]Function
	out  Ptr            // maxAbs bits, maxRel bits, first bad index
	refs map[string]Ptr // f64 references, by buffer and input set (check's key)
}

// newDevChecker loads the check kernels on be.
func newDevChecker(be Backend) (*devChecker, error) {
	mod, err := be.Load(devCheckPTX())
	if err != nil {
		return nil, fmt.Errorf("loading the device check: %w", err)
	}
	dc := &devChecker{be: be, mod: mod, fns: map[dtype.DType]Function{}, refs: map[string]Ptr{}}
	for _, dt := range devCheckDTypes {
		if dc.fns[dt], err = mod.Function(devCheckEntry(dt)); err != nil {
			mod.Unload()
			return nil, err
		}
	}
	if dc.out, err = be.Alloc(24); err != nil {
		mod.Unload()
		return nil, err
	}
	return dc, nil
}

// release frees the references (the kernels and result words stay).
func (dc *devChecker) release() {
	for _, p := range dc.refs {
		dc.be.Free(p)
	}
	dc.refs = map[string]Ptr{}
}

// check compares the n elements of dt at got with ref (uploaded under
// key, the buffer's name and its input set's, on first use) and returns
// the outcome; ok is false when dt has no check kernel.
func (dc *devChecker) check(key string, dt dtype.DType, got Ptr, ref []float64, tol kernels.Tolerance) (mismatch, bool, error) {
	fn, ok := dc.fns[dt]
	if !ok || len(ref) >= math.MaxInt32 {
		return mismatch{}, false, nil
	}
	r, err := dc.reference(key, ref)
	if err != nil {
		return mismatch{}, true, err
	}
	init := make([]byte, 24)
	binary.LittleEndian.PutUint64(init[16:], math.MaxUint64)
	if err := dc.be.Upload(dc.out, init); err != nil {
		return mismatch{}, true, err
	}
	blocks := max(1, min(devCheckPerSM*max(dc.be.Device().SMs, 1), gen.CeilDiv(len(ref), devCheckBlock)))
	args := []any{got, r, uint64(len(ref)), math.Float64bits(tol.Atol), math.Float64bits(tol.Rtol), dc.out}
	if err := dc.be.Launch(fn, [3]int{blocks, 1, 1}, [3]int{devCheckBlock, 1, 1}, 0, args); err != nil {
		return mismatch{}, true, fmt.Errorf("launching the device check: %w", err)
	}
	words := make([]byte, 24)
	if err := dc.be.Download(words, dc.out); err != nil {
		return mismatch{}, true, err
	}
	m := mismatch{maxAbs: math.Float64frombits(binary.LittleEndian.Uint64(words)),
		maxRel: math.Float64frombits(binary.LittleEndian.Uint64(words[8:])), bad: -1}
	if bad := binary.LittleEndian.Uint64(words[16:]); bad != math.MaxUint64 {
		m.bad = int(bad)
		elem := make([]byte, dt.Size())
		if err := dc.be.Download(elem, got+Ptr(m.bad*dt.Size())); err != nil {
			return mismatch{}, true, err
		}
		vals := make([]float64, 1)
		dt.DecodeInto(vals, elem)
		m.got = vals[0]
	}
	return m, true, nil
}

// reference returns the device copy of ref, uploading it under key on
// first use.
func (dc *devChecker) reference(key string, ref []float64) (Ptr, error) {
	if p, ok := dc.refs[key]; ok {
		return p, nil
	}
	p, err := dc.be.Alloc(max(8*len(ref), 16))
	if err != nil {
		return 0, fmt.Errorf("allocating the reference of %s: %w", key, err)
	}
	if err := dc.be.Upload(p, dtype.F64.Encode(ref)); err != nil {
		dc.be.Free(p)
		return 0, fmt.Errorf("uploading the reference of %s: %w", key, err)
	}
	dc.refs[key] = p
	return p, nil
}

// devCheckPTX is the module of check kernels, one per dtype.
func devCheckPTX() string {
	m := ptx.NewModule()
	for _, dt := range devCheckDTypes {
		emitDevCheck(m.Func(devCheckEntry(dt)), dt)
	}
	b, err := m.Build()
	if err != nil {
		panic(fmt.Sprintf("runner: the device check does not build: %v", err))
	}
	return b.String()
}

// emitDevCheck writes check(got, ref, n, atol, rtol, out): a grid-stride
// loop of Tolerance.Check per element, then a warp reduction and one
// thread's atomics per warp (max on the bits of the non-negative errors,
// min on the bad index).
func emitDevCheck(k *ptx.Func, dt dtype.DType) {
	got, ref := gen.Param(k, "got"), gen.Param(k, "ref")
	n := k.Cvt(ptx.U32, ptx.U64, "", k.LdParam(k.Param("n", ptx.U64)))
	atol, rtol := k.LdParam(k.Param("atol", ptx.F64)), k.LdParam(k.Param("rtol", ptx.F64))
	out := gen.Param(k, "out")
	k.ReqNTid(devCheckBlock)
	tid := k.Mov(ptx.U32, ptx.TidX)
	start := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(devCheckBlock), tid)
	stride := k.Mul(ptx.U32, k.Mov(ptx.U32, ptx.NCtaidX), ptx.Imm(devCheckBlock))
	maxAbs, maxRel := k.Mov(ptx.F64, ptx.F64Imm(0)), k.Mov(ptx.F64, ptx.F64Imm(0))
	bad := k.Mov(ptx.U32, ptx.Imm(-1))
	inf := ptx.F64Imm(math.Inf(1))
	k.For(ptx.U32, start, n, stride, func(i ptx.Reg) {
		g := loadF64(k, dt, k.Add(ptx.U64, got, k.MulWide(ptx.U32, i, ptx.Imm(dt.Size()))))
		r := k.Ld(ptx.Global, ptx.F64, 1, ptx.At(k.Add(ptx.U64, ref, k.MulWide(ptx.U32, i, ptx.Imm(8))), 0))[0]
		bothNaN := k.And(ptx.Pred, k.Setp("nan", ptx.F64, g, g), k.Setp("nan", ptx.F64, r, r))
		same := k.Or(ptx.Pred, k.Setp("eq", ptx.F64, g, r), bothNaN)
		ar := k.Abs(ptx.F64, r)
		finite := k.And(ptx.Pred, k.Setp("le", ptx.F64, k.Abs(ptx.F64, g), ptx.F64Imm(math.MaxFloat64)),
			k.Setp("le", ptx.F64, ar, ptx.F64Imm(math.MaxFloat64)))
		d := k.Selp(ptx.F64, k.Abs(ptx.F64, k.Sub(ptx.F64, g, r)), inf, finite)
		rel := k.Selp(ptx.F64, k.Div(ptx.F64, d, ar), ptx.F64Imm(0), k.Setp("ne", ptx.F64, r, ptx.F64Imm(0)))
		rel = k.Selp(ptx.F64, rel, inf, finite)
		d = k.Selp(ptx.F64, ptx.F64Imm(0), d, same)
		rel = k.Selp(ptx.F64, ptx.F64Imm(0), rel, same)
		k.MovTo(maxAbs, k.Max(ptx.F64, maxAbs, d))
		k.MovTo(maxRel, k.Max(ptx.F64, maxRel, rel))
		// Outside: d > atol + rtol·|r| (false for every d when the limit
		// is NaN, as rtol·∞ can be), or d infinite.
		// (mul and add rounded apart, as Check computes the limit).
		lim := k.Add(ptx.F64, atol, k.Mul(ptx.F64, rtol, ar))
		outside := k.Or(ptx.Pred, k.Setp("gt", ptx.F64, d, lim), k.Setp("eq", ptx.F64, d, inf))
		k.MovTo(bad, k.Selp(ptx.U32, k.Min(ptx.U32, bad, i), bad, outside))
	})
	for _, off := range []int{16, 8, 4, 2, 1} {
		k.MovTo(maxAbs, k.Max(ptx.F64, maxAbs, shflF64(k, maxAbs, off)))
		k.MovTo(maxRel, k.Max(ptx.F64, maxRel, shflF64(k, maxRel, off)))
		k.MovTo(bad, k.Min(ptx.U32, bad, k.ShflSync("bfly", bad, ptx.Imm(off), ptx.Imm(31), 0xffffffff)))
	}
	k.If(k.Setp("eq", ptx.U32, k.And(ptx.U32, tid, ptx.Imm(31)), ptx.Imm(0)), func() {
		k.Red(ptx.Global, "max", ptx.U64, ptx.At(out, 0), bitsU64(k, maxAbs))
		k.Red(ptx.Global, "max", ptx.U64, ptx.At(out, 8), bitsU64(k, maxRel))
		k.If(k.Setp("ne", ptx.U32, bad, ptx.Imm(-1)), func() {
			k.Red(ptx.Global, "min", ptx.U64, ptx.At(out, 16), k.Cvt(ptx.U64, ptx.U32, "", bad))
		})
	})
}

// loadF64 loads the element of dt at addr as f64 (exactly: every dtype
// widens without rounding).
func loadF64(k *ptx.Func, dt dtype.DType, addr ptx.Reg) ptx.Reg {
	v := gen.LdVals(k, ptx.Global, dt, 1, ptx.At(addr, 0), ptx.Reg{})[0]
	if dt == dtype.F64 {
		return v
	}
	return k.Cvt(ptx.F64, ptx.F32, "", v)
}

// shflF64 is x of the lane off away (shfl.bfly), moved as two halves.
func shflF64(k *ptx.Func, x ptx.Reg, off int) ptx.Reg {
	lo, hi := k.Reg(ptx.B32), k.Reg(ptx.B32)
	k.Raw(80, 70, "mov.b64", ptx.Vec{lo, hi}, x)
	lo = k.ShflSync("bfly", lo, ptx.Imm(off), ptx.Imm(31), 0xffffffff)
	hi = k.ShflSync("bfly", hi, ptx.Imm(off), ptx.Imm(31), 0xffffffff)
	d := k.Reg(ptx.F64)
	k.Raw(80, 70, "mov.b64", d, ptx.Vec{lo, hi})
	return d
}

// bitsU64 reinterprets an f64 register as u64.
func bitsU64(k *ptx.Func, x ptx.Reg) ptx.Reg {
	d := k.Reg(ptx.U64)
	k.Raw(80, 70, "mov.b64", d, x)
	return d
}
