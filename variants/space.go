package variants

import (
	"fmt"
	"strings"
)

// Axis is one tunable dimension: a name, the values tried, and what it
// means; Default, when set, is the value of params that lack the axis
// (recorded before it existed).
type Axis struct {
	Name    string
	Values  []string
	Doc     string
	Default string
}

// IntAxis builds an axis from integer values.
func IntAxis(name, doc string, vals ...int) Axis {
	a := Axis{Name: name, Doc: doc}
	for _, v := range vals {
		a.Values = append(a.Values, fmt.Sprint(v))
	}
	return a
}

// Constraint rules out combinations of axis values. OK returns nil for an
// allowed point, or the reason it is not allowed.
type Constraint struct {
	Name string
	OK   func(Params) error
}

// Space is the set of variants of a kernel for one shape: the cartesian
// product of its axes, less the points a constraint rejects.
type Space struct {
	Axes        []Axis
	Constraints []Constraint
	// rules, when set (a Typed space's view), checks every constraint at
	// once, decoding the params once: what Constraints check one by one.
	rules func(Params) (rule string, err error)
	// walk, when set (a Typed space's view), yields the allowed points in
	// enumeration order on typed params: what allowedPoints yields.
	walk func(yield func(Params) bool)
	// search, when set (a Typed space with search rules), is the space
	// the tuner searches with fix given: Search's answer.
	search func(fix Params) Space
	// searchRules are the names of those rules, in the family's order.
	searchRules []string
}

// SearchRules names the rules that narrow Search alone (Rule.Search), in
// the family's order; none for a space without them.
func (s Space) SearchRules() []string { return s.searchRules }

// Search is the space the tuner searches when the user fixes fix: s with
// its family's search rules (Rule.Search) added, except those that read
// an axis fix names; s itself when that leaves no point with fix's
// values (fix names only axes the rules do not read, yet asks for a
// region they leave out). A space without search rules is its own.
func (s Space) Search(fix Params) Space {
	if s.search == nil {
		return s
	}
	return s.search(fix)
}

// Axis returns the axis called name.
func (s Space) Axis(name string) (Axis, bool) {
	for _, a := range s.Axes {
		if a.Name == name {
			return a, true
		}
	}
	return Axis{}, false
}

// Size is the number of points before constraints.
func (s Space) Size() int {
	n := 1
	for _, a := range s.Axes {
		n *= len(a.Values)
	}
	return n
}

// ParseRecorded parses params stored by an earlier run (a database, a
// config table) as a point of today's space: axes added since take their
// defaults (WithDefaults). Whether it is a point is Check's business.
func (s Space) ParseRecorded(params string) (Params, error) {
	p, err := ParseParams(params)
	if err != nil {
		return nil, err
	}
	return s.WithDefaults(p), nil
}

// WithDefaults returns p with every axis it lacks that has a default set
// to that default: the point an older record names in today's space. p
// itself is not changed.
func (s Space) WithDefaults(p Params) Params {
	out := p.Clone()
	for _, a := range s.Axes {
		if _, ok := out[a.Name]; !ok && a.Default != "" {
			out[a.Name] = a.Default
		}
	}
	return out
}

// Check reports whether p names every axis with one of its values and
// satisfies every constraint. The error names what is wrong and what is
// accepted.
func (s Space) Check(p Params) error {
	for k := range p {
		if _, ok := s.Axis(k); !ok {
			return fmt.Errorf("unknown param %q (axes: %s)", k, s.axisNames())
		}
	}
	for _, a := range s.Axes {
		v, ok := p[a.Name]
		if !ok {
			return fmt.Errorf("param %q missing (axes: %s)", a.Name, s.axisNames())
		}
		if !contains(a.Values, v) {
			return fmt.Errorf("param %s=%s not accepted (values: %s)", a.Name, v, strings.Join(a.Values, ", "))
		}
	}
	if rule, err := s.violated(p); err != nil {
		return fmt.Errorf("params %s violate %s: %w", p, rule, err)
	}
	return nil
}

// violated returns the first constraint p violates and why.
func (s Space) violated(p Params) (rule string, err error) {
	if s.rules != nil {
		return s.rules(p)
	}
	for _, c := range s.Constraints {
		if err := c.OK(p); err != nil {
			return c.Name, err
		}
	}
	return "", nil
}

// Complete fills the axes p leaves out with their first value, so that a
// user may give only the axes they care about.
func (s Space) Complete(p Params) Params {
	q := p.Clone()
	for _, a := range s.Axes {
		if _, ok := q[a.Name]; !ok && len(a.Values) > 0 {
			q[a.Name] = a.Values[0]
		}
	}
	return q
}

// First returns the first allowed point in enumeration order: a family's
// default variant, what a user gets who fixes no axis. It reports false
// for a space with no allowed point.
func (s Space) First() (Params, bool) {
	var first Params
	s.points(func(p Params) bool {
		first = p
		return false
	})
	return first, first != nil
}

// Enumerate lists every allowed point, in axis order (the last axis varies
// fastest).
func (s Space) Enumerate() []Params {
	var out []Params
	s.points(func(p Params) bool {
		out = append(out, p)
		return true
	})
	return out
}

// Product lists every combination of the axis values, in enumeration
// order, whether the constraints allow it or not (for tests that check
// what the constraints reject).
func (s Space) Product() []Params {
	var out []Params
	s.each(func(p Params) bool {
		out = append(out, p)
		return true
	})
	return out
}

// has reports whether some allowed point has all of fix's values.
func (s Space) has(fix Params) bool {
	found := false
	s.points(func(p Params) bool {
		found = p.Agrees(fix)
		return !found
	})
	return found
}

// points calls yield with every allowed point in enumeration order until
// it returns false.
func (s Space) points(yield func(Params) bool) {
	if s.walk != nil {
		s.walk(yield)
		return
	}
	s.each(func(p Params) bool { return !s.allowed(p) || yield(p) })
}

// each calls yield with every combination of axis values in enumeration
// order until it returns false.
func (s Space) each(yield func(Params) bool) {
	idx := make([]int, len(s.Axes))
	for _, a := range s.Axes {
		if len(a.Values) == 0 {
			return
		}
	}
	for {
		p := make(Params, len(s.Axes))
		for i, a := range s.Axes {
			p[a.Name] = a.Values[idx[i]]
		}
		if !yield(p) {
			return
		}
		i := len(idx) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(s.Axes[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

func (s Space) allowed(p Params) bool {
	_, err := s.violated(p)
	return err == nil
}

func (s Space) axisNames() string {
	var n []string
	for _, a := range s.Axes {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}

func contains(vals []string, v string) bool {
	for _, x := range vals {
		if x == v {
			return true
		}
	}
	return false
}
