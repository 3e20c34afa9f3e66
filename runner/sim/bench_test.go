package sim_test

import (
	"testing"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

// BenchmarkInterpreter runs gelu_bwd (f32, 64×4096, a one-shot grid of
// 128-thread CTAs with float4 accesses) on the interpreter and reports
// thread-instructions per second: the sum over executed warp
// instructions of the lanes that executed them, per second of wall time.
// Run it on one core with -cpu 1 (the backend then uses one worker).
func BenchmarkInterpreter(b *testing.B) {
	benchFamily(b, "gelu_bwd", variants.Params{"block": "128", "vec": "4", "ept": "1", "grid": "once"})
}

// BenchmarkInterpreterShared runs softmax_bwd (f32, 64×4096, the first
// variant of its space): row sums reduced through shared memory between
// bar.sync barriers, so the race detector and the barrier model are on
// its path.
func BenchmarkInterpreterShared(b *testing.B) {
	benchFamily(b, "softmax_bwd", variants.Params{"vec": "4", "vpt": "4"})
}

func benchFamily(b *testing.B, name string, params variants.Params) {
	f, err := catalog.Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	s := variants.Shape{Dims: []variants.Dim{{Name: "m", Value: 64}, {Name: "n", Value: 4096}}, DType: dtype.F32}
	p := f.Space(s).Complete(params)
	prog, err := f.Emit(s, p)
	if err != nil {
		b.Fatal(err)
	}
	be := sim.New(sim.Options{})
	ss := runner.NewSession(be)
	if err := ss.Prepare(f, s, 1); err != nil {
		b.Fatal(err)
	}
	l, err := ss.Load(prog)
	if err != nil {
		b.Fatal(err)
	}
	start := be.ThreadInstructions()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ss.Run(l); err != nil {
			b.Fatal(err)
		}
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := be.ThreadInstructions() - start
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "thread-inst/s")
	b.ReportMetric(float64(n)/float64(b.N), "thread-inst/op")
}
