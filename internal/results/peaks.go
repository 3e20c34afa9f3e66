package results

import "strings"

// Peaks are a GPU's data-sheet limits.
type Peaks struct {
	// BandwidthGBps is the memory bandwidth, FP32TFLOPs the dense FP32
	// rate without tensor cores, TensorTFLOPs the dense (not sparse)
	// BF16/FP16 tensor-core rate with FP32 accumulation.
	BandwidthGBps, FP32TFLOPs, TensorTFLOPs float64
}

// Compute is the compute peak that bounds a kernel whose elements are of
// dtype dt and its name in "% bound": the tensor-core rate ("TC") for
// bf16 and f16 (the families compute-bound in those are tensor-core
// GEMMs), the FP32 rate otherwise.
func (p Peaks) Compute(dt string) (tflops float64, name string) {
	if dt == "bf16" || dt == "f16" {
		return p.TensorTFLOPs, "TC"
	}
	return p.FP32TFLOPs, "FP32"
}

// peaks are the data-sheet figures of the GPUs results are known from,
// keyed by the name the driver reports (SXM parts).
var peaks = map[string]Peaks{
	"NVIDIA H200":                    {BandwidthGBps: 4800, FP32TFLOPs: 66.9, TensorTFLOPs: 989.4},
	"NVIDIA H100 80GB HBM3":          {BandwidthGBps: 3350, FP32TFLOPs: 66.9, TensorTFLOPs: 989.4},
	"NVIDIA A100-SXM4-80GB":          {BandwidthGBps: 2039, FP32TFLOPs: 19.5, TensorTFLOPs: 312},
	"NVIDIA A100-SXM4-40GB":          {BandwidthGBps: 1555, FP32TFLOPs: 19.5, TensorTFLOPs: 312},
	"NVIDIA GeForce RTX 4090":        {BandwidthGBps: 1008, FP32TFLOPs: 82.6, TensorTFLOPs: 165.2},
	"NVIDIA L40S":                    {BandwidthGBps: 864, FP32TFLOPs: 91.6, TensorTFLOPs: 362.1},
	"NVIDIA RTX 6000 Ada Generation": {BandwidthGBps: 960, FP32TFLOPs: 91.1, TensorTFLOPs: 364.2},
}

// LookupPeaks returns the data-sheet limits of the GPU called name.
func LookupPeaks(name string) (Peaks, bool) {
	p, ok := peaks[strings.TrimSpace(name)]
	return p, ok
}
