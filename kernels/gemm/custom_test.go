package gemm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/internal/simtest"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gemm"
	"github.com/gradtune/gradtune/kernels/hopper"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// customCase is a family that runs one Custom per shape, so that the
// interpreter validates what Custom promises against a float64
// reference:
//
//	chunk  C[t×48] f32 = x[t×64]·w[64:104]ᵀ: a K-major B at a byte offset
//	       whose 40 rows leave the last 8 columns of C zero
//	scale  C[t×64] f32 = s[row]·C + x[t×72]·w[8:80]: an MN-major B at an
//	       offset, C an inout buffer rescaled per row
//	quad   the chunk case's C in bf16, written by a TileEpilogue through
//	       a QuadStore (16-byte stores after the quad's exchange; tiles
//	       of 64 and 128 columns over C's 48)
//	reduce C[t×64] f32 += x[t×72]·w[8:80] by atomic adds (Reduce)
//	dw     C[16:56] bf16 of a [100×64] buffer += Gᵀ·x, G [t×48] (40 of its
//	       columns), x [t×64]: t as the reduction, an output offset, an
//	       epilogue that adds in bf16
type customCase struct{}

type customShape struct {
	T     int    `dim:"t"`
	Case  string `dim:"case" values:"chunk,quad,scale,reduce,dw"`
	DType dtype.DType
}

type customParams struct {
	BM   int  `axis:"bm" values:"64,128"`
	BN   int  `axis:"bn" values:"64,128"`
	Pers bool `axis:"pers" values:"0,1"`
	CTAs int  `axis:"ctas" values:"1,2" default:"1"`
}

func (customCase) Name() string                                      { return "gemm_custom_test" }
func (customCase) Doc() string                                       { return "gemm.Custom's cases" }
func (customCase) DTypes() []dtype.DType                             { return []dtype.DType{dtype.BF16} }
func (customCase) Shapes(variants.Preset, dtype.DType) []customShape { return nil }
func (customCase) CheckShape(customShape) error                      { return nil }
func (customCase) Space(customShape) variants.Typed[customParams] {
	return variants.Typed[customParams]{}
}
func (customCase) Cost(customShape) kernels.Cost { return kernels.Cost{Bytes: 1} }

// custom is the shape's GEMM.
func (customCase) custom(s customShape) gemm.Custom {
	switch s.Case {
	case "chunk", "quad":
		c := gemm.Custom{Entry: s.Case, Dim: "t", Cols: 48, Red: 64, In: s.DType,
			A: gemm.Operand{Buffer: "x", KMajor: true, LD: 64}, B: gemm.Operand{Buffer: "w", KMajor: true, LD: 64, Offset: 64 * 64 * 2, Rows: 40},
			Out: "c", OutDT: dtype.F32}
		if s.Case == "quad" {
			c.OutDT, c.Epilogue = dtype.BF16, quadEpilogue{}
		}
		return c
	case "scale", "reduce":
		c := gemm.Custom{Entry: s.Case, Dim: "t", Cols: 64, Red: 72, In: s.DType,
			A: gemm.Operand{Buffer: "x", KMajor: true, LD: 72}, B: gemm.Operand{Buffer: "w", LD: 64, Offset: 8 * 64 * 2},
			Out: "c", OutDT: dtype.F32, Scale: "s"}
		if s.Case == "reduce" {
			c.Scale, c.Reduce = "", true
		}
		return c
	}
	return gemm.Custom{Entry: "dw", Dim: "t", M: 40, Cols: 64, In: s.DType,
		A: gemm.Operand{Buffer: "g", LD: 48}, B: gemm.Operand{Buffer: "x", LD: 64},
		Out: "c", OutDT: dtype.BF16, OutOffset: 16 * 64 * 2, Accumulate: true}
}

func (f customCase) Emit(s customShape, p customParams) (kernels.Program, error) {
	c := f.custom(s)
	gp, err := c.Params(s.T, gemm.Tiling{BM: p.BM, BN: p.BN, Persistent: p.Pers, PerSM: p.CTAs})
	if err != nil {
		return kernels.Program{}, err
	}
	m := ptx.NewModule()
	if err := gemm.AddCustom(m, c, gp); err != nil {
		return kernels.Program{}, err
	}
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	return kernels.Program{PTX: built.String(), Launches: []kernels.Launch{c.Launch(gp)}, RuntimeDims: []string{"t"}}, nil
}

func (customCase) Buffers(s customShape) []kernels.Buffer {
	t := configs.Var("t")
	in := func(name string, e configs.Expr) kernels.Buffer {
		return kernels.Buffer{Name: name, DType: dtype.BF16, Elems: e, Role: kernels.Input}
	}
	switch s.Case {
	case "chunk", "quad":
		od := dtype.F32
		if s.Case == "quad" {
			od = dtype.BF16
		}
		return []kernels.Buffer{in("x", t.TimesInt(64)), in("w", configs.Int(200*64)),
			{Name: "c", DType: od, Elems: t.TimesInt(48), Role: kernels.Output}}
	case "scale", "reduce":
		b := []kernels.Buffer{in("x", t.TimesInt(72)), in("w", configs.Int(80*64)),
			{Name: "c", DType: dtype.F32, Elems: t.TimesInt(64), Role: kernels.InOut}}
		if s.Case == "scale" {
			b = append(b, kernels.Buffer{Name: "s", DType: dtype.F32, Elems: t, Role: kernels.Input})
		}
		return b
	}
	return []kernels.Buffer{in("g", t.TimesInt(48)), in("x", t.TimesInt(64)),
		{Name: "c", DType: dtype.BF16, Elems: configs.Int(100 * 64), Role: kernels.InOut}}
}

func (f customCase) Inputs(s customShape, seed uint64) map[string][]float64 {
	in := map[string][]float64{}
	for _, b := range f.Buffers(s) {
		if b.Role != kernels.Output {
			n := kernels.Elems(b, variants.ShapeOf(s))
			in[b.Name] = kernels.Uniform(b.DType, n, -1, 1, seed, b.Name)
		}
	}
	return in
}

// Reference computes each case's C in float64.
func (customCase) Reference(s customShape, in map[string][]float64) map[string][]float64 {
	t := s.T
	switch s.Case {
	case "chunk", "quad":
		c := make([]float64, t*48)
		for r := range t {
			for j := range 40 {
				for k := range 64 {
					c[r*48+j] += in["x"][r*64+k] * in["w"][(64+j)*64+k]
				}
			}
		}
		return map[string][]float64{"c": c}
	case "scale", "reduce":
		c := make([]float64, t*64)
		for r := range t {
			for j := range 64 {
				v := in["c"][r*64+j]
				if s.Case == "scale" {
					v *= in["s"][r]
				}
				for k := range 72 {
					v += in["x"][r*72+k] * in["w"][(8+k)*64+j]
				}
				c[r*64+j] = v
			}
		}
		return map[string][]float64{"c": c}
	}
	c := append([]float64(nil), in["c"]...)
	for i := range 40 {
		for j := range 64 {
			for r := range t {
				c[(16+i)*64+j] += in["g"][r*48+i] * in["x"][r*64+j]
			}
		}
	}
	return map[string][]float64{"c": c}
}

// Tolerance: f32 sums of at most max(72, t) products of |·| ≤ 1 (2⁻²³
// each, doubled for the tensor cores' truncation), plus the old value's
// rounding to bf16 in the dw case.
func (customCase) Tolerance(s customShape, _ string) kernels.Tolerance {
	n := float64(max(72, s.T))
	tol := kernels.Tolerance{Atol: 2 * n * n * 0x1p-23}
	if s.Case == "dw" || s.Case == "quad" {
		return kernels.StoreTol(tol, dtype.BF16)
	}
	return tol
}

// quadEpilogue stores each row of a finished tile in bf16 through a
// gemm.QuadStore.
type quadEpilogue struct{}

func (quadEpilogue) Declare(*ptx.Func)   {}
func (quadEpilogue) Args() []kernels.Arg { return nil }
func (quadEpilogue) Store(k *ptx.Func, t gemm.Tile) {
	qs := t.NewQuadStore(k)
	for mb := range t.Acc {
		for h := range 2 {
			dr := 64*mb + 8*h
			ok := t.RowOK(dr)
			var words []ptx.Reg
			for j := range t.BN / 8 {
				words = append(words, k.PackHalf2(ptx.BF16x2, t.Acc[mb][4*j+2*h+1], t.Acc[mb][4*j+2*h]))
				if len(words) == 4 {
					qs.Group(k, dr, j/4, words, ok)
					words = nil
				}
			}
		}
	}
}

var customFam = kernels.Define(customCase{})

// TestCustom validates each case of gemm.Custom on the interpreter at a
// t with a tail of every tile, one CTA per tile and persistent.
func TestCustom(t *testing.T) {
	var pts []simtest.Point
	for _, c := range []string{"chunk", "quad", "scale", "reduce", "dw"} {
		for _, p := range []string{"bm=64,bn=64,pers=0", "bm=128,bn=128,pers=0", "bm=64,bn=64,pers=1", "bm=128,bn=128,pers=1,ctas=2"} {
			pts = append(pts, simtest.Point{Case: simtest.Case{Spec: fmt.Sprintf("t=%d,case=%s", 150, c), DType: dtype.BF16}, Params: p})
		}
	}
	simtest.RunNamed(t, customFam, pts)
}

// TestCustomIndependentOfT: a Custom's kernel is the same at every t,
// also where t is the reduction.
func TestCustomIndependentOfT(t *testing.T) {
	for _, c := range []string{"chunk", "dw"} {
		var ptx0 string
		for _, tt := range []int{1, 150, 100000} {
			prog, err := customCase{}.Emit(customShape{T: tt, Case: c, DType: dtype.BF16}, customParams{BM: 128, BN: 128})
			if err != nil {
				t.Fatal(err)
			}
			if ptx0 == "" {
				ptx0 = prog.PTX
			} else if prog.PTX != ptx0 {
				t.Errorf("%s: the kernel at t=%d differs from t=1's", c, tt)
			}
		}
	}
}

// TestCustomTwoAnSM: a tiling of two CTAs an SM at a reduction long
// enough for a deep ring declares registers and shared memory that let
// two share an SM (a three-slot ring, .maxnreg and setmaxnreg within half
// the register file), one consumer warpgroup takes a 128-row tile, and a
// persistent grid launches two CTAs an SM.
func TestCustomTwoAnSM(t *testing.T) {
	c := gemm.Custom{Entry: "two", Dim: "t", Cols: 1024, Red: 1536, In: dtype.BF16,
		A: gemm.Operand{Buffer: "x", KMajor: true, LD: 1536}, B: gemm.Operand{Buffer: "w", KMajor: true, LD: 1536},
		Out: "c", OutDT: dtype.BF16}
	half := hopper.SharedPerSM/2 - hopper.CTASharedReserved
	for _, pers := range []bool{false, true} {
		p, err := c.Params(2048, gemm.Tiling{BM: 128, BN: 128, Persistent: pers, PerSM: 2})
		if err != nil {
			t.Fatal(err)
		}
		m := ptx.NewModule()
		if err := gemm.AddCustom(m, c, p); err != nil {
			t.Fatal(err)
		}
		built, err := m.Build()
		if err != nil {
			t.Fatal(err)
		}
		l, src := c.Launch(p), built.String()
		split := hopper.Split{Producer: hopper.ProducerRegs, Consumers: 1, CTAs: 2}
		switch {
		case p.Consumers != 1 || l.Block[0] != 256:
			t.Errorf("consumers = %d, %d threads: want one consumer warpgroup (256 threads)", p.Consumers, l.Block[0])
		case p.Stages != 3 || l.SharedBytes > half:
			t.Errorf("stages = %d, %d bytes of shared memory: want a ring of 3 within %d", p.Stages, l.SharedBytes, half)
		case !strings.Contains(src, ".maxnreg 128") || !strings.Contains(src, fmt.Sprintf("setmaxnreg.inc.sync.aligned.u32 %d", split.ConsumerRegs())):
			t.Errorf("want .maxnreg 128 and setmaxnreg.inc %d (two CTAs of 256 threads in the register file)", split.ConsumerRegs())
		case pers && l.GridPerSM != 2:
			t.Errorf("a persistent grid of %d CTAs an SM, want 2", l.GridPerSM)
		case !l.MaxCarveout():
			t.Errorf("ctas_per_sm %d: the launch does not ask for the largest carveout", l.CTAsPerSM)
		}
	}
	if _, err := c.Params(2048, gemm.Tiling{BM: 128, BN: 256, PerSM: 2}); err == nil {
		t.Error("128×256 at two an SM: accepted, though its 256 accumulators pass one consumer's share of the registers")
	}
}
