package kernels_test

import (
	"testing"

	"github.com/gradtune/gradtune/kernels/internal/ptxtest"
)

// checkGolden compares got with testdata/name, or rewrites that file
// under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	ptxtest.Golden(t, *update, name, got)
}
