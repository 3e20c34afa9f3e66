package variants

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gradtune/gradtune/dtype"
)

// Dim is one named extent of a problem, such as m=2048.
type Dim struct {
	Name  string
	Value int
	// Milli is the fractional part of the extent in thousandths (0..999):
	// the extent is Value + Milli/1000. A family's typed shape decides
	// which extents may have one (a Milli field); Get returns the integer
	// part and Float the whole.
	Milli int `json:",omitempty"`
	// Text is the value of an extent that names a choice rather than a
	// size (grad=dx); Value is then 0. The typed shape decides which
	// extents are choices (a string field) and which names they take.
	Text string `json:",omitempty"`
}

// Float returns the extent as a number, fraction included.
func (d Dim) Float() float64 { return float64(d.Value) + float64(d.Milli)/1000 }

// ValueString prints the extent: "2048", "1.5" for a fractional one, or
// the name of a choice.
func (d Dim) ValueString() string {
	if d.Text != "" {
		return d.Text
	}
	if d.Milli == 0 {
		return strconv.Itoa(d.Value)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%03d", d.Value, d.Milli), "0")
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

// Float returns the extent called name with its fraction, or 0.
func (s Shape) Float(name string) float64 {
	for _, d := range s.Dims {
		if d.Name == name {
			return d.Float()
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

// Elems is the product of all extents (integer parts; choices count 1).
func (s Shape) Elems() int {
	n := 1
	for _, d := range s.Dims {
		if d.Text == "" {
			n *= d.Value
		}
	}
	return n
}

// Key prints the shape canonically, e.g. "m=2048,n=8960,dtype=f32". Dims
// keep the order the family gave them.
func (s Shape) Key() string {
	var b strings.Builder
	for _, d := range s.Dims {
		fmt.Fprintf(&b, "%s=%s,", d.Name, d.ValueString())
	}
	b.WriteString("dtype=" + s.DType.String())
	return b.String()
}

// Size prints the extents alone, e.g. "2048×8960".
func (s Shape) Size() string {
	var parts []string
	for _, d := range s.Dims {
		parts = append(parts, d.ValueString())
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
// "name=value,name=value[,dtype=D]". Values are non-negative integers
// (0 only where the family's shape has it as a default, ceil=0),
// positive decimals with at most three decimals (p=1.5), or names
// (grad=dx); which extents take which is the family's typed shape's
// business.
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
		if isName(v) {
			sp.Dims = append(sp.Dims, Dim{Name: k, Text: v})
			continue
		}
		if strings.Contains(v, ".") {
			d, ok := parseMilli(v)
			if !ok {
				return Spec{}, fmt.Errorf("malformed shape %q: %s=%s is not a positive number with at most three decimals", s, k, v)
			}
			d.Name = k
			sp.Dims = append(sp.Dims, d)
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Spec{}, fmt.Errorf("malformed shape %q: %s=%s is not a positive integer", s, k, v)
		}
		sp.Dims = append(sp.Dims, Dim{Name: k, Value: n})
	}
	return sp, nil
}

// parseMilli parses a positive decimal "I.F" with one to three digits F
// (and digits I, possibly none) into Value and Milli.
func parseMilli(v string) (Dim, bool) {
	ip, fp, _ := strings.Cut(v, ".")
	if len(fp) == 0 || len(fp) > 3 || !allDigits(ip) || !allDigits(fp) {
		return Dim{}, false
	}
	n := 0
	if ip != "" {
		var err error
		if n, err = strconv.Atoi(ip); err != nil {
			return Dim{}, false
		}
	}
	m, _ := strconv.Atoi((fp + "00")[:3])
	if n == 0 && m == 0 {
		return Dim{}, false
	}
	return Dim{Value: n, Milli: m}, true
}

// isName reports whether v is a choice's name: a lower-case letter, then
// letters, digits and underscores.
func isName(v string) bool {
	for i, c := range v {
		if !(c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '_')) {
			return false
		}
	}
	return v != ""
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Float returns the extent called name with its fraction and whether the
// spec names it.
func (sp Spec) Float(name string) (float64, bool) {
	for _, d := range sp.Dims {
		if d.Name == name {
			return d.Float(), true
		}
	}
	return 0, false
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
