package eval

import (
	"fmt"
	"strings"
)

// Status is the outcome of evaluating one variant.
type Status string

// Evaluation statuses.
const (
	// OK: compiled, valid against the reference, timed.
	OK Status = "ok"
	// Invalid: ran, but an output is outside the family's tolerance.
	Invalid Status = "invalid"
	// CompileError: the variant did not emit, parse or JIT-compile.
	CompileError Status = "compile_error"
	// LaunchError: a launch or a copy failed (transient: retried by a re-run).
	LaunchError Status = "launch_error"
	// Timeout: the variant ran past the evaluation time limit (transient).
	Timeout Status = "timeout"
	// Skipped: the prescreen left the variant out (for example spills).
	Skipped Status = "skipped"
)

// Statuses lists every status, in the order above.
func Statuses() []Status {
	return []Status{OK, Invalid, CompileError, LaunchError, Timeout, Skipped}
}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool {
	for _, x := range Statuses() {
		if s == x {
			return true
		}
	}
	return false
}

// Transient reports whether s may succeed when evaluated again (a launch
// error or a timeout), as opposed to a final verdict.
func (s Status) Transient() bool { return s == LaunchError || s == Timeout }

// Failed reports whether s counts as a failed variant: neither ok nor
// skipped.
func (s Status) Failed() bool { return s != OK && s != Skipped }

// ParseStatus returns the status called s.
func ParseStatus(s string) (Status, error) {
	if st := Status(s); st.Valid() {
		return st, nil
	}
	return "", fmt.Errorf("status %q: want %s", s, join(Statuses()))
}

// Mode is how samples are timed.
type Mode string

// Timing modes.
const (
	// Cold flushes the L2 cache before every sample.
	Cold Mode = "cold"
	// Hot times back-to-back runs with whatever the L2 holds.
	Hot Mode = "hot"
)

// Modes lists every mode.
func Modes() []Mode { return []Mode{Cold, Hot} }

// Valid reports whether m is one of Modes.
func (m Mode) Valid() bool { return m == Cold || m == Hot }

// ParseMode returns the mode called s.
func ParseMode(s string) (Mode, error) {
	if m := Mode(s); m.Valid() {
		return m, nil
	}
	return "", fmt.Errorf("mode %q: want %s", s, join(Modes()))
}

// join lists values as "a, b or c".
func join[T ~string](vs []T) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = string(v)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// baselinePrefix starts the parameter string of a baseline's evaluation.
const baselinePrefix = "baseline="

// BaselineParams is the parameter string under which a family's baseline
// called name ("cublas") is stored: a pseudo-variant of the kernel and
// shape, "baseline=cublas", which no family's parameter space produces
// (axis names are the family's own).
func BaselineParams(name string) string { return baselinePrefix + name }

// BaselineName returns the baseline's name when params is a baseline's
// parameter string.
func BaselineName(params string) (string, bool) {
	if len(params) > len(baselinePrefix) && params[:len(baselinePrefix)] == baselinePrefix {
		return params[len(baselinePrefix):], true
	}
	return "", false
}

// The GEMM library baselines: cublasGemmEx's default algorithm and the
// best of cuBLASLt's heuristic top algorithms, two picks of one library
// call on the same buffers, compared as one (the faster counts). Other
// baselines (nf4_gemm_bwd's dequant+cublas) are comparisons of their own.
const (
	BaselineCuBLAS = "cublas"
	BaselineLtBest = "cublaslt-best"
)

// OneComparison reports whether baselines a and b are picks of one
// comparison: the same name, or both GEMM library picks.
func OneComparison(a, b string) bool {
	lib := func(n string) bool { return n == BaselineCuBLAS || n == BaselineLtBest }
	return a == b || lib(a) && lib(b)
}
