// Package tuning turns what a user asks for into the work of a run, and
// runs it: the commands parse flags and print, this package decides.
//
// Resolve maps a Request (kernel list, a preset, a model's Hugging Face
// config.json (variants.ReadConfig) or shape specs, tokens, dtypes, fixed
// params) to a Selection of (family, shape) jobs. Its rules:
//
//   - Conflicts are errors, never resolved silently: a spec's dtype= that
//     --dtype does not list, --tokens with explicit specs, a kernel named
//     twice, a --tokens that is not positive.
//   - Every shape, from a preset, a config or a spec, goes through the family's own
//     Shape, so the family's limits apply to both.
//   - With "all" kernels, each shape spec goes to the families that take it,
//     and a family that can take nothing of the request (its dims, dtypes or
//     axes do not fit) is left out with a note. A family named explicitly
//     must take every spec, dtype and fixed axis: anything else is an error.
//   - Fixed params must name axes of the shape's space, with values of those
//     axes, and leave at least one valid point; when they do not, the error
//     lists, per given axis, the values that valid points consistent with
//     the other given params have.
//
// Memory: a shape whose buffers do not fit is refused before anything is
// allocated. InterpreterBytes is what the interpreter needs on the host
// (compared with MemAvailable by check), DeviceBytes what a GPU worker
// needs on the device (compared with the device's memory by tune).
//
// Check validates sampled variants of a selection on the CPU interpreter
// (runner/sim) through runner.Session, shapes in parallel within a memory
// budget, on the random inputs and, for a family with exact inputs
// (kernels.Exacter), on those with zero tolerance, and says the bound each
// output was held to (ToleranceText, and "exact inputs: 0"); TuneOnGPU
// measures a selection on a GPU through runner.Runner and
// records every result in the store (Recorder adapts the store to the
// runner, which never imports the store).
//
// Scale-out: Shard is part i of n of a selection's (family, dtype, shape)
// items, by a hash of each item (stable as the request grows; every item
// in one part), from --shard or a scheduler's environment (a Slurm job
// array, a Kubernetes Indexed Job: ShardFromEnv). TuneOnDevices tunes a
// selection on several GPUs at once, each pulling items from one queue
// and recording its own run; CrossCheck compares a GPU's winners with the
// fastest variants that other GPUs of the same name recorded.
//
// BenchCases turns a config table into runner cases (the tuned variant and
// its baseline per entry, a planted slowdown where asked) and BenchOnGPU
// measures them into a run: the first half of the nightly regression run,
// whose second half is package regress.
//
// ReplayStrategies judges search strategies on a recorded database, at
// most MaxReplaySeeds seeds, reporting progress when asked.
//
// Errors a user can fix by changing the request are *InputError; the
// commands exit 2 on them.
package tuning
