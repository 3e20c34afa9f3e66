package results

import "strings"

// Peaks are a GPU's data-sheet limits.
type Peaks struct {
	// BandwidthGBps is the memory bandwidth, FP32TFLOPs the dense FP32
	// rate without tensor cores.
	BandwidthGBps, FP32TFLOPs float64
}

// peaks are the data-sheet figures of the GPUs results are known from,
// keyed by the name the driver reports (SXM parts).
var peaks = map[string]Peaks{
	"NVIDIA H200":                    {BandwidthGBps: 4800, FP32TFLOPs: 66.9},
	"NVIDIA H100 80GB HBM3":          {BandwidthGBps: 3350, FP32TFLOPs: 66.9},
	"NVIDIA A100-SXM4-80GB":          {BandwidthGBps: 2039, FP32TFLOPs: 19.5},
	"NVIDIA A100-SXM4-40GB":          {BandwidthGBps: 1555, FP32TFLOPs: 19.5},
	"NVIDIA GeForce RTX 4090":        {BandwidthGBps: 1008, FP32TFLOPs: 82.6},
	"NVIDIA L40S":                    {BandwidthGBps: 864, FP32TFLOPs: 91.6},
	"NVIDIA RTX 6000 Ada Generation": {BandwidthGBps: 960, FP32TFLOPs: 91.1},
}

// LookupPeaks returns the data-sheet limits of the GPU called name.
func LookupPeaks(name string) (Peaks, bool) {
	p, ok := peaks[strings.TrimSpace(name)]
	return p, ok
}
