// Package ptxas runs NVIDIA's PTX assembler, ptxas, and reads what it reports.
//
// Tests use it to check that generated PTX assembles for a target architecture and to read the
// resource usage ptxas reports with -v: registers, spills, stack frame, shared and constant
// memory. No GPU and no CUDA driver are needed, only the ptxas binary.
//
// Find locates ptxas. On a development machine or in CI, scripts/fetch-ptxas downloads the
// Debian package nvidia-cuda-toolkit (suite trixie, component non-free) through a private apt
// configuration and extracts ptxas into <repo>/.cache/ptxas/<version>/ptxas, where Find looks
// after $GRADTUNE_PTXAS. Tests call RequireOrSkip, which skips when ptxas is missing unless $CI is
// non-empty or GRADTUNE_REQUIRE_PTXAS=1, in which case a missing ptxas fails the test.
//
// Assemble writes PTX to a temporary folder, runs ptxas -v on it and returns the parsed reports
// and the cubin. ParseReport is the parser alone.
//
// Assembler.Check is for many modules whose verdict and reports matter, not their cubins (the
// families' assembly sweeps; ForTests gives the tests' Assembler). It assembles several modules
// in one ptxas process, each an input file of its own whose module-scope names are suffixed
// with its position, so that every report and warning names its module; a process that fails,
// or prints what it cannot attribute, is run again module by module, so a result is always
// what assembling the module alone gives. Results are kept in a cache on disk
// (<repo>/.cache/ptxas-results, see cache.go) keyed by the PTX, the architecture and the
// output of ptxas --version, which test processes share; GRADTUNE_PTXAS_CACHE=off turns it off.
package ptxas
