package configs

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Lookup errors, returned wrapped with what was asked and what is known.
var (
	ErrUnknownGPU    = errors.New("no config table for this GPU")
	ErrUnknownKernel = errors.New("no config for this kernel")
	ErrNoConfig      = errors.New("no config for this dtype and shape")
)

// Rule says how Lookup chose an entry.
type Rule int

// The rules, from the most to the least specific. Lookup answers with
// Exact, Runtime or SameCC, all launchable at the asked shape; Nearest is
// Hint's rule.
const (
	Exact   Rule = iota + 1 // the tuned shape on the same GPU model
	Runtime                 // another value of a runtime dim on the same GPU model
	SameCC                  // another GPU model of the same compute capability
	Nearest                 // the closest tuned shape, not necessarily launchable (Hint)
)

func (r Rule) String() string {
	switch r {
	case Exact:
		return "exact"
	case Runtime:
		return "runtime dims"
	case Nearest:
		return "nearest shape"
	case SameCC:
		return "same compute capability"
	}
	return fmt.Sprintf("Rule(%d)", int(r))
}

// Match is Lookup's answer.
type Match struct {
	Entry Entry
	// Table is the table the entry is from (its GPU, for SameCC, is not
	// the one asked for).
	Table *Table
	Rule  Rule
	// Distance is the log-distance from the asked shape (0 for Exact).
	Distance float64
	// Shape is the asked shape.
	Shape Shape
}

// Plan resolves the match's launches and buffers at the asked shape on a
// device of sms multiprocessors.
func (m Match) Plan(sms int) (Plan, error) { return m.Entry.Plan(m.Shape, sms) }

// Set is a collection of tables, with the files their PTX is in.
type Set struct {
	Tables []*Table
	// ptx reads the PTX file of an entry of table i.
	ptx func(i int, name string) ([]byte, error)
}

// Lookup finds the entry to launch for kernel in dtype at shape on gpu:
// the tuned shape (Exact), else the entry tuned closest in log-distance
// whose PTX computes the shape (Runtime: it takes the runtime dims as
// launch arguments), first among the GPU model's tables, then among the
// other tables of its compute capability (SameCC). See the package
// documentation for the errors.
func (s *Set) Lookup(gpu GPU, kernel, dtype string, shape Shape) (Match, error) {
	return s.find(gpu, kernel, dtype, shape, true)
}

// Hint finds the entry tuned closest to shape in log-distance, launchable
// at shape or not (Nearest when it is not the exact shape): which params
// to prefer when no entry computes the shape.
func (s *Set) Hint(gpu GPU, kernel, dtype string, shape Shape) (Match, error) {
	return s.find(gpu, kernel, dtype, shape, false)
}

func (s *Set) find(gpu GPU, kernel, dtype string, shape Shape, launchable bool) (Match, error) {
	ask := fmt.Sprintf("%s %s %s on %s (cc %s)", kernel, dtype, shape, gpu.Name, gpu.CC)
	same, cc := s.byGPU(gpu)
	if len(same)+len(cc) == 0 {
		return Match{}, fmt.Errorf("configs: %s: %w (tables: %s)", ask, ErrUnknownGPU, s.gpus())
	}
	if !s.hasKernel(append(same, cc...), kernel) {
		return Match{}, fmt.Errorf("configs: %s: %w (kernels for this GPU: %s)", ask, ErrUnknownKernel, s.kernels(append(same, cc...)))
	}
	if m, ok := closest(same, kernel, dtype, shape, launchable); ok {
		return m, nil
	}
	if m, ok := closest(cc, kernel, dtype, shape, launchable); ok {
		m.Rule = SameCC
		return m, nil
	}
	return Match{}, fmt.Errorf("configs: %s: %w (tuned: %s)", ask, ErrNoConfig, tuned(append(same, cc...), kernel))
}

// byGPU splits the tables into those of the GPU's model and the others of
// its compute capability.
func (s *Set) byGPU(gpu GPU) (same, cc []*Table) {
	for _, t := range s.Tables {
		switch {
		case gpu.Name != "" && strings.EqualFold(strings.TrimSpace(t.GPU.Name), strings.TrimSpace(gpu.Name)):
			same = append(same, t)
		case gpu.CC != "" && t.GPU.CC == gpu.CC:
			cc = append(cc, t)
		}
	}
	return same, cc
}

// closest is the entry of kernel and dtype in tables closest to shape,
// among those launchable at shape when launchable is set; ties go to the
// first in table order.
func closest(tables []*Table, kernel, dtype string, shape Shape, launchable bool) (Match, bool) {
	best := Match{Distance: math.Inf(1), Shape: shape}
	for _, t := range tables {
		for _, e := range t.Entries {
			if e.Kernel != kernel || e.DType != dtype {
				continue
			}
			es, err := ParseShape(e.Shape)
			if err != nil || (launchable && e.Launchable(shape) != nil) {
				continue
			}
			rule := Runtime
			if !launchable {
				rule = Nearest
			}
			if d, ok := shape.Distance(es); ok && d < best.Distance {
				best = Match{Entry: e, Table: t, Rule: rule, Distance: d, Shape: shape}
			}
		}
	}
	if best.Table == nil {
		return Match{}, false
	}
	if best.Distance == 0 {
		best.Rule = Exact
	}
	return best, true
}

// PTX returns the PTX text of the entry of m, checked against its sha256.
func (s *Set) PTX(m Match) ([]byte, error) { return s.EntryPTX(m.Table, m.Entry) }

// ErrNoPTX is returned (wrapped) for an entry of a table exported without
// PTX files.
var ErrNoPTX = errors.New("the table was exported without PTX files (tune export --ptx)")

// EntryPTX returns the PTX text of entry e of table t of the set, checked
// against its sha256.
func (s *Set) EntryPTX(t *Table, e Entry) ([]byte, error) {
	if e.PTX == "" {
		return nil, fmt.Errorf("configs: %s: %w", e.Key(), ErrNoPTX)
	}
	for i, tb := range s.Tables {
		if tb == t {
			b, err := s.ptx(i, e.PTX)
			if err != nil {
				return nil, fmt.Errorf("configs: %s: %w", e.Key(), err)
			}
			return b, checkPTX(e, b)
		}
	}
	return nil, fmt.Errorf("configs: %s: the table is not in this set", e.Key())
}

func (s *Set) hasKernel(tables []*Table, kernel string) bool {
	for _, t := range tables {
		for _, e := range t.Entries {
			if e.Kernel == kernel {
				return true
			}
		}
	}
	return false
}

func (s *Set) gpus() string {
	var out []string
	for _, t := range s.Tables {
		out = append(out, fmt.Sprintf("%s (cc %s)", t.GPU.Name, t.GPU.CC))
	}
	return uniqueSorted(out)
}

func (s *Set) kernels(tables []*Table) string {
	var out []string
	for _, t := range tables {
		for _, e := range t.Entries {
			out = append(out, e.Kernel)
		}
	}
	return uniqueSorted(out)
}

func tuned(tables []*Table, kernel string) string {
	var out []string
	for _, t := range tables {
		for _, e := range t.Entries {
			if e.Kernel == kernel {
				out = append(out, e.DType+" "+e.Shape)
			}
		}
	}
	return uniqueSorted(out)
}

func uniqueSorted(xs []string) string {
	sort.Strings(xs)
	var out []string
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "; ")
}
