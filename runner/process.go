package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/gradtune/gradtune/eval"
)

// processWorker talks to a worker process over its stdin and stdout.
type processWorker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *json.Decoder
	stderr *tailBuffer
	enc    *json.Encoder
}

// NewProcessWorker returns a constructor that starts argv (the tune binary
// with its hidden worker arguments) as a worker process.
func NewProcessWorker(argv []string) func() (Worker, error) {
	return func() (Worker, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = os.Environ()
		in, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		tb := &tailBuffer{max: 8 << 10}
		cmd.Stderr = tb
		dieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting worker %s: %w", argv[0], err)
		}
		return &processWorker{cmd: cmd, in: in, enc: json.NewEncoder(in),
			out: json.NewDecoder(bufio.NewReaderSize(out, 1<<20)), stderr: tb}, nil
	}
}

func (p *processWorker) call(ctx context.Context, req *request) (*response, error) {
	if err := p.enc.Encode(req); err != nil {
		return nil, p.died(fmt.Errorf("sending request: %w", err))
	}
	type result struct {
		resp *response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		var resp response
		err := p.out.Decode(&resp)
		ch <- result{&resp, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, p.died(r.err)
		}
		return r.resp, nil
	case <-ctx.Done():
		p.cmd.Process.Kill()
		<-ch
		return nil, fmt.Errorf("worker killed: %w", ctx.Err())
	}
}

// died explains a broken pipe with what the worker printed last.
func (p *processWorker) died(err error) error {
	p.cmd.Process.Kill()
	p.cmd.Wait()
	msg := strings.TrimSpace(p.stderr.String())
	if msg != "" {
		return fmt.Errorf("worker died (%v): %s", p.cmd.ProcessState, msg)
	}
	return fmt.Errorf("worker died (%v): %w", p.cmd.ProcessState, err)
}

func (p *processWorker) Hello() (DeviceInfo, error) {
	resp, err := p.call(context.Background(), &request{Op: "hello"})
	if err != nil {
		return DeviceInfo{}, err
	}
	if resp.Err != "" {
		return DeviceInfo{}, errors.New(resp.Err)
	}
	return *resp.Info, nil
}

func (p *processWorker) CopyBandwidth() (float64, error) {
	resp, err := p.call(context.Background(), &request{Op: "copybw"})
	if err != nil {
		return 0, err
	}
	if resp.Err != "" {
		return 0, errors.New(resp.Err)
	}
	return resp.CopyGBps, nil
}

func (p *processWorker) Prepare(ctx context.Context, r *evalRequest) (*evalResponse, error) {
	resp, err := p.call(ctx, &request{Op: "prepare", Eval: r})
	if err != nil {
		return nil, err
	}
	if resp.Err != "" {
		return &evalResponse{Outcome: Outcome{Status: eval.LaunchError, Message: resp.Err}}, nil
	}
	return resp.Eval, nil
}

func (p *processWorker) Eval(ctx context.Context, r *evalRequest, m MeasureOpts) (*evalResponse, error) {
	resp, err := p.call(ctx, &request{Op: "eval", Eval: r, Measure: m})
	if err != nil {
		return nil, err
	}
	if resp.Err != "" {
		return &evalResponse{Outcome: Outcome{Status: eval.LaunchError, Message: resp.Err}}, nil
	}
	return resp.Eval, nil
}

func (p *processWorker) Close() error {
	p.in.Close()
	return p.cmd.Wait()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
