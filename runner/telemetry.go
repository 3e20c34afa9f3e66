package runner

import (
	"fmt"
	"slices"
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

// NVML clock event reasons that lower the clocks of a busy GPU: a software
// power cap, a hardware slowdown, software and hardware thermal slowdown,
// and the power brake. The others (idle, application clock settings, sync
// boost, display clock) do not make a measurement slower than the same
// GPU's normal state.
const (
	ReasonSWPowerCap   uint64 = 0x4
	ReasonHWSlowdown   uint64 = 0x8
	ReasonSWThermal    uint64 = 0x20
	ReasonHWThermal    uint64 = 0x40
	ReasonHWPowerBrake uint64 = 0x80
	ThrottleReasons           = ReasonSWPowerCap | ReasonHWSlowdown | ReasonSWThermal | ReasonHWThermal | ReasonHWPowerBrake
	reasonGPUIdle      uint64 = 0x1
	reasonAppClocks    uint64 = 0x2
	reasonSyncBoost    uint64 = 0x10
	reasonDisplayClock uint64 = 0x100
	reasonBoardLimit   uint64 = 0x200
	reasonReliability  uint64 = 0x400
)

// Throttled reports whether the GPU was slowed down by a cap (see
// ThrottleReasons).
func (r Reading) Throttled() bool { return r.Reasons&ThrottleReasons != 0 }

// String is "SM 1980 MHz, memory 3201 MHz, 41 °C, 312 W" and the
// reasons, if any.
func (r Reading) String() string {
	s := fmt.Sprintf("SM %d MHz, memory %d MHz, %d °C, %.0f W", r.SMClockMHz, r.MemClockMHz, r.TemperatureC, r.PowerW)
	if names := ReasonNames(r.Reasons); len(names) > 0 {
		s += fmt.Sprintf(" (clock event reasons: %v)", names)
	}
	return s
}

// ReasonNames names the bits of an NVML clock event reason mask.
func ReasonNames(mask uint64) []string {
	var out []string
	for _, r := range []struct {
		bit  uint64
		name string
	}{{reasonGPUIdle, "idle"}, {reasonAppClocks, "application clocks"}, {ReasonSWPowerCap, "sw power cap"},
		{ReasonHWSlowdown, "hw slowdown"}, {reasonSyncBoost, "sync boost"}, {ReasonSWThermal, "sw thermal"},
		{ReasonHWThermal, "hw thermal"}, {ReasonHWPowerBrake, "hw power brake"}, {reasonDisplayClock, "display clock"},
		{reasonBoardLimit, "board limit"}, {reasonReliability, "reliability"}} {
		if mask&r.bit != 0 {
			out = append(out, r.name)
		}
	}
	return out
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
