package runner

import (
	"fmt"
	"math"
	"time"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/runner/cuda"
)

// BatchSampler times n runs back to back and returns their times in µs.
type BatchSampler interface {
	Sample(n int, run func() error, mode eval.Mode) ([]float64, error)
}

// Sampler is the tables' sample on one CUDA stream: a pair of events
// around one run, each run after the L2 flush of the mode (cold: a write
// of twice the L2, never under 128 MiB). The worker and trainers
// (examples/trainer) both time through it and Measure, so that a table's
// figure and a trainer's come from one protocol.
type Sampler struct {
	ctx    *cuda.Context
	stream *cuda.Stream
	flush  cuda.DevicePtr
	flushN int
	events []*cuda.Event
}

// NewSampler allocates the flush buffer for a GPU of l2Bytes of L2.
func NewSampler(ctx *cuda.Context, stream *cuda.Stream, l2Bytes int) (*Sampler, error) {
	s := &Sampler{ctx: ctx, stream: stream, flushN: max(2*l2Bytes, 128<<20)}
	var err error
	if s.flush, err = ctx.Alloc(s.flushN); err != nil {
		return nil, fmt.Errorf("allocating the %d-byte L2 flush buffer: %w", s.flushN, err)
	}
	return s, nil
}

// Close frees the flush buffer and the events.
func (s *Sampler) Close() {
	for _, e := range s.events {
		e.Destroy()
	}
	s.ctx.Free(s.flush)
}

// flushL2 prepares the cache state of one sample: in cold mode a memset
// of a buffer at least twice the L2 size evicts the program's inputs and
// outputs (as triton.testing.do_bench does). The memset leaves up to an L2
// of dirty lines, whose write-back the timed program pays for, just as its
// own dirty outputs are written back after the timed region: a balanced
// steady state; the flush does not clean L2 (docs/architecture.md).
func (s *Sampler) flushL2(mode eval.Mode, i int) error {
	if mode == eval.Hot {
		return nil
	}
	return s.ctx.MemsetD32Async(s.flush, uint32(i+1), s.flushN/4, s.stream)
}

// Sample times n runs with CUDA events, each preceded by the L2 flush of
// mode, and returns the times in µs. Events are pooled.
func (s *Sampler) Sample(n int, run func() error, mode eval.Mode) ([]float64, error) {
	if n < 1 {
		return nil, fmt.Errorf("sampling %d runs: want at least 1", n)
	}
	for len(s.events) < 2*n {
		e, err := s.ctx.NewEvent()
		if err != nil {
			return nil, err
		}
		s.events = append(s.events, e)
	}
	evs := s.events
	for i := 0; i < n; i++ {
		if err := s.flushL2(mode, i); err != nil {
			return nil, err
		}
		if err := evs[2*i].Record(s.stream); err != nil {
			return nil, err
		}
		if err := run(); err != nil {
			return nil, err
		}
		if err := evs[2*i+1].Record(s.stream); err != nil {
			return nil, err
		}
	}
	if err := evs[2*n-1].Synchronize(); err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i := range out {
		ms, err := cuda.Elapsed(evs[2*i], evs[2*i+1])
		if err != nil {
			return nil, err
		}
		// Rounded to the nanosecond, below the events' resolution, so
		// that stored samples stay short.
		out[i] = math.Round(float64(ms)*1e6) / 1e3
	}
	return out, nil
}

// warmBatch is the runs per batch of the warm time.
const warmBatch = 10

// Measure is the timed stage of the tables' protocol: mo.WarmMS of the
// sampling loop's own work in its rhythm (batches of warmBatch runs, the
// GPU idle mo.IdleMS after each: a GEMM run without pause would reach the
// power cap before the first sample), mo.Warmup runs, then batches of samples
// (mo.Batch(); the first AbandonAfter when the abandon rule is on), each followed by at least mo.IdleMS with the GPU
// idle, until the median converges, the abandon rule stops it, or
// MaxSamples or MaxTimeMS is reached. tel, when not nil, is read before
// the first batch and after each (in the idle time); a batch with a
// throttle reason on either side is flagged (Measured.Throttled).
func Measure(s BatchSampler, run func() error, mo MeasureOpts, tel Telemetry) (Measured, error) {
	idleFor := time.Duration(mo.IdleMS * float64(time.Millisecond))
	for start := time.Now(); time.Since(start).Seconds()*1e3 < mo.WarmMS; {
		if _, err := s.Sample(warmBatch, run, mo.Mode); err != nil {
			return Measured{}, err
		}
		time.Sleep(idleFor)
	}
	for i := 0; i < mo.Warmup; i++ {
		if err := run(); err != nil {
			return Measured{}, err
		}
	}
	g := &gauge{t: tel}
	g.read()
	start := time.Now()
	var m Measured
	for {
		n := min(mo.Batch(), mo.MaxSamples-len(m.Samples))
		if mo.AbandonAbove > 0 && len(m.Samples) == 0 {
			n = min(max(mo.AbandonAfter, minKept), mo.MaxSamples)
		}
		xs, err := s.Sample(n, run, mo.Mode)
		if err != nil {
			return Measured{}, err
		}
		idle := time.Now().Add(idleFor)
		if g.read() {
			for i := range xs {
				m.Throttled = append(m.Throttled, len(m.Samples)+i)
			}
		}
		m.Samples = append(m.Samples, xs...)
		m.Abandoned = Abandon(m.Samples, m.Throttled, mo)
		if m.Abandoned || converged(m.Samples, m.Throttled, mo) || time.Since(start).Seconds()*1e3 > mo.MaxTimeMS {
			m.GPU = g.summary()
			return m, nil
		}
		time.Sleep(time.Until(idle))
	}
}
