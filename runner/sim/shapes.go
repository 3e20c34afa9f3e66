package sim

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/smallshapes"
	"github.com/gradtune/gradtune/variants"
)

// MaxSmallElems is smallshapes.MaxElems.
const MaxSmallElems = smallshapes.MaxElems

// SmallShapes is smallshapes.Of, kept for callers that have not moved to
// it; picking shapes is not the interpreter's concern.
func SmallShapes(f kernels.Family, dt dtype.DType) []variants.Shape { return smallshapes.Of(f, dt) }
