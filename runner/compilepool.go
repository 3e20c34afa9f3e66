package runner

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
)

// compileRequest and compileResponse are the lines between the parent
// and a compile helper.
type compileRequest struct{ PTX string }
type compileResponse struct {
	Cubin []byte
	Err   string
}

// ServeCompile is a compile helper: it reads one compileRequest per line
// from in and answers each with the cubin c compiles, until in closes.
func ServeCompile(in io.Reader, out io.Writer, c Compiler) error {
	dec := json.NewDecoder(bufio.NewReaderSize(in, 1<<20))
	enc := json.NewEncoder(out)
	for {
		var req compileRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("compile helper: reading request: %w", err)
		}
		var resp compileResponse
		cubin, err := c.Compile(req.PTX)
		if err != nil {
			resp.Err = err.Error()
		}
		resp.Cubin = cubin
		if err := enc.Encode(&resp); err != nil {
			return fmt.Errorf("compile helper: writing response: %w", err)
		}
	}
}

// CompilePool compiles PTX in helper processes, overlapped with the
// worker's validation and measurement: Prefetch queues a program, Cubin
// waits for it. Results are cached on disk (Cache, keyed by KeyOf) so
// that a re-run compiles nothing. A helper that dies is replaced; a PTX
// it could not compile has no cubin, and the worker then compiles it
// itself (and reports the error as a compile error).
type CompilePool struct {
	n     int
	argv  []string
	cache *CubinCache
	keyOf func(ptx string) string
	jobs  chan *compileJob
	mu    sync.Mutex
	byKey map[string]*compileJob
	wg    sync.WaitGroup
	procs []*exec.Cmd
	// Compiled and Cached count compilations and cache hits.
	Compiled, Cached int
}

type compileJob struct {
	ptx   string
	key   string
	done  chan struct{}
	cubin []byte
	err   error
}

// NewCompilePool starts n helpers (argv: the tune binary in its hidden
// compile mode). keyOf is the cache key of a PTX (CacheKey with the
// target, options, compiler and driver); cache nil disables caching.
func NewCompilePool(argv []string, n int, cache *CubinCache, keyOf func(string) string) *CompilePool {
	p := &CompilePool{n: max(n, 1), argv: argv, cache: cache, keyOf: keyOf, jobs: make(chan *compileJob, 1<<16), byKey: map[string]*compileJob{}}
	for range max(n, 1) {
		p.wg.Add(1)
		go p.helper()
	}
	return p
}

// Prefetch queues ptx for compilation unless it is queued or cached.
func (p *CompilePool) Prefetch(ptx string) { p.job(ptx) }

func (p *CompilePool) job(ptx string) *compileJob {
	key := p.keyOf(ptx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if j, ok := p.byKey[key]; ok {
		return j
	}
	j := &compileJob{ptx: ptx, key: key, done: make(chan struct{})}
	p.byKey[key] = j
	if p.cache != nil {
		if b, ok := p.cache.Get(key); ok {
			j.cubin = b
			p.Cached++
			close(j.done)
			return j
		}
	}
	p.jobs <- j
	return j
}

// Cubin returns the cubin of ptx, compiling it now if it was not
// prefetched, and forgets it (a program is loaded once).
func (p *CompilePool) Cubin(ptx string) ([]byte, error) {
	j := p.job(ptx)
	<-j.done
	p.mu.Lock()
	delete(p.byKey, j.key)
	p.mu.Unlock()
	return j.cubin, j.err
}

// helper feeds one helper process from the queue, restarting it when it
// dies.
func (p *CompilePool) helper() {
	defer p.wg.Done()
	var h *helperProc
	for j := range p.jobs {
		if h == nil {
			var err error
			if h, err = p.start(); err != nil {
				j.err = err
				close(j.done)
				continue
			}
		}
		cubin, err := h.compile(j.ptx)
		if err != nil && h.dead {
			h.close()
			h = nil
		}
		j.cubin, j.err = cubin, err
		if err == nil && p.cache != nil && len(cubin) > 0 {
			p.cache.Put(j.key, cubin)
		}
		p.mu.Lock()
		p.Compiled++
		p.mu.Unlock()
		close(j.done)
	}
	if h != nil {
		h.close()
	}
}

type helperProc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	enc  *json.Encoder
	dec  *json.Decoder
	dead bool
}

func (p *CompilePool) start() (*helperProc, error) {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = os.Environ()
	if e := os.Getenv("GRADTUNE_HELPER_ENV"); e != "" {
		// Tests run helpers from their own binary in a role this names.
		cmd.Env = append(cmd.Env, e)
	}
	cmd.Stderr = os.Stderr
	dieWithParent(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting compile helper %s: %w", p.argv[0], err)
	}
	p.mu.Lock()
	p.procs = append(p.procs, cmd)
	p.mu.Unlock()
	return &helperProc{cmd: cmd, in: in, enc: json.NewEncoder(in), dec: json.NewDecoder(bufio.NewReaderSize(out, 1<<20))}, nil
}

func (h *helperProc) compile(ptx string) ([]byte, error) {
	if err := h.enc.Encode(compileRequest{PTX: ptx}); err != nil {
		h.dead = true
		return nil, fmt.Errorf("compile helper: %w", err)
	}
	var resp compileResponse
	if err := h.dec.Decode(&resp); err != nil {
		h.dead = true
		return nil, fmt.Errorf("compile helper died: %w", err)
	}
	if resp.Err != "" {
		return nil, errors.New(resp.Err)
	}
	return resp.Cubin, nil
}

func (h *helperProc) close() {
	h.in.Close()
	h.cmd.Wait()
}

// Close stops the helpers (closing their stdin) and waits for them.
func (p *CompilePool) Close() error {
	close(p.jobs)
	p.wg.Wait()
	return nil
}

// Pids are the process ids of the helpers started so far.
func (p *CompilePool) Pids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, c := range p.procs {
		out = append(out, c.Process.Pid)
	}
	return out
}

// Helpers is the number of helpers the pool runs.
func (p *CompilePool) Helpers() int { return p.n }
