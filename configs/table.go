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
// and reads. Version 2 is the launch contract (Launch, Buffer): every
// launch argument described, sizes as expressions of the shape's dims,
// and the dims a launch may change (Entry.Runtime). Tables of any other
// version are refused.
const SchemaVersion = 2

// ErrSchemaTooNew is returned (wrapped) by Parse for a table written by a
// newer gradtune than this one; ErrSchemaTooOld for one written by an
// older gradtune, whose launches are not fully described.
var (
	ErrSchemaTooNew = errors.New("config table schema is newer than this gradtune knows")
	ErrSchemaTooOld = errors.New("config table schema is older than this gradtune reads")
)

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
	Source string `json:"source"`
	// Protocol is how the entries' times were measured.
	Protocol Protocol `json:"protocol"`
	Entries  []Entry  `json:"entries"`
}

// Protocol is how a table's times were measured, so that a trainer can
// time an entry the same way.
type Protocol struct {
	// L2 is "flushed" (a write of twice the L2 size before every sample)
	// or "warm" (nothing between samples).
	L2 string `json:"l2"`
	// Timer says what one sample times.
	Timer string `json:"timer"`
	// Warmup is the runs before the first sample.
	Warmup int `json:"warmup"`
	// Statistic is what the entry's time is.
	Statistic string `json:"statistic"`
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
	// Runtime gives the dims whose values a launch may change, and the
	// range the PTX computes correctly; the others are fixed at Shape.
	Runtime map[string]Range `json:"runtime,omitempty"`
	// Launches are made in order from the PTX module, with Buffers
	// allocated as their roles say; their sizes are expressions of the
	// shape's dims (and of "sms", the device's multiprocessor count).
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

// Range is the values a runtime dim may take, inclusive.
type Range struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
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
		return nil, fmt.Errorf("configs: %w: the table has schema %d, this gradtune reads schema %d; use a newer gradtune", ErrSchemaTooNew, *head.Schema, SchemaVersion)
	case *head.Schema < SchemaVersion:
		return nil, fmt.Errorf("configs: %w: the table has schema %d, this gradtune reads schema %d; export it again with this gradtune (tune export)", ErrSchemaTooOld, *head.Schema, SchemaVersion)
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
	if t.Schema != SchemaVersion {
		return bad("schema %d, want %d", t.Schema, SchemaVersion)
	}
	if t.Protocol.L2 != "flushed" && t.Protocol.L2 != "warm" {
		return bad("protocol l2 %q: want flushed or warm", t.Protocol.L2)
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
	if !(e.MedianUS > 0) || math.IsInf(e.MedianUS, 0) {
		return fmt.Errorf("median %v µs: want a finite time > 0", e.MedianUS)
	}
	if len(e.Launches) == 0 {
		return errors.New("no launches")
	}
	sh, err := ParseShape(e.Shape)
	if err != nil {
		return err
	}
	for name, r := range e.Runtime {
		v, ok := sh.Sizes[name]
		if !ok {
			return fmt.Errorf("runtime dim %q is not a size of the shape %s", name, e.Shape)
		}
		if r.Min < 1 || r.Max < r.Min || float64(r.Min) > v || float64(r.Max) < v {
			return fmt.Errorf("runtime dim %s: range %d..%d must hold the tuned %v", name, r.Min, r.Max, v)
		}
	}
	// The contract resolves at the tuned shape and at the ends of every
	// runtime range: every argument names a buffer, every expression has
	// its variables, every tensor map is one the driver accepts.
	for _, env := range e.checkEnvs(sh) {
		if _, err := Resolve(e.Launches, e.Buffers, env); err != nil {
			return fmt.Errorf("at %s: %w", envString(env), err)
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
