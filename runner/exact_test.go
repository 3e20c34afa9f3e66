package runner_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// sumFamily is y[i] = Σ_k x[i][k] over rows of l f32 values, y in bf16,
// with a loose tolerance (atol 1) on random inputs in [−1, 1) and, unless
// noExact, exact inputs: integers in ±1..±255, whose sums (exact in f32
// for l < 2¹⁶) round in bf16. Its kernel sums a row per thread, in f32, leaving out
// index skip when skip ≥ 0, and doubles the sum when twice (the params
// are ignored).
type sumFamily struct {
	rows, l int
	skip    int
	twice   bool
	noExact bool
}

func (f *sumFamily) Name() string          { return "sum" }
func (f *sumFamily) Doc() string           { return "sum" }
func (f *sumFamily) Dims() []string        { return []string{"m", "n"} }
func (f *sumFamily) DTypes() []dtype.DType { return []dtype.DType{dtype.BF16} }
func (f *sumFamily) Shapes(variants.Preset, []dtype.DType) []variants.Shape {
	return []variants.Shape{f.shape()}
}
func (f *sumFamily) shape() variants.Shape {
	return variants.Shape{Dims: []variants.Dim{{Name: "m", Value: f.rows}, {Name: "n", Value: f.l}}, DType: dtype.BF16}
}
func (f *sumFamily) Shape(variants.Spec, dtype.DType) (variants.Shape, error) { return f.shape(), nil }
func (f *sumFamily) Space(variants.Shape) variants.Space                      { return variants.Space{} }
func (f *sumFamily) Buffers(variants.Shape) []kernels.Buffer {
	return []kernels.Buffer{{Name: "x", DType: dtype.F32, Elems: configs.Int(f.rows * f.l), Role: kernels.Input},
		{Name: "y", DType: dtype.BF16, Elems: configs.Int(f.rows), Role: kernels.Output}}
}
func (f *sumFamily) Inputs(_ variants.Shape, seed uint64) map[string][]float64 {
	return map[string][]float64{"x": kernels.Uniform(dtype.F32, f.rows*f.l, -1, 1, seed, "x")}
}
func (f *sumFamily) ExactInputs(_ variants.Shape, seed uint64) (map[string][]float64, bool) {
	if f.noExact {
		return nil, false
	}
	x := kernels.Uniform(dtype.F64, f.rows*f.l, 0, 510, seed, "exact x")
	for i, v := range x {
		x[i] = float64(int(v) - 255)
		if x[i] >= 0 {
			x[i]++
		}
	}
	return map[string][]float64{"x": x}, true
}
func (f *sumFamily) Reference(_ variants.Shape, in map[string][]float64) map[string][]float64 {
	y := make([]float64, f.rows)
	for i := range y {
		for _, v := range in["x"][i*f.l : (i+1)*f.l] {
			y[i] += v
		}
	}
	return map[string][]float64{"y": y}
}
func (f *sumFamily) Cost(variants.Shape) kernels.Cost { return kernels.Cost{} }
func (f *sumFamily) Tolerance(variants.Shape, string) kernels.Tolerance {
	return kernels.StoreTol(kernels.Tolerance{Atol: 1}, dtype.BF16)
}
func (f *sumFamily) Emit(variants.Shape, variants.Params) (kernels.Program, error) {
	m := ptx.NewModule()
	k := m.Func("sum")
	k.ReqNTid(64)
	x, y := gen.Param(k, "x"), gen.Param(k, "y")
	i := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(64), k.Mov(ptx.U32, ptx.TidX))
	k.If(k.Setp("lt", ptx.U32, i, ptx.Imm(f.rows)), func() {
		acc := k.Mov(ptx.F32, ptx.F32Imm(0))
		row := k.Add(ptx.U64, x, k.MulWide(ptx.U32, i, ptx.Imm(4*f.l)))
		k.For(ptx.U32, ptx.Imm(0), ptx.Imm(f.l), ptx.Imm(1), func(j ptx.Reg) {
			v := k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Add(ptx.U64, row, k.MulWide(ptx.U32, j, ptx.Imm(4))), 0))[0]
			if f.skip >= 0 {
				v = k.Selp(ptx.F32, ptx.F32Imm(0), v, k.Setp("eq", ptx.U32, j, ptx.Imm(f.skip)))
			}
			k.MovTo(acc, k.Add(ptx.F32, acc, v))
		})
		if f.twice {
			k.MovTo(acc, k.Add(ptx.F32, acc, acc))
		}
		h := k.Cvt(ptx.BF16, ptx.F32, "rn", acc)
		k.St(ptx.Global, ptx.B16, ptx.At(k.Add(ptx.U64, y, k.MulWide(ptx.U32, i, ptx.Imm(2))), 0), []ptx.Reg{h})
	})
	b, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	return kernels.Program{PTX: b.String(), Launches: []kernels.Launch{{Entry: "sum", Grid: configs.Grid((f.rows+63)/64, 1, 1),
		Block: [3]int{64, 1, 1}, Args: []kernels.Arg{{Buffer: "x"}, {Buffer: "y"}}}}}, nil
}

// validateSum validates f's program on a fresh interpreter session,
// comparing on the host or the device, and returns the check and y as
// the session holds it afterwards.
func validateSum(t *testing.T, f *sumFamily, onDevice bool) (runner.Check, []float64) {
	t.Helper()
	return sessionCheck(t, f, 1, func(ss *runner.Session) error {
		if onDevice {
			return ss.CheckOnDevice()
		}
		return nil
	})
}

// shapedFamily is a test family that names its one shape.
type shapedFamily interface {
	kernels.Family
	shape() variants.Shape
}

// sessionCheck validates f's program on a fresh interpreter session that
// setup configures, with inputs from seed, and returns the check and y as
// the session holds it afterwards.
func sessionCheck(t *testing.T, f shapedFamily, seed uint64, setup func(*runner.Session) error) (runner.Check, []float64) {
	t.Helper()
	ss := runner.NewSession(sim.New(sim.Options{}))
	defer ss.Release()
	if err := setup(ss); err != nil {
		t.Fatal(err)
	}
	if err := ss.Prepare(f, f.shape(), seed); err != nil {
		t.Fatal(err)
	}
	prog, err := f.Emit(f.shape(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ss.Load(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unload()
	c, err := ss.Validate(l)
	if err != nil {
		t.Fatal(err)
	}
	y, err := ss.Output("y")
	if err != nil {
		t.Fatal(err)
	}
	return c, y
}

// TestExactInputsValidated: a family with exact inputs is validated on
// both sets, on the host and on the device alike. The correct kernel
// passes both (its exact sums, rounded once to bf16, match the reference
// the runner rounds the same way), and the outputs hold
// the random inputs' results afterwards; a kernel that leaves out one
// index passes the loose random bound and fails the exact inputs, the
// message naming them. Without exact inputs there is one set and the
// message is the element's alone.
func TestExactInputsValidated(t *testing.T) {
	good := &sumFamily{rows: 100, l: 1024, skip: -1}
	bad := &sumFamily{rows: 100, l: 1024, skip: 517}
	in, _ := good.ExactInputs(good.shape(), 1)
	rounded := 0
	for _, v := range good.Reference(good.shape(), in)["y"] {
		if dtype.BF16.Round(v) != v {
			rounded++
		}
	}
	if rounded < 50 {
		t.Fatalf("%d of 100 exact sums round in bf16: the test does not show the reference rounded", rounded)
	}
	for _, onDevice := range []bool{false, true} {
		c, y := validateSum(t, good, onDevice)
		if !c.OK || len(c.Sets) != 2 || c.Sets[0].Inputs != runner.RandomInputs || c.Sets[1].Inputs != runner.ExactInputs || c.Message != "" {
			t.Errorf("device %v: correct kernel: %+v", onDevice, c)
		}
		ref := good.Reference(good.shape(), good.Inputs(good.shape(), 1))["y"]
		if _, _, bad := good.Tolerance(good.shape(), "y").Check(y, ref); bad >= 0 || c.MaxAbs != c.Sets[0].MaxAbs || c.MaxAbs == 0 {
			t.Errorf("device %v: after Validate y[%d] = %g, want the random inputs' %g (max abs error %g)", onDevice, bad, y[max(bad, 0)], ref[max(bad, 0)], c.MaxAbs)
		}

		c, _ = validateSum(t, bad, onDevice)
		if c.OK || !c.Sets[0].OK || c.Sets[1].OK || !strings.HasPrefix(c.Message, "exact inputs: y[") || !strings.Contains(c.Message, "(atol 0, rtol 0)") {
			t.Errorf("device %v: index 517 left out: %+v", onDevice, c)
		}
		host, _ := validateSum(t, bad, false)
		if !reflect.DeepEqual(c, host) {
			t.Errorf("device %v: %+v, host %+v", onDevice, c, host)
		}
	}
	c, _ := validateSum(t, &sumFamily{rows: 100, l: 1024, skip: 517, noExact: true}, false)
	if !c.OK || len(c.Sets) != 1 {
		t.Errorf("without exact inputs: %+v", c)
	}
	// A bug the random bound catches too: each set that fails is named.
	worse := &sumFamily{rows: 100, l: 64, skip: -1, twice: true}
	c, _ = validateSum(t, worse, false)
	if c.OK || !strings.HasPrefix(c.Message, "random inputs: y[") || !strings.Contains(c.Message, "; exact inputs: y[") {
		t.Errorf("both sets failing: %+v", c)
	}
	worse.noExact = true
	if c, _ = validateSum(t, worse, false); c.OK || !strings.HasPrefix(c.Message, "y[") {
		t.Errorf("one set failing: %+v", c)
	}
}

// TestExactInputsMissing: exact inputs without data for an input buffer
// fail Prepare, saying which set.
func TestExactInputsMissing(t *testing.T) {
	f := &missingExact{sumFamily{rows: 4, l: 8, skip: -1}}
	ss := runner.NewSession(sim.New(sim.Options{}))
	defer ss.Release()
	err := ss.Prepare(f, f.shape(), 1)
	if err == nil || !strings.Contains(err.Error(), "gave no exact input data for buffer x") {
		t.Errorf("Prepare: %v", err)
	}
}

type missingExact struct{ sumFamily }

func (f *missingExact) ExactInputs(variants.Shape, uint64) (map[string][]float64, bool) {
	return map[string][]float64{}, true
}

// TestExactInputsInTheRunner: through the runner and a local worker, as
// a GPU run goes, a variant that passes the random bound and fails the
// exact inputs is recorded invalid, its message naming the exact inputs.
func TestExactInputsInTheRunner(t *testing.T) {
	for _, f := range []*sumFamily{{rows: 100, l: 1024, skip: -1}, {rows: 100, l: 1024, skip: 517}} {
		timer := func(runner.Variant) ([]float64, error) { return []float64{3, 3.1, 2.9, 3, 3, 3.05, 2.95, 3, 3, 3}, nil }
		r, err := runner.New(runner.Options{EvalTimeout: time.Minute,
			NewWorker: runner.NewLocalWorker(func() runner.Backend { return sim.New(sim.Options{Workers: 1}) }, runner.Families{f}, timer)})
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{}
		_, err = r.Tune(context.Background(), []runner.Job{{Family: f, Shapes: []variants.Shape{f.shape()}}}, rec)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.results) != 1 {
			t.Fatalf("skip %d: %d results", f.skip, len(rec.results))
		}
		res := rec.results[0]
		if f.skip < 0 && res.Status != eval.OK || f.skip >= 0 && (res.Status != eval.Invalid || !strings.HasPrefix(res.Message, "exact inputs: y[")) {
			t.Errorf("skip %d: %s %q", f.skip, res.Status, res.Message)
		}
	}
}
