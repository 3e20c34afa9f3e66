package runner

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// Recorded is one recorded evaluation that a Replay answers with.
type Recorded struct {
	Kernel, ShapeKey, Params string
	Samples                  []float64 // µs
	Registers, SmemBytes     int
}

// Replay is a statistical model of a GPU built from recorded evaluations:
// a variant's samples are a bootstrap resample (drawn with replacement) of
// its recorded samples, as many as were recorded, times the replay's
// drift factor, plus what Spin says a planted launch adds. It
// stands in for the GPU where none is present: the regression gate's
// detection tests and tune bench --replay.
//
// Draws come from one stream in the order they are made, unless Keyed is
// set: then each variant draws from its own stream, seeded by the
// replay's seed, the variant's key and how many times it was drawn
// before, so its samples do not depend on which other variants were
// drawn, or in what order: a run split across workers or shards draws
// what the whole run would.
type Replay struct {
	recs  map[string]Recorded
	seed  uint64
	rng   *rand.Rand
	drift float64
	// Keyed gives each variant its own stream of draws.
	Keyed bool
	// Spin is the time a program's planted launches add to each of its
	// samples (tune bench --replay: the delay launch of
	// --plant-slowdown); nil: none.
	Spin func(kernels.Program) time.Duration
	// CopyGBps is the copy bandwidth workers report (the recorded run's);
	// 0: none was recorded, and CopyBandwidth fails.
	CopyGBps float64

	mu    sync.Mutex        // guards rng and draws
	draws map[string]uint64 // Keyed: draws made per variant
}

// NewReplay returns a replay of recs drawing from seed. drift is the
// standard deviation of a factor common to every sample of the replay (a
// model of night-to-night change of the whole GPU: 0.003 is ±0.3%); 0 for
// none.
func NewReplay(recs []Recorded, seed uint64, drift float64) *Replay {
	rp := &Replay{recs: map[string]Recorded{}, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x6754554e)), drift: 1, draws: map[string]uint64{}}
	for _, r := range recs {
		rp.recs[replayKey(r.Kernel, r.ShapeKey, r.Params)] = r
	}
	if drift > 0 {
		rp.drift = 1 + drift*rp.rng.NormFloat64()
	}
	return rp
}

func replayKey(kernel, shapeKey, params string) string { return kernel + " " + shapeKey + " " + params }

// Draw returns new samples of the variant, extraUS added to each, and
// false when nothing was recorded for it.
func (rp *Replay) Draw(kernel, shapeKey, params string, extraUS float64) ([]float64, bool) {
	r, ok := rp.recs[replayKey(kernel, shapeKey, params)]
	if !ok || len(r.Samples) == 0 {
		return nil, false
	}
	rp.mu.Lock() // workers may share a replay
	defer rp.mu.Unlock()
	rng := rp.stream(replayKey(kernel, shapeKey, params))
	out := make([]float64, len(r.Samples))
	for i := range out {
		out[i] = r.Samples[rng.IntN(len(r.Samples))]*rp.drift + extraUS
	}
	return out, true
}

// stream is the generator of key's next draw: the shared one, or with
// Keyed the key's own.
func (rp *Replay) stream(key string) *rand.Rand {
	if !rp.Keyed {
		return rp.rng
	}
	n := rp.draws[key]
	rp.draws[key] = n + 1
	h := fnv.New64a()
	h.Write([]byte(key))
	return rand.New(rand.NewPCG(rp.seed^h.Sum64(), n))
}

// Worker returns a constructor of workers that answer from rp, describing
// their device as info.
func (rp *Replay) Worker(info DeviceInfo) func() (Worker, error) {
	if info.Telemetry == "" {
		info.Telemetry = "no telemetry: replaying recorded samples"
	}
	return func() (Worker, error) { return &replayWorker{rp: rp, info: info}, nil }
}

type replayWorker struct {
	rp   *Replay
	info DeviceInfo
}

func (w *replayWorker) Hello() (DeviceInfo, error) { return w.info, nil }
func (w *replayWorker) CopyBandwidth() (float64, error) {
	if w.rp.CopyGBps > 0 {
		return w.rp.CopyGBps, nil
	}
	return 0, errors.New("replay: no copy bandwidth was recorded")
}
func (w *replayWorker) Close() error { return nil }

func (w *replayWorker) Prepare(context.Context, *evalRequest) (*evalResponse, error) {
	return &evalResponse{Outcome: Outcome{Status: eval.OK}}, nil
}

func (w *replayWorker) Eval(_ context.Context, r *evalRequest, m MeasureOpts) (*evalResponse, error) {
	dt, err := dtype.Parse(r.DType)
	if err != nil {
		return &evalResponse{Outcome: Outcome{Status: eval.LaunchError, Message: err.Error()}}, nil
	}
	key := variants.Shape{Dims: r.Dims, DType: dt}.Key()
	var spinUS float64
	if w.rp.Spin != nil {
		spinUS = float64(w.rp.Spin(r.Program).Nanoseconds()) / 1e3
	}
	xs, ok := w.rp.Draw(r.Kernel, key, r.Params, spinUS)
	if !ok {
		return &evalResponse{Outcome: Outcome{Status: eval.LaunchError,
			Message: fmt.Sprintf("replay: nothing recorded for %s %s [%s]", r.Kernel, key, r.Params)}}, nil
	}
	rec := w.rp.recs[replayKey(r.Kernel, key, r.Params)]
	xs, abandoned := replaySampling(xs, m)
	return &evalResponse{Outcome: Outcome{Status: eval.OK, Samples: xs, Registers: rec.Registers, SmemBytes: rec.SmemBytes,
		Abandoned: abandoned}}, nil
}

// replaySampling applies the sampling protocol's cap and the abandon rule
// to drawn samples as the GPU worker would, batch by batch: the first
// batch of AbandonAfter samples when abandoning, then batches of 10.
func replaySampling(xs []float64, m MeasureOpts) ([]float64, bool) {
	if m.MaxSamples > 0 && len(xs) > m.MaxSamples {
		xs = xs[:m.MaxSamples]
	}
	if m.AbandonAbove <= 0 {
		return xs, false
	}
	for n := max(m.AbandonAfter, minKept); n < len(xs); n += max(m.MinSamples, 10) {
		if Abandon(xs[:n], nil, m) {
			return xs[:n], true
		}
	}
	return xs, Abandon(xs, nil, m)
}
