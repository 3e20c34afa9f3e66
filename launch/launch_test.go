package launch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
)

// fakeDevice records what it is asked to do; dependent launches fail
// with ErrNoDependentLaunch when noPDL is set.
type fakeDevice struct {
	noPDL bool
	calls []string
}

func (d *fakeDevice) Pointer(addr uint64) any { return fmt.Sprintf("ptr %#x", addr) }

func (d *fakeDevice) TensorMap(m configs.TensorMapSpec, base uint64) (any, error) {
	return fmt.Sprintf("map %s %v at %#x", m.Buffer, m.Dims, base), nil
}

func (d *fakeDevice) Launch(fn any, l configs.LaunchSpec, args []any) error {
	if l.Dependent && d.noPDL {
		return fmt.Errorf("fake: %w", ErrNoDependentLaunch)
	}
	d.calls = append(d.calls, fmt.Sprintf("%v %s grid %v cluster %v dep %v %v", fn, l.Entry, l.Grid, l.Cluster, l.Dependent, args))
	return nil
}

type mem map[string][2]uint64

func (m mem) Buffer(name string) (uint64, int, bool) {
	b, ok := m[name]
	return b[0], int(b[1]), ok
}

// program: a tensor map over m rows, a pointer at an offset, a u32 scalar
// m; then a dependent launch of cdiv(m, 128) CTAs.
func program(t *testing.T, m int64) configs.Plan {
	t.Helper()
	rows := configs.Var("m")
	bufs := []configs.Buffer{{Name: "x", DType: dtype.BF16, Elems: rows.TimesInt(64), Role: configs.Input},
		{Name: "y", DType: dtype.F32, Elems: rows, Role: configs.Output}}
	launches := []configs.Launch{
		{Entry: "a", Grid: [3]configs.Expr{configs.CeilDiv(rows, configs.Int(64)), configs.Int(1), configs.Int(1)}, Block: [3]int{128, 1, 1},
			Args: []configs.Arg{{TensorMap: &configs.TensorMap{Buffer: "x", DType: dtype.BF16, Dims: []configs.Expr{configs.Int(64), rows},
				Strides: configs.Ints(128), Box: []int{64, 64}, Swizzle: 128}}, {Buffer: "y", Offset: configs.Int(16)}, {Scalar: rows, Type: configs.U32}}},
		{Entry: "b", Grid: [3]configs.Expr{configs.CeilDiv(rows, configs.Int(128)), configs.Int(1), configs.Int(1)}, Block: [3]int{256, 1, 1},
			Dependent: true, Args: []configs.Arg{{Buffer: "y"}}},
	}
	p, err := configs.Resolve(launches, bufs, configs.Env{"m": m})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBindAndRun(t *testing.T) {
	dev := &fakeDevice{}
	b, err := Bind(dev, program(t, 300), []any{"fa", "fb"}, mem{"x": {0x1000, 300 * 64 * 2}, "y": {0x9000, 1200}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Run(dev); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fa a grid [5 1 1] cluster [1 1 1] dep false [map x [64 300] at 0x1000 ptr 0x9010 300]",
		"fb b grid [3 1 1] cluster [1 1 1] dep true [ptr 0x9000]",
	}
	if strings.Join(dev.calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(dev.calls, "\n"), strings.Join(want, "\n"))
	}
	if _, ok := b.args[0][2].(uint32); !ok {
		t.Errorf("the u32 scalar is passed as %T", b.args[0][2])
	}
}

// TestDependentFallsBack: a device that cannot launch dependently gets
// the launch in plain stream order, then every later one too.
func TestDependentFallsBack(t *testing.T) {
	dev := &fakeDevice{noPDL: true}
	b, err := Bind(dev, program(t, 128), []any{"fa", "fb"}, mem{"x": {0x1000, 128 * 64 * 2}, "y": {0x9000, 512}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Run(dev); err != nil {
			t.Fatal(err)
		}
	}
	if len(dev.calls) != 4 || !strings.Contains(dev.calls[1], "dep false") || !strings.Contains(dev.calls[3], "dep false") || !b.plain {
		t.Errorf("calls %q", dev.calls)
	}
}

func TestBindRefuses(t *testing.T) {
	p := program(t, 300)
	for _, c := range []struct {
		name  string
		funcs []any
		mem   mem
		want  string
	}{
		{"function count", []any{"fa"}, mem{}, "1 functions for 2 launches"},
		{"missing buffer", []any{"fa", "fb"}, mem{"x": {0x1000, 1 << 20}}, `no buffer "y"`},
		{"unaligned map", []any{"fa", "fb"}, mem{"x": {0x1008, 1 << 20}, "y": {0x9000, 1200}}, "not 16-byte aligned"},
		{"small buffer", []any{"fa", "fb"}, mem{"x": {0x1000, 1000}, "y": {0x9000, 1200}}, "but the buffer has 1000"},
		{"offset past the end", []any{"fa", "fb"}, mem{"x": {0x1000, 1 << 20}, "y": {0x9000, 8}}, "offset 16 is past the end of y"},
	} {
		_, err := Bind(&fakeDevice{}, p, c.funcs, c.mem)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestBindMapOffset: a map of rows j·32 to j·32+31 of x is encoded over
// x's address plus its offset, after the check that it ends inside x
// counting from the offset.
func TestBindMapOffset(t *testing.T) {
	x := configs.Buffer{Name: "x", DType: dtype.BF16, Elems: configs.Int(128 * 64), Role: configs.Input}
	block := &configs.TensorMap{Buffer: "x", Offset: configs.Var("j").TimesInt(32 * 128), DType: dtype.BF16,
		Dims: configs.Ints(64, 32), Strides: configs.Ints(128), Box: []int{64, 32}, Swizzle: 128}
	l := configs.Launch{Entry: "a", Grid: configs.Grid(1, 1, 1), Block: [3]int{128, 1, 1}, Args: []configs.Arg{{TensorMap: block}}}
	p, err := configs.Resolve([]configs.Launch{l}, []configs.Buffer{x}, configs.Env{"j": 3})
	if err != nil {
		t.Fatal(err)
	}
	dev := &fakeDevice{}
	b, err := Bind(dev, p, []any{"fa"}, mem{"x": {0x10000, 128 * 64 * 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.args[0][0], "map x [64 32] at 0x13000"; got != want {
		t.Errorf("the device got %q, want %q (0x10000 + 3·32 rows of 128 bytes)", got, want)
	}
	_, err = Bind(dev, p, []any{"fa"}, mem{"x": {0x10000, 128*64*2 - 16}})
	if want := "tensor map of x: dims [64 32] with strides [128] span 4096 bytes from offset 12288 (to byte 16384), but the buffer has 16368"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a buffer the map runs past: %v, want %q", err, want)
	}
}
