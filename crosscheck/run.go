package crosscheck

import (
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/runner/sim"
)

// Side is what one backend made of a case.
type Side struct {
	Check runner.Check
	Err   error
	Outs  map[string][]float64 // every output and accumulate buffer
	MS    float64              // wall time
}

// Report is the outcome of a cross-check.
type Report struct {
	Cases            []*Case
	Probes           []ProbeResult
	SimTime, GPUTime time.Duration
}

// Run validates every case on the interpreter and then on gpu, and runs
// the probes on both. progress gets a line every 50 GPU cases. gpu must be
// used from the calling goroutine's OS thread only (CUDA contexts are
// per thread): the caller locks it.
func Run(gpu runner.Backend, cases []*Case, seed uint64, progress io.Writer) (Report, error) {
	probes, err := sim.Probes()
	if err != nil {
		return Report{}, fmt.Errorf("building the probes: %w", err)
	}
	rep := Report{Cases: cases}
	start := time.Now()
	groups := groupByShape(cases)
	runOnInterpreter(groups, seed)
	rep.SimTime = time.Since(start)
	start = time.Now()
	runOnGPU(gpu, groups, seed, len(cases), progress)
	rep.GPUTime = time.Since(start)
	for _, p := range probes {
		rep.Probes = append(rep.Probes, runProbe(gpu, p))
	}
	return rep, nil
}

// groupByShape groups cases by (family, shape), in order of first
// appearance, so each group shares one session's buffers.
func groupByShape(cases []*Case) [][]*Case {
	index := map[string]int{}
	var groups [][]*Case
	for _, c := range cases {
		k := c.F.Name() + "/" + c.S.Key()
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], c)
	}
	return groups
}

// runOnInterpreter runs the groups in a pool, one interpreter per group.
func runOnInterpreter(groups [][]*Case, seed uint64) {
	next := make(chan []*Case, len(groups))
	for _, g := range groups {
		next <- g
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range next {
				ss := runner.NewSession(sim.New(sim.Options{Workers: 1}))
				for _, c := range g {
					if c.EmitErr == nil {
						c.Sim = runSide(ss, c, seed)
					}
				}
				ss.Release()
			}
		}()
	}
	wg.Wait()
}

// runOnGPU runs the cases on gpu, except those the interpreter found
// faulting and every case after a sticky CUDA error.
func runOnGPU(gpu runner.Backend, groups [][]*Case, seed uint64, total int, progress io.Writer) {
	gss := runner.NewSession(gpu)
	defer gss.Release()
	var sticky error
	done, start := 0, time.Now()
	for _, g := range groups {
		for _, c := range g {
			if done++; done%50 == 0 {
				fmt.Fprintf(progress, "crosscheck: %d/%d cases on the GPU (%.0fs)\n", done, total, time.Since(start).Seconds())
			}
			switch {
			case c.EmitErr != nil:
			case sticky != nil:
				c.GPU.Err = fmt.Errorf("not run: an earlier case left the CUDA context unusable: %w", sticky)
			case sim.IsExecError(c.Sim.Err):
				c.GPU.Err = fmt.Errorf("not run on the GPU: the interpreter found %w", c.Sim.Err)
			default:
				c.GPU = runSide(gss, c, seed)
				if c.GPU.Err != nil && cuda.IsSticky(c.GPU.Err) {
					sticky = c.GPU.Err
				}
			}
		}
	}
}

// runSide validates c's program on ss and keeps every output and
// accumulate buffer.
func runSide(ss *runner.Session, c *Case, seed uint64) (r Side) {
	start := time.Now()
	defer func() { r.MS = float64(time.Since(start).Microseconds()) / 1e3 }()
	if r.Err = ss.Prepare(c.F, c.S, seed); r.Err != nil {
		return r
	}
	l, err := ss.Load(c.Prog)
	if err != nil {
		r.Err = err
		return r
	}
	defer l.Unload()
	if r.Check, r.Err = ss.Validate(l); r.Err != nil {
		return r
	}
	r.Outs = map[string][]float64{}
	for _, b := range c.F.Buffers(c.S) {
		if b.Role != kernels.Output && b.Role != kernels.Accumulate && b.Role != kernels.InOut {
			continue
		}
		if r.Outs[b.Name], r.Err = ss.Output(b.Name); r.Err != nil {
			return r
		}
	}
	return r
}
