// Package main is the tune command: it generates, validates, measures and
// ranks PTX variants of gradtune's backward kernels on an NVIDIA GPU.
//
// Usage:
//
//	tune [--kernel K[,K...]|all] [--shapes PRESET|CONFIG|SPEC] [--tokens N] [--dtype D[,D]]
//	     [--params P] [--budget N] [--db tune.db] [--device 0] [--mode cold|hot] [--fresh]
//	tune --version
//	tune list
//	tune emit --kernel K --shapes SPEC [--params P] [--dtype D]
//	tune check --kernel K --shapes SPEC [--sample N] [--params P]
//	tune crosscheck --out FILE [--force] [--kernel K|all] [--cases N]
//	tune devices
//	tune show [--db F] [--run ID] [--kernel K] [--shapes S] [--variants]
//	tune report [--db F] [--run ID] [--peers FILE.jsonl] [--force] -o DIR
//	tune export [--db F] [--run ID] --format json|go|c [--ptx] [--force] -o PATH
//	tune bench --configs TABLE.json [--db F] [--kernel K] [--shapes S]
//	tune regress --baseline A.db[:RUN] --db B.db[:RUN] [--threshold 2%] [--format markdown|bench]
//	tune runs [--db F]
//	tune merge --db A.db,B.db[,...] -o OUT.db
//	tune help [COMMAND]
//
// The command parses flags, prints and chooses exit codes; what to run and
// how is decided in packages tuning and crosscheck, and show, report and
// export read a database without writing to it through internal/results,
// reports and export.
//
// Every command checks all of its flags before any work: before it reads
// a database and before it looks for the driver. Exit codes: 0 success, 1
// failure (no GPU, a GPU error, no valid variant, a wrong variant in
// check, an internal error: a panic, reported with its stack), 2 usage
// error (every bad input, named with what is accepted: a flag given
// twice, a missing, damaged or foreign database, an output that would
// replace a database, lies in a missing directory or that its directory
// will not take, found by creating and removing a file there, and named
// by its own path, never by a temporary file's). --version prints
// the module version and VCS revision of the build, which every run
// records. Help (tune help [COMMAND], -h, --help) goes to
// stdout and exits 0. regress exits 1 when the gate fails (a case
// regressed, has no valid result in the new run, or is missing from it);
// bench exits 1 when an entry has no valid result, after listing each
// with why. merge (store.MergeInto) reads its inputs read-only and writes
// OUT.db through a temporary file renamed at the end; OUT.db may be a new
// file or a gradtune database, which is merged into (it counts as the
// first input), never an input nor another file; it exits 1, writing
// nothing, when the inputs conflict (the same evaluation, by run identity,
// content key and rank, recorded with other contents), and 2 on a bad
// input or output. Hidden flags, for tests of
// the gate and of the runner's defences: tune --faults (the planted-fault
// family), bench --replay DB (answer from recorded samples) and bench
// --plant-slowdown 'KERNEL DTYPE SHAPE=PCT%'. The worker mode (`tune
// __worker`) is internal: the tuning loop re-executes the binary in it so
// that a crashing kernel takes down only the worker.
//
// GRADTUNE_CPUPROFILE=PREFIX makes every tune process (the command, its
// worker, its compile helpers) write a CPU profile to PREFIX.PID, for
// `go tool pprof`.
package main
