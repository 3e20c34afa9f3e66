package gemm_test

import (
	"testing"

	"github.com/gradtune/gradtune/internal/simtest"
)

func TestMain(m *testing.M) { simtest.Main(m) }
