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

// The rules, from the most to the least specific.
const (
	Exact   Rule = iota + 1 // the tuned shape on the same GPU model
	Nearest                 // the closest tuned shape on the same GPU model
	SameCC                  // another GPU model of the same compute capability
)

func (r Rule) String() string {
	switch r {
	case Exact:
		return "exact"
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
}

// Set is a collection of tables, with the files their PTX is in.
type Set struct {
	Tables []*Table
	// ptx reads the PTX file of an entry of table i.
	ptx func(i int, name string) ([]byte, error)
}

// Lookup finds the entry for kernel in dtype at shape on gpu; see the
// package documentation for the rules.
func (s *Set) Lookup(gpu GPU, kernel, dtype string, shape Shape) (Match, error) {
	ask := fmt.Sprintf("%s %s %s on %s (cc %s)", kernel, dtype, shape, gpu.Name, gpu.CC)
	same, cc := s.byGPU(gpu)
	if len(same)+len(cc) == 0 {
		return Match{}, fmt.Errorf("configs: %s: %w (tables: %s)", ask, ErrUnknownGPU, s.gpus())
	}
	if !s.hasKernel(append(same, cc...), kernel) {
		return Match{}, fmt.Errorf("configs: %s: %w (kernels for this GPU: %s)", ask, ErrUnknownKernel, s.kernels(append(same, cc...)))
	}
	if m, ok := closest(same, kernel, dtype, shape); ok {
		return m, nil
	}
	if m, ok := closest(cc, kernel, dtype, shape); ok {
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

// closest is the exact or nearest entry of kernel and dtype in tables.
func closest(tables []*Table, kernel, dtype string, shape Shape) (Match, bool) {
	best := Match{Distance: math.Inf(1)}
	for _, t := range tables {
		for _, e := range t.Entries {
			if e.Kernel != kernel || e.DType != dtype {
				continue
			}
			es, err := ParseShape(e.Shape)
			if err != nil {
				continue
			}
			if d, ok := shape.Distance(es); ok && d < best.Distance {
				best = Match{Entry: e, Table: t, Rule: Nearest, Distance: d}
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
func (s *Set) PTX(m Match) ([]byte, error) {
	if m.Entry.PTX == "" {
		return nil, fmt.Errorf("configs: %s: the table was exported without PTX files (tune export --ptx)", m.Entry.Key())
	}
	for i, t := range s.Tables {
		if t == m.Table {
			b, err := s.ptx(i, m.Entry.PTX)
			if err != nil {
				return nil, fmt.Errorf("configs: %s: %w", m.Entry.Key(), err)
			}
			return b, checkPTX(m.Entry, b)
		}
	}
	return nil, fmt.Errorf("configs: %s: the match's table is not in this set", m.Entry.Key())
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
