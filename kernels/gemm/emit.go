package gemm

import (
	"fmt"

	"github.com/gradtune/gradtune/kernels"
)

// Emit writes the variant's program: the GEMM launch and, with split-K,
// the reduce launch over its workspace.
func (def) Emit(s Shape, p Params) (kernels.Program, error) {
	g := problemOf(s)
	switch p.MMA {
	case Sync:
		return emitSync(s, g, p)
	case WGMMA:
		return emitWgmma(s, g, p)
	}
	return kernels.Program{}, fmt.Errorf("mma=%s is not emitted yet", p.MMA)
}
