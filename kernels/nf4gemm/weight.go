package nf4gemm

import (
	"fmt"
	"math"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/nf4"
	"github.com/gradtune/gradtune/kernels/ptx"
)

// blockSizes are the NF4 block sizes the families take (bitsandbytes
// allows more; QLoRA uses 64).
var blockSizes = []int{64, 128, 256}

// weight is an NF4 weight [n×k] in blocks of block elements, its scales
// f32 or double-quantized. Its device buffers (all Input, u8 buffers
// padded to whole 32-bit words so kernels read them by words):
//
//	w4        u8   n·k/2            packed codes, bitsandbytes order (high nibble first)
//	absmax    f32  n·k/block        scales (dq=0)
//	absmax_q  u8   n·k/block        8-bit scale codes (dq=1)
//	code2     f32  256              the second-level table (dq=1)
//	absmax2   f32  ⌈blocks/256⌉     second-level scales (dq=1)
//	dq_offset f32  1                the offset (dq=1)
type weight struct {
	n, k, block int
	dq          bool
}

func (w weight) blocks() int { return w.n * w.k / w.block }

// check refuses weights the format or the kernels cannot take.
func (w weight) check() error {
	if err := nf4.CheckLayout(w.n, w.k, w.block); err != nil {
		return err
	}
	ok := false
	for _, b := range blockSizes {
		ok = ok || b == w.block
	}
	if !ok {
		return fmt.Errorf("%w: block=%d (blocks of %v)", nf4.ErrLayout, w.block, blockSizes)
	}
	if w.n*w.k > gen.MaxElems {
		return fmt.Errorf("%d×%d weight has more than %d elements", w.n, w.k, gen.MaxElems)
	}
	return nil
}

// scaleNames are the weight's scale buffers, in the order of buffers.
func (w weight) scaleNames() []string {
	var n []string
	for _, b := range w.buffers()[1:] {
		n = append(n, b.Name)
	}
	return n
}

// bufferParams declares a u64 parameter (generic address) for each of
// names on k, records its register in bufs and returns the launch
// arguments that pass the buffers.
func bufferParams(k *ptx.Func, bufs map[string]ptx.Reg, names ...string) []kernels.Arg {
	var args []kernels.Arg
	for _, n := range names {
		bufs[n] = gen.Param(k, n)
		args = append(args, kernels.Arg{Buffer: n})
	}
	return args
}

// words rounds a byte count up to whole 32-bit words.
func words(n int) int { return (n + 3) &^ 3 }

func (w weight) buffers() []kernels.Buffer {
	nb := w.blocks()
	out := []kernels.Buffer{{Name: "w4", DType: dtype.U8, Elems: configs.Int(words(w.n * w.k / 2)), Role: kernels.Input}}
	if !w.dq {
		return append(out, kernels.Buffer{Name: "absmax", DType: dtype.F32, Elems: configs.Int(nb), Role: kernels.Input})
	}
	return append(out,
		kernels.Buffer{Name: "absmax_q", DType: dtype.U8, Elems: configs.Int(words(nb)), Role: kernels.Input},
		kernels.Buffer{Name: "code2", DType: dtype.F32, Elems: configs.Int(256), Role: kernels.Input},
		kernels.Buffer{Name: "absmax2", DType: dtype.F32, Elems: configs.Int(gen.CeilDiv(nb, nf4.NestedBlock)), Role: kernels.Input},
		kernels.Buffer{Name: "dq_offset", DType: dtype.F32, Elems: configs.Int(1), Role: kernels.Input})
}

// scaleBytes is the bytes of scales a kernel reads.
func (w weight) scaleBytes() int64 {
	if w.dq {
		return int64(w.blocks()) + 4*int64(256+gen.CeilDiv(w.blocks(), nf4.NestedBlock)+1)
	}
	return 4 * int64(w.blocks())
}

// Scale range of the generated weights: every nonzero dequantized value
// has |w| ≥ 0.0796·0.3 > 2⁻⁶ and |w| < 1, so its bf16 (or f16) rounding
// is a multiple of 2⁻¹³ below 2¹³ of them (see exactTerms).
const scaleLo, scaleHi = 0.3, 0.95

// tensor builds the weight of a seed from random codes and random scales
// (double-quantized with bitsandbytes' dynamic map when dq): its exact
// dequantized values are nf4.Tensor.Value.
func (w weight) tensor(seed uint64, key string) *nf4.Tensor {
	cf := kernels.Uniform(dtype.F64, w.n*w.k, 0, 16, seed, key+"/codes")
	codes := make([]uint8, len(cf))
	for i, v := range cf {
		codes[i] = uint8(math.Floor(v))
	}
	af := kernels.Uniform(dtype.F32, w.blocks(), scaleLo, scaleHi, seed, key+"/absmax")
	absmax := make([]float32, len(af))
	for i, v := range af {
		absmax[i] = float32(v)
	}
	t, err := nf4.FromCodes(w.n, w.k, w.block, codes, absmax, nf4.HighFirst)
	if err != nil {
		panic(err) // shapes were checked
	}
	if w.dq {
		t.DoubleQuantize(nf4.DynamicMap())
	}
	return t
}

// inputs are the buffers of t as the runner uploads them.
func (w weight) inputs(t *nf4.Tensor) map[string][]float64 {
	bytes := func(b []byte) []float64 {
		out := make([]float64, words(len(b)))
		for i, v := range b {
			out[i] = float64(v)
		}
		return out
	}
	f32s := func(v []float32) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	in := map[string][]float64{"w4": bytes(t.Data)}
	if !w.dq {
		in["absmax"] = f32s(t.Absmax)
		return in
	}
	q := t.Nested
	in["absmax_q"] = bytes(q.Codes)
	in["code2"] = f32s(q.Code[:])
	in["absmax2"] = f32s(q.Absmax2)
	in["dq_offset"] = []float64{float64(q.Offset)}
	return in
}

// fromInputs rebuilds the tensor from its buffers (what Reference gets).
func (w weight) fromInputs(in map[string][]float64) *nf4.Tensor {
	data := make([]byte, w.n*w.k/2)
	for i := range data {
		data[i] = byte(in["w4"][i])
	}
	t := &nf4.Tensor{N: w.n, K: w.k, Block: w.block, Order: nf4.HighFirst, Data: data, Absmax: make([]float32, w.blocks())}
	if !w.dq {
		for b := range t.Absmax {
			t.Absmax[b] = float32(in["absmax"][b])
		}
		return t
	}
	q := &nf4.Nested{Codes: make([]uint8, w.blocks()), Offset: float32(in["dq_offset"][0])}
	for i := range q.Code {
		q.Code[i] = float32(in["code2"][i])
	}
	for _, v := range in["absmax2"] {
		q.Absmax2 = append(q.Absmax2, float32(v))
	}
	for b := range q.Codes {
		q.Codes[b] = uint8(in["absmax_q"][b])
		t.Absmax[b] = q.Scale(b)
	}
	t.Nested = q
	return t
}

// dequantized is t's values rounded to dt, as float64.
func dequantized(t *nf4.Tensor, dt dtype.DType) []float64 {
	out := make([]float64, t.N*t.K)
	for i := range out {
		out[i] = dt.Round(float64(t.Value(i)))
	}
	return out
}
