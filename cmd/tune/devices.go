package main

import (
	"fmt"
	"io"
	"os"

	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/kernels/faults"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/cuda"
	"github.com/gradtune/gradtune/runner/nvml"
)

func devicesCommand() *command {
	return &command{name: "devices", usage: "devices", summary: "the GPUs the driver sees", run: cmdDevices}
}

func cmdDevices(_ *flagSet, stdout, _ io.Writer) error {
	d, err := cuda.Open()
	if err != nil {
		return err
	}
	n, err := d.DeviceCount()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "driver API %d, %d device(s)\n", d.Version(), n)
	for i := 0; i < n; i++ {
		dev, err := d.Device(i)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d: %s %s sm_%d%d, %d SMs, %d MiB L2, %d MiB memory\n", i, dev.Name, dev.UUID,
			dev.Major, dev.Minor, dev.SMs, dev.L2Bytes>>20, dev.TotalMem>>20)
	}
	return nil
}

// workerCommand is the hidden mode the tuning loop re-executes the binary
// in, so that a crashing kernel takes down only the worker. It reads GPU
// telemetry through NVML when the library is there; --faults lets it run
// the planted-fault family.
func workerCommand() *command {
	return &command{
		name: "__worker", usage: "__worker [--device N] [--faults] [--ref-cache DIR]", summary: "internal: serve the tuning loop over stdin and stdout", hidden: true,
		flags: func(fs *flagSet) {
			fs.Int("device", 0, "N\tGPU ordinal")
			fs.Bool("faults", false, "\tserve the planted-fault family too")
			fs.String("ref-cache", "", "DIR\tthe executable's folder of the reference cache tune opened (runner.RefCache.Dir)")
		},
		run: func(fs *flagSet, _, _ io.Writer) error {
			dev := fs.integer("device")
			opt := runner.ServeOptions{Telemetry: nvml.Open, Families: catalog.All()}
			if fs.Given("faults") {
				opt.Families = append(opt.Families, faults.Family())
			}
			if dir := fs.str("ref-cache"); dir != "" {
				opt.References = runner.RefCacheIn(dir)
			}
			return runner.Serve(os.Stdin, os.Stdout, dev, opt)
		},
	}
}
