package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// traceFile receives every launch plan's samples as JSON lines (--trace),
// so that drift within a plan's timed loop can be seen: a GPU whose clocks
// fall under sustained load shows later samples slower than earlier ones.
type traceFile struct {
	f   *os.File
	enc *json.Encoder
	err error // the first write's error, returned by Close
}

// traceLine is one launch plan's samples.
type traceLine struct {
	Loop    string    `json:"loop"` // "protocol" or "sustained"
	Kernel  string    `json:"kernel"`
	DType   string    `json:"dtype"`
	Shape   string    `json:"shape"`
	Samples []float64 `json:"samples_us"`
}

// openTrace creates path; "" is no trace.
func openTrace(path string) (*traceFile, error) {
	if path == "" {
		return &traceFile{}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return &traceFile{f: f, enc: json.NewEncoder(f)}, nil
}

// writer is the timing's trace function for c; nil without a file.
func (t *traceFile) writer(c Case) func(string, []float64) {
	if t.f == nil {
		return nil
	}
	return func(loop string, us []float64) {
		if err := t.enc.Encode(traceLine{Loop: loop, Kernel: c.Kernel, DType: c.DType, Shape: c.Match.Shape.String(), Samples: us}); err != nil && t.err == nil {
			t.err = fmt.Errorf("--trace: %w", err)
		}
	}
}

// Close closes the file and returns the first error of its writes.
func (t *traceFile) Close() error {
	if t.f == nil {
		return nil
	}
	if err := t.f.Close(); err != nil && t.err == nil {
		t.err = fmt.Errorf("--trace: %w", err)
	}
	return t.err
}
