package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
)

// goodMap is a 2-D bf16 map of a 256×512 row-major matrix in 64×128 boxes
// with the 128-byte swizzle: 262144 bytes.
func goodMap() kernels.TensorMap {
	return kernels.TensorMap{Buffer: "a", DType: dtype.BF16, Dims: []int{512, 256}, Strides: []int{1024},
		Box: []int{64, 128}, Swizzle: 128}
}

func TestCheckTensorMap(t *testing.T) {
	if err := CheckTensorMap(goodMap(), 0x10000, 512*256*2); err != nil {
		t.Fatalf("a good map: %v", err)
	}
	for _, tt := range []struct {
		name   string
		edit   func(m *kernels.TensorMap)
		base   Ptr
		buffer int
		want   string
	}{
		{"rank 0", func(m *kernels.TensorMap) { m.Dims, m.Strides, m.Box = nil, nil, nil }, 0, 0, "rank 0"},
		{"rank 6", func(m *kernels.TensorMap) {
			m.Dims, m.Strides, m.Box = []int{8, 1, 1, 1, 1, 1}, []int{16, 16, 16, 16, 16}, []int{8, 1, 1, 1, 1, 1}
		}, 0, 0, "rank 6"},
		{"strides count", func(m *kernels.TensorMap) { m.Strides = nil }, 0, 0, "0 strides"},
		{"box count", func(m *kernels.TensorMap) { m.Box = m.Box[:1] }, 0, 0, "1 box extents"},
		{"dtype", func(m *kernels.TensorMap) { m.DType = dtype.F64; m.Box[0] = 16 }, 0, 0, "element type f64"},
		{"zero dim", func(m *kernels.TensorMap) { m.Dims[1] = 0 }, 0, 0, "dims[1] = 0"},
		{"stride not multiple of 16", func(m *kernels.TensorMap) { m.Strides[0] = 1000 }, 0, 0, "strides[0] = 1000"},
		{"stride too large", func(m *kernels.TensorMap) { m.Strides[0] = 1 << 40 }, 0, 0, "below 2^40"},
		{"box too large", func(m *kernels.TensorMap) { m.Box[1] = 512 }, 0, 0, "box[1] = 512"},
		{"box zero", func(m *kernels.TensorMap) { m.Box[1] = 0 }, 0, 0, "box[1] = 0"},
		{"row not multiple of 16 bytes", func(m *kernels.TensorMap) { m.Box[0] = 4; m.Swizzle = 0 }, 0, 0, "8 bytes"},
		{"row beyond swizzle span", func(m *kernels.TensorMap) { m.Box[0] = 128 }, 0, 0, "256 bytes: more than the 128-byte swizzle"},
		{"row beyond 32B swizzle", func(m *kernels.TensorMap) { m.Swizzle = 32 }, 0, 0, "more than the 32-byte swizzle"},
		{"odd swizzle", func(m *kernels.TensorMap) { m.Swizzle = 256 }, 0, 0, "swizzle 256"},
		{"unaligned base", func(*kernels.TensorMap) {}, 0x10008, 0, "not 16-byte aligned"},
		{"beyond the buffer", func(*kernels.TensorMap) {}, 0x10000, 512*256*2 - 2, "span 262144 bytes, but the buffer has 262142"},
	} {
		m := goodMap()
		tt.edit(&m)
		base, buf := tt.base, tt.buffer
		if base == 0 {
			base = 0x10000
		}
		if buf == 0 {
			buf = 1 << 30
		}
		err := CheckTensorMap(m, base, buf)
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "tensor map of a") {
			t.Errorf("%s: error %q does not say %q of buffer a", tt.name, err, tt.want)
		}
	}
}

func TestTensorMapEnd(t *testing.T) {
	// A 3-D f32 map whose middle dimension is padded: rows of 10 elements
	// 48 bytes apart, 3 rows per plane, planes 160 bytes apart.
	m := kernels.TensorMap{DType: dtype.F32, Dims: []int{10, 3, 2}, Strides: []int{48, 160}, Box: []int{4, 1, 1}}
	if got, want := tensorMapEnd(m), int64(160+2*48+40); got != want {
		t.Errorf("end = %d, want %d", got, want)
	}
}

// fakeHopperBackend also encodes tensor maps (their buffer address and
// first dimension in the first bytes) and launches clusters.
type fakeHopperBackend struct {
	fakeBackend
	bases []Ptr
}

func (b *fakeHopperBackend) EncodeTensorMap(m kernels.TensorMap, base Ptr) (TensorMapArg, error) {
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
var hopperProgram = kernels.Program{PTX: "// fake", Buffers: []kernels.Buffer{{Name: "s", Elems: 64, DType: dtype.F32, Role: kernels.Scratch}},
	Launches: []kernels.Launch{
		{Entry: "tma", Grid: [3]int{1000, 1, 1}, GridPerSM: 1, Block: [3]int{384, 1, 1}, SharedBytes: 200 << 10,
			Cluster: [3]int{2, 1, 1}, Args: []kernels.Arg{
				{TensorMap: &kernels.TensorMap{Buffer: "a", DType: dtype.F32, Dims: []int{4}, Box: []int{4}}},
				{TensorMap: &kernels.TensorMap{Buffer: "s", DType: dtype.F32, Dims: []int{8, 8}, Strides: []int{32}, Box: []int{8, 2}}},
				{Buffer: "a"}, {Scalar: 7}}},
		{Entry: "plain", Grid: [3]int{4, 1, 1}, Block: [3]int{32, 1, 1}},
	}}

func TestLoadTensorMapsAndClusters(t *testing.T) {
	be := &fakeHopperBackend{fakeBackend: fakeBackend{sms: 5}}
	ss := NewSession(be)
	ss.bufs = map[string]Ptr{"a": 0x1000}
	ss.specs = []kernels.Buffer{{Name: "a", Elems: 4, DType: dtype.F32, Role: kernels.Input}}
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
	tmap := kernels.Program{PTX: "// fake", Launches: []kernels.Launch{{Entry: "k", Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1},
		Args: []kernels.Arg{{TensorMap: &kernels.TensorMap{Buffer: "a", DType: dtype.F32, Dims: []int{4}, Box: []int{4}}}}}}}
	cluster := kernels.Program{PTX: "// fake", Launches: []kernels.Launch{{Entry: "k", Grid: [3]int{2, 1, 1}, Block: [3]int{32, 1, 1},
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
		{kernels.Launch{Entry: "k", Grid: [3]int{32, 2, 1}, Block: [3]int{32, 1, 1}, Cluster: [3]int{16, 2, 1}}, "32 blocks; at most 16"},
		{kernels.Launch{Entry: "k", Grid: [3]int{6, 1, 1}, Block: [3]int{32, 1, 1}, Cluster: [3]int{4, 1, 1}}, "grid [6 1 1] is not a multiple of its cluster [4 1 1]"},
		{kernels.Launch{Entry: "k", Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Args: []kernels.Arg{{TensorMap: &kernels.TensorMap{
			Buffer: "a", DType: dtype.F32, Dims: []int{4}, Box: []int{300}}}}}, "argument 0: tensor map of a: box[0] = 300"},
		{kernels.Launch{Entry: "k", Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Args: []kernels.Arg{{TensorMap: &kernels.TensorMap{
			Buffer: "a", DType: dtype.F32, Dims: []int{8}, Box: []int{8}}}}}, "span 32 bytes, but the buffer has 16"},
		{kernels.Launch{Entry: "k", Grid: [3]int{1, 1, 1}, Block: [3]int{32, 1, 1}, Args: []kernels.Arg{{TensorMap: &kernels.TensorMap{
			Buffer: "zz", DType: dtype.F32, Dims: []int{8}, Box: []int{8}}}}}, `unknown buffer "zz"`},
	} {
		ss := NewSession(&fakeHopperBackend{})
		ss.bufs = map[string]Ptr{"a": 0x1000}
		ss.specs = []kernels.Buffer{{Name: "a", Elems: 4, DType: dtype.F32, Role: kernels.Input}}
		_, err := ss.Load(kernels.Program{PTX: "// fake", Launches: []kernels.Launch{tt.ln}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load = %v, want an error saying %q", err, tt.want)
		}
	}
}
