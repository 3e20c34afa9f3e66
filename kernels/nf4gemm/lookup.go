package nf4gemm

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/nf4"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// Lookup is how a kernel turns a 4-bit code into its codebook value.
type Lookup string

// The lookup methods. Each gives the same bits: fl32(Codebook[c]·scale)
// rounded once to the half type (the prmt table holds exactly those
// roundings).
const (
	// LookupSmem reads the f32 codebook from a 16-entry shared-memory
	// table, multiplies by the scale and packs pairs (cvt.rn.*x2.f32).
	LookupSmem Lookup = "smem"
	// LookupPrmt builds, per scale, the 16 scaled half values split into
	// a low-byte and a high-byte table of 4 registers each; a prmt.b32
	// looks up 4 bytes at once (CUTLASS's lookup_table_convert): 6 prmt
	// per 4 codes and 2 more to interleave the bytes into half pairs.
	LookupPrmt Lookup = "prmt"
	// LookupSel walks a 4-level tree of selp on the code's bits over
	// immediate codebook values (no memory, 15 selp per code).
	LookupSel Lookup = "sel"
)

// lookups lists the methods in axis order.
var lookups = []string{string(LookupSmem), string(LookupPrmt), string(LookupSel)}

// deq emits NF4 dequantization: 8 codes in a 32-bit word (bitsandbytes'
// order, byte j holding elements 2j in its high nibble and 2j+1 in its
// low one) to 4 words of half pairs.
type deq struct {
	k      *ptx.Func
	method Lookup
	pt     ptx.Type // F16x2 or BF16x2
	lut    ptx.Reg  // u32 shared address of the f32 codebook (smem)
}

// newDeq sets up a dequantizer; with LookupSmem thread 0 of the CTA
// writes the codebook to shared memory, and every thread then passes
// barrier 0, so call it where the whole CTA runs.
func newDeq(k *ptx.Func, method Lookup, out dtype.DType, tid ptx.Reg) *deq {
	d := &deq{k: k, method: method, pt: ptx.BF16x2}
	if out == dtype.F16 {
		d.pt = ptx.F16x2
	}
	if method == LookupSmem {
		d.lut = k.Mov(ptx.U32, k.SharedArray("nf4_lut", ptx.F32, 16, 64))
		k.If(k.Setp("eq", ptx.U32, tid, ptx.Imm(0)), func() {
			for i, v := range nf4.Codebook {
				k.St(ptx.Shared, ptx.F32, ptx.At(d.lut, int64(4*i)), []ptx.Reg{k.Mov(ptx.F32, ptx.F32Imm(v))})
			}
		})
		k.BarSync(0)
	}
	return d
}

// table is the per-scale state of a lookup: the prmt byte tables.
type table struct {
	scale  ptx.Reg
	lo, hi [4]ptx.Reg // prmt: bytes of entries 4i..4i+3
}

// forScale prepares the lookups of one scale (f32).
func (d *deq) forScale(scale ptx.Reg) *table {
	t := &table{scale: scale}
	if d.method != LookupPrmt {
		return t
	}
	k := d.k
	var pairs [8]ptx.Reg
	for j := range pairs {
		lo := k.Mul(ptx.F32, ptx.F32Imm(nf4.Codebook[2*j]), scale)
		hi := k.Mul(ptx.F32, ptx.F32Imm(nf4.Codebook[2*j+1]), scale)
		pairs[j] = k.PackHalf2(d.pt, hi, lo)
	}
	for i := range 4 {
		// Entries 4i..4i+3 are the halves of pairs 2i and 2i+1.
		t.lo[i] = d.k.Prmt(pairs[2*i], pairs[2*i+1], ptx.Imm(0x6420))
		t.hi[i] = d.k.Prmt(pairs[2*i], pairs[2*i+1], ptx.Imm(0x7531))
	}
	return t
}

// word dequantizes the 8 codes of w (b32) with table t into 4 words of
// half pairs, element 2i in the low half of word i.
func (d *deq) word(w ptx.Reg, t *table) [4]ptx.Reg {
	k := d.k
	if d.method == LookupPrmt {
		return d.prmtWord(w, t)
	}
	var vals [8]ptx.Reg
	for j := range vals {
		// Element j is in byte j/2: its high nibble for even j.
		shift := 8*(j/2) + 4*(1-j%2)
		c := k.And(ptx.B32, k.Shr(ptx.B32, w, ptx.Imm(shift)), ptx.Imm(15))
		var v ptx.Reg
		if d.method == LookupSmem {
			v = k.Ld(ptx.Shared, ptx.F32, 1, ptx.At(k.Mad(ptx.U32, c, ptx.Imm(4), d.lut), 0))[0]
		} else {
			v = d.selTree(c)
		}
		vals[j] = k.Mul(ptx.F32, v, t.scale)
	}
	var out [4]ptx.Reg
	for i := range out {
		out[i] = k.Mov(ptx.B32, k.PackHalf2(d.pt, vals[2*i+1], vals[2*i]))
	}
	return out
}

// selTree is Codebook[c] by a tree of selp over c's bits.
func (d *deq) selTree(c ptx.Reg) ptx.Reg {
	k := d.k
	level := make([]ptx.Operand, 16)
	for i, v := range nf4.Codebook {
		level[i] = ptx.F32Imm(v)
	}
	for bit := 0; len(level) > 1; bit++ {
		set := k.Setp("ne", ptx.B32, k.And(ptx.B32, c, ptx.Imm(1<<bit)), ptx.Imm(0))
		next := make([]ptx.Operand, len(level)/2)
		for i := range next {
			next[i] = k.Selp(ptx.F32, level[2*i+1], level[2*i], set)
		}
		level = next
	}
	return level[0].(ptx.Reg)
}

// prmtWord: each 16-bit half of w (4 codes) is looked up with the codes
// as prmt selectors: entries 0..7 and 8..15 by two prmt with the codes'
// low 3 bits (bit 3 of a selector would replicate a sign), and a third
// prmt picks between them with bit 3. In bitsandbytes' order nibble 2j of
// a half holds element 2j+1 and nibble 2j+1 element 2j, so the looked-up
// bytes come pairwise swapped; the two prmt that interleave low and high
// bytes into half pairs put them back in order.
func (d *deq) prmtWord(w ptx.Reg, t *table) [4]ptx.Reg {
	k := d.k
	var out [4]ptx.Reg
	for h := range 2 {
		s := w
		if h == 1 {
			s = k.Shr(ptx.B32, w, ptx.Imm(16))
		}
		idx := k.And(ptx.B32, s, ptx.Imm(0x7777))
		pick := k.Or(ptx.B32, k.And(ptx.B32, k.Shr(ptx.B32, s, ptx.Imm(1)), ptx.Imm(0x4444)), ptx.Imm(0x3210))
		look := func(tab [4]ptx.Reg) ptx.Reg {
			return d.k.Prmt(d.k.Prmt(tab[0], tab[1], idx), d.k.Prmt(tab[2], tab[3], idx), pick)
		}
		lo, hi := look(t.lo), look(t.hi)
		// Bytes j of lo and hi hold element 4h + (j^1): word 2h is
		// elements 4h, 4h+1 (bytes 1, then 0), word 2h+1 elements
		// 4h+2, 4h+3 (bytes 3, then 2).
		out[2*h] = d.k.Prmt(lo, hi, ptx.Imm(0x4051))
		out[2*h+1] = d.k.Prmt(lo, hi, ptx.Imm(0x6273))
	}
	return out
}

// loadScale loads block b's scale (b u32): absmax[b], or with double
// quantization fma(code2[q], absmax2[b/256], offset) where q is byte b of
// absmax_q, read as its 32-bit word. bufs holds the buffers' generic
// addresses (u64) by name.
func loadScale(k *ptx.Func, dq bool, bufs map[string]ptx.Reg, b ptx.Reg) ptx.Reg {
	b = scaleBlock(k, b)
	nc := ptx.LdOpts{NC: true}
	if !dq {
		return k.Ld(ptx.Global, ptx.F32, 1, elemAt(k, bufs["absmax"], b, 4), nc)[0]
	}
	word := k.Ld(ptx.Global, ptx.U32, 1, elemAt(k, bufs["absmax_q"], k.Shr(ptx.U32, b, ptx.Imm(2)), 4), nc)[0]
	c2 := k.Ld(ptx.Global, ptx.F32, 1, elemAt(k, bufs["code2"], scaleCode(k, word, b), 4), nc)[0]
	a2 := k.Ld(ptx.Global, ptx.F32, 1, elemAt(k, bufs["absmax2"], k.Shr(ptx.U32, b, ptx.Imm(8)), 4), nc)[0]
	off := k.Ld(ptx.Global, ptx.F32, 1, ptx.At(bufs["dq_offset"], 0), nc)[0]
	return k.Fma(ptx.F32, c2, a2, off)
}

// elemAt is the address of element i (u32) of size bytes of the buffer at
// base (u64, generic).
func elemAt(k *ptx.Func, base, i ptx.Reg, size int) ptx.Addr {
	return ptx.At(k.Add(ptx.U64, base, k.MulWide(ptx.U32, i, ptx.Imm(size))), 0)
}

// scaleCode is block b's 8-bit scale code: byte b%4 of word, absmax_q's
// 32-bit word that holds it.
func scaleCode(k *ptx.Func, word, b ptx.Reg) ptx.Reg {
	return k.And(ptx.U32, k.Shr(ptx.U32, word, k.Shl(ptx.U32, k.And(ptx.U32, b, ptx.Imm(3)), ptx.Imm(3))), ptx.Imm(255))
}

// plantedBlock, when not negative, is a scale block whose kernels read the
// next block's scale instead: the wrong-scale-block bug this package's
// tests plant (export_test.go). It is -1 in every other build.
var plantedBlock = -1

// scaleBlock is block b (u32) as the kernels index the scales: b itself,
// but for the planted bug.
func scaleBlock(k *ptx.Func, b ptx.Reg) ptx.Reg {
	if plantedBlock < 0 {
		return b
	}
	return k.Selp(ptx.U32, ptx.Imm(plantedBlock+1), b, k.Setp("eq", ptx.U32, b, ptx.Imm(plantedBlock)))
}
