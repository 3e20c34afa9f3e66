package ptxas

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ErrNotFound is wrapped by the errors of Find and RequireOrSkip when no ptxas binary is found.
var ErrNotFound = errors.New("ptxas not found")

// Environment variables that Find and RequireOrSkip read.
const (
	// EnvPTXAS names the ptxas binary to use, bypassing the search.
	EnvPTXAS = "GRADTUNE_PTXAS"
	// EnvCache is the cache root of scripts/fetch-ptxas (default <repo>/.cache).
	EnvCache = "GRADTUNE_CACHE"
	// EnvRequire set to 1 makes RequireOrSkip fail instead of skip when ptxas is missing.
	EnvRequire = "GRADTUNE_REQUIRE_PTXAS"
)

// cudaPTXAS is where a CUDA toolkit installed from NVIDIA's packages puts ptxas.
const cudaPTXAS = "/usr/local/cuda/bin/ptxas"

// Find returns the path of a ptxas binary. It looks, in order, at
//
//  1. $GRADTUNE_PTXAS, if set and non-empty: a path, or a name looked up on PATH. If that is not
//     an executable file, Find fails rather than fall back to another ptxas;
//  2. $GRADTUNE_CACHE/ptxas/*/ptxas, if GRADTUNE_CACHE is set, then <repo>/.cache/ptxas/*/ptxas,
//     where <repo> is the first folder holding a go.mod at or above the working directory; these
//     are what scripts/fetch-ptxas writes, and of several versions the highest wins;
//  3. ptxas on PATH;
//  4. /usr/local/cuda/bin/ptxas.
//
// Find only checks that the file is executable; it does not run it. The error wraps ErrNotFound
// when no candidate is found.
func Find() (string, error) {
	if p := os.Getenv(EnvPTXAS); p != "" {
		if !strings.ContainsRune(p, filepath.Separator) {
			found, err := exec.LookPath(p)
			if err != nil {
				return "", fmt.Errorf("%w: %s=%s is not on PATH", ErrNotFound, EnvPTXAS, p)
			}
			return found, nil
		}
		if !isExecutable(p) {
			return "", fmt.Errorf("%w: %s=%s is not an executable file", ErrNotFound, EnvPTXAS, p)
		}
		return p, nil
	}

	var looked []string
	var roots []string
	if c := os.Getenv(EnvCache); c != "" {
		roots = append(roots, c)
	}
	if repo, err := repoRoot(); err == nil {
		roots = append(roots, filepath.Join(repo, ".cache"))
	}
	for _, root := range roots {
		pattern := filepath.Join(root, "ptxas", "*", "ptxas")
		looked = append(looked, pattern)
		if p := newestCached(pattern); p != "" {
			return p, nil
		}
	}

	looked = append(looked, "ptxas on PATH")
	if p, err := exec.LookPath("ptxas"); err == nil {
		return p, nil
	}

	looked = append(looked, cudaPTXAS)
	if isExecutable(cudaPTXAS) {
		return cudaPTXAS, nil
	}
	return "", fmt.Errorf("%w (looked at $%s, %s); run scripts/fetch-ptxas",
		ErrNotFound, EnvPTXAS, strings.Join(looked, ", "))
}

// RequireOrSkip is for tests: it returns the path Find returns. When Find fails, the test fails
// if $CI is non-empty or GRADTUNE_REQUIRE_PTXAS=1, and is skipped otherwise.
func RequireOrSkip(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" || os.Getenv(EnvRequire) == "1" {
		t.Fatalf("ptxas is required here ($CI or %s=1): %v", EnvRequire, err)
		return ""
	}
	t.Skipf("skipping: %v; run scripts/fetch-ptxas to fetch it into .cache/ptxas (or set %s)", err, EnvPTXAS)
	return ""
}

// ForTests is for tests: the ptxas of RequireOrSkip as an Assembler with the DefaultCache.
func ForTests(t testing.TB) Assembler {
	t.Helper()
	return Assembler{Path: RequireOrSkip(t), Cache: DefaultCache()}
}

// repoRoot returns the first folder at or above the working directory that holds a go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && fi.Mode().IsRegular() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fs.ErrNotExist
		}
		dir = parent
	}
}

// newestCached returns the executable matching pattern (…/ptxas/<version>/ptxas) whose version
// folder sorts highest, or "" if none.
func newestCached(pattern string) string {
	matches, _ := filepath.Glob(pattern)
	matches = slices.DeleteFunc(matches, func(p string) bool { return !isExecutable(p) })
	if len(matches) == 0 {
		return ""
	}
	slices.SortFunc(matches, func(a, b string) int {
		return compareVersions(filepath.Base(filepath.Dir(a)), filepath.Base(filepath.Dir(b)))
	})
	return matches[len(matches)-1]
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// compareVersions orders version strings like sort -V: runs of digits compare as numbers, other
// runs as text.
func compareVersions(a, b string) int {
	for a != "" && b != "" {
		var ra, rb string
		ra, a = splitRun(a)
		rb, b = splitRun(b)
		if isDigit(ra[0]) && isDigit(rb[0]) {
			ra, rb = strings.TrimLeft(ra, "0"), strings.TrimLeft(rb, "0")
			if c := len(ra) - len(rb); c != 0 {
				return c
			}
		}
		if c := strings.Compare(ra, rb); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// splitRun splits s (non-empty) after its leading run of digits or of non-digits.
func splitRun(s string) (run, rest string) {
	d := isDigit(s[0])
	i := 1
	for i < len(s) && isDigit(s[i]) == d {
		i++
	}
	return s[:i], s[i:]
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
