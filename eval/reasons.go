package eval

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
