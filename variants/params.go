package variants

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Params picks one value for each axis of a Space. Values are kept as the
// strings a user types; Int reads numeric ones.
type Params map[string]string

// String prints the params canonically: keys sorted, "k=v" joined by commas.
// Equal params always print the same, so the string serves as a key.
func (p Params) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(p[k])
	}
	return b.String()
}

// Clone returns a copy of p.
func (p Params) Clone() Params {
	q := make(Params, len(p))
	for k, v := range p {
		q[k] = v
	}
	return q
}

// Int returns the value of axis name as an integer.
func (p Params) Int(name string) (int, error) {
	v, ok := p[name]
	if !ok {
		return 0, fmt.Errorf("param %q missing", name)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("param %s=%q is not an integer", name, v)
	}
	return n, nil
}

// ParseParams parses "k=v,k=v". Keys and values are trimmed; an empty
// string gives empty Params.
func ParseParams(s string) (Params, error) {
	p := Params{}
	if strings.TrimSpace(s) == "" {
		return p, nil
	}
	for _, f := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(f, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("malformed params %q: want name=value pairs separated by commas, e.g. block=256,vec=4", s)
		}
		if _, dup := p[k]; dup {
			return nil, fmt.Errorf("malformed params %q: %s given twice", s, k)
		}
		p[k] = v
	}
	return p, nil
}

// Reader reads typed values out of Params and remembers the first error, so
// that a kernel generator can read all its axes and check once.
type Reader struct {
	p   Params
	err error
}

// NewReader returns a Reader over p.
func NewReader(p Params) *Reader { return &Reader{p: p} }

// Int returns the integer value of name, or 0 after recording an error.
func (r *Reader) Int(name string) int {
	n, err := r.p.Int(name)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n
}

// String returns the value of name, or "" after recording an error.
func (r *Reader) String(name string) string {
	v, ok := r.p[name]
	if !ok && r.err == nil {
		r.err = fmt.Errorf("param %q missing", name)
	}
	return v
}

// Err returns the first error met.
func (r *Reader) Err() error { return r.err }
