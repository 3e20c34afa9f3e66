package sim

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error the interpreter returns wraps one of them,
// so callers and tests can classify a failure with errors.Is.
var (
	// ErrParse: the PTX text is not in the dialect this interpreter reads
	// (the one kernels/ptx prints), or names something undeclared.
	ErrParse = errors.New("unsupported PTX")
	// ErrLaunch: a launch whose configuration or arguments do not fit the
	// kernel (block too large, .reqntid mismatch, wrong argument count,
	// too much shared memory).
	ErrLaunch = errors.New("invalid launch")
	// ErrMemory: an access outside every global allocation, outside the
	// CTA's shared memory or outside the thread's local memory.
	ErrMemory = errors.New("out-of-bounds memory access")
	// ErrMisaligned: an access whose address is not a multiple of its size
	// (a .v4.f32 access needs 16-byte alignment).
	ErrMisaligned = errors.New("misaligned memory access")
	// ErrUninitialized: a register read by a thread that never wrote it.
	ErrUninitialized = errors.New("read of an uninitialized register")
	// ErrBarrier: a barrier reached by only some of the live lanes of a
	// warp (a barrier in a divergent branch), a phase of a barrier without
	// a count reached at different instructions, or thread counts that are
	// not whole warps, exceed the CTA, differ within one phase or are
	// exceeded by a warp arriving twice.
	ErrBarrier = errors.New("barrier divergence")
	// ErrRace: two threads of a CTA touched the same shared-memory bytes,
	// at least one of them writing, with no barrier phase ordering them.
	ErrRace = errors.New("shared-memory race")
	// ErrWarpSync: a warp-synchronous instruction (shfl.sync, vote.sync,
	// mma.sync, ldmatrix) executed without every lane it names, or reading
	// a lane that does not take part.
	ErrWarpSync = errors.New("warp-synchronous instruction with missing lanes")
	// ErrTrap: the kernel executed trap, or an instruction whose result PTX
	// leaves undefined in a way the interpreter refuses to guess.
	ErrTrap = errors.New("kernel trap")
	// ErrTimeout: a CTA executed more instructions than Options.MaxSteps
	// allows (an endless loop, most likely).
	ErrTimeout = errors.New("instruction limit exceeded")
	// ErrIllegal: the kernel executed brkpt with no debugger attached,
	// which a GPU reports as an illegal instruction.
	ErrIllegal = errors.New("illegal instruction")
	// ErrDeadlock: every warp of a cluster waits (on an mbarrier phase, a
	// barrier or the cluster barrier) and no asynchronous operation is in
	// flight that could release one: a GPU would hang.
	ErrDeadlock = errors.New("deadlock")
	// ErrAsync: an access that the asynchronous operations in flight
	// forbid: registers of a wgmma.mma_async before the wgmma.wait_group
	// that covers it, shared memory an in-flight TMA load writes, or a
	// write to shared memory an in-flight wgmma or TMA store reads.
	ErrAsync = errors.New("access to the operands of an in-flight asynchronous operation")
	// ErrProxy: the async proxy (wgmma operands, TMA stores) reads shared
	// memory that the generic proxy (st.shared, stmatrix) wrote, without
	// a fence.proxy.async of the writing thread in between.
	ErrProxy = errors.New("missing proxy fence")
)

// ExecError is a failure while a kernel runs: which kernel, which
// instruction (PTX line and text), which thread and, for memory errors,
// which address. It wraps one of the sentinel errors.
type ExecError struct {
	Kernel string
	Line   int    // line of the instruction in the PTX text
	Inst   string // the instruction as written
	CTA    [3]int
	Thread [3]int // the first offending thread; see Detail for others
	Addr   uint64 // for memory errors
	HasAdd bool
	Detail string
	Err    error // the sentinel
}

func (e *ExecError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: kernel %s, line %d `%s`, CTA (%d,%d,%d) thread (%d,%d,%d)",
		e.Err, e.Kernel, e.Line, e.Inst, e.CTA[0], e.CTA[1], e.CTA[2], e.Thread[0], e.Thread[1], e.Thread[2])
	if e.HasAdd {
		fmt.Fprintf(&b, ", address %#x", e.Addr)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

func (e *ExecError) Unwrap() error { return e.Err }

// Timeout reports whether the kernel was stopped by the instruction limit:
// the runner records such a variant as a timeout, as it records a GPU
// kernel that its watchdog stopped.
func (e *ExecError) Timeout() bool { return errors.Is(e.Err, ErrTimeout) }

// parseError builds an ErrParse error naming the line and its text.
func parseError(line int, text, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if text != "" {
		return fmt.Errorf("%w: line %d `%s`: %s", ErrParse, line, text, msg)
	}
	return fmt.Errorf("%w: line %d: %s", ErrParse, line, msg)
}

// laneList prints a lane mask as "0-15,17".
func laneList(m uint32) string {
	var parts []string
	for l := 0; l < 32; {
		if m&(1<<l) == 0 {
			l++
			continue
		}
		e := l
		for e+1 < 32 && m&(1<<(e+1)) != 0 {
			e++
		}
		if e == l {
			parts = append(parts, fmt.Sprint(l))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", l, e))
		}
		l = e + 1
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
