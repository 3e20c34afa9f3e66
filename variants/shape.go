package variants

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gradtune/gradtune/kernels/dtype"
)

// Dim is one named extent of a problem, such as m=2048.
type Dim struct {
	Name  string
	Value int
}

// Shape is a problem size plus its element type. Shapes are baked into the
// generated PTX, so every variant is specialised for one shape.
type Shape struct {
	Dims  []Dim
	DType dtype.DType
}

// Get returns the extent called name, or 0.
func (s Shape) Get(name string) int {
	for _, d := range s.Dims {
		if d.Name == name {
			return d.Value
		}
	}
	return 0
}

// Has reports whether the shape names the extent.
func (s Shape) Has(name string) bool {
	for _, d := range s.Dims {
		if d.Name == name {
			return true
		}
	}
	return false
}

// Elems is the product of all extents.
func (s Shape) Elems() int {
	n := 1
	for _, d := range s.Dims {
		n *= d.Value
	}
	return n
}

// Key prints the shape canonically, e.g. "m=2048,n=8960,dtype=f32". Dims
// keep the order the family gave them.
func (s Shape) Key() string {
	var b strings.Builder
	for _, d := range s.Dims {
		fmt.Fprintf(&b, "%s=%d,", d.Name, d.Value)
	}
	b.WriteString("dtype=" + s.DType.String())
	return b.String()
}

// Size prints the extents alone, e.g. "2048×8960".
func (s Shape) Size() string {
	var parts []string
	for _, d := range s.Dims {
		parts = append(parts, strconv.Itoa(d.Value))
	}
	return strings.Join(parts, "×")
}

// Spec is a user's shape request before a family interprets it: named
// extents and an optional dtype (dtype=bf16).
type Spec struct {
	Dims  []Dim
	DType dtype.DType // Invalid when the spec names none
}

// ParseSpecs parses one or more shape specs separated by ';', each
// "name=value,name=value[,dtype=D]". Values must be positive integers.
func ParseSpecs(s string) ([]Spec, error) {
	var out []Spec
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		sp, err := parseSpec(part)
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty shape spec")
	}
	return out, nil
}

func parseSpec(s string) (Spec, error) {
	var sp Spec
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(f, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return Spec{}, fmt.Errorf("malformed shape %q: want name=value pairs such as m=2048,n=8960", s)
		}
		if seen[k] {
			return Spec{}, fmt.Errorf("malformed shape %q: %s given twice", s, k)
		}
		seen[k] = true
		if k == "dtype" {
			d, err := dtype.Parse(v)
			if err != nil {
				return Spec{}, fmt.Errorf("shape %q: %w", s, err)
			}
			sp.DType = d
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return Spec{}, fmt.Errorf("malformed shape %q: %s=%s is not a positive integer", s, k, v)
		}
		sp.Dims = append(sp.Dims, Dim{k, n})
	}
	return sp, nil
}

// Get returns the extent called name and whether the spec names it.
func (sp Spec) Get(name string) (int, bool) {
	for _, d := range sp.Dims {
		if d.Name == name {
			return d.Value, true
		}
	}
	return 0, false
}
