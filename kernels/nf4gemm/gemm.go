package nf4gemm

import (
	"fmt"
	"math"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// GEMMShape is the input gradient of a QLoRA linear layer y = x·Wᵀ with a
// frozen NF4 weight W [N×K]: dX[M×K] = dY[M×N]·dequant(W), dY and dX in
// DType (bf16 or f16). Block and Scales are the weight's format, as in
// nf4_dequant. LoRA=r adds a LoRA adapter's dX in the same GEMM: dX =
// dY·dequant(W) + dh·A with dh = s·dY·B [M×r] (lora_bwd's dh) and A
// [r×K], as gemm_bwd's lora=r.
type GEMMShape struct {
	M      int    `dim:"m"`
	N      int    `dim:"n"`
	K      int    `dim:"k"`
	Block  int    `dim:"block,optional=64"`
	Scales string `dim:"scales,optional=f32" values:"f32,dq"`
	LoRA   int    `dim:"lora,optional=0"`
	DType  dtype.DType
}

// maxLoRA is the largest adapter rank whose dX the GEMM adds (one k-tile
// of the wgmma path).
const maxLoRA = 64

func (s GEMMShape) weight() weight {
	return weight{n: s.N, k: s.K, block: blockOr64(s.Block), dq: s.Scales == "dq"}
}

// Dequantizer is who dequantizes the weight tile.
type Dequantizer string

// The dequantizers the family emits.
const (
	// Consumers: the math warps dequantize. On the sync path they load
	// the packed bytes and scales of the next stage and store the
	// swizzled half tile between their MMAs; on the wgmma path each
	// consumer warpgroup dequantizes its own A fragments in registers
	// from codes and scales in shared memory (gemmrs.go).
	Consumers Dequantizer = "consumer"
	// Producers: three warps of the producer warpgroup, beside the thread
	// that issues the TMA loads, dequantize each stage into the slot the
	// consumers' wgmma reads (the wgmma path).
	Producers Dequantizer = "producer"
	// Dedicated: those three warps and a warpgroup of its own after the
	// consumers (224 threads), which does nothing else (the wgmma path).
	Dedicated Dequantizer = "dedicated"
	// Unfused: a kernel of its own dequantizes the whole weight into a
	// scratch buffer, then gemm_bwd's dX kernel reads it (streamed.go).
	Unfused Dequantizer = "unfused"
	// Streamed: gemm_bwd's dX kernel in one launch, its spare producer
	// warps dequantizing the weight into a scratch buffer chunk by chunk
	// ahead of the k-loops that read it (streamed.go).
	Streamed Dequantizer = "streamed"
)

// fused reports whether d dequantizes per tile, in the GEMM's main loop.
func (d Dequantizer) fused() bool { return d != Unfused && d != Streamed }

// GEMMParams is one nf4_gemm_bwd variant: the sync path (4 warps in a
// 2×2 grid, m16n8k16 MMAs from ldmatrix, a cp.async ring for dY) or the
// wgmma path (gemm_bwd's, its B tile dequantized by the producer
// warpgroup: gemmwg.go).
type GEMMParams struct {
	MMA        string        `axis:"mma" values:"sync,wgmma" doc:"sync: cp.async ring + ldmatrix + mma.sync m16n8k16 (sm_80+); wgmma: gemm_bwd's TMA + mbarrier ring + wgmma (sm_90a)"`
	BM         int           `axis:"bm" values:"64,128,192,256" doc:"tile rows of dX"`
	BN         int           `axis:"bn" values:"64,128,192,256,96,160" doc:"tile columns of dX (along K of W); 96 and 160 (gemm_bwd's 192×96 and 128×160, for wave quantization) on the unfused path"`
	BK         int           `axis:"bk" values:"32,64" doc:"reduction elements (rows of W) per stage (sync 32, wgmma 64)"`
	Stages     int           `axis:"stages" values:"2,3,4,5,6,8,12" doc:"pipeline stages in shared memory"`
	Dequant    Dequantizer   `axis:"dequant" values:"consumer,producer,dedicated,unfused,streamed" doc:"who dequantizes: per tile, the math warps (consumer: on sync into shared memory, on wgmma into the register A operand of dXᵀ = Wᵀ·dYᵀ), three warps of the producer warpgroup (producer, wgmma), or those and a dedicated warpgroup (dedicated, wgmma); once, into a scratch buffer gemm_bwd's dX kernel reads: a kernel of its own ahead of it (unfused) or its own spare producer warps, chunk by chunk ahead of the k-loops (streamed)"`
	Lookup     Lookup        `axis:"lookup" values:"smem,prmt,sel" doc:"code to value: shared-memory table, prmt byte tables, selp tree"`
	Epilogue   gemm.Epilogue `axis:"epilogue" values:"direct,tma" default:"direct" doc:"direct stores from registers, or shared memory + TMA store (wgmma)"`
	Persistent bool          `axis:"persistent" values:"0,1" default:"0" doc:"1: one CTA per SM walks grouped tiles (wgmma)"`
	Codes      string        `axis:"codes" values:"tma,ld,ring" default:"tma" doc:"how the packed codes reach the dequantizing warps (wgmma, per tile): TMA into each slot once the consumers freed it, each thread's ld.global a k-tile ahead, or TMA into a ring of their own 8 slots, 7 k-tiles ahead"`
	Cluster    int           `axis:"cluster" values:"1,2,4" default:"1" doc:"CTAs on consecutive tile rows that share the dequantized W tile (wgmma, per tile): each dequantizes 64/cluster of a k-tile's rows and copies them into the others' shared memory"`
	SplitK     int           `axis:"splitk" values:"1,2,3,4" default:"1" doc:"splits of the reduction, summed by a second launch (unfused and streamed: gemm_bwd's; register-A: its own, below one wave of tiles, summed by gemm_bwd's reduce)"`
	Order      gemm.Order    `axis:"order" values:"m,grouped,streamk" default:"m" doc:"tile order (unfused and streamed: gemm_bwd's): down the rows, grouped, or stream-K"`
	Early      int           `axis:"early" values:"0,1" default:"0" doc:"1 (unfused): the dequantization kernel lets the GEMM launch as it starts (griddepcontrol.launch_dependents), so the GEMM's CTAs start and set up during its last wave and wait for it before their first load"`
	DKernel    string        `axis:"dkernel" values:"8x256,4x128" default:"8x256" doc:"the unfused path's dequantization kernel (nf4_dequant's): packed bytes a thread × threads a CTA"`
}

// gemmDef is nf4_gemm_bwd.
type gemmDef struct{}

func (gemmDef) Name() string { return "nf4_gemm_bwd" }
func (gemmDef) Doc() string {
	return "QLoRA input gradient dX = dY·dequant(W), W in NF4 (bitsandbytes layout), dequantization fused into the GEMM's main loop"
}
func (gemmDef) DTypes() []dtype.DType { return []dtype.DType{dtype.BF16, dtype.F16} }

// Shapes: the model's linear layers (Preset.Projections: q·o, k·v,
// gate·up and down, or a model's fused ones) at Tokens rows, f32 and
// double-quantized scales.
func (d gemmDef) Shapes(p variants.Preset, dt dtype.DType) []GEMMShape {
	var out []GEMMShape
	for _, nk := range projections(p) {
		for _, sc := range []string{"", "dq"} {
			s := GEMMShape{M: p.Tokens, N: nk[0], K: nk[1], Scales: sc, DType: dt}
			if d.CheckShape(s) == nil {
				out = append(out, s)
			}
		}
	}
	return out
}

// CheckShape: any m; n and k multiples of the block size (k holds whole
// blocks; n, the reduction, whole 32-row k-tiles); every matrix within
// u32 element indexing.
func (gemmDef) CheckShape(s GEMMShape) error {
	w := s.weight()
	if err := w.check(); err != nil {
		return err
	}
	if s.N%w.block != 0 {
		return fmt.Errorf("n=%d is not a multiple of the block size %d (n, the reduction, takes whole blocks)", s.N, w.block)
	}
	if s.M*s.N > gen.MaxElems || s.M*s.K > gen.MaxElems {
		return fmt.Errorf("m=%d, n=%d, k=%d: a matrix has more than %d elements", s.M, s.N, s.K, gen.MaxElems)
	}
	if s.LoRA < 0 || s.LoRA%8 != 0 || s.LoRA > maxLoRA {
		return fmt.Errorf("lora=%d: an adapter's rank, a multiple of 8 up to %d", s.LoRA, maxLoRA)
	}
	return nil
}

// Buffers: dy, the NF4 weight, dx; and w_bf16 (w_f16), the exactly
// dequantized weight in the dtype, which only the cuBLAS baseline reads;
// with an adapter dh [m×r] and a [r×K] last. dy, dx and dh have m rows,
// the runtime dim.
func (gemmDef) Buffers(s GEMMShape) []kernels.Buffer {
	b := []kernels.Buffer{{Name: "dy", DType: s.DType, Elems: tokens.TimesInt(s.N), Role: kernels.Input}}
	b = append(b, s.weight().buffers()...)
	b = append(b,
		kernels.Buffer{Name: denseName(s.DType), DType: s.DType, Elems: configs.Int(s.N * s.K), Role: kernels.Input},
		kernels.Buffer{Name: "dx", DType: s.DType, Elems: tokens.TimesInt(s.K), Role: kernels.Output})
	if s.LoRA > 0 {
		b = append(b, kernels.Buffer{Name: gemm.LoRAH, DType: s.DType, Elems: tokens.TimesInt(s.LoRA), Role: kernels.Input},
			kernels.Buffer{Name: gemm.LoRAA, DType: s.DType, Elems: configs.Int(s.LoRA * s.K), Role: kernels.Input})
	}
	return b
}

// tokenDim is the runtime dim of every nf4_gemm_bwd program: m, the rows
// of dY and dX, which the PTX takes as a u32 launch argument rather than
// as immediates; tokens is its expression.
const tokenDim = "m"

var tokens = configs.Var(tokenDim)

// tokensParam declares the kernel's parameter m and returns its value and
// the launch argument that passes it.
func tokensParam(k *ptx.Func) (ptx.Reg, kernels.Arg) {
	return k.LdParam(k.Param(tokenDim, ptx.U32)), kernels.Arg{Scalar: tokens, Type: configs.U32}
}

func denseName(dt dtype.DType) string { return "w_" + dt.String() }

// Inputs: the weight from random codes and scales (weight.tensor), its
// exact dequantization in the dtype, and dY (and an adapter's dh and A)
// uniform in [−1, 1) rounded to the dtype.
func (gemmDef) Inputs(s GEMMShape, seed uint64) map[string][]float64 {
	in := s.weightInputs(seed)
	in["dy"] = kernels.Uniform(s.DType, s.M*s.N, -1, 1, seed, s.weightKey()+"/dy")
	if s.LoRA > 0 {
		in[gemm.LoRAH] = kernels.Uniform(s.DType, s.M*s.LoRA, -1, 1, seed, s.weightKey()+"/dh")
		in[gemm.LoRAA] = kernels.Uniform(s.DType, s.LoRA*s.K, -1, 1, seed, s.weightKey()+"/a")
	}
	return in
}

// weightKey is the stream of the shape's weight (the same at every m).
func (s GEMMShape) weightKey() string {
	return "nf4/" + variants.ShapeOf(GEMMShape{N: s.N, K: s.K, Block: s.Block, Scales: s.Scales, DType: s.DType}).Key()
}

// weightInputs are the weight's buffers and its exact dequantization.
func (s GEMMShape) weightInputs(seed uint64) map[string][]float64 {
	w := s.weight()
	t := w.tensor(seed, s.weightKey())
	in := w.inputs(t)
	in[denseName(s.DType)] = dequantized(t, s.DType)
	return in
}

// exactTerms is the most nonzero products of ±1 and the dequantized
// weights w an output may sum exactly in f32 beside r products of ±1 (an
// adapter's): each |w| is a multiple of the unit u, the ulp in dt of the
// smallest nonzero |w| (bf16 keeps 8 significant bits, f16 11; u < 1, so
// the adapter's ±1 are multiples of it too), and a sum of n of them and
// r of ±1, below n·max|w| + r, is a multiple of u, exact while it stays
// below 2²⁴·u.
func exactTerms(w []float64, dt dtype.DType, r int) int {
	lo, hi := math.Inf(1), 0.0
	for _, v := range w {
		if a := math.Abs(v); a > 0 {
			lo, hi = min(lo, a), max(hi, a)
		}
	}
	if hi == 0 {
		return math.MaxInt32
	}
	bits := 8
	if dt == dtype.F16 {
		bits = 11
	}
	_, e := math.Frexp(lo) // lo = f·2^e, f in [0.5, 1)
	unit := math.Ldexp(1, e-bits)
	return int(math.Floor(((1<<24-1)*unit - float64(r)) / hi))
}

// ExactInputs (kernels.Exacter): the same weight, and dY of ±1 in
// gemm_bwd's exact pattern over the rows alone (gemm.NewExactPattern with
// one column: row i holds the reduction indices of class i mod D, D =
// ⌈N/exactTerms⌉), so that every output sums at most exactTerms products,
// exactly, and every weight row meets a nonzero dY in some output: a
// wrong scale block or code shows. An adapter's dh and A are ±1, dense:
// every output adds its r products, which exactTerms leaves room for.
// false when M has fewer rows than classes.
func (gemmDef) ExactInputs(s GEMMShape, seed uint64) (map[string][]float64, bool) {
	in := s.weightInputs(seed)
	pat, ok := gemm.NewExactPattern(s.M, 1, s.N, exactTerms(in[denseName(s.DType)], s.DType, s.LoRA))
	if !ok {
		return nil, false
	}
	dy := gemm.ExactValues(1, s.M*s.N, seed, s.weightKey()+"/exact/dy")
	for i := range s.M {
		for n := range s.N {
			if !pat.A(i, n) {
				dy[i*s.N+n] = 0
			}
		}
	}
	in["dy"] = dy
	if s.LoRA > 0 {
		in[gemm.LoRAH] = gemm.ExactValues(1, s.M*s.LoRA, seed, s.weightKey()+"/exact/dh")
		in[gemm.LoRAA] = gemm.ExactValues(1, s.LoRA*s.K, seed, s.weightKey()+"/exact/a")
	}
	return in, true
}

// Reference: the float64 product of dY and the weight dequantized from
// the NF4 buffers (not from w_bf16), plus dh·A with an adapter, rows in
// parallel (the runner rounds it to the dtype for the exact inputs).
func (gemmDef) Reference(s GEMMShape, in map[string][]float64) map[string][]float64 {
	wd := dequantized(s.weight().fromInputs(in), s.DType)
	out := make([]float64, s.M*s.K)
	kernels.ParallelRows(s.M, func(i int) {
		c := out[i*s.K : (i+1)*s.K]
		addRow(c, in["dy"][i*s.N:(i+1)*s.N], wd, s.K)
		if s.LoRA > 0 {
			addRow(c, in[gemm.LoRAH][i*s.LoRA:(i+1)*s.LoRA], in[gemm.LoRAA], s.K)
		}
	})
	return map[string][]float64{"dx": out}
}

// addRow adds a·B to the row c: a's n-th element times B's row n (rows
// of k elements), skipping zeros of a (the exact inputs' pattern).
func addRow(c, a, b []float64, k int) {
	for n, v := range a {
		if v == 0 {
			continue
		}
		for j, w := range b[n*k : (n+1)*k] {
			c[j] += v * w
		}
	}
}

// Tolerance of the random inputs: |dY| ≤ 1 and |W| < 1 (and an adapter's
// |dh|, |A| ≤ 1), so Σ|a·b| ≤ L = N + r and the f32 sum is within γ·L of
// the exact one, γ = (2·⌈L/16⌉ + maxPartials)·2⁻²³ (each k16 MMA step may
// truncate its block sum and its addition, one ulp each; split-K and
// stream-K add at most maxPartials partial sums), widened by the output's
// rounding.
func (gemmDef) Tolerance(s GEMMShape, _ string) kernels.Tolerance {
	l := float64(s.N + s.LoRA)
	return kernels.StoreTol(kernels.Tolerance{Atol: (2*math.Ceil(l/16) + maxPartials) * 0x1p-23 * l}, s.DType)
}

// maxPartials bounds the partial sums of a dX element that split-K's
// reduce or a stream-K owner adds (gemm_bwd's bound, whose unfused and
// streamed kernels these are).
const maxPartials = 16

// Cost: 2·M·(N+r)·K flops (an adapter's rank r as more reduction); dY,
// the packed weight and its scales (and dh and A) read once, dX written
// once.
func (gemmDef) Cost(s GEMMShape) kernels.Cost {
	e := int64(s.DType.Size())
	return kernels.Cost{
		Flops: 2 * int64(s.M) * int64(s.N+s.LoRA) * int64(s.K),
		Bytes: e*int64(s.M)*int64(s.N) + int64(s.N)*int64(s.K)/2 + s.weight().scaleBytes() + e*int64(s.M)*int64(s.K) +
			e*int64(s.LoRA)*int64(s.M+s.K),
	}
}

// Baselines: cuBLAS on the weight already dequantized (w_bf16), the
// dense floor; and what QLoRA trainers run without this family
// (bitsandbytes' backward): the weight dequantized by a kernel of its own
// (nf4_dequant's, 8 packed bytes a thread, the shared-memory codebook)
// into a scratch buffer, then cuBLAS on it, timed together
// (dequant+cublas). The runner compares the winner with the faster of
// the first two and reports the third beside it. With an adapter they
// are the same calls: the base GEMM alone, without the adapter's dh·A
// (less than the unfused path, which also runs it and adds it).
func (gemmDef) Baselines(s GEMMShape) []kernels.Baseline {
	g := &kernels.GEMMCall{
		A: "dy", B: denseName(s.DType), C: "dx", M: s.M, N: s.K, K: s.N,
		LDA: s.N, LDB: s.K, LDC: s.K, In: s.DType, Out: s.DType,
	}
	deq := *g
	deq.B = deqBuffer
	return []kernels.Baseline{{Name: "cublas", GEMM: g}, {Name: "cublaslt-best", GEMM: g},
		{Name: DequantCuBLAS, GEMM: &deq, Before: dequantProgram(s), Library: "cublas"}}
}

// DequantCuBLAS names the baseline of a dequantization kernel then
// cuBLAS, what bitsandbytes' backward runs.
const DequantCuBLAS = "dequant+cublas"

// dequantProgram is the dequant+cublas baseline's first part: the weight
// of s into deqBuffer (Scratch).
func dequantProgram(s GEMMShape) *kernels.Program {
	m := ptx.NewModule()
	ls, bufs := s.dequantToScratch(m, DequantParams{Threads: 256, Bytes: 8, Lookup: LookupSmem}, fmt.Sprintf("nf4_baseline_dequant_%v", s.DType))
	built, err := m.Build()
	if err != nil {
		panic(fmt.Sprintf("nf4_gemm_bwd: the baseline's dequantization does not build: %v", err)) // fixed code, checked by the tests
	}
	return &kernels.Program{PTX: built.String(), Launches: ls, Buffers: bufs}
}
