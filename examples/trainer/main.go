package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gradtune/gradtune/configs"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trainer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kernel := fs.String("kernel", "relu_bwd", "kernel family")
	dt := fs.String("dtype", "bf16", "element type")
	shape := fs.String("shape", "m=2048,n=8960", "problem size (dims, without dtype)")
	gpuName := fs.String("gpu", "", "GPU model to look up (default: device 0's, else NVIDIA H200)")
	cc := fs.String("cc", "", "compute capability to fall back on (default: device 0's, else 9.0)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sh, err := configs.ParseShape(*shape)
	if err != nil {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		return 2
	}
	dev, devErr := openDevice()
	gpu := configs.GPU{Name: *gpuName, CC: *cc}
	if dev != nil {
		defer dev.close()
		gpu = configs.GPU{Name: or(gpu.Name, dev.name), CC: or(gpu.CC, dev.cc)}
	}
	gpu = configs.GPU{Name: or(gpu.Name, "NVIDIA H200"), CC: or(gpu.CC, "9.0")}
	p, err := plan(gpu, *kernel, *dt, sh)
	if err != nil {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		if errors.Is(err, configs.ErrUnknownGPU) || errors.Is(err, configs.ErrUnknownKernel) || errors.Is(err, configs.ErrNoConfig) {
			return 2
		}
		return 1
	}
	p.describe(stdout)
	if dev == nil {
		fmt.Fprintf(stdout, "no GPU (%v): not launched\n", devErr)
		return 0
	}
	us, err := dev.launch(p)
	if err != nil {
		fmt.Fprintf(stderr, "trainer: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "launched on %s: median of %d runs %.2f µs (table: %.2f µs)\n", dev.name, len(us), median(us), p.Match.Entry.MedianUS)
	return 0
}

// Plan is what the trainer will launch.
type Plan struct {
	Match configs.Match
	PTX   []byte
}

// plan looks the kernel up in the committed tables and reads its PTX.
func plan(gpu configs.GPU, kernel, dtype string, shape configs.Shape) (Plan, error) {
	m, err := configs.Lookup(gpu, kernel, dtype, shape)
	if err != nil {
		return Plan{}, err
	}
	set, err := configs.Embedded()
	if err != nil {
		return Plan{}, err
	}
	ptx, err := set.PTX(m)
	if err != nil {
		return Plan{}, err
	}
	return Plan{Match: m, PTX: ptx}, nil
}

func (p Plan) describe(w io.Writer) {
	e := p.Match.Entry
	fmt.Fprintf(w, "%s %s %s on %s (cc %s): %s match", e.Kernel, e.DType, e.Shape, p.Match.Table.GPU.Name, p.Match.Table.GPU.CC, p.Match.Rule)
	if p.Match.Rule != configs.Exact {
		fmt.Fprintf(w, " (log-distance %.2f; the PTX is specialised for %s, so that is the shape launched)", p.Match.Distance, e.Shape)
	}
	fmt.Fprintf(w, "\n  params %s\n  tuned median %.2f µs (95%% CI %.2f–%.2f), run %d, %s\n", e.Params, e.MedianUS, e.CIUS[0], e.CIUS[1], e.Provenance.Run, e.Provenance.Date)
	for _, l := range e.Launches {
		grid := fmt.Sprint(l.Grid)
		if l.GridPerSM > 0 {
			grid = fmt.Sprintf("[%d×SMs 1 1]", l.GridPerSM)
		}
		var args []string
		for _, a := range l.Args {
			args = append(args, or(a.Buffer, fmt.Sprint(a.Scalar)))
		}
		fmt.Fprintf(w, "  launch %s grid %s block %v smem %d (%s)\n", l.Entry, grid, l.Block, l.SharedBytes, strings.Join(args, ", "))
	}
	fmt.Fprintf(w, "  PTX %s, %d bytes, sha256 %.12s checked\n", e.PTX, len(p.PTX), e.PTXSHA256)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
