package reports

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gradtune/gradtune/internal/results"
)

// ErrBadPeers is returned (wrapped) by ReadPeers for a malformed file.
var ErrBadPeers = errors.New("malformed peers file")

// Peer is one row of the bench scripts' JSON lines.
type Peer struct {
	Kernel   string  `json:"kernel"`
	Shape    string  `json:"shape"`
	DType    string  `json:"dtype"`
	Name     string  `json:"peer"`
	MedianUS float64 `json:"median_us"`
	GBps     float64 `json:"gbps"`
	// Error, when set, says why the peer has no time (it failed to run):
	// the row is counted in Peers.Failed and otherwise left out.
	Error string `json:"error,omitempty"`
}

// Peers are the rows of a peers file: by kernel and shape key (the last
// row of each), by peer name then kernel and shape key, and the peer's
// copy bandwidth ("copy" row), zero when absent.
type Peers struct {
	rows     map[string]Peer
	byName   map[string]map[string]Peer
	CopyGBps float64
	CopyName string
	// Failed counts the rows that name an error instead of a time.
	Failed int
}

// ReadPeers reads JSON lines; blank lines are skipped.
func ReadPeers(r io.Reader) (*Peers, error) {
	p := &Peers{rows: map[string]Peer{}, byName: map[string]map[string]Peer{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var row Peer
		dec := json.NewDecoder(strings.NewReader(line))
		if err := dec.Decode(&row); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadPeers, n, err)
		}
		if row.Error != "" && row.Kernel != "" {
			p.Failed++
			continue
		}
		if row.Kernel == "" || row.Shape == "" || !(row.MedianUS > 0) || math.IsInf(row.MedianUS, 0) {
			return nil, fmt.Errorf("%w: line %d: want kernel, shape and a positive median_us", ErrBadPeers, n)
		}
		if row.Kernel == "copy" {
			p.CopyGBps, p.CopyName = row.GBps, row.Name
			continue
		}
		key := row.Kernel + " " + row.Shape + ",dtype=" + row.DType
		p.rows[key] = row
		if p.byName[row.Name] == nil {
			p.byName[row.Name] = map[string]Peer{}
		}
		p.byName[row.Name][key] = row
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read peers: %w", err)
	}
	if len(p.rows) == 0 {
		return nil, fmt.Errorf("%w: no rows with a time (%d name an error; want JSON lines of bench/peers*.py)", ErrBadPeers, p.Failed)
	}
	return p, nil
}

// Lookup returns the peer row of kernel at the shape key.
func (p *Peers) Lookup(kernel, key string) (Peer, bool) {
	if p == nil {
		return Peer{}, false
	}
	r, ok := p.rows[kernel+" "+key]
	return r, ok
}

// LookupNamed returns peer name's row of kernel at the shape key.
func (p *Peers) LookupNamed(name, kernel, key string) (Peer, bool) {
	if p == nil {
		return Peer{}, false
	}
	r, ok := p.byName[name][kernel+" "+key]
	return r, ok
}

// Names lists the peers' names, sorted.
func (p *Peers) Names() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.byName))
	for n := range p.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Len is the number of peer rows besides the copy row.
func (p *Peers) Len() int {
	if p == nil {
		return 0
	}
	return len(p.rows)
}

// Kernels lists the kernels the rows are of, sorted.
func (p *Peers) Kernels() []string {
	var out []string
	for _, r := range p.rows {
		if !slices.Contains(out, r.Kernel) {
			out = append(out, r.Kernel)
		}
	}
	sort.Strings(out)
	return out
}

// Matching counts the shapes of set that have a peer row.
func (p *Peers) Matching(set *results.Set) int {
	n := 0
	for _, sh := range set.Shapes {
		if _, ok := p.Lookup(sh.Kernel, sh.Key); ok {
			n++
		}
	}
	return n
}
