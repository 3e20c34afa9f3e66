package runner

import (
	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
)

// CheckBoth compares the n elements of dt at got with ref on the device
// (the check kernels loaded on be) and on the host (compare, after a
// download), for tests that hold the two to the same answers.
func CheckBoth(be Backend, dt dtype.DType, got Ptr, ref []float64, tol kernels.Tolerance) (dev, host [4]float64, err error) {
	dc, err := newDevChecker(be)
	if err != nil {
		return dev, host, err
	}
	defer dc.release()
	m, _, err := dc.check("ref", dt, got, ref, tol)
	if err != nil {
		return dev, host, err
	}
	raw := make([]byte, len(ref)*dt.Size())
	if err := be.Download(raw, got); err != nil {
		return dev, host, err
	}
	h := compare(dt, raw, ref, tol)
	return [4]float64{m.maxAbs, m.maxRel, float64(m.bad), m.got}, [4]float64{h.maxAbs, h.maxRel, float64(h.bad), h.got}, nil
}

// DevCheckPTX is the module of device check kernels.
var DevCheckPTX = devCheckPTX
