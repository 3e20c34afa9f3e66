// Package runner is gradtune's tuning loop and measurement protocol.
//
// The parent side (Runner) walks every (family, shape, params) point,
// emits the variant's PTX, skips what a Recorder says is already done, and
// sends the rest to a worker. The worker side (Serve) owns the GPU: it
// JIT-compiles the module (a stage of its own), reads the kernel's
// resources, prescreens, validates the outputs against the family's float64
// CPU reference on deterministic inputs, and only then measures.
//
// The worker is a separate process (the tune binary re-executed in a hidden
// mode) so that a sticky CUDA error or a hung kernel kills only the worker:
// the parent records launch_error or timeout for that variant, starts a new
// worker and goes on.
//
// Measurement protocol (cold mode): a few untimed warm-up runs; before each
// sample an asynchronous memset of a buffer at least twice the L2 size
// evicts the inputs from L2 (as triton.testing.do_bench does; the program
// then writes back the memset's dirty lines as it would a previous
// kernel's); CUDA events bracket the whole program
// (including the zeroing of accumulate buffers); samples are taken in
// batches and stop once there are at least MinSamples and the 95%
// order-statistic confidence interval of the median is within TargetCI of
// it, or at MaxSamples, or at MaxTime. Hot mode skips the flush.
//
// Launches marked Dependent (kernels.Launch.Dependent) use programmatic
// dependent launch where the backend implements DependentLauncher (CUDA with
// cuLaunchKernelEx), so their launch latency overlaps the previous launch's
// tail; elsewhere, and on drivers without cuLaunchKernelEx, they are plain
// launches in stream order. Session.Load rejects a program whose first launch
// is dependent.
//
// # Watchdog
//
// Before the first evaluation of a shape the parent asks the worker to
// prepare it (inputs and the float64 reference: CPU work, under
// Options.PrepareTimeout). Each evaluation then runs under a deadline
// derived from the protocol (Deadline: 20 s for the JIT, validation and
// warm-up, plus four times MaxTimeMS); a worker that has not answered by
// then is killed, the variant recorded as timeout, and a fresh worker with
// a fresh CUDA context takes the next one. A sticky CUDA error (an illegal
// address, an illegal instruction, a trap) makes the worker answer
// launch_error and exit; the parent restarts it too. kernels/faults plants
// each of these.
//
// # Winners
//
// Choose picks a shape's winner by WinnerRule: the fastest median, except
// that among the variants whose 95% CI overlaps the fastest's (a
// statistical tie) the one with the fewest registers wins, then the least
// shared memory, then the lowest median. The count of tied variants and
// the criterion that decided are recorded with the winner.
//
// # Telemetry
//
// The worker reads the GPU's clocks, temperature, power and clock event
// reasons (Telemetry; runner/nvml with NVML) before the first batch of
// samples and after each. A batch with a throttle reason (power or
// thermal cap, hardware slowdown, power brake) on either side is flagged,
// and its samples are left out of the median and its interval
// (SummarizeKept) unless fewer than six would remain; sampling goes on
// until MinSamples unflagged samples converge. Without NVML the worker
// says why once (DeviceInfo.Telemetry) and measures without it.
//
// # Without a GPU
//
// NewLocalWorker runs the same stages in process over another backend (the
// interpreter, whose instruction limit stops a kernel that never ends as a
// timeout) with samples from a Timer; Replay answers from recorded samples
// (a bootstrap resample per evaluation), the stand-in GPU of the
// regression gate's tests and of tune bench --replay.
//
// The runner never talks SQL: results go through the Recorder interface,
// which the command adapts to the store.
package runner
