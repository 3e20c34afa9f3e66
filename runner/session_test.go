package runner

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/kernels"
)

// fakeBackend records the launches enqueued on it; it runs nothing.
type fakeBackend struct {
	calls    []string // "launch ENTRY", "dependent ENTRY" or "cluster ENTRY", in order
	launched []fakeLaunch
	loads    int
	sms      int // 4 when 0
	next     Ptr // the last address Alloc returned
}

// fakeLaunch is what a launch was given.
type fakeLaunch struct {
	grid, cluster [3]int
	args          []any
}

func (b *fakeBackend) Name() string { return "fake" }
func (b *fakeBackend) Device() DeviceInfo {
	return DeviceInfo{Name: "Fake GPU", SMs: cmp.Or(b.sms, 4)}
}
func (b *fakeBackend) Alloc(int) (Ptr, error)      { b.next += 0x1000; return 0x100000 + b.next, nil }
func (b *fakeBackend) Free(Ptr) error              { return nil }
func (b *fakeBackend) Upload(Ptr, []byte) error    { return nil }
func (b *fakeBackend) Download([]byte, Ptr) error  { return nil }
func (b *fakeBackend) Memset(Ptr, byte, int) error { return nil }
func (b *fakeBackend) Sync() error                 { return nil }
func (b *fakeBackend) Load(string) (Module, error) { b.loads++; return fakeModule{}, nil }
func (b *fakeBackend) Launch(fn Function, grid, block [3]int, smem int, args []any) error {
	b.calls = append(b.calls, "launch "+string(fn.(fakeFunction)))
	b.launched = append(b.launched, fakeLaunch{grid, [3]int{1, 1, 1}, args})
	return nil
}

type fakeModule struct{}

func (fakeModule) Function(entry string) (Function, error) { return fakeFunction(entry), nil }
func (fakeModule) Unload() error                           { return nil }

type fakeFunction string

func (fakeFunction) Resources(int, int) (Resources, error) { return Resources{Registers: 32}, nil }

// fakeDependentBackend also implements DependentLauncher; when unsupported
// it answers like a CUDA driver without cuLaunchKernelEx.
type fakeDependentBackend struct {
	fakeBackend
	unsupported bool
	tried       int // LaunchDependent calls
}

func (b *fakeDependentBackend) LaunchDependent(fn Function, grid, block [3]int, smem int, args []any) error {
	b.tried++
	if b.unsupported {
		return fmt.Errorf("fake: %w", ErrNoDependentLaunch)
	}
	b.calls = append(b.calls, "dependent "+string(fn.(fakeFunction)))
	return nil
}

// dependentProgram launches a, then b and c as dependent launches.
var dependentProgram = kernels.Program{PTX: "// fake", Launches: []kernels.Launch{
	{Entry: "a", Grid: configs.Grid(8, 1, 1), Block: [3]int{128, 1, 1}, Args: []kernels.Arg{{Scalar: configs.Int(1)}}},
	{Entry: "b", Grid: configs.Grid(8, 1, 1), Block: [3]int{128, 1, 1}, Dependent: true},
	{Entry: "c", Grid: configs.Grid(8, 1, 1), Block: [3]int{128, 1, 1}, Dependent: true},
}}

// runTwice loads dependentProgram on be, runs it twice, and checks the
// launches the fake backend fb (be itself or the one it embeds) saw.
func runTwice(t *testing.T, be Backend, fb *fakeBackend, want ...string) {
	t.Helper()
	ss := NewSession(be)
	l, err := ss.Load(dependentProgram)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := ss.Run(l); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(fb.calls, want) {
		t.Errorf("launches %q, want %q", fb.calls, want)
	}
}

func TestRunDependentLaunches(t *testing.T) {
	be := &fakeDependentBackend{}
	runTwice(t, be, &be.fakeBackend, "launch a", "dependent b", "dependent c", "launch a", "dependent b", "dependent c")
}

func TestRunDependentWithoutDependentLauncher(t *testing.T) {
	be := &fakeBackend{}
	runTwice(t, be, be, "launch a", "launch b", "launch c", "launch a", "launch b", "launch c")
}

func TestRunDependentFallsBackWhenUnsupported(t *testing.T) {
	// A DependentLauncher whose driver cannot launch dependently: the
	// launches go through Launch, and after the first refusal the session
	// no longer asks.
	be := &fakeDependentBackend{unsupported: true}
	runTwice(t, be, &be.fakeBackend, "launch a", "launch b", "launch c", "launch a", "launch b", "launch c")
	if be.tried != 1 {
		t.Errorf("LaunchDependent called %d times, want 1", be.tried)
	}
}

func TestLoadRejectsDependentFirstLaunch(t *testing.T) {
	be := &fakeDependentBackend{}
	p := kernels.Program{PTX: "// fake", Launches: slices.Clone(dependentProgram.Launches)}
	p.Launches[0].Dependent = true
	l, err := NewSession(be).Load(p)
	if err == nil {
		t.Fatalf("Load accepted a program whose first launch is dependent: %+v", l)
	}
	if !strings.Contains(err.Error(), "first launch") || !strings.Contains(err.Error(), "(a)") {
		t.Errorf("error %q does not say that the first launch (a) is dependent", err)
	}
	if be.loads != 0 {
		t.Errorf("the module was compiled %d times before the program was rejected", be.loads)
	}
}

// TestFiniteErr: a response whose error against the reference is not
// finite still encodes (the worker died on one before).
func TestFiniteErr(t *testing.T) {
	for _, x := range []float64{math.Inf(1), math.Inf(-1), math.NaN()} {
		o := Outcome{MaxAbsErr: finiteErr(x), MaxRelErr: finiteErr(x)}
		if _, err := json.Marshal(o); err != nil || o.MaxAbsErr != math.MaxFloat64 {
			t.Errorf("%v: %v, %v", x, o.MaxAbsErr, err)
		}
	}
	if finiteErr(0.5) != 0.5 {
		t.Error("a finite error changed")
	}
}
