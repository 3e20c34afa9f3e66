package tuning

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/variants"
)

// InterpreterBytes is the host memory that checking shape s of f on the
// interpreter needs. Each buffer is held once in the interpreter's global
// memory (runner/sim allocates exactly its bytes, in 8-byte words), once
// more as a staging copy (the encoded upload, the downloaded output), and
// as float64 on the host: the inputs while they are uploaded and the
// float64 reference of every output and accumulate buffer. A family with
// exact inputs (kernels.Exacter) holds its input buffers, with their
// staging copies and float64 values, and its references a second time.
func InterpreterBytes(f kernels.Family, s variants.Shape) uint64 {
	var n uint64
	_, exact := f.(kernels.Exacter)
	for _, b := range f.Buffers(s) {
		bytes := uint64(max(kernels.Bytes(b, s), 16)+7) / 8 * 8
		n += 2*bytes + 8*uint64(kernels.Elems(b, s))
		switch {
		case !exact:
		case b.Role == kernels.Input || b.Role == kernels.InOut:
			n += 2*bytes + 8*uint64(kernels.Elems(b, s))
		case b.Role == kernels.Output || b.Role == kernels.Accumulate:
			n += 8 * uint64(kernels.Elems(b, s))
		}
		if b.Role == kernels.InOut { // its copy kept to restore it
			n += bytes
		}
	}
	return n
}

// DeviceBytes is the device memory that measuring shape s of f on a GPU
// needs: its buffers (the input buffers twice for a family with exact
// inputs, kernels.Exacter), and the worker's L2 flush buffer (twice the
// L2, at least 128 MiB).
func DeviceBytes(f kernels.Family, s variants.Shape, info runner.DeviceInfo) uint64 {
	n := uint64(max(2*info.L2Bytes, 128<<20))
	_, exact := f.(kernels.Exacter)
	for _, b := range f.Buffers(s) {
		n += uint64(max(kernels.Bytes(b, s), 16))
		if exact && (b.Role == kernels.Input || b.Role == kernels.InOut) {
			n += uint64(max(kernels.Bytes(b, s), 16))
		}
		if b.Role == kernels.InOut { // its copy kept to restore it
			n += uint64(max(kernels.Bytes(b, s), 16))
		}
	}
	return n
}

// Limit is the memory a run may use and where that figure comes from.
type Limit struct {
	Bytes  uint64
	Source string // "available host memory (MemAvailable, /proc/meminfo)"
}

// HostLimit reads MemAvailable from /proc/meminfo.
func HostLimit() (Limit, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return Limit{}, fmt.Errorf("reading the available host memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return Limit{}, fmt.Errorf("reading /proc/meminfo: MemAvailable %q: %w", rest, err)
		}
		return Limit{Bytes: kb << 10, Source: "available host memory (MemAvailable, /proc/meminfo)"}, nil
	}
	if err := sc.Err(); err != nil {
		return Limit{}, fmt.Errorf("reading /proc/meminfo: %w", err)
	}
	return Limit{}, fmt.Errorf("reading /proc/meminfo: no MemAvailable line")
}

// DeviceLimit is the memory of the worker's GPU.
func DeviceLimit(info runner.DeviceInfo) Limit {
	return Limit{Bytes: info.MemBytes, Source: fmt.Sprintf("memory of %s", info.Name)}
}

// CheckHost refuses a selection with a shape that does not fit lim on the
// interpreter. The error (an *InputError) names the shape, the need and
// the limit.
func CheckHost(sel Selection, lim Limit) error {
	for _, fs := range sel.Shapes() {
		if need := InterpreterBytes(fs.F, fs.S); need > lim.Bytes {
			return inputf("%s needs %s of host memory on the interpreter, more than the %s of %s: use a smaller shape",
				fs, FormatBytes(need), FormatBytes(lim.Bytes), lim.Source)
		}
	}
	return nil
}

// CheckDevice refuses a selection with a shape that does not fit the
// worker's GPU (a device of unknown memory, a replay's, takes any). The error (an *InputError) names the shape, the need and
// the limit.
func CheckDevice(sel Selection, info runner.DeviceInfo) error {
	if info.MemBytes == 0 {
		return nil // a replay's device: no memory to run out of
	}
	lim := DeviceLimit(info)
	for _, fs := range sel.Shapes() {
		if need := DeviceBytes(fs.F, fs.S, info); need > lim.Bytes {
			return inputf("%s needs %s of device memory (buffers and the L2 flush buffer), more than the %s of %s: use a smaller shape",
				fs, FormatBytes(need), FormatBytes(lim.Bytes), lim.Source)
		}
	}
	return nil
}

// FormatBytes writes n in the largest binary unit that keeps it ≥ 1.
func FormatBytes(n uint64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
