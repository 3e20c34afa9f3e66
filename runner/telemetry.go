package runner

import (
	"fmt"
	"slices"

	"github.com/gradtune/gradtune/eval"
)

// Reading is a GPU's state at one moment, as NVML reports it.
type Reading struct {
	SMClockMHz, MemClockMHz int
	TemperatureC            int
	PowerW                  float64
	// Reasons is the mask of NVML clock event reasons
	// (nvmlClocksEventReasons): why the clocks are below their maximum.
	Reasons uint64
}

// Throttled reports whether the GPU was slowed down by a cap (see
// eval.ThrottleReasons).
func (r Reading) Throttled() bool { return r.Reasons&eval.ThrottleReasons != 0 }

// String is "SM 1980 MHz, memory 3201 MHz, 41 °C, 312 W" and the
// reasons, if any.
func (r Reading) String() string {
	s := fmt.Sprintf("SM %d MHz, memory %d MHz, %d °C, %.0f W", r.SMClockMHz, r.MemClockMHz, r.TemperatureC, r.PowerW)
	if names := eval.ReasonNames(r.Reasons); len(names) > 0 {
		s += fmt.Sprintf(" (clock event reasons: %v)", names)
	}
	return s
}

// Telemetry reads a GPU's clocks, temperature, power and throttle reasons
// (runner/nvml implements it with NVML; tests fake it).
type Telemetry interface {
	Read() (Reading, error)
	Close() error
}

// OpenTelemetry opens the telemetry of the GPU with the given UUID. An
// error says why there is none (no NVML library, no such device); the
// worker then measures without it and says so once.
type OpenTelemetry func(uuid string) (Telemetry, error)

// gauge collects the readings of one evaluation: one before sampling and
// one after every batch, so that each batch has a reading on either side.
type gauge struct {
	t        Telemetry
	readings []Reading
	err      error
}

// read takes a reading and reports whether the GPU throttled since the
// previous one (the batch in between is then flagged).
func (g *gauge) read() (throttled bool) {
	if g == nil || g.t == nil || g.err != nil {
		return false
	}
	r, err := g.t.Read()
	if err != nil {
		g.err = err
		return false
	}
	g.readings = append(g.readings, r)
	if n := len(g.readings); n >= 2 {
		return r.Throttled() || g.readings[n-2].Throttled()
	}
	return r.Throttled()
}

// summary is the evaluation's GPU state: median clocks, the highest
// temperature and power, every reason seen.
func (g *gauge) summary() Reading {
	if g == nil || len(g.readings) == 0 {
		return Reading{}
	}
	var sm, mem []int
	var out Reading
	for _, r := range g.readings {
		sm, mem = append(sm, r.SMClockMHz), append(mem, r.MemClockMHz)
		out.TemperatureC = max(out.TemperatureC, r.TemperatureC)
		out.PowerW = max(out.PowerW, r.PowerW)
		out.Reasons |= r.Reasons
	}
	slices.Sort(sm)
	slices.Sort(mem)
	out.SMClockMHz, out.MemClockMHz = sm[len(sm)/2], mem[len(mem)/2]
	return out
}
