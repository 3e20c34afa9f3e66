package faults

import (
	"fmt"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/gen"
	"github.com/gradtune/gradtune/kernels/ptx"
	"github.com/gradtune/gradtune/variants"
)

// Name is the family's name.
const Name = "fault"

// Family returns the planted-fault family (not in the catalog).
func Family() kernels.Family { return kernels.Define(family{}) }

// Shape is n f32 elements.
type Shape struct {
	N     int `dim:"n"`
	DType dtype.DType
}

// Params picks the fault.
type Params struct {
	Fault string `axis:"fault" values:"none,hang,oob,trap,illegal,drift" doc:"the planted fault (none: a working copy; drift: right on its first run only)"`
}

const block = 128

// hangSentinel is the f32 bit pattern the hang waits for in dx[0]: a NaN
// payload that neither the inputs nor the poison of validation have.
const hangSentinel = 0x7fc0dead

type family struct{}

func (family) Name() string { return Name }
func (family) Doc() string {
	return "planted faults: a copy dx = dy, or one that hangs, stores out of bounds, traps, executes brkpt, or is right only on its first run"
}
func (family) DTypes() []dtype.DType { return []dtype.DType{dtype.F32} }
func (family) Shapes(p variants.Preset, dt dtype.DType) []Shape {
	return []Shape{{N: 1 << 20, DType: dt}}
}

func (family) CheckShape(s Shape) error {
	if s.N > 1<<28 {
		return fmt.Errorf("n=%d: at most %d", s.N, 1<<28)
	}
	return nil
}

func (family) Space(Shape) variants.Typed[Params] { return variants.Typed[Params]{} }

func (family) Buffers(s Shape) []kernels.Buffer {
	return []kernels.Buffer{
		{Name: "dy", DType: s.DType, Elems: configs.Int(s.N), Role: kernels.Input},
		{Name: "dx", DType: s.DType, Elems: configs.Int(s.N), Role: kernels.Output},
	}
}

func (family) Inputs(s Shape, seed uint64) map[string][]float64 {
	return map[string][]float64{"dy": kernels.Uniform(s.DType, s.N, -1, 1, seed, variants.ShapeOf(s).Key()+"/dy")}
}

func (family) Reference(s Shape, in map[string][]float64) map[string][]float64 {
	return map[string][]float64{"dx": append([]float64(nil), in["dy"]...)}
}

func (family) Cost(s Shape) kernels.Cost { return kernels.Cost{Bytes: 2 * 4 * int64(s.N)} }

func (family) Tolerance(Shape, string) kernels.Tolerance { return kernels.Tolerance{} }

// Emit writes the copy, with the fault planted in thread 0 of CTA 0 before
// it; drift instead adds a word of scratch to every element and a second
// launch that sets the word to 1, so the first run of the program is
// right and every later one is not.
func (family) Emit(s Shape, p Params) (kernels.Program, error) {
	if p.Fault == "drift" {
		return emitDrift(s)
	}
	m := ptx.NewModule()
	k := m.Func("fault_" + p.Fault)
	k.ReqNTid(block)
	pdy, pdx, pn := k.Param("dy", ptx.U64), k.Param("dx", ptx.U64), k.Param("n", ptx.U64)
	dy := k.Cvta(ptx.Global, k.LdParam(pdy))
	dx := k.Cvta(ptx.Global, k.LdParam(pdx))
	n := k.Cvt(ptx.U32, ptx.U64, "", k.LdParam(pn))
	i := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(block), k.Mov(ptx.U32, ptx.TidX))
	if p.Fault != "none" {
		k.If(k.Setp("eq", ptx.U32, i, ptx.Imm(0)), func() { plant(k, p.Fault, dx, n) })
	}
	k.If(k.Setp("lt", ptx.U32, i, n), func() {
		off := k.MulWide(ptx.U32, i, ptx.Imm(4))
		v := k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Add(ptx.U64, dy, off), 0))
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, dx, off), 0), v)
	})
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	grid := (s.N + block - 1) / block
	return kernels.Program{PTX: built.String(), Launches: []kernels.Launch{{Entry: "fault_" + p.Fault,
		Grid: configs.Grid(grid, 1, 1), Block: [3]int{block, 1, 1},
		Args: []kernels.Arg{{Buffer: "dy"}, {Buffer: "dx"}, {Scalar: configs.Int(s.N)}}}}}, nil
}

// plant writes the fault that thread 0 executes.
func plant(k *ptx.Func, fault string, dx, n ptx.Reg) {
	switch fault {
	case "hang":
		// Reload dx[0] until it holds a NaN payload that no input has: the
		// loop never ends, and since the load is volatile ptxas can
		// neither prove that nor drop the loop (it drops an empty one).
		k.While(func() ptx.Reg {
			v := k.Ld(ptx.Global, ptx.U32, 1, ptx.At(dx, 0), ptx.LdOpts{Volatile: true})[0]
			return k.Setp("ne", ptx.U32, v, ptx.Imm(hangSentinel))
		}, func() {})
	case "oob":
		far := k.Add(ptx.U64, dx, ptx.Imm(int64(1)<<40))
		k.St(ptx.Global, ptx.F32, ptx.At(far, 0), []ptx.Reg{k.Mov(ptx.F32, ptx.F32Imm(1))})
	case "trap":
		k.Raw(20, 10, "trap")
	case "illegal":
		k.Raw(20, 10, "brkpt")
	}
}

// emitDrift is the drift fault: dx = dy + 1 where seen is 1, else dy;
// then seen = 1 (whatever a validation poisoned scratch with, the first
// run is right).
func emitDrift(s Shape) (kernels.Program, error) {
	m := ptx.NewModule()
	k := m.Func("fault_drift")
	k.ReqNTid(block)
	dy, dx, seen := gen.Param(k, "dy"), gen.Param(k, "dx"), gen.Param(k, "seen")
	n := k.Cvt(ptx.U32, ptx.U64, "", k.LdParam(k.Param("n", ptx.U64)))
	i := k.Mad(ptx.U32, k.Mov(ptx.U32, ptx.CtaidX), ptx.Imm(block), k.Mov(ptx.U32, ptx.TidX))
	k.If(k.Setp("lt", ptx.U32, i, n), func() {
		off := k.MulWide(ptx.U32, i, ptx.Imm(4))
		v := k.Ld(ptx.Global, ptx.F32, 1, ptx.At(k.Add(ptx.U64, dy, off), 0))
		w := k.Ld(ptx.Global, ptx.F32, 1, ptx.At(seen, 0))
		d := k.Selp(ptx.F32, ptx.F32Imm(1), ptx.F32Imm(0), k.Setp("eq", ptx.F32, w[0], ptx.F32Imm(1)))
		k.St(ptx.Global, ptx.F32, ptx.At(k.Add(ptx.U64, dx, off), 0), []ptx.Reg{k.Add(ptx.F32, v[0], d)})
	})
	mark := m.Func("fault_drift_mark")
	mark.ReqNTid(1)
	mark.St(ptx.Global, ptx.F32, ptx.At(gen.Param(mark, "seen"), 0), []ptx.Reg{mark.Mov(ptx.F32, ptx.F32Imm(1))})
	built, err := m.Build()
	if err != nil {
		return kernels.Program{}, err
	}
	return kernels.Program{PTX: built.String(),
		Buffers: []kernels.Buffer{{Name: "seen", DType: dtype.F32, Elems: configs.Int(1), Role: kernels.Scratch}},
		Launches: []kernels.Launch{
			{Entry: "fault_drift", Grid: configs.Grid((s.N+block-1)/block, 1, 1), Block: [3]int{block, 1, 1},
				Args: []kernels.Arg{{Buffer: "dy"}, {Buffer: "dx"}, {Buffer: "seen"}, {Scalar: configs.Int(s.N)}}},
			{Entry: "fault_drift_mark", Grid: configs.Grid(1, 1, 1), Block: [3]int{1, 1, 1}, Args: []kernels.Arg{{Buffer: "seen"}}},
		}}, nil
}
