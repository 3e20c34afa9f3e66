package tuning

import (
	"slices"

	"github.com/gradtune/gradtune/dtype"
	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/variants"
)

// AxisListing is one axis of a family and its values, per group of dtypes.
type AxisListing struct {
	Name, Doc string
	Groups    []ValueGroup // in the family's dtype order
}

// ValueGroup is the values an axis takes in some dtypes.
type ValueGroup struct {
	DTypes []dtype.DType
	Values []string
}

// Axes lists the axes of f at the shapes of preset p: for each dtype, the
// values an axis takes at any of the preset's shapes in that dtype
// (the union, in order of appearance); dtypes whose values agree share a
// group.
func Axes(f kernels.Family, p variants.Preset) []AxisListing {
	var out []AxisListing
	index := map[string]int{}
	for _, dt := range f.DTypes() {
		vals := map[string][]string{}
		for _, s := range f.Shapes(p, []dtype.DType{dt}) {
			for _, a := range f.Space(s).Axes {
				if _, ok := index[a.Name]; !ok {
					index[a.Name] = len(out)
					out = append(out, AxisListing{Name: a.Name, Doc: a.Doc})
				}
				for _, v := range a.Values {
					if !slices.Contains(vals[a.Name], v) {
						vals[a.Name] = append(vals[a.Name], v)
					}
				}
			}
		}
		for name, vs := range vals {
			l := &out[index[name]]
			l.Groups = addToGroup(l.Groups, dt, vs)
		}
	}
	return out
}

// addToGroup adds dt to the group with values vs, or starts one.
func addToGroup(gs []ValueGroup, dt dtype.DType, vs []string) []ValueGroup {
	for i := range gs {
		if slices.Equal(gs[i].Values, vs) {
			gs[i].DTypes = append(gs[i].DTypes, dt)
			return gs
		}
	}
	return append(gs, ValueGroup{DTypes: []dtype.DType{dt}, Values: vs})
}

// SearchRules names the search rules (variants.Rule.Search) of f's
// spaces at the shapes of preset p, each once, in order of appearance:
// what tune's search leaves out unless --params names an axis they read.
func SearchRules(f kernels.Family, p variants.Preset) []string {
	var out []string
	for _, s := range f.Shapes(p, f.DTypes()) {
		for _, r := range f.Space(s).SearchRules() {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}
