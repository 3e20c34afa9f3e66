package configs

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Shape is a problem: named sizes ("m": 2048, "p": 1.5) and named
// choices ("grad": "dx").
type Shape struct {
	Sizes   map[string]float64
	Choices map[string]string
}

// ParseShape reads "m=2048,n=8960" or "m=2048,n=256,k=1536,grad=dw"
// (canonical dims, without the dtype): a value is a positive number or,
// for a choice, a name (a lower-case letter, then letters, digits and
// underscores).
func ParseShape(s string) (Shape, error) {
	out := Shape{Sizes: map[string]float64{}, Choices: map[string]string{}}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		switch {
		case !ok || k == "":
			return Shape{}, fmt.Errorf("shape %q: %q is not name=value", s, kv)
		case k == "dtype":
			return Shape{}, fmt.Errorf("shape %q: give the dtype apart from the dims", s)
		case out.has(k):
			return Shape{}, fmt.Errorf("shape %q: %s given twice", s, k)
		case isName(v):
			out.Choices[k] = v
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return Shape{}, fmt.Errorf("shape %q: %s=%s: want a positive number or a choice's name", s, k, v)
		}
		out.Sizes[k] = f
	}
	return out, nil
}

func (s Shape) has(name string) bool {
	_, size := s.Sizes[name]
	_, choice := s.Choices[name]
	return size || choice
}

// isName reports whether v is a choice's name.
func isName(v string) bool {
	for i, c := range v {
		if !(c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '_')) {
			return false
		}
	}
	return v != ""
}

// String prints the shape with its dims sorted by name.
func (s Shape) String() string {
	var parts []string
	for n, v := range s.Sizes {
		parts = append(parts, n+"="+strconv.FormatFloat(v, 'f', -1, 64))
	}
	for n, v := range s.Choices {
		parts = append(parts, n+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Distance is the log-distance between two shapes with the same dims and
// the same choices: the square root of the sum over sizes of ln(a/b)². It
// reports false when the dims or a choice differ.
func (s Shape) Distance(o Shape) (float64, bool) {
	if len(s.Sizes) != len(o.Sizes) || len(s.Choices) != len(o.Choices) {
		return 0, false
	}
	for n, c := range s.Choices {
		if o.Choices[n] != c {
			return 0, false
		}
	}
	var sum float64
	for n, a := range s.Sizes {
		b, ok := o.Sizes[n]
		if !ok {
			return 0, false
		}
		d := math.Log(a / b)
		sum += d * d
	}
	return math.Sqrt(sum), true
}
