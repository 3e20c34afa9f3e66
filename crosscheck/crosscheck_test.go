package crosscheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/kernels"
	"github.com/gradtune/gradtune/kernels/catalog"
	"github.com/gradtune/gradtune/runner"
	"github.com/gradtune/gradtune/runner/sim"
	"github.com/gradtune/gradtune/variants"
)

func TestPick(t *testing.T) {
	fams := catalog.All()
	n := 60
	if testing.Short() {
		n = 14
	}
	cs := Pick(fams, nil, n, 1)
	if len(cs) < n {
		t.Fatalf("%d cases for %d", len(cs), n)
	}
	per := map[string]int{}
	seen := map[string]bool{}
	for _, c := range cs {
		per[c.F.Name()]++
		key := c.F.Name() + c.S.Key() + c.P.String()
		if seen[key] {
			t.Errorf("case twice: %s", key)
		}
		seen[key] = true
		if c.EmitErr != nil {
			t.Errorf("%s %s %s: %v", c.F.Name(), c.S.Key(), c.P, c.EmitErr)
		}
	}
	for _, f := range fams {
		if per[f.Name()] == 0 {
			t.Errorf("no case of %s", f.Name())
		}
	}
	again := Pick(fams, nil, n, 1)
	for i := range cs {
		if cs[i].P.String() != again[i].P.String() || cs[i].S.Key() != again[i].S.Key() {
			t.Fatal("case selection is not deterministic")
		}
	}
}

func TestInexactReason(t *testing.T) {
	cases := map[string]string{
		"\tadd.rn.f32 %f1, %f2, %f3;\n":                                   "",
		"\tex2.approx.f32 %f1, %f2;\n":                                    "approximate instructions",
		"\tred.global.add.f32 [%rd1], %f1;\n":                             "float atomics (order)",
		"\tatom.global.add.noftz.f16 %h1, [%rd1], %h2;\n":                 "float atomics (order)",
		"\tred.global.add.u32 [%rd1], %r1;\n":                             "",
		"\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {...};\n":    "tensor-core sums",
		"\twgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {...};\n": "tensor-core sums",
	}
	for ptx, want := range cases {
		if got := InexactReason(ptx); got != want {
			t.Errorf("InexactReason(%q) = %q, want %q", ptx, got, want)
		}
	}
}

func TestJudge(t *testing.T) {
	f, err := catalog.Lookup("relu_bwd")
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Shape(variants.Spec{Dims: []variants.Dim{{Name: "n", Value: 3}}}, f.DTypes()[0])
	if err != nil {
		t.Fatal(err)
	}
	side := func(v ...float64) Side {
		return Side{Check: runner.Check{OK: true}, Outs: map[string][]float64{"dx": v}}
	}
	nan := math.NaN()
	cases := []struct {
		name     string
		inexact  string
		gpu, sim Side
		want     Verdict
	}{
		{"identical with NaN", "", side(1, nan, 3), side(1, nan, 3), Identical},
		{"exact but one ulp off", "", side(1, 2, 3), side(1, 2, math.Nextafter(3, 4)), Differs},
		{"approx, one ulp off", "approximate instructions", side(1, 2, 3), side(1, 2, math.Nextafter(3, 4)), Within},
		{"far off", "approximate instructions", side(1, 2, 3), side(1, 2, 4), Outside},
		{"validation disagrees", "approximate instructions", side(1, 2, 3), Side{Outs: map[string][]float64{"dx": {1, 2, 3}}}, Disagree},
	}
	for _, c := range cases {
		x := &Case{F: f, S: s, Inexact: c.inexact, GPU: c.gpu, Sim: c.sim}
		if got, _ := Judge(x); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestRunWithTheInterpreterAsGPU: with the interpreter on both sides every
// case and probe is identical, and the records describe them.
func TestRunWithTheInterpreterAsGPU(t *testing.T) {
	fams := []string{"relu_bwd", "gelu_bwd"}
	fs := catalogLookup(t, fams...)
	cases := Pick(fs, nil, 12, 1)
	rep, err := Run(sim.New(sim.Options{}), cases, 1, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	probes, _ := sim.Probes()
	recs := rep.Records()
	if len(recs) != 12+len(probes) || rep.Failed() != 0 {
		t.Fatalf("%d records (want %d), %d failed", len(recs), 12+len(probes), rep.Failed())
	}
	for _, r := range recs {
		if r.Verdict != Identical || (r.Kind == "case" && (!r.GPU.Valid || !r.Sim.Valid || len(r.Buffers) == 0)) {
			t.Errorf("not identical and valid: %+v", r)
		}
		if r.Kind == "case" && r.Kernel == "gelu_bwd" && r.Exact {
			t.Errorf("gelu_bwd (ex2.approx) marked exactly rounded: %+v", r)
		}
	}
	ts, sum := rep.Tallies()
	if len(ts) != 2 || sum.Cases != 12 || sum.Identical != 12 {
		t.Errorf("tallies %+v, sum %+v", ts, sum)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var r Record
	if len(lines) != len(recs) || json.Unmarshal([]byte(lines[0]), &r) != nil || r.Kind != "case" {
		t.Errorf("JSON lines: %d, first %q", len(lines), lines[0])
	}
}

func catalogLookup(t *testing.T, names ...string) (out []kernels.Family) {
	for _, n := range names {
		f, err := catalog.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// TestCheckOut: which existing files an output may replace.
func TestCheckOut(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	db := write("tune.db", "SQLite format 3\x00rest of a database")
	notes := write("notes.txt", "my notes\n")
	old := write("old.jsonl", `{"kind":"case","kernel":"relu_bwd","verdict":"identical"}`+"\n")
	empty := write("empty.jsonl", "")
	cases := []struct {
		path  string
		force bool
		want  string // "" for accepted
	}{
		{filepath.Join(dir, "new.jsonl"), false, ""},
		{empty, false, ""},
		{old, false, ""},
		{notes, false, "not a crosscheck output"},
		{notes, true, ""},
		{db, false, "SQLite database"},
		{db, true, "even with --force"},
		{dir, false, "is a directory"},
		{filepath.Join(dir, "nope", "x.jsonl"), false, "no such file"},
	}
	for _, c := range cases {
		err := CheckOut(c.path, c.force)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckOut(%s, force %v) = %v, want %q", c.path, c.force, err, c.want)
		}
	}
}

// TestWriteFileKeepsWhatItRefuses: a refused or failed write leaves the
// file as it was and no temporary file behind.
func TestWriteFileKeepsWhatItRefuses(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "tune.db")
	content := "SQLite format 3\x00results"
	if err := os.WriteFile(db, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	called := false
	err := WriteFile(db, true, func(w io.Writer) error { called = true; return nil })
	if err == nil || called {
		t.Fatalf("WriteFile over a database: %v (write called: %v)", err, called)
	}
	out := filepath.Join(dir, "x.jsonl")
	if err := WriteFile(out, false, func(w io.Writer) error { io.WriteString(w, "partial"); return errors.New("disk full") }); err == nil {
		t.Fatal("a failed write reported no error")
	}
	if err := WriteFile(out, false, func(w io.Writer) error { _, err := io.WriteString(w, "{}\n"); return err }); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(db)
	entries, _ := os.ReadDir(dir)
	if string(got) != content || len(entries) != 2 {
		t.Errorf("database now %q; %d files in the directory, want 2", got, len(entries))
	}
}

// TestWriteFileErrorNamesTheOutput: a file that cannot be created in the
// output's directory (here the temporary name is too long, as an
// unwritable directory would refuse it) is reported by the output's
// path, not the temporary file's.
func TestWriteFileErrorNamesTheOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, strings.Repeat("x", 245)+".jsonl")
	err := WriteFile(out, false, func(io.Writer) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "--out "+out+": cannot create a file in "+dir+": ") || strings.Contains(err.Error(), ".tmp") {
		t.Errorf("err = %v, want one naming %s", err, out)
	}
}
