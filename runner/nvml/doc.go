// Package nvml reads a GPU's clocks, temperature, power and clock event
// (throttle) reasons through NVML (github.com/NVIDIA/go-nvml), as the
// runner's Telemetry. go-nvml loads libnvidia-ml.so.1 when Open is called,
// so a binary built with this package starts on machines without the
// library: Open then returns an error that says so, and the worker
// measures without telemetry and says so once in the run's header.
//
// NVML is initialised once per process and shut down when the last
// telemetry is closed.
package nvml
