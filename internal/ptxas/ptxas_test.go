package ptxas

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAssemble(t *testing.T) {
	path := RequireOrSkip(t)
	ptx, err := os.ReadFile(filepath.Join("testdata", "simple.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"sm_80", "sm_90"} {
		t.Run(arch, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			reports, cubin, err := Assemble(ctx, path, string(ptx), arch)
			if err != nil {
				t.Fatalf("Assemble: %v", err)
			}
			if !bytes.HasPrefix(cubin, []byte("\x7fELF")) {
				t.Errorf("cubin (%d bytes) is not an ELF file", len(cubin))
			}
			names := map[string]Report{}
			for _, r := range reports {
				names[r.Function] = r
				if r.Arch != arch {
					t.Errorf("%s: Arch = %q, want %q", r.Function, r.Arch, arch)
				}
				if r.Registers <= 0 {
					t.Errorf("%s: Registers = %d, want > 0", r.Function, r.Registers)
				}
				if r.SpillStores != 0 || r.SpillLoads != 0 {
					t.Errorf("%s: spills %d/%d, want none", r.Function, r.SpillStores, r.SpillLoads)
				}
			}
			if len(reports) != 2 || names["tile"].SharedBytes != 1024 || names["vadd"].SharedBytes != 0 {
				t.Errorf("reports = %+v, want tile (1024 bytes smem) and vadd", reports)
			}
		})
	}
}

func TestAssembleSpills(t *testing.T) {
	path := RequireOrSkip(t)
	ptx, err := os.ReadFile(filepath.Join("testdata", "spill.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	reports, _, err := Assemble(context.Background(), path, string(ptx), "sm_90")
	if err != nil {
		t.Fatalf("Assemble: %v", err)
	}
	for _, r := range reports {
		if r.Function == "spill" {
			if r.SpillStores == 0 || r.SpillLoads == 0 || r.StackBytes == 0 {
				t.Errorf("spill: %+v, want spill stores, spill loads and a stack frame", r)
			}
			return
		}
	}
	t.Errorf("no report for spill in %+v", reports)
}

func TestAssembleInvalid(t *testing.T) {
	path := RequireOrSkip(t)
	_, cubin, err := Assemble(context.Background(), path, invalidPTX, "sm_80")
	if err == nil {
		t.Fatal("Assemble of invalid PTX succeeded")
	}
	if cubin != nil {
		t.Errorf("cubin = %d bytes, want nil on failure", len(cubin))
	}
	msg := err.Error()
	for _, want := range []string{"kernel.ptx, line 7", "nosuchreg"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}
}

func TestAssembleBadArch(t *testing.T) {
	for _, arch := range []string{"", "80", "-o/etc/x", "compute_80"} {
		if _, _, err := Assemble(context.Background(), "ptxas", "", arch); err == nil {
			t.Errorf("Assemble with arch %q succeeded", arch)
		}
	}
}

func TestAssembleCanceled(t *testing.T) {
	path := RequireOrSkip(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := Assemble(ctx, path, ".version 7.8\n.target sm_80\n.address_size 64\n", "sm_80")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestFindHonoursEnv(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "my-ptxas")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPTXAS, fake)
	if got, err := Find(); err != nil || got != fake {
		t.Errorf("Find() = %q, %v; want %q", got, err, fake)
	}

	// A set but wrong GRADTUNE_PTXAS is an error, not a reason to look elsewhere.
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "missing"), notExec, dir, "no-such-ptxas-on-path"} {
		t.Setenv(EnvPTXAS, p)
		if got, err := Find(); !errors.Is(err, ErrNotFound) {
			t.Errorf("with %s=%s: Find() = %q, %v; want ErrNotFound", EnvPTXAS, p, got, err)
		}
	}
}

func TestFindCache(t *testing.T) {
	cache := t.TempDir()
	for _, v := range []string{"12.4.131~12.4.1-2", "12.10.1-1", "9.9"} {
		mkExec(t, filepath.Join(cache, "ptxas", v, "ptxas"))
	}
	// A higher version that is not executable does not count.
	if err := os.MkdirAll(filepath.Join(cache, "ptxas", "99.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "ptxas", "99.0", "ptxas"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvPTXAS, "")
	t.Setenv(EnvCache, cache)
	want := filepath.Join(cache, "ptxas", "12.10.1-1", "ptxas")
	if got, err := Find(); err != nil || got != want {
		t.Errorf("Find() = %q, %v; want %q", got, err, want)
	}
}

func TestFindRepoCache(t *testing.T) {
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(repo, ".cache", "ptxas", "1.0", "ptxas")
	mkExec(t, want)
	sub := filepath.Join(repo, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	t.Setenv(EnvPTXAS, "")
	t.Setenv(EnvCache, "")
	if got, err := Find(); err != nil || got != want {
		t.Errorf("Find() = %q, %v; want %q", got, err, want)
	}
}

func TestFindNone(t *testing.T) {
	if isExecutable(cudaPTXAS) {
		t.Skipf("%s exists on this machine", cudaPTXAS)
	}
	t.Chdir(t.TempDir())
	t.Setenv(EnvPTXAS, "")
	t.Setenv(EnvCache, "")
	t.Setenv("PATH", t.TempDir())
	got, err := Find()
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find() = %q, %v; want ErrNotFound", got, err)
	}
	if !strings.Contains(err.Error(), "scripts/fetch-ptxas") {
		t.Errorf("error %q does not mention scripts/fetch-ptxas", err)
	}
}

func mkExec(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// recorder is a testing.TB that records Fatalf and Skipf instead of stopping the test.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = format }
func (r *recorder) Skipf(format string, args ...any)  { r.skip = format }

func TestRequireOrSkip(t *testing.T) {
	t.Setenv(EnvPTXAS, filepath.Join(t.TempDir(), "missing"))
	for _, tt := range []struct {
		ci, require string
		wantFatal   bool
	}{
		{"", "", false},
		{"", "0", false},
		{"true", "", true},
		{"", "1", true},
	} {
		t.Setenv("CI", tt.ci)
		t.Setenv(EnvRequire, tt.require)
		r := &recorder{TB: t}
		if got := RequireOrSkip(r); got != "" {
			t.Errorf("CI=%q %s=%q: returned %q", tt.ci, EnvRequire, tt.require, got)
		}
		if gotFatal := r.fatal != ""; gotFatal != tt.wantFatal || (r.fatal == "") == (r.skip == "") {
			t.Errorf("CI=%q %s=%q: fatal=%q skip=%q; want fatal=%v", tt.ci, EnvRequire, tt.require, r.fatal, r.skip, tt.wantFatal)
		}
	}

	fake := filepath.Join(t.TempDir(), "ptxas")
	mkExec(t, fake)
	t.Setenv(EnvPTXAS, fake)
	r := &recorder{TB: t}
	if got := RequireOrSkip(r); got != fake || r.fatal != "" || r.skip != "" {
		t.Errorf("RequireOrSkip = %q (fatal %q, skip %q); want %q", got, r.fatal, r.skip, fake)
	}
}
