package store

import (
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// execQuerier is what *sql.DB and *sql.Tx have in common that this package uses.
type execQuerier interface {
	Exec(query string, args ...any) (sql.Result, error)
	QueryRow(query string, args ...any) *sql.Row
}

// timeLayout is RFC 3339 with a fixed nine-digit fraction, so stored times
// sort lexically in UTC.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// optTime is a time for a nullable column: the zero time is NULL.
func optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}

// optString is a string for a nullable column: "" is NULL.
func optString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// optInt is an integer for a nullable column: 0 is NULL.
func optInt(v int) any {
	if v == 0 {
		return nil
	}
	return int64(v)
}

// optFloat is a float for a nullable column: 0 is NULL.
func optFloat(v float64) any {
	if v == 0 {
		return nil
	}
	return realValue(v)
}

// realValue is a float for a REAL column. SQLite stores a NaN REAL as NULL,
// so NaN is written as the text 'NaN', which floatCol reads back as NaN.
func realValue(v float64) any {
	if math.IsNaN(v) {
		return "NaN"
	}
	return v
}

// floatCol scans a nullable REAL column; NULL reads as 0.
type floatCol struct{ p *float64 }

func (c floatCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.p = 0
	case float64:
		*c.p = v
	case int64:
		*c.p = float64(v)
	case string:
		return c.parse(v)
	case []byte:
		return c.parse(string(v))
	default:
		return fmt.Errorf("cannot read %T as a number", src)
	}
	return nil
}

func (c floatCol) parse(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("cannot read %q as a number: %w", s, err)
	}
	*c.p = f
	return nil
}

// intCol scans a nullable INTEGER column; NULL reads as 0.
type intCol struct{ p *int }

func (c intCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.p = 0
	case int64:
		*c.p = int(v)
	case float64:
		*c.p = int(v)
	case string, []byte:
		var s string
		if b, ok := v.([]byte); ok {
			s = string(b)
		} else {
			s = v.(string)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return fmt.Errorf("cannot read %q as an integer: %w", s, err)
		}
		*c.p = int(n)
	default:
		return fmt.Errorf("cannot read %T as an integer", src)
	}
	return nil
}

// stringCol scans a nullable TEXT column; NULL reads as "".
type stringCol struct{ p *string }

func (c stringCol) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*c.p = ""
	case string:
		*c.p = v
	case []byte:
		*c.p = string(v)
	default:
		return fmt.Errorf("cannot read %T as text", src)
	}
	return nil
}

// timeCol scans a nullable time column written by formatTime; NULL reads as
// the zero time.
type timeCol struct{ p *time.Time }

func (c timeCol) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
		*c.p = time.Time{}
		return nil
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("cannot read %T as a time", src)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("cannot read %q as a time: %w", s, err)
	}
	*c.p = t
	return nil
}

// encodeSamples writes sample times as a JSON array; a non-finite sample,
// which JSON cannot hold, is written as null.
func encodeSamples(samples []float64) any {
	if len(samples) == 0 {
		return nil
	}
	b := make([]byte, 0, 2+12*len(samples))
	b = append(b, '[')
	for i, s := range samples {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(s) || math.IsInf(s, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, s, 'g', -1, 64)
	}
	b = append(b, ']')
	return string(b)
}

// decodeSamples reads a JSON array of sample times as encodeSamples
// writes it, null (a non-finite sample) read as NaN; it refuses what is
// not a JSON array of numbers and nulls. It parses the numbers itself:
// encoding/json spends an allocation per element on the nulls' pointers.
func decodeSamples(text string) ([]float64, error) {
	inner, open := strings.CutPrefix(strings.Trim(text, jsonSpace), "[")
	inner, closed := strings.CutSuffix(inner, "]")
	if !open || !closed {
		return nil, fmt.Errorf("not a JSON array: %.40q", text)
	}
	if strings.Trim(inner, jsonSpace) == "" {
		return []float64{}, nil
	}
	parts := strings.Split(inner, ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		p = strings.Trim(p, jsonSpace)
		if p == "null" {
			out[i] = math.NaN()
			continue
		}
		if !isJSONNumber(p) {
			return nil, fmt.Errorf("element %d, %.40q, is not a number or null", i, p)
		}
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = v
	}
	return out, nil
}

// jsonSpace is the white space JSON allows between tokens.
const jsonSpace = " \t\n\r"

// isJSONNumber reports whether s is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func isJSONNumber(s string) bool {
	digits := func(i int) int { // the index after the digits from i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		if j := digits(i + 1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

// encodeIndexes writes sample indexes as a JSON array; none is NULL.
func encodeIndexes(idx []int) any {
	if len(idx) == 0 {
		return nil
	}
	b := []byte{'['}
	for i, x := range idx {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return string(append(b, ']'))
}
