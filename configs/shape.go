package configs

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Shape is a problem size: named extents ("m": 2048, "n": 8960).
type Shape map[string]float64

// ParseShape reads "m=2048,n=8960" (canonical dims, without the dtype).
func ParseShape(s string) (Shape, error) {
	out := Shape{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("shape %q: %q is not name=value", s, kv)
		}
		if k == "dtype" {
			return nil, fmt.Errorf("shape %q: give the dtype apart from the dims", s)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("shape %q: %s=%s: want a positive number", s, k, v)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("shape %q: %s given twice", s, k)
		}
		out[k] = f
	}
	return out, nil
}

// String prints the shape with its dims sorted by name.
func (s Shape) String() string {
	names := s.names()
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.FormatFloat(s[n], 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

func (s Shape) names() []string {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Distance is the log-distance between two shapes with the same dims: the
// square root of the sum over dims of ln(a/b)². It reports false when the
// dims differ.
func (s Shape) Distance(o Shape) (float64, bool) {
	if len(s) != len(o) {
		return 0, false
	}
	var sum float64
	for n, a := range s {
		b, ok := o[n]
		if !ok {
			return 0, false
		}
		d := math.Log(a / b)
		sum += d * d
	}
	return math.Sqrt(sum), true
}
