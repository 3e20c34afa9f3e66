package kernels

import (
	"fmt"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/variants"
)

// Legacy lists the families not yet moved to packages of their own.
func Legacy() []Family { return []Family{lpPoolBwd} }

func checkDType(f Family, dt dtype.DType) error {
	for _, d := range f.DTypes() {
		if d == dt {
			return nil
		}
	}
	return fmt.Errorf("%s does not support dtype %v (dtypes: %v)", f.Name(), dt, f.DTypes())
}

func dimNames(sp variants.Spec) []string {
	var n []string
	for _, d := range sp.Dims {
		n = append(n, d.Name)
	}
	return n
}
