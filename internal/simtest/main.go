package simtest

import (
	"os"
	"runtime/debug"
	"testing"
)

// testGCPercent is the collector's target in the interpreter-heavy test
// binaries: the interpreter and the PTX builder allocate at a high rate,
// and a heap allowed to grow four times its live size before each
// collection took go test ./... on the 2-core machine from 242 s of CPU
// to 167 s (kernels and kernels/gemm alone, 65 s to 54 s) for a few
// hundred MB more.
const testGCPercent = 400

// Main is the TestMain of a package whose tests run the interpreter: it
// sets the collector's target (FastGC), then runs the tests.
func Main(m *testing.M) {
	FastGC()
	os.Exit(m.Run())
}

// FastGC sets the collector's target of an interpreter-heavy test
// process (a test binary, or a worker process it starts).
func FastGC() { debug.SetGCPercent(testGCPercent) }
