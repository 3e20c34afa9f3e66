package tuning

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// CheckParams accepts fix for shape s of f when it names axes of the
// shape's space, with values of those axes, and at least one valid point
// has all of them. The error (an *InputError) says what would be valid.
func CheckParams(f kernels.Family, s variants.Shape, fix variants.Params) error {
	sp := f.Space(s)
	for _, a := range sp.Axes {
		if v, ok := fix[a.Name]; ok && !slices.Contains(a.Values, v) {
			return inputf("--params: %s %s=%s not accepted for %s (values: %s)", f.Name(), a.Name, v, s.Key(), strings.Join(a.Values, ", "))
		}
	}
	for _, k := range sortedKeys(fix) {
		if _, ok := sp.Axis(k); !ok {
			return inputf("--params: %s has no axis %q (axes: %s)", f.Name(), k, strings.Join(axisNames(sp), ", "))
		}
	}
	if _, err := FirstPoint(sp, fix); err != nil {
		return inputf("--params: %s %s: %w", f.Name(), s.Key(), err)
	}
	return nil
}

// FirstPoint returns the first valid point of sp, in Enumerate's order,
// that has fix's values: the variant a user means who names only some
// axes.
func FirstPoint(sp variants.Space, fix variants.Params) (variants.Params, error) {
	if len(fix) == 0 {
		if p, ok := sp.First(); ok {
			return p, nil
		}
	} else if pts := variants.Filter(sp.Enumerate(), fix); len(pts) > 0 {
		return pts[0], nil
	}
	if len(fix) == 0 {
		return nil, fmt.Errorf("the space has no valid point")
	}
	var alts []string
	for _, av := range ValidValues(sp, fix) {
		vals := strings.Join(av.Values, ", ")
		if vals == "" {
			vals = "none"
		}
		alt := av.Axis + ": " + vals
		if others := without(fix, av.Axis); len(others) > 0 {
			alt += " (with " + others.String() + ")"
		}
		alts = append(alts, alt)
	}
	return nil, fmt.Errorf("no valid variant has %s; valid values: %s", fix, strings.Join(alts, "; "))
}

// AxisValues is the values one axis may take.
type AxisValues struct {
	Axis   string
	Values []string
}

// ValidValues returns, for each axis fix names (in the space's axis
// order), the values of the valid points of sp that agree with fix on
// every other axis fix names.
func ValidValues(sp variants.Space, fix variants.Params) []AxisValues {
	all := sp.Enumerate()
	var out []AxisValues
	for _, a := range sp.Axes {
		if _, ok := fix[a.Name]; !ok {
			continue
		}
		seen := map[string]bool{}
		for _, p := range variants.Filter(all, without(fix, a.Name)) {
			seen[p[a.Name]] = true
		}
		av := AxisValues{Axis: a.Name}
		for _, v := range a.Values {
			if seen[v] {
				av.Values = append(av.Values, v)
			}
		}
		out = append(out, av)
	}
	return out
}

// without returns p less the axis name.
func without(p variants.Params, name string) variants.Params {
	q := p.Clone()
	delete(q, name)
	return q
}

func axisNames(sp variants.Space) []string {
	var n []string
	for _, a := range sp.Axes {
		n = append(n, a.Name)
	}
	return n
}

func sortedKeys(p variants.Params) []string {
	var ks []string
	for k := range p {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
