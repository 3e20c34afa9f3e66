package nvml

import (
	"errors"
	"fmt"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gradtune/gradtune/runner"
)

var (
	mu   sync.Mutex
	refs int
	lib  = gonvml.New()
)

// Open returns the telemetry of the GPU whose UUID is uuid
// ("GPU-xxxxxxxx-...", as runner.DeviceInfo has it). It fails when NVML
// cannot be loaded or initialised, or knows no such GPU.
func Open(uuid string) (runner.Telemetry, error) {
	mu.Lock()
	defer mu.Unlock()
	if refs == 0 {
		if ret := lib.Init(); ret != gonvml.SUCCESS {
			return nil, fmt.Errorf("NVML unavailable: %w", errorOf(ret))
		}
	}
	refs++
	dev, ret := lib.DeviceGetHandleByUUID(uuid)
	if ret != gonvml.SUCCESS {
		release()
		return nil, fmt.Errorf("NVML: device %s: %w", uuid, errorOf(ret))
	}
	return &telemetry{dev: dev}, nil
}

// release drops a reference; the last one shuts NVML down. mu is held.
func release() {
	if refs--; refs == 0 {
		lib.Shutdown()
	}
}

func errorOf(ret gonvml.Return) error {
	if ret == gonvml.ERROR_LIBRARY_NOT_FOUND {
		return errors.New("libnvidia-ml.so.1 not found")
	}
	return errors.New(ret.String())
}

type telemetry struct {
	dev    gonvml.Device
	closed bool
}

// Read takes one reading. A quantity the GPU does not report (power on
// some boards) reads as 0; a failed clock query is an error.
func (t *telemetry) Read() (runner.Reading, error) {
	sm, ret := t.dev.GetClockInfo(gonvml.CLOCK_SM)
	if ret != gonvml.SUCCESS {
		return runner.Reading{}, fmt.Errorf("NVML: SM clock: %w", errorOf(ret))
	}
	mem, ret := t.dev.GetClockInfo(gonvml.CLOCK_MEM)
	if ret != gonvml.SUCCESS {
		return runner.Reading{}, fmt.Errorf("NVML: memory clock: %w", errorOf(ret))
	}
	r := runner.Reading{SMClockMHz: int(sm), MemClockMHz: int(mem)}
	if temp, ret := t.dev.GetTemperature(gonvml.TEMPERATURE_GPU); ret == gonvml.SUCCESS {
		r.TemperatureC = int(temp)
	}
	if mw, ret := t.dev.GetPowerUsage(); ret == gonvml.SUCCESS {
		r.PowerW = float64(mw) / 1e3
	}
	reasons, ret := t.dev.GetCurrentClocksEventReasons()
	if ret != gonvml.SUCCESS {
		reasons, ret = t.dev.GetCurrentClocksThrottleReasons()
	}
	if ret == gonvml.SUCCESS {
		r.Reasons = reasons
	}
	return r, nil
}

func (t *telemetry) Close() error {
	mu.Lock()
	defer mu.Unlock()
	if !t.closed {
		t.closed = true
		release()
	}
	return nil
}
