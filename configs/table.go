package configs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
)

// SchemaVersion is the version of the table format this package writes
// and the newest it reads.
const SchemaVersion = 1

// ErrSchemaTooNew is returned (wrapped) by Parse for a table written by a
// newer gradtune than this one.
var ErrSchemaTooNew = errors.New("config table schema is newer than this gradtune knows")

// ErrMalformed is returned (wrapped) by Parse for a table that is not valid.
var ErrMalformed = errors.New("malformed config table")

// Table is the tuned configurations of one GPU model.
type Table struct {
	Schema int `json:"schema"`
	GPU    GPU `json:"gpu"`
	// Created is the start time (RFC 3339, UTC) of the newest run the
	// table's entries come from, so regenerating a table from the same
	// database gives the same bytes.
	Created string `json:"created"`
	// Source names the database the table was exported from (its base
	// name).
	Source  string  `json:"source"`
	Entries []Entry `json:"entries"`
}

// GPU names a GPU model: the name the driver reports and the compute
// capability ("9.0").
type GPU struct {
	Name string `json:"name"`
	CC   string `json:"cc"`
}

// Entry is the tuned configuration of one kernel, dtype and shape.
type Entry struct {
	Kernel string `json:"kernel"`
	DType  string `json:"dtype"`
	// Shape is the canonical dims ("m=2048,n=8960"); Params the canonical
	// parameter string of the winner.
	Shape  string `json:"shape"`
	Params string `json:"params"`
	// Launches are made in order from the PTX module, with Buffers
	// allocated as their roles say.
	Launches []Launch `json:"launches"`
	Buffers  []Buffer `json:"buffers"`
	// Registers per thread and static shared memory bytes per CTA, from
	// the driver's JIT of the winner.
	Registers int `json:"registers"`
	SmemBytes int `json:"smem_bytes"`
	// MedianUS is the winner's median time and CIUS the 95% confidence
	// interval of the median, in µs.
	MedianUS float64    `json:"median_us"`
	CIUS     [2]float64 `json:"ci_us"`
	// Baseline is what the winner was compared with; zero when nothing was.
	Baseline Baseline `json:"baseline,omitzero"`
	// PTX is the name of the winner's PTX file beside the table (empty
	// when it was exported without --ptx); PTXSHA256 the hex sha256 of
	// the PTX text that was timed.
	PTX       string `json:"ptx,omitempty"`
	PTXSHA256 string `json:"ptx_sha256"`
	// Note is set when this gradtune's generator no longer emits the PTX
	// that was timed (a stale entry: no PTX file, launches of the current
	// generator).
	Note       string     `json:"note,omitempty"`
	Provenance Provenance `json:"provenance"`
}

// Launch is one kernel launch.
type Launch struct {
	// Entry is the kernel's name in the PTX module.
	Entry string `json:"entry"`
	// Grid is the CTA count; when GridPerSM > 0, Grid[0] is GridPerSM
	// times the device's multiprocessor count instead.
	Grid      [3]int `json:"grid"`
	GridPerSM int    `json:"grid_per_sm,omitempty"`
	Block     [3]int `json:"block"`
	// SharedBytes is the dynamic shared memory of the launch; above 48 KiB
	// the function's maximum must be raised first.
	SharedBytes int `json:"shared_bytes"`
	// Dependent marks a programmatic dependent launch (sm_90); launching
	// it in plain stream order is also correct.
	Dependent bool  `json:"dependent,omitempty"`
	Args      []Arg `json:"args"`
}

// Arg is a kernel argument: a buffer's device address, or a 64-bit scalar.
type Arg struct {
	Buffer string `json:"buffer,omitempty"`
	Scalar uint64 `json:"scalar,omitempty"`
}

// Buffer is a device buffer the launches use. Role is "input", "output",
// "accumulate" (zero it before every run of the launches), "state" (zero
// it once when allocating it; every run leaves it zero) or "scratch"
// (workspace, any contents).
type Buffer struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Elems int    `json:"elems"`
	Role  string `json:"role"`
}

// Baseline is a reference time: the family's default variant ("default")
// or a library kernel.
type Baseline struct {
	Name     string  `json:"name"`
	Params   string  `json:"params,omitempty"`
	MedianUS float64 `json:"median_us"`
}

// Provenance says where an entry was measured.
type Provenance struct {
	Run int64 `json:"run"`
	// Date is the run's start (RFC 3339, UTC).
	Date   string `json:"date"`
	Driver string `json:"driver"`
	Tool   string `json:"tool"`
	Args   string `json:"args"`
}

// Key is "kernel dtype shape", the identity of an entry within a table.
func (e Entry) Key() string { return e.Kernel + " " + e.DType + " " + e.Shape }

// Parse reads and checks a table.
func Parse(r io.Reader) (*Table, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("configs: read table: %w", err)
	}
	var head struct {
		Schema *int `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("configs: %w: %v", ErrMalformed, err)
	}
	switch {
	case head.Schema == nil:
		return nil, fmt.Errorf("configs: %w: no \"schema\" version", ErrMalformed)
	case *head.Schema > SchemaVersion:
		return nil, fmt.Errorf("configs: %w: schema %d, this gradtune reads up to %d; use a newer gradtune", ErrSchemaTooNew, *head.Schema, SchemaVersion)
	case *head.Schema < 1:
		return nil, fmt.Errorf("configs: %w: schema %d, want 1 to %d", ErrMalformed, *head.Schema, SchemaVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("configs: %w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("configs: %w: data after the table", ErrMalformed)
	}
	if err := t.Check(); err != nil {
		return nil, err
	}
	return &t, nil
}

var ccPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// Check reports the first thing wrong with t, wrapping ErrMalformed.
func (t *Table) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("configs: %w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
	if t.Schema < 1 || t.Schema > SchemaVersion {
		return bad("schema %d, want 1 to %d", t.Schema, SchemaVersion)
	}
	if strings.TrimSpace(t.GPU.Name) == "" || !ccPattern.MatchString(t.GPU.CC) {
		return bad("gpu %q with compute capability %q: want a name and a capability such as \"9.0\"", t.GPU.Name, t.GPU.CC)
	}
	if len(t.Entries) == 0 {
		return bad("no entries")
	}
	seen := map[string]bool{}
	for i, e := range t.Entries {
		if err := e.check(); err != nil {
			return bad("entry %d (%s): %v", i, e.Key(), err)
		}
		if seen[e.Key()] {
			return bad("entry %d: %s appears twice", i, e.Key())
		}
		seen[e.Key()] = true
	}
	return nil
}

func (e Entry) check() error {
	if e.Kernel == "" || e.DType == "" {
		return errors.New("kernel and dtype are required")
	}
	if _, err := ParseShape(e.Shape); err != nil {
		return err
	}
	if !(e.MedianUS > 0) || math.IsInf(e.MedianUS, 0) {
		return fmt.Errorf("median %v µs: want a finite time > 0", e.MedianUS)
	}
	if len(e.Launches) == 0 {
		return errors.New("no launches")
	}
	bufs := map[string]bool{}
	for _, b := range e.Buffers {
		bufs[b.Name] = true
	}
	for _, l := range e.Launches {
		if l.Entry == "" || l.Block[0] <= 0 || (l.Grid[0] <= 0 && l.GridPerSM <= 0) {
			return fmt.Errorf("launch %q: want an entry, a block and a grid", l.Entry)
		}
		for _, a := range l.Args {
			if a.Buffer != "" && !bufs[a.Buffer] {
				return fmt.Errorf("launch %s: argument buffer %q is not among the buffers", l.Entry, a.Buffer)
			}
		}
	}
	if e.PTX != "" && (strings.ContainsAny(e.PTX, `/\`) || strings.HasPrefix(e.PTX, ".")) {
		return fmt.Errorf("ptx %q: want a file name beside the table", e.PTX)
	}
	return nil
}

// Sort orders the entries by kernel, dtype and shape, so that tables
// written from the same results are byte-for-byte the same.
func (t *Table) Sort() {
	sort.SliceStable(t.Entries, func(i, j int) bool { return t.Entries[i].Key() < t.Entries[j].Key() })
}
