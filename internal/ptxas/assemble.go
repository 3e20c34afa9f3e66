package ptxas

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// archRE matches the architectures ptxas -arch takes: sm_80, sm_90a, sm_100f, …
var archRE = regexp.MustCompile(`^sm_[0-9]+[a-z]*$`)

// Failure is ptxas rejecting a module: it ran and exited with a non-zero status.
type Failure struct {
	Arch     string
	Status   string // "exit status 255"
	Messages string // what ptxas printed, trimmed; "(no output)" when nothing
}

func (f *Failure) Error() string {
	return fmt.Sprintf("ptxas -arch=%s: %s:\n%s", f.Arch, f.Status, f.Messages)
}

// Assemble assembles ptx for arch (e.g. "sm_90") with `ptxas -v -arch=<arch>` and returns the
// reports ptxas printed and the cubin. The PTX is written as kernel.ptx in a temporary folder
// that is removed afterwards, so ptxas' messages name "kernel.ptx, line N". When ptxas rejects
// the module, the error is a *Failure with its exit status and its messages. Reports of
// non-entry functions get arch. Assemble runs ptxas every time; Assembler.Check caches and
// batches, for callers that need no cubin.
func Assemble(ctx context.Context, ptxasPath, ptx, arch string) ([]Report, []byte, error) {
	dir, err := os.MkdirTemp("", "gradtune-ptxas-")
	if err != nil {
		return nil, nil, fmt.Errorf("ptxas: %w", err)
	}
	defer os.RemoveAll(dir)
	out, err := run(ctx, ptxasPath, dir, arch, []source{{"kernel.ptx", ptx}})
	if err != nil {
		return nil, nil, err
	}
	reports, err := parseFor(out, arch)
	if err != nil {
		return nil, nil, err
	}
	cubin, err := os.ReadFile(filepath.Join(dir, "kernel.cubin"))
	if err != nil {
		return nil, nil, fmt.Errorf("ptxas -arch=%s: reading the cubin: %w", arch, err)
	}
	return reports, cubin, nil
}

// source is one input file of a ptxas run.
type source struct{ name, ptx string }

// run writes files into dir and assembles them in one `ptxas -v` process into dir/kernel.cubin,
// returning what ptxas printed (stderr, then stdout). A ptxas that exits with a non-zero status
// gives a *Failure; one that could not run or was stopped by ctx, an error that wraps why.
func run(ctx context.Context, ptxasPath, dir, arch string, files []source) (string, error) {
	if ptxasPath == "" {
		return "", fmt.Errorf("ptxas: no ptxas path given")
	}
	if !archRE.MatchString(arch) {
		return "", fmt.Errorf("ptxas: architecture %q is not of the form sm_NN", arch)
	}
	args := []string{"-v", "-arch=" + arch, "-o", "kernel.cubin"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.ptx), 0o644); err != nil {
			return "", fmt.Errorf("ptxas: %w", err)
		}
		args = append(args, f.name)
	}
	cmd := exec.CommandContext(ctx, ptxasPath, args...)
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	out := stderr.String() + stdout.String()
	if runErr == nil {
		return out, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", fmt.Errorf("ptxas -arch=%s: %w", arch, ctxErr)
	}
	var exit *exec.ExitError
	if !errors.As(runErr, &exit) || !exit.Exited() {
		return "", fmt.Errorf("ptxas -arch=%s: %w", arch, runErr)
	}
	msg := strings.TrimSpace(out)
	if msg == "" {
		msg = "(no output)"
	}
	return "", &Failure{Arch: arch, Status: runErr.Error(), Messages: msg}
}

// parseFor parses ptxas' output for arch: the reports, non-entry functions given arch.
func parseFor(out, arch string) ([]Report, error) {
	reports, err := ParseReport(out)
	if err != nil {
		return nil, fmt.Errorf("ptxas -arch=%s: %w", arch, err)
	}
	for i := range reports {
		if reports[i].Arch == "" {
			reports[i].Arch = arch
		}
	}
	return reports, nil
}

// warnings returns ptxas' warning lines in out, trimmed.
func warnings(out string) []string {
	var ws []string
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(strings.ToLower(line), "warning") {
			ws = append(ws, strings.TrimSpace(line))
		}
	}
	return ws
}
