package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
)

// fakeHopperBackend also encodes tensor maps (their buffer address and
// first dimension in the first bytes) and launches clusters.
type fakeHopperBackend struct {
	fakeBackend
	bases []Ptr
}

func (b *fakeHopperBackend) EncodeTensorMap(m configs.TensorMapSpec, base Ptr) (TensorMapArg, error) {
	b.bases = append(b.bases, base)
	var a TensorMapArg
	a[0], a[1] = byte(base>>12), byte(m.Dims[0])
	return a, nil
}

func (b *fakeHopperBackend) LaunchCluster(fn Function, grid, block, cluster [3]int, smem int, args []any) error {
	b.calls = append(b.calls, "cluster "+string(fn.(fakeFunction)))
	b.launched = append(b.launched, fakeLaunch{grid, cluster, args})
	return nil
}

// hopperProgram: a tensor map of the session's buffer a, one of its own
// scratch buffer, a pointer and a scalar; a 2-block cluster over a
// per-SM grid, then a plain launch.
var hopperProgram = kernels.Program{PTX: "// fake", Buffers: []kernels.Buffer{{Name: "s", Elems: configs.Int(64), DType: dtype.F32, Role: kernels.Scratch}},
	Launches: []kernels.Launch{
		{Entry: "tma", Grid: configs.Grid(1000, 1, 1), GridPerSM: 1, Block: [3]int{384, 1, 1}, SharedBytes: 200 << 10,
			Cluster: [3]int{2, 1, 1}, Args: []kernels.Arg{
				{TensorMap: &kernels.TensorMap{Buffer: "a", DType: dtype.F32, Dims: configs.Ints(4), Box: []int{4}}},
				{TensorMap: &kernels.TensorMap{Buffer: "s", DType: dtype.F32, Dims: configs.Ints(8, 8), Strides: configs.Ints(32), Box: []int{8, 2}}},
				{Buffer: "a"}, {Scalar: configs.Int(7)}}},
		{Entry: "plain", Grid: configs.Grid(4, 1, 1), Block: [3]int{32, 1, 1}},
	}}

func TestLoadTensorMapsAndClusters(t *testing.T) {
	be := &fakeHopperBackend{fakeBackend: fakeBackend{sms: 5}}
	ss := NewSession(be)
	ss.bufs = map[string]Ptr{"a": 0x1000}
	if err := ss.setBuffers([]kernels.Buffer{{Name: "a", Elems: configs.Int(4), DType: dtype.F32, Role: kernels.Input}}, configs.Env{}); err != nil {
		t.Fatal(err)
	}
	l, err := ss.Load(hopperProgram)
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.Run(l); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(be.calls, []string{"cluster tma", "launch plain"}) {
		t.Errorf("launches %q", be.calls)
	}
	got := be.launched[0]
	// 5 SMs × 1 = 5 blocks, rounded down to whole 2-block clusters.
	if got.grid != [3]int{4, 1, 1} || got.cluster != [3]int{2, 1, 1} {
		t.Errorf("grid %v cluster %v, want [4 1 1] in [2 1 1]", got.grid, got.cluster)
	}
	m0, ok0 := got.args[0].(TensorMapArg)
	m1, ok1 := got.args[1].(TensorMapArg)
	if !ok0 || !ok1 || m0[1] != 4 || m1[1] != 8 || m0[0] != 1 {
		t.Errorf("tensor map arguments %T %T (% x, % x)", got.args[0], got.args[1], m0[:2], m1[:2])
	}
	if len(be.bases) != 2 || be.bases[0] != 0x1000 || be.bases[1] != l.ownPtrs["s"] {
		t.Errorf("maps encoded at %#x, want a's 0x1000 and the program's own s", be.bases)
	}
	if got.args[2] != Ptr(0x1000) || got.args[3] != uint64(7) {
		t.Errorf("other arguments %v", got.args[2:])
	}
}

func TestLoadRejectsWhatTheBackendLacks(t *testing.T) {
	tmap := kernels.Program{PTX: "// fake", Launches: []kernels.Launch{{Entry: "k", Grid: configs.Grid(1, 1, 1), Block: [3]int{32, 1, 1},
		Args: []kernels.Arg{{TensorMap: &kernels.TensorMap{Buffer: "a", DType: dtype.F32, Dims: configs.Ints(4), Box: []int{4}}}}}}}
	cluster := kernels.Program{PTX: "// fake", Launches: []kernels.Launch{{Entry: "k", Grid: configs.Grid(2, 1, 1), Block: [3]int{32, 1, 1},
		Cluster: [3]int{2, 1, 1}}}}
	be := &fakeBackend{}
	for _, tt := range []struct {
		p    kernels.Program
		want string
	}{
		{tmap, "fake backend cannot pass tensor maps (it does not implement runner.TensorMapEncoder)"},
		{cluster, "asks for clusters [2 1 1], but the fake backend cannot launch clusters (it does not implement runner.ClusterLauncher)"},
	} {
		_, err := NewSession(be).Load(tt.p)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load = %v, want an error saying %q", err, tt.want)
		}
	}
	if be.loads != 0 {
		t.Errorf("%d modules compiled for programs the backend cannot run", be.loads)
	}
}

func TestLoadRejectsBadClustersAndMaps(t *testing.T) {
	for _, tt := range []struct {
		ln   kernels.Launch
		want string
	}{
		{kernels.Launch{Entry: "k", Grid: configs.Grid(32, 2, 1), Block: [3]int{32, 1, 1}, Cluster: [3]int{16, 2, 1}}, "32 CTAs, at most 16"},
		{kernels.Launch{Entry: "k", Grid: configs.Grid(6, 1, 1), Block: [3]int{32, 1, 1}, Cluster: [3]int{4, 1, 1}}, "grid [6 1 1] is not a multiple of its cluster [4 1 1]"},
		{kernels.Launch{Entry: "k", Grid: configs.Grid(1, 1, 1), Block: [3]int{32, 1, 1}, Args: []kernels.Arg{{TensorMap: &kernels.TensorMap{
			Buffer: "a", DType: dtype.F32, Dims: configs.Ints(4), Box: []int{300}}}}}, "argument 0: tensor map of a: box[0] = 300"},
		{kernels.Launch{Entry: "k", Grid: configs.Grid(1, 1, 1), Block: [3]int{32, 1, 1}, Args: []kernels.Arg{{TensorMap: &kernels.TensorMap{
			Buffer: "a", DType: dtype.F32, Dims: configs.Ints(8), Box: []int{8}}}}}, "span 32 bytes, but the buffer has 16"},
		{kernels.Launch{Entry: "k", Grid: configs.Grid(1, 1, 1), Block: [3]int{32, 1, 1}, Args: []kernels.Arg{{TensorMap: &kernels.TensorMap{
			Buffer: "zz", DType: dtype.F32, Dims: configs.Ints(8), Box: []int{8}}}}}, `unknown buffer "zz"`},
	} {
		ss := NewSession(&fakeHopperBackend{})
		ss.bufs = map[string]Ptr{"a": 0x1000}
		if err := ss.setBuffers([]kernels.Buffer{{Name: "a", Elems: configs.Int(4), DType: dtype.F32, Role: kernels.Input}}, configs.Env{}); err != nil {
			t.Fatal(err)
		}
		_, err := ss.Load(kernels.Program{PTX: "// fake", Launches: []kernels.Launch{tt.ln}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load = %v, want an error saying %q", err, tt.want)
		}
	}
}

// TestLoadTensorMapOffset: the session encodes a map over its buffer's
// address plus its offset, and refuses at load a map that its offset runs
// past its buffer.
func TestLoadTensorMapOffset(t *testing.T) {
	prog := func(off int) kernels.Program {
		return kernels.Program{PTX: "// fake", Buffers: []kernels.Buffer{{Name: "s", Elems: configs.Int(64), DType: dtype.F32, Role: kernels.Scratch}},
			Launches: []kernels.Launch{{Entry: "k", Grid: configs.Grid(1, 1, 1), Block: [3]int{32, 1, 1}, Args: []kernels.Arg{{TensorMap: &kernels.TensorMap{
				Buffer: "s", Offset: configs.Int(off), DType: dtype.F32, Dims: configs.Ints(8, 4), Strides: configs.Ints(32), Box: []int{8, 4}}}}}}}
	}
	be := &fakeHopperBackend{}
	ss := NewSession(be)
	l, err := ss.Load(prog(128))
	if err != nil {
		t.Fatal(err)
	}
	if err := ss.Run(l); err != nil {
		t.Fatal(err)
	}
	if len(be.bases) != 1 || be.bases[0] != l.ownPtrs["s"]+128 {
		t.Errorf("map encoded at %#x, want s at %#x + 128", be.bases, l.ownPtrs["s"])
	}
	_, err = NewSession(&fakeHopperBackend{}).Load(prog(144))
	if want := "span 128 bytes from offset 144 (to byte 272), but the buffer has 256"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load = %v, want an error saying %q", err, want)
	}
}
