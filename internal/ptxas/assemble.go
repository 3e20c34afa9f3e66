package ptxas

import (
	"bytes"
	"context"
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

// Assemble assembles ptx for arch (e.g. "sm_90") with `ptxas -v -arch=<arch>` and returns the
// reports ptxas printed and the cubin. The PTX is written as kernel.ptx in a temporary folder
// that is removed afterwards, so ptxas' messages name "kernel.ptx, line N". When ptxas fails,
// the error includes its exit status and its messages. Reports of non-entry functions get arch.
func Assemble(ctx context.Context, ptxasPath, ptx, arch string) ([]Report, []byte, error) {
	if ptxasPath == "" {
		return nil, nil, fmt.Errorf("ptxas: no ptxas path given")
	}
	if !archRE.MatchString(arch) {
		return nil, nil, fmt.Errorf("ptxas: architecture %q is not of the form sm_NN", arch)
	}
	dir, err := os.MkdirTemp("", "gradtune-ptxas-")
	if err != nil {
		return nil, nil, fmt.Errorf("ptxas: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "kernel.ptx"), []byte(ptx), 0o644); err != nil {
		return nil, nil, fmt.Errorf("ptxas: %w", err)
	}

	cmd := exec.CommandContext(ctx, ptxasPath, "-v", "-arch="+arch, "-o", "kernel.cubin", "kernel.ptx")
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	out := stderr.String() + stdout.String()
	if runErr != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, nil, fmt.Errorf("ptxas -arch=%s: %w", arch, ctxErr)
		}
		msg := strings.TrimSpace(out)
		if msg == "" {
			msg = "(no output)"
		}
		return nil, nil, fmt.Errorf("ptxas -arch=%s: %w:\n%s", arch, runErr, msg)
	}

	reports, err := ParseReport(out)
	if err != nil {
		return nil, nil, fmt.Errorf("ptxas -arch=%s: %w", arch, err)
	}
	for i := range reports {
		if reports[i].Arch == "" {
			reports[i].Arch = arch
		}
	}
	cubin, err := os.ReadFile(filepath.Join(dir, "kernel.cubin"))
	if err != nil {
		return nil, nil, fmt.Errorf("ptxas -arch=%s: reading the cubin: %w", arch, err)
	}
	return reports, cubin, nil
}
