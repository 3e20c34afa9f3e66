package runner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gradtune/gradtune/runner/cuda"
)

// Compiler turns a PTX module into a cubin for one GPU model. The compile
// helpers implement it with the driver's JIT (JITCompiler, which returns
// no cubin: it leaves the code in the driver's compute cache), the
// driver's linker (LinkCompiler) or ptxas (PtxasCompiler); tests use a
// fake.
type Compiler interface {
	Compile(ptx string) ([]byte, error)
	// ID names the compiler and its version for the cache key
	// ("ptxas 13.0.48", "driver-link 13000").
	ID() string
}

// CubinCache is a directory of cubins keyed by CacheKey. Entries are
// written atomically (a temporary file renamed into place) and carry the
// sha256 of their contents, so a torn or corrupt entry reads as a miss
// and is compiled again.
type CubinCache struct{ Dir string }

// DefaultCubinCacheDir is where cubins are cached unless a flag says
// otherwise: os.UserCacheDir()/gradtune/cubins.
func DefaultCubinCacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cubin cache: %w", err)
	}
	return filepath.Join(d, "gradtune", "cubins"), nil
}

// CacheKey is what makes two compilations the same: the PTX (its
// sha256), the target ("sm_90"), the JIT options, and the compiler and
// driver that compile.
func CacheKey(ptx, target, options, compilerID, driver string) string {
	h := sha256.New()
	for _, s := range []string{sha256Hex([]byte(ptx)), target, options, compilerID, driver} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c CubinCache) path(key string) string { return filepath.Join(c.Dir, key[:2], key+".cubin") }

// Get returns the cubin cached under key; a missing or corrupt entry is
// a miss.
func (c CubinCache) Get(key string) ([]byte, bool) {
	b, err := os.ReadFile(c.path(key))
	if err != nil || len(b) < sha256.Size {
		return nil, false
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	want := sha256.Sum256(body)
	if !bytes.Equal(sum, want[:]) {
		return nil, false
	}
	return body, true
}

// Put stores cubin under key atomically.
func (c CubinCache) Put(key string, cubin []byte) error {
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("cubin cache: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("cubin cache: %w", err)
	}
	sum := sha256.Sum256(cubin)
	_, werr := f.Write(append(append([]byte(nil), cubin...), sum[:]...))
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("cubin cache: writing %s: %w", p, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("cubin cache: %w", err)
	}
	return nil
}

// PtxasCompiler runs ptxas (Path) for sm_<CC> ("90"); a module whose
// .target asks for the architecture-specific features (sm_90a) is
// compiled for that.
type PtxasCompiler struct {
	Path    string
	CC      string
	Version string
}

// FindPtxas returns ptxas from /usr/local/cuda/bin or PATH.
func FindPtxas() (string, error) {
	if p := "/usr/local/cuda/bin/ptxas"; fileExists(p) {
		return p, nil
	}
	p, err := exec.LookPath("ptxas")
	if err != nil {
		return "", fmt.Errorf("no ptxas in /usr/local/cuda/bin or on PATH: %w", err)
	}
	return p, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// NewPtxasCompiler returns a compiler running ptxas at path for compute
// capability cc ("9.0").
func NewPtxasCompiler(path, cc string) (*PtxasCompiler, error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return &PtxasCompiler{Path: path, CC: strings.ReplaceAll(cc, ".", ""), Version: lines[len(lines)-1]}, nil
}

func (p *PtxasCompiler) ID() string { return "ptxas " + p.Version }

var targetRE = regexp.MustCompile(`(?m)^\s*\.target\s+(sm_\w+)`)

// Arch is the -arch of ptx: sm_<CC>, or sm_<CC>a when the module's
// .target names that.
func (p *PtxasCompiler) Arch(ptx string) string {
	arch := "sm_" + p.CC
	if m := targetRE.FindStringSubmatch(ptx); m != nil && m[1] == arch+"a" {
		return m[1]
	}
	return arch
}

func (p *PtxasCompiler) Compile(ptx string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "gradtune-ptxas-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "v.ptx"), filepath.Join(dir, "v.cubin")
	if err := os.WriteFile(in, []byte(ptx), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(p.Path, "-arch", p.Arch(ptx), "-o", out, in)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ptxas: %w: %s", err, strings.TrimSpace(string(msg)))
	}
	return os.ReadFile(out)
}

// JITCompiler compiles with the driver's JIT in its own CUDA context on
// a GPU (cuModuleLoadDataEx with the worker's JIT options), which stores
// the machine code in the driver's compute cache; Compile returns no
// cubin, and the worker's own load of the PTX then finds the code there.
// It is the code a trainer that loads the table's PTX gets. The linker's
// and ptxas's are not: the linker compiles relocatable code, with other
// register counts and occupancy.
type JITCompiler struct {
	be *cudaBackend
}

// OpenJITCompiler opens a context on GPU ordinal for compiling; the
// caller's goroutine must stay on its OS thread (runtime.LockOSThread).
func OpenJITCompiler(ordinal int) (*JITCompiler, error) {
	be, err := openCUDA(ordinal)
	if err != nil {
		return nil, err
	}
	return &JITCompiler{be: be}, nil
}

func (j *JITCompiler) ID() string { return "driver-jit " + j.be.info.Driver }

// Compile JIT-compiles ptx and unloads it.
func (j *JITCompiler) Compile(ptx string) ([]byte, error) {
	m, _, err := j.be.ctx.LoadPTX(ptx, cuda.JITOptions{OptLevel: -1})
	if err != nil {
		return nil, err
	}
	return nil, m.Unload()
}

// Close releases the context.
func (j *JITCompiler) Close() { j.be.close() }

// LinkCompiler compiles with the driver's linker in its own CUDA context
// on GPU ordinal (cuLinkCreate/cuLinkAddData/cuLinkComplete) with the
// JIT options the worker's own compilation uses.
type LinkCompiler struct {
	be *cudaBackend
}

// OpenLinkCompiler opens a context on GPU ordinal for linking; the
// caller's goroutine must stay on its OS thread (runtime.LockOSThread).
func OpenLinkCompiler(ordinal int) (*LinkCompiler, error) {
	be, err := openCUDA(ordinal)
	if err != nil {
		return nil, err
	}
	return &LinkCompiler{be: be}, nil
}

func (l *LinkCompiler) ID() string { return "driver-link " + l.be.info.Driver }

func (l *LinkCompiler) Compile(ptx string) ([]byte, error) {
	return l.be.ctx.LinkPTX(ptx, cuda.JITOptions{OptLevel: -1})
}

// Close releases the context.
func (l *LinkCompiler) Close() { l.be.close() }

// CompileOptions is the JIT options part of the cache key: what the
// worker's LoadPTX and LinkCompiler pass (the driver's default level).
const CompileOptions = "O-default"
