// Package faults plants faults for testing the runner's defences: a kernel
// family whose variants never end, store out of bounds, trap, or execute
// an illegal instruction (brkpt), beside one that works, and Delay, which
// makes a program slower by a known time.
//
// The family is not in the catalog (kernels/catalog), so normal runs never
// see it: `tune --faults --kernel fault` reaches it, and the worker
// finds it only when started with --faults. On a GPU each fault is
// recorded under its status while the other variants are measured:
//
//	fault=none     a copy dx = dy: valid, timed
//	fault=hang     thread 0 spins forever: the parent's watchdog kills the
//	               worker, records timeout and starts a fresh one
//	fault=oob      thread 0 stores 1 TiB past dx: launch_error (illegal address)
//	fault=trap     thread 0 executes trap: launch_error (launch failure)
//	fault=illegal  thread 0 executes brkpt with no debugger: launch_error
//	               (illegal instruction)
//
// The CUDA errors are sticky: the worker answers, exits, and the runner
// starts a new one with a fresh context. On the interpreter (runner/sim)
// the hang stops at the interpreter's instruction limit (a timeout), the
// store is an out-of-bounds error, trap and brkpt are launch errors.
//
// Delay appends to a program a launch of one thread that spins on
// %globaltimer for a given time: the planted slowdown of a regression
// gate's tests (tune bench --plant-slowdown). It is real GPU work inside
// the timed region, so the measured slowdown is the spin plus the cost of
// one more launch (a microsecond or two); the interpreter cannot run it
// (it has no clock), and the replay worker adds the spin to its samples.
package faults
