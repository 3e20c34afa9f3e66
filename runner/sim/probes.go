package sim

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/runner"
)

// Probe is a small self-checking program for the instructions whose
// semantics are easiest to get wrong: mma.sync fragment layouts, ldmatrix
// (with and without .trans) and cp.async groups. The interpreter's tests
// run them, and `tune crosscheck` runs them on the GPU too, so that the
// layouts the interpreter implements are checked against the hardware.
type Probe struct {
	Name        string
	PTX         string
	Entry       string
	Grid, Block [3]int
	Buffers     []ProbeBuffer // also the kernel's arguments, in order
	// Exact says whether the result is exactly representable, so the GPU
	// and the interpreter must agree bit for bit.
	Exact bool
	// Check compares the outputs with a Go reference.
	Check func(out map[string][]byte) error
}

// ProbeBuffer is a device buffer of a probe.
type ProbeBuffer struct {
	Name   string
	Data   []byte // contents uploaded before the launch (inputs)
	Size   int    // bytes (outputs; inputs take len(Data))
	Output bool
}

// Run allocates the probe's buffers on be, launches it, and returns the
// outputs.
func (p Probe) Run(be runner.Backend) (map[string][]byte, error) {
	mod, err := be.Load(p.PTX)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", p.Name, err)
	}
	defer mod.Unload()
	fn, err := mod.Function(p.Entry)
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", p.Name, err)
	}
	var args []any
	ptrs := map[string]runner.Ptr{}
	defer func() {
		for _, q := range ptrs {
			be.Free(q)
		}
	}()
	for _, b := range p.Buffers {
		n := max(b.Size, len(b.Data))
		q, err := be.Alloc(n)
		if err != nil {
			return nil, fmt.Errorf("probe %s: %w", p.Name, err)
		}
		ptrs[b.Name] = q
		if b.Data != nil {
			err = be.Upload(q, b.Data)
		} else {
			err = be.Memset(q, 0xff, n)
		}
		if err != nil {
			return nil, fmt.Errorf("probe %s: %w", p.Name, err)
		}
		args = append(args, q)
	}
	if err := be.Launch(fn, p.Grid, p.Block, 0, args); err != nil {
		return nil, fmt.Errorf("probe %s: %w", p.Name, err)
	}
	if err := be.Sync(); err != nil {
		return nil, fmt.Errorf("probe %s: %w", p.Name, err)
	}
	out := map[string][]byte{}
	for _, b := range p.Buffers {
		if !b.Output {
			continue
		}
		buf := make([]byte, max(b.Size, len(b.Data)))
		if err := be.Download(buf, ptrs[b.Name]); err != nil {
			return nil, fmt.Errorf("probe %s: %w", p.Name, err)
		}
		out[b.Name] = buf
	}
	return out, nil
}

// Probes builds the probe programs.
func Probes() ([]Probe, error) {
	var out []Probe
	for _, c := range []struct {
		ab    ptx.Type
		exact bool
	}{{ptx.F16, true}, {ptx.BF16, true}, {ptx.F16, false}, {ptx.BF16, false}} {
		p, err := mmaProbe(c.ab, c.exact)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	for _, c := range []struct {
		n     int
		trans bool
	}{{1, false}, {2, true}, {4, false}, {4, true}} {
		p, err := ldmatrixProbe(c.n, c.trans)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	p, err := mmaLdmatrixProbe()
	if err != nil {
		return nil, err
	}
	out = append(out, p)
	p, err = cpAsyncProbe()
	if err != nil {
		return nil, err
	}
	return append(out, p), nil
}

// probeValues returns n values: small multiples of 1/4 in [-2, 2] (every
// product and every sum of the probes is then exact in f32), or, when not
// exact, pseudo-random values in [-1, 1) rounded to the half type.
func probeValues(n int, seed uint32, exact bool, bf bool) []float64 {
	v := make([]float64, n)
	x := seed*2654435761 + 1
	for i := range v {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		if exact {
			v[i] = float64(int(x%17)-8) / 4
		} else {
			f := float32(float64(x)/float64(1<<32)*2 - 1)
			if bf {
				v[i] = float64(bf16ToF32(f32ToBF16(f)))
			} else {
				v[i] = float64(f16ToF32(f32ToF16(f)))
			}
		}
	}
	return v
}

func halfBytes(v []float64, bf bool) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		var h uint16
		if bf {
			h = f32ToBF16(float32(x))
		} else {
			h = f32ToF16(float32(x))
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

func f32Bytes(v []float64) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return b
}

// checkGemm compares d (16×8 f32, row major) with A·B + C.
func checkGemm(d []byte, A, B func(i, j int) float64, C []float64, exact bool) error {
	for i := 0; i < 16; i++ {
		for j := 0; j < 8; j++ {
			s, mag := 0.0, 0.0
			for k := 0; k < 16; k++ {
				s += A(i, k) * B(k, j)
				mag += math.Abs(A(i, k) * B(k, j))
			}
			if C != nil {
				s += C[i*8+j]
				mag += math.Abs(C[i*8+j])
			}
			got := float64(math.Float32frombits(binary.LittleEndian.Uint32(d[4*(i*8+j):])))
			tol := 0.0
			if !exact {
				tol = mag*0x1p-22 + 1e-30
			}
			if math.Abs(got-s) > tol || got != got {
				return fmt.Errorf("D[%d][%d] = %g, want %g (tolerance %g)", i, j, got, s, tol)
			}
		}
	}
	return nil
}

// mmaProbe: one warp computes D = A·B + C with every operand loaded from
// global memory in its fragment layout (A 16×16 row major, B stored
// column major as Bᵀ 8×16, C and D 16×8 row major).
func mmaProbe(ab ptx.Type, exact bool) (Probe, error) {
	bf := ab == ptx.BF16
	name := fmt.Sprintf("mma_%v", ab)
	if !exact {
		name += "_random"
	}
	m := ptx.NewModule()
	k := m.Func(name)
	k.ReqNTid(32)
	A := k.Cvta(ptx.Global, k.LdParam(k.Param("a", ptx.U64)))
	Bt := k.Cvta(ptx.Global, k.LdParam(k.Param("bt", ptx.U64)))
	C := k.Cvta(ptx.Global, k.LdParam(k.Param("c", ptx.U64)))
	D := k.Cvta(ptx.Global, k.LdParam(k.Param("d", ptx.U64)))
	lane := k.Mov(ptx.U32, ptx.TidX)
	g := k.Shr(ptx.U32, lane, ptx.Imm(2))
	tg := k.And(ptx.U32, lane, ptx.Imm(3))
	// Halves at (g, 2tg) of a 16-wide row-major matrix: byte (g·16+2tg)·2.
	hoff := k.MulWide(ptx.U32, k.Mad(ptx.U32, g, ptx.Imm(8), tg), ptx.Imm(4))
	aAddr := k.Add(ptx.U64, A, hoff)
	var a [4]ptx.Reg
	for r, off := range []int64{0, 16 * 8 * 2, 8 * 2, 16*8*2 + 8*2} {
		a[r] = k.Ld(ptx.Global, ptx.B32, 1, ptx.At(aAddr, off))[0]
	}
	bAddr := k.Add(ptx.U64, Bt, hoff)
	var b [2]ptx.Reg
	for r, off := range []int64{0, 8 * 2} {
		b[r] = k.Ld(ptx.Global, ptx.B32, 1, ptx.At(bAddr, off))[0]
	}
	// f32 pairs at (g, 2tg) of an 8-wide row-major matrix: byte (g·8+2tg)·4.
	foff := k.MulWide(ptx.U32, k.Mad(ptx.U32, g, ptx.Imm(4), tg), ptx.Imm(8))
	cAddr := k.Add(ptx.U64, C, foff)
	c01 := k.Ld(ptx.Global, ptx.F32, 2, ptx.At(cAddr, 0))
	c23 := k.Ld(ptx.Global, ptx.F32, 2, ptx.At(cAddr, 8*8*4))
	d := k.MmaSync(ab, a, b, [4]ptx.Reg{c01[0], c01[1], c23[0], c23[1]})
	dAddr := k.Add(ptx.U64, D, foff)
	k.St(ptx.Global, ptx.F32, ptx.At(dAddr, 0), d[:2])
	k.St(ptx.Global, ptx.F32, ptx.At(dAddr, 8*8*4), d[2:])
	built, err := m.Build()
	if err != nil {
		return Probe{}, err
	}
	av := probeValues(256, 1, exact, bf)
	btv := probeValues(128, 2, exact, bf) // Bᵀ[n][k]
	cv := probeValues(128, 3, true, false)
	return Probe{Name: name, PTX: built.String(), Entry: name, Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Exact: exact,
		Buffers: []ProbeBuffer{{Name: "a", Data: halfBytes(av, bf)}, {Name: "bt", Data: halfBytes(btv, bf)},
			{Name: "c", Data: f32Bytes(cv)}, {Name: "d", Size: 16 * 8 * 4, Output: true}},
		Check: func(out map[string][]byte) error {
			return checkGemm(out["d"], func(i, j int) float64 { return av[i*16+j] }, func(i, j int) float64 { return btv[j*16+i] }, cv, exact)
		}}, nil
}

// tileBytes is a 16×16 tile of distinct 16-bit values, row major.
func tileBytes() []byte {
	b := make([]byte, 512)
	for i := 0; i < 256; i++ {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(0x100*(i/16)+i%16+0x1000))
	}
	return b
}

// ldmatrixProbe: a 16×16 tile of b16 goes to shared memory; ldmatrix loads
// n of its 8×8 quarters (lane l addresses row l%16 of column block l/16:
// matrix i is rows 8·(i%2).. of columns 8·(i/2)..), and every lane stores
// its registers.
func ldmatrixProbe(n int, trans bool) (Probe, error) {
	name := fmt.Sprintf("ldmatrix_x%d", n)
	if trans {
		name += "_trans"
	}
	m := ptx.NewModule()
	k := m.Func(name)
	k.ReqNTid(32)
	in := k.Cvta(ptx.Global, k.LdParam(k.Param("in", ptx.U64)))
	out := k.Cvta(ptx.Global, k.LdParam(k.Param("out", ptx.U64)))
	tile := k.SharedArray("tile", ptx.B16, 256, 16)
	lane := k.Mov(ptx.U32, ptx.TidX)
	base := k.Mov(ptx.U32, tile)
	chunk := k.Ld(ptx.Global, ptx.B32, 4, ptx.At(k.Add(ptx.U64, in, k.MulWide(ptx.U32, lane, ptx.Imm(16))), 0))
	k.St(ptx.Shared, ptx.B32, ptx.At(k.Mad(ptx.U32, lane, ptx.Imm(16), base), 0), chunk)
	k.BarSync(0)
	row := k.And(ptx.U32, lane, ptx.Imm(15))
	blk := k.Shr(ptx.U32, lane, ptx.Imm(4))
	addr := k.Mad(ptx.U32, blk, ptx.Imm(16), k.Mad(ptx.U32, row, ptx.Imm(32), base))
	d := k.Ldmatrix(n, trans, ptx.At(addr, 0))
	oaddr := k.Add(ptx.U64, out, k.MulWide(ptx.U32, lane, ptx.Imm(int64(4*n))))
	k.St(ptx.Global, ptx.B32, ptx.At(oaddr, 0), d)
	built, err := m.Build()
	if err != nil {
		return Probe{}, err
	}
	tb := tileBytes()
	return Probe{Name: name, PTX: built.String(), Entry: name, Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Exact: true,
		Buffers: []ProbeBuffer{{Name: "in", Data: tb}, {Name: "out", Size: 32 * 4 * n, Output: true}},
		Check: func(o map[string][]byte) error {
			T := func(r, c int) uint32 { return uint32(binary.LittleEndian.Uint16(tb[2*(r*16+c):])) }
			for t := 0; t < 32; t++ {
				for i := 0; i < n; i++ {
					M := func(r, c int) uint32 { return T(8*(i%2)+r, 8*(i/2)+c) }
					var lo, hi uint32
					if trans {
						lo, hi = M(2*(t%4), t/4), M(2*(t%4)+1, t/4)
					} else {
						lo, hi = M(t/4, 2*(t%4)), M(t/4, 2*(t%4)+1)
					}
					want := hi<<16 | lo
					got := binary.LittleEndian.Uint32(o["out"][4*(t*n+i):])
					if got != want {
						return fmt.Errorf("lane %d register %d = %#08x, want %#08x", t, i, got, want)
					}
				}
			}
			return nil
		}}, nil
}

// mmaLdmatrixProbe is one step of a tensor-core GEMM: A (16×16 row major)
// and B (16×8 row major, K×N) are staged in shared memory, A's fragments
// loaded with ldmatrix.x4 and B's with ldmatrix.x2.trans, then D = A·B.
func mmaLdmatrixProbe() (Probe, error) {
	const name = "mma_ldmatrix_f16"
	m := ptx.NewModule()
	k := m.Func(name)
	k.ReqNTid(32)
	A := k.Cvta(ptx.Global, k.LdParam(k.Param("a", ptx.U64)))
	B := k.Cvta(ptx.Global, k.LdParam(k.Param("b", ptx.U64)))
	D := k.Cvta(ptx.Global, k.LdParam(k.Param("d", ptx.U64)))
	as := k.SharedArray("a", ptx.F16, 256, 16)
	bs := k.SharedArray("b", ptx.F16, 128, 16)
	lane := k.Mov(ptx.U32, ptx.TidX)
	abase, bbase := k.Mov(ptx.U32, as), k.Mov(ptx.U32, bs)
	off16 := k.Mul(ptx.U32, lane, ptx.Imm(16))
	va := k.Ld(ptx.Global, ptx.B32, 4, ptx.At(k.Add(ptx.U64, A, k.Cvt(ptx.U64, ptx.U32, "", off16)), 0))
	k.St(ptx.Shared, ptx.B32, ptx.At(k.Add(ptx.U32, abase, off16), 0), va)
	low := k.Setp("lt", ptx.U32, lane, ptx.Imm(16))
	k.If(low, func() {
		vb := k.Ld(ptx.Global, ptx.B32, 4, ptx.At(k.Add(ptx.U64, B, k.Cvt(ptx.U64, ptx.U32, "", off16)), 0))
		k.St(ptx.Shared, ptx.B32, ptx.At(k.Add(ptx.U32, bbase, off16), 0), vb)
	})
	k.BarSync(0)
	row := k.And(ptx.U32, lane, ptx.Imm(15))
	aaddr := k.Mad(ptx.U32, k.Shr(ptx.U32, lane, ptx.Imm(4)), ptx.Imm(16), k.Mad(ptx.U32, row, ptx.Imm(32), abase))
	af := k.Ldmatrix(4, false, ptx.At(aaddr, 0))
	bf := k.Ldmatrix(2, true, ptx.At(k.Mad(ptx.U32, row, ptx.Imm(16), bbase), 0))
	var c [4]ptx.Reg
	for i := range c {
		c[i] = k.Mov(ptx.F32, ptx.F32Imm(0))
	}
	d := k.MmaSync(ptx.F16, [4]ptx.Reg{af[0], af[1], af[2], af[3]}, [2]ptx.Reg{bf[0], bf[1]}, c)
	g := k.Shr(ptx.U32, lane, ptx.Imm(2))
	tg := k.And(ptx.U32, lane, ptx.Imm(3))
	dAddr := k.Add(ptx.U64, D, k.MulWide(ptx.U32, k.Mad(ptx.U32, g, ptx.Imm(4), tg), ptx.Imm(8)))
	k.St(ptx.Global, ptx.F32, ptx.At(dAddr, 0), d[:2])
	k.St(ptx.Global, ptx.F32, ptx.At(dAddr, 8*8*4), d[2:])
	built, err := m.Build()
	if err != nil {
		return Probe{}, err
	}
	av := probeValues(256, 4, true, false)
	bv := probeValues(128, 5, true, false) // B[k][n]
	return Probe{Name: name, PTX: built.String(), Entry: name, Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Exact: true,
		Buffers: []ProbeBuffer{{Name: "a", Data: halfBytes(av, false)}, {Name: "b", Data: halfBytes(bv, false)},
			{Name: "d", Size: 16 * 8 * 4, Output: true}},
		Check: func(out map[string][]byte) error {
			return checkGemm(out["d"], func(i, j int) float64 { return av[i*16+j] }, func(i, j int) float64 { return bv[i*8+j] }, nil, true)
		}}, nil
}

// cpAsyncProbe copies four 512-byte tiles through two shared-memory
// stages with cp.async (tile t+1 in flight while tile t is read), each
// thread reading the chunk its neighbour copied.
func cpAsyncProbe() (Probe, error) {
	const name, tiles = "cp_async_2stage", 4
	m := ptx.NewModule()
	k := m.Func(name)
	k.ReqNTid(32)
	in := k.Cvta(ptx.Global, k.LdParam(k.Param("in", ptx.U64)))
	out := k.Cvta(ptx.Global, k.LdParam(k.Param("out", ptx.U64)))
	stage := k.SharedArray("stage", ptx.B32, 2*128, 16)
	lane := k.Mov(ptx.U32, ptx.TidX)
	sbase := k.Mov(ptx.U32, stage)
	mine := k.Mad(ptx.U32, lane, ptx.Imm(16), sbase)
	goff := k.MulWide(ptx.U32, lane, ptx.Imm(16))
	src := k.Add(ptx.U64, in, goff)
	dst := k.Add(ptx.U64, out, goff)
	next := k.Mad(ptx.U32, k.And(ptx.U32, k.Add(ptx.U32, lane, ptx.Imm(1)), ptx.Imm(31)), ptx.Imm(16), sbase)
	issue := func(t int) {
		k.CpAsync("cg", ptx.At(mine, int64(t%2*512)), ptx.At(src, int64(t*512)), 16)
	}
	issue(0)
	k.CpAsyncCommit()
	for t := 0; t < tiles; t++ {
		if t+1 < tiles {
			issue(t + 1)
		}
		k.CpAsyncCommit()
		k.CpAsyncWait(1)
		k.BarSync(0)
		v := k.Ld(ptx.Shared, ptx.B32, 4, ptx.At(next, int64(t%2*512)))
		k.St(ptx.Global, ptx.B32, ptx.At(dst, int64(t*512)), v)
		k.BarSync(0)
	}
	built, err := m.Build()
	if err != nil {
		return Probe{}, err
	}
	data := make([]byte, tiles*512)
	for i := range data {
		data[i] = byte(i*7 + i/256)
	}
	return Probe{Name: name, PTX: built.String(), Entry: name, Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Exact: true,
		Buffers: []ProbeBuffer{{Name: "in", Data: data}, {Name: "out", Size: len(data), Output: true}},
		Check: func(o map[string][]byte) error {
			for t := 0; t < tiles; t++ {
				for l := 0; l < 32; l++ {
					for j := 0; j < 16; j++ {
						want := data[t*512+(l+1)%32*16+j]
						if got := o["out"][t*512+l*16+j]; got != want {
							return fmt.Errorf("tile %d lane %d byte %d = %#02x, want %#02x", t, l, j, got, want)
						}
					}
				}
			}
			return nil
		}}, nil
}
