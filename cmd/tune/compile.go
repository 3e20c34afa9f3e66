package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

	"github.com/gradtune/gradtune/runner"
)

// compileFlags are tune's flags for the compile pool.
func compileFlags(fs *flagSet) {
	fs.String("compile-helpers", "auto", "N|auto\tprocesses compiling PTX ahead of the GPU worker (auto: half the cores, at most 8; 0: the worker JIT-compiles, as before)")
	fs.String("compiler", "jit", "jit|link|ptxas\thow helpers compile: the driver's JIT into its compute cache (the code a trainer loading the PTX gets), the driver's linker (relocatable code), or ptxas (/usr/local/cuda/bin or PATH)")
	fs.String("cubin-cache", "", "DIR\tcompiled cubins, keyed by PTX, target, options, compiler and driver (default: the user cache dir's gradtune/cubins)")
	fs.Bool("no-cache", false, "\tneither read nor write the cubin cache")
}

// defaultHelpers is half the cores, at most 8 (on the H200 host 8 linker
// processes compile 142 programs/s, 16 only 160/s and start slower).
func defaultHelpers() int { return min(8, max(1, runtime.NumCPU()/2)) }

func compileCommand() *command {
	return &command{
		name: "__compile", usage: "__compile [--device N] [--compiler jit|link|ptxas] [--cc X.Y]",
		summary: "internal: compile PTX into cubins over stdin and stdout", hidden: true,
		flags: func(fs *flagSet) {
			fs.Int("device", 0, "N\tGPU ordinal (the linker's context)")
			fs.String("compiler", "jit", "jit|link|ptxas\tthe compiler")
			fs.String("cc", "9.0", "X.Y\tcompute capability (ptxas)")
		},
		run: func(fs *flagSet, stdout, _ io.Writer) error {
			c, closeFn, err := openCompiler(fs.str("compiler"), fs.integer("device"), fs.str("cc"))
			if err != nil {
				return err
			}
			defer closeFn()
			return runner.ServeCompile(os.Stdin, stdout, c)
		},
	}
}

// openCompiler opens the named compiler; the linker's context stays on
// this OS thread.
func openCompiler(name string, dev int, cc string) (runner.Compiler, func(), error) {
	switch name {
	case "jit":
		runtime.LockOSThread()
		j, err := runner.OpenJITCompiler(dev)
		if err != nil {
			return nil, nil, err
		}
		return j, j.Close, nil
	case "link":
		runtime.LockOSThread()
		l, err := runner.OpenLinkCompiler(dev)
		if err != nil {
			return nil, nil, err
		}
		return l, l.Close, nil
	case "ptxas":
		path, err := runner.FindPtxas()
		if err != nil {
			return nil, nil, err
		}
		p, err := runner.NewPtxasCompiler(path, cc)
		return p, func() {}, err
	case "fake":
		return fakeCompiler{}, func() {}, nil
	}
	return nil, nil, usagef("--compiler %q: want jit, link or ptxas", name)
}

// fakeCompiler "compiles" by returning the PTX: the compile pool's
// process tests run with it where there is no GPU.
type fakeCompiler struct{}

func (fakeCompiler) ID() string                         { return "fake" }
func (fakeCompiler) Compile(ptx string) ([]byte, error) { return []byte(ptx), nil }

// compileOptions are tune's compile-pool flags, checked.
type compileOptions struct {
	helpers  int    // 0: no pool, the worker JIT-compiles
	compiler string // jit, link, ptxas (or fake, for tests)
	ptxas    string // ptxas's path, with --compiler ptxas
	cacheDir string // "" with --no-cache
}

// compileOptionsOf checks the compile flags, before any GPU opens.
func compileOptionsOf(fs *flagSet) (compileOptions, error) {
	var opt compileOptions
	v := fs.str("compile-helpers")
	if v == "auto" {
		opt.helpers = defaultHelpers()
	} else if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		opt.helpers = n
	} else {
		return opt, usagef("--compile-helpers %q: want auto or a count (0: none, the worker JIT-compiles)", v)
	}
	opt.compiler = fs.str("compiler")
	switch opt.compiler {
	case "jit", "link", "fake":
	case "ptxas":
		if opt.helpers > 0 {
			path, err := runner.FindPtxas()
			if err != nil {
				return opt, usagef("--compiler ptxas: %w", err)
			}
			opt.ptxas = path
		}
	default:
		return opt, usagef("--compiler %q: want jit (the driver's JIT), link (the driver's linker) or ptxas", opt.compiler)
	}
	if fs.Given("no-cache") && fs.Given("cubin-cache") {
		return opt, usagef("--no-cache and --cubin-cache %s contradict each other: give one", fs.str("cubin-cache"))
	}
	if opt.helpers == 0 && (fs.Given("compiler") || fs.Given("cubin-cache") || fs.Given("no-cache")) {
		return opt, usagef("--compile-helpers 0 compiles in the worker, which uses neither --compiler, --cubin-cache nor --no-cache")
	}
	if !fs.Given("no-cache") {
		opt.cacheDir = fs.str("cubin-cache")
		if opt.cacheDir == "" {
			dir, err := runner.DefaultCubinCacheDir()
			if err != nil {
				return opt, usagef("%w; give --cubin-cache DIR or --no-cache", err)
			}
			opt.cacheDir = dir
		}
	}
	return opt, nil
}

// errJITCacheOff says why tune runs without compile helpers although
// they were asked for.
var errJITCacheOff = errors.New("CUDA_CACHE_DISABLE=1 turns the driver's JIT cache off, so --compiler jit helpers cannot compile ahead of the worker: the worker compiles every program itself")

// startCompilePool starts the pool opt asks for on r's GPU, or returns
// nil with no helpers. With --compiler jit and the driver's JIT cache off
// it returns nil and errJITCacheOff.
func startCompilePool(opt compileOptions, r *runner.Runner, dev int) (*runner.CompilePool, error) {
	if opt.helpers == 0 {
		return nil, nil
	}
	info := r.Device()
	id := "driver-link " + info.Driver
	switch opt.compiler {
	case "jit":
		// The helpers' JIT leaves the code in the driver's compute cache,
		// where the worker's load of the same PTX finds it.
		if os.Getenv("CUDA_CACHE_DISABLE") == "1" {
			return nil, errJITCacheOff
		}
		if os.Getenv("CUDA_CACHE_MAXSIZE") == "" {
			os.Setenv("CUDA_CACHE_MAXSIZE", strconv.Itoa(4<<30)) // the driver's maximum: a whole sweep's code
		}
		id = "driver-jit " + info.Driver
	case "fake":
		id = "fake"
	case "ptxas":
		p, err := runner.NewPtxasCompiler(opt.ptxas, info.CC)
		if err != nil {
			return nil, err
		}
		id = p.ID()
	}
	var cache *runner.CubinCache
	if opt.cacheDir != "" {
		cache = &runner.CubinCache{Dir: opt.cacheDir}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the tune binary for its compile helpers: %w", err)
	}
	argv := []string{exe, "__compile", "--device", strconv.Itoa(dev), "--compiler", opt.compiler, "--cc", info.CC}
	target := "sm_" + info.CC
	keyOf := func(ptx string) string {
		return runner.CacheKey(ptx, target, runner.CompileOptions, id, info.Driver+" "+info.Name)
	}
	return runner.NewCompilePool(argv, opt.helpers, cache, keyOf), nil
}
