package crosscheck

import (
	"encoding/json"
	"io"
)

// Record is one line of the JSON lines output.
type Record struct {
	Kind     string       `json:"kind"` // "case" or "probe"
	Kernel   string       `json:"kernel,omitempty"`
	Shape    string       `json:"shape,omitempty"`
	Params   string       `json:"params,omitempty"`
	Probe    string       `json:"probe,omitempty"`
	Verdict  Verdict      `json:"verdict"`
	Exact    bool         `json:"exactly_rounded"`
	Inexact  string       `json:"inexact_because,omitempty"`
	GPU      SideRecord   `json:"gpu"`
	Sim      SideRecord   `json:"sim"`
	Buffers  []BufferDiff `json:"buffers,omitempty"`
	EmitErr  string       `json:"emit_error,omitempty"`
	ProbeErr string       `json:"probe_error,omitempty"`
}

// SideRecord is one backend's part of a Record.
type SideRecord struct {
	Valid   bool    `json:"valid"`
	Message string  `json:"message,omitempty"`
	Error   string  `json:"error,omitempty"`
	MaxAbs  float64 `json:"max_abs_err"`
	MaxRel  float64 `json:"max_rel_err"`
	MS      float64 `json:"ms"`
}

func sideRecord(r Side) SideRecord {
	return SideRecord{Valid: r.Err == nil && r.Check.OK, Message: r.Check.Message, Error: errString(r.Err),
		MaxAbs: finite(r.Check.MaxAbs), MaxRel: finite(r.Check.MaxRel), MS: r.MS}
}

// Records returns the report's lines: a case each, then a probe each.
func (rep Report) Records() []Record {
	var out []Record
	for _, c := range rep.Cases {
		v, diffs := Judge(c)
		out = append(out, Record{Kind: "case", Kernel: c.F.Name(), Shape: c.S.Key(), Params: c.P.String(), Verdict: v,
			Exact: c.Inexact == "", Inexact: c.Inexact, GPU: sideRecord(c.GPU), Sim: sideRecord(c.Sim), Buffers: diffs,
			EmitErr: errString(c.EmitErr)})
	}
	for _, p := range rep.Probes {
		out = append(out, Record{Kind: "probe", Probe: p.Name, Exact: p.Exact, Verdict: p.Verdict, GPU: p.GPU, Sim: p.Sim})
	}
	return out
}

// WriteJSONL writes the report's records, one JSON object a line.
func (rep Report) WriteJSONL(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, r := range rep.Records() {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// Tally counts the verdicts of one family's cases.
type Tally struct {
	Kernel                                                       string
	Cases, Identical, Within, Differs, Disagree, Outside, Errors int
	Exact, ExactIdentical                                        int // cases with exactly rounded math, and those identical
}

// Tallies returns a tally per family, in order of first appearance, and
// their sum (Kernel "all").
func (rep Report) Tallies() ([]Tally, Tally) {
	index := map[string]int{}
	var ts []Tally
	sum := Tally{Kernel: "all"}
	for _, c := range rep.Cases {
		i, ok := index[c.F.Name()]
		if !ok {
			i = len(ts)
			index[c.F.Name()] = i
			ts = append(ts, Tally{Kernel: c.F.Name()})
		}
		v, _ := Judge(c)
		exact := c.Inexact == "" && c.EmitErr == nil
		ts[i].add(v, exact)
		sum.add(v, exact)
	}
	return ts, sum
}

func (t *Tally) add(v Verdict, exact bool) {
	t.Cases++
	switch v {
	case Identical:
		t.Identical++
	case Within:
		t.Within++
	case Differs:
		t.Differs++
	case Disagree:
		t.Disagree++
	case Outside:
		t.Outside++
	default:
		t.Errors++
	}
	if exact {
		t.Exact++
		if v == Identical {
			t.ExactIdentical++
		}
	}
}

// Failed counts the cases and probes that fail.
func (rep Report) Failed() int {
	n := 0
	for _, r := range rep.Records() {
		if r.Verdict.Failed() {
			n++
		}
	}
	return n
}
