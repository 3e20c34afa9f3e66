/*
Tune tunes GPU backward kernels.

Usage:

	tune [--kernel K[,K...]|all] [--shapes PRESET|SPEC] [--tokens N] [--dtype D[,D]]
	     [--budget N] [--db tune.db] [--device 0] [--mode cold|hot] [--fresh]
	tune list
	tune emit --kernel K --shapes SPEC --params P [--dtype D]
	tune devices

Exit codes: 0 success, 1 failure (no GPU, a GPU error, no valid variant),
2 usage error. The worker mode (`tune __worker`) is internal: the tuning
loop re-executes the binary in it so that a crashing kernel takes down only
the worker.
*/
package main
