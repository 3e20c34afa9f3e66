// Package runner is gradtune's tuning loop and measurement protocol.
//
// The parent side (Runner) walks every (family, shape, params) point,
// emits the variant's PTX, skips what a Recorder says is already done, and
// sends the rest to a worker. The worker side (Serve) owns the GPU: it
// JIT-compiles the module (a stage of its own), reads the kernel's
// resources, prescreens, validates the outputs against the family's float64
// CPU reference on deterministic inputs (and on exact ones: Input sets),
// and only then measures. The GPU
// worker compares on the device (Session.CheckOnDevice): the reference is
// uploaded once per shape as f64 and a check kernel applies the family's
// tolerance to every element, so only the largest errors and the first
// bad index come back, not the output; elsewhere the comparison runs here.
// With a RefCache (tune bench --ref-cache; tune keeps one for its run,
// so that a final round's fresh worker reads its shape's references) the
// references are kept on disk, keyed by the executable's SHA-256, and a
// later process of the same binary reads them instead of computing them
// again.
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
// it, or at MaxSamples, or at MaxTime. Hot mode skips the flush. The
// sample (Sampler) and the loop (Measure) are exported: a trainer times a
// table entry with the code that measured it (examples/trainer).
//
// Launches marked Dependent (kernels.Launch.Dependent) use programmatic
// dependent launch where the backend implements DependentLauncher (CUDA with
// cuLaunchKernelEx), so their launch latency overlaps the previous launch's
// tail; elsewhere, and on drivers without cuLaunchKernelEx, they are plain
// launches in stream order. Session.Load rejects a program whose first launch
// is dependent.
//
// # Input sets
//
// A session validates every program on the family's random inputs under
// its tolerance and, for a family with exact inputs (kernels.Exacter), on
// those too with zero tolerance: the exact inputs' reference is the
// family's Reference rounded once to each output buffer's dtype, computed
// once per shape with the other. Both sets' input buffers live on the
// device side by side (a program is bound to each, tensor maps encoded
// for each) and share the outputs; Validate runs the exact set first, so
// the outputs hold the random inputs' results afterwards, and Run, which
// is timed, uses the random inputs. Check.Sets has each set's outcome and
// a failure's message names the set ("exact inputs: dx[7] = 3, want 4
// (atol 0, rtol 0)"). A baseline is validated on the random inputs only:
// a vendor library's arithmetic is not the family's to hold exact
// (cuBLASLt may reduce split-K partials in the output type).
//
// # Watchdog
//
// Before the first evaluation of a shape the parent asks the worker to
// prepare it (inputs and the float64 reference, of each input set: CPU
// work, under Options.PrepareTimeout). Each evaluation then runs under a deadline
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
// Hopper programs may pass TMA tensor maps (kernels.Arg.TensorMap) and
// launch in thread-block clusters (kernels.Launch.Cluster). Session.Load
// checks both before compiling: the backend must implement TensorMapEncoder
// and ClusterLauncher (CUDA does; a backend without them fails the program
// with an error naming the interface), a cluster has at most 16 blocks and
// divides the grid (a GridPerSM grid is rounded down to whole clusters), and
// a tensor map passes CheckTensorMap (rank, element type, 16-byte strides,
// boxes of at most 256, the swizzle span, an offset that is a multiple of
// 16, and the whole tensor, from its offset to its last byte, inside its
// buffer). Load then encodes each map over its buffer's address (the
// session's data buffer or the program's own) plus its offset and passes
// its 128 bytes by value. Clustered launches are never dependent. Dynamic shared memory above
// 48 KiB is opted in when the program is loaded, before any launch, and more
// than the device allows a block (227 KiB on sm_90) is a load error.
//
// # Vendor baselines
//
// A family that implements kernels.Baseliner names, per shape, vendor
// implementations of the same problem (a kernels.GEMMCall, after a
// program of the family's own when Baseline.Before is set: the
// dequantization of nf4_gemm_bwd's dequant+cublas, loaded like a variant
// and run ahead of the call inside the timed run). The Runner
// evaluates them after the shape's variants, in the worker, with the
// variants' protocol: the call is bound to the session's buffers (checking
// types, leading dimensions and extents), Validate poisons the outputs and
// compares the buffers the call writes with the family's reference, then
// the same warm-up, L2 flush and adaptive sampling time it, and Validate
// runs again. On CUDA the row-major call runs as the column-major
// Cᵀ = op(B)ᵀ·op(A)ᵀ with f32 compute on the worker's stream. The name
// says which library and how:
//
//   - BaselineCuBLAS ("cublas") is cublasGemmEx with the default algorithm
//     (Session.LoadBaseline): cuBLAS's one heuristic pick.
//   - BaselineLtBest ("cublaslt-best") is cuBLASLt's heuristic top
//     LtCandidates (8) algorithms, each validated, timed and validated
//     again like a variant (evaluateBest, in one worker request whose
//     watchdog allows each algorithm its deadline); the fastest valid one
//     by median is the result. Outcome.Algorithm is its configuration, and
//     the result's Message names it: "cuBLASLt heuristic rank 3: algo 66,
//     tile 128x256, stages 64x4, split-K 1, ...; medians by rank: 1 98.10
//     µs, 2 invalid, ...". The algorithm goes in the Message, not in the
//     params: params are part of the content key, which Done looks up
//     before the choice is made, and the Message column holds any text
//     without a schema change.
//
// The libraries are libcublas.so and libcublasLt.so 13, 12 or 11 from the
// loader path, /usr/local/cuda/lib64 or $CUDA_HOME/lib64 (package cuda).
// Without one the worker answers Unavailable; the Runner says so once on
// Progress and asks no more.
//
// A baseline's result is keyed like a variant's: params
// eval.BaselineParams(name) ("baseline=cublaslt-best") and, for the PTX
// hash, BaselineHash of its description, so a re-run on the same GPU,
// driver and mode reuses it. The Recorder stores each as an evaluation of
// that pseudo-variant. A winner is compared with the strongest baseline
// measured: the valid one of the lowest median, which is cublaslt-best
// unless cublasGemmEx's own pick beat it; Recorder.Winner receives it with
// the winner (the store keeps its name and median in the winner's baseline
// columns, which tune show and report compare against), and the final
// round re-times it: for cublaslt-best, the algorithm it chose (a result
// reused from an earlier run, whose choice is not in memory, chooses again
// in the round's first run and keeps that one).
//
// # Search and compilation
//
// The points of a shape come from a search strategy (package search);
// Options.Abandon turns on the abandon rule (Abandon), and halving's short
// looks are recorded as skipped, so only full measurements win. The
// family's default variant (its space's first point) is then timed in
// full where a search rule leaves it out: it is the run's "vs default"
// reference (unless a fixed axis excludes it). With a
// CompilePool (UseCompilePool) each batch of proposals is emitted and
// compiled to cubins in helper processes (ServeCompile: the driver's
// linker or ptxas) while the worker validates and measures; the worker
// loads cubins (CubinLoader) without JIT. CubinCache keeps them on disk.
// Helpers and workers die with the parent (Pdeathsig on Linux, and their
// stdin closes).
//
// The runner never talks SQL: results go through the Recorder interface,
// which the command adapts to the store.
package runner
