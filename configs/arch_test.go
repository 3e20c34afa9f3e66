package configs

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly holds the package to what trainers can import:
// no cgo and no imports outside the standard library (no SQLite, no
// driver, no kernels) but the module's launch contract and dtypes, which
// import the standard library only themselves.
func TestStandardLibraryOnly(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	cmd := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{len .CgoFiles}}{{end}}", ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, cgo, _ := strings.Cut(line, " ")
		switch pkg {
		case "github.com/gradtune/gradtune/configs", "github.com/gradtune/gradtune/contract", "github.com/gradtune/gradtune/dtype":
		default:
			t.Errorf("configs depends on %s; it must use the standard library only", pkg)
		}
		if cgo != "0" {
			t.Errorf("%s has cgo files", pkg)
		}
	}
}
