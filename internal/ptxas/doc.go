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
package ptxas
