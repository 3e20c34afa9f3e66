package configs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the lookup golden file from this package's answers")

// goldenDir holds the one specification of the lookup rules that the Go
// and the Python implementations (python/gradtune) both check: the
// answers of this package for every committed entry and a grid of shapes
// around it, and for synthetic tables that exercise what the committed
// ones do not (runtime dims, expression sizes, ties, other GPUs of the
// compute capability).
const goldenDir = "../python/gradtune/testdata"

// goldenSMs are the multiprocessor counts each answer's plan is resolved
// at; a plan at a later count is recorded only where it differs from the
// plan at the first.
var goldenSMs = []int{132, 20}

// golden is the file: for each set of tables, the tables' hashes and the
// asks with their answers.
type golden struct {
	Comment     string          `json:"comment"`
	SMs         []int           `json:"sms"`
	Expressions []goldenExpr    `json:"expressions"`
	Refusals    []goldenRefusal `json:"refusals"`
	Sets        []goldenSet     `json:"sets"`
}

// goldenExpr is an expression's text, how it prints (or why it does not
// parse), and its value in Env (or why it has none).
type goldenExpr struct {
	Text       string `json:"text"`
	Env        Env    `json:"env"`
	Printed    string `json:"printed,omitempty"`
	ParseError string `json:"parse_error,omitempty"`
	Value      int64  `json:"value"`
	EvalError  string `json:"eval_error,omitempty"`
}

// goldenRefusal is a table Parse refuses: its text, the sentinel the
// error wraps, and the message where it is not encoding/json's (Exact).
type goldenRefusal struct {
	Name    string `json:"name"`
	Table   string `json:"table"`
	Error   string `json:"error"`
	Exact   bool   `json:"exact"`
	Message string `json:"message"`
}

type goldenSet struct {
	Name   string            `json:"name"`
	Tables []string          `json:"tables"` // paths from the repository root, in set order
	SHA256 map[string]string `json:"sha256"`
	Asks   []goldenAsk       `json:"asks"`
}

type goldenAsk struct {
	GPU    GPU          `json:"gpu"`
	Kernel string       `json:"kernel"`
	DType  string       `json:"dtype"`
	Shape  string       `json:"shape"`
	Lookup goldenAnswer `json:"lookup"`
	Hint   goldenAnswer `json:"hint"`
}

// goldenAnswer is a match (rule, table index, entry key, distance to 12
// significant digits, the plan at each of goldenSMs) or an error (its
// sentinel's name and its message).
type goldenAnswer struct {
	Rule     string                `json:"rule,omitempty"`
	Table    int                   `json:"table"`
	Entry    string                `json:"entry,omitempty"`
	Distance float64               `json:"distance"`
	Plans    map[string]goldenPlan `json:"plans,omitempty"`
	Error    string                `json:"error,omitempty"`
	Message  string                `json:"message,omitempty"`
}

// goldenPlan is a resolved plan in words: a line per buffer, and per
// launch its geometry and a line per argument.
type goldenPlan struct {
	Buffers  []string       `json:"buffers"`
	Launches []goldenLaunch `json:"launches"`
	Error    string         `json:"error,omitempty"`
}

// goldenLaunch is "entry grid=[x y z] block=[..] cluster=[..] shared=N
// opt_in=B dependent=B" and a line per argument (argText).
type goldenLaunch struct {
	Launch string   `json:"launch"`
	Args   []string `json:"args"`
}

// encode writes g as JSON with one line per ask, so that a change of
// rules shows as the lines of the asks it changes.
func (g golden) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\"comment\": %s,\n\"sms\": %s,\n\"expressions\": [", jsonText(g.Comment), jsonText(g.SMs))
	for i, e := range g.Expressions {
		b.WriteString(map[bool]string{true: "\n", false: ",\n"}[i == 0] + jsonText(e))
	}
	b.WriteString("\n],\n\"refusals\": [")
	for i, r := range g.Refusals {
		b.WriteString(map[bool]string{true: "\n", false: ",\n"}[i == 0] + jsonText(r))
	}
	b.WriteString("\n],\n\"sets\": [")
	for i, s := range g.Sets {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n{\"name\": %s, \"tables\": %s,\n\"sha256\": %s,\n\"asks\": [", jsonText(s.Name), jsonText(s.Tables), jsonText(s.SHA256))
		for j, a := range s.Asks {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n" + jsonText(a))
		}
		b.WriteString("\n]}")
	}
	b.WriteString("\n]}\n")
	return b.Bytes()
}

var sentinels = map[error]string{ErrUnknownGPU: "unknown_gpu", ErrUnknownKernel: "unknown_kernel", ErrNoConfig: "no_config"}

// TestLookupGolden compares Lookup and Hint with the golden file, which
// -update rewrites (go test ./configs -run TestLookupGolden -update).
func TestLookupGolden(t *testing.T) {
	sets := goldenSets(t)
	path := filepath.Join(goldenDir, "lookups.json")
	if *update {
		g := golden{Comment: goldenComment, SMs: goldenSMs, Expressions: goldenExprs(), Refusals: goldenRefusals(t)}
		for _, s := range sets {
			g.Sets = append(g.Sets, s.build(t))
		}
		if err := os.WriteFile(path, g.encode(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./configs -run TestLookupGolden -update writes it)", err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if got := goldenExprs(); jsonText(got) != jsonText(g.Expressions) {
		t.Errorf("expressions differ from %s:\n got  %s\n want %s", path, jsonText(got), jsonText(g.Expressions))
	}
	if got := goldenRefusals(t); jsonText(got) != jsonText(g.Refusals) {
		t.Errorf("refusals differ from %s:\n got  %s\n want %s", path, jsonText(got), jsonText(g.Refusals))
	}
	if len(g.Sets) != len(sets) {
		t.Fatalf("%s has %d sets of tables, want %d", path, len(g.Sets), len(sets))
	}
	for i, s := range sets {
		s.compare(t, g.Sets[i])
	}
}

const goldenComment = "configs.Lookup and configs.Hint answers, written by `go test ./configs -run TestLookupGolden -update` " +
	"and checked by that test and by python/tests/test_lookup_golden.py: the one specification of the lookup rules. " +
	"Distances are rounded to 12 significant digits and compared within 1e-9; asks whose best and second-best " +
	"candidates are within 1e-9 of each other without being equal are left out (distances are floating point, and " +
	"the two implementations' logarithms may differ in the last place)."

// tableSet is a set of tables with where they come from.
type tableSet struct {
	name  string
	set   *Set
	paths []string // from the repository root
	grid  func(*Set) []goldenAsk
}

func goldenSets(t *testing.T) []tableSet {
	t.Helper()
	committed, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, tb := range committed.Tables {
		paths = append(paths, tableFile(t, tb))
	}
	synth, err := filepath.Glob(filepath.Join(goldenDir, "synthetic", "*.json"))
	if err != nil || len(synth) == 0 {
		t.Fatalf("no synthetic tables under %s/synthetic (%v)", goldenDir, err)
	}
	slices.Sort(synth)
	syn, err := LoadFiles(synth...)
	if err != nil {
		t.Fatal(err)
	}
	var synPaths []string
	for _, p := range synth {
		synPaths = append(synPaths, strings.TrimPrefix(filepath.ToSlash(p), "../"))
	}
	return []tableSet{
		{"committed", committed, paths, committedGrid},
		{"synthetic", syn, synPaths, syntheticGrid},
	}
}

// tableFile is the path from the repository root of a committed table:
// configs/<gpu>/<family>.json, found by its source database's entries.
func tableFile(t *testing.T, tb *Table) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("*", "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		other, err := Parse(bytes.NewReader(data))
		if err == nil && other.Source == tb.Source && other.Created == tb.Created && len(other.Entries) == len(tb.Entries) {
			return "configs/" + filepath.ToSlash(f)
		}
	}
	t.Fatalf("no committed file holds the table of %s", tb.Source)
	return ""
}

func (s tableSet) hashes(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, p := range s.paths {
		data, err := os.ReadFile(filepath.Join("..", p))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		out[p] = hex.EncodeToString(sum[:])
	}
	return out
}

func (s tableSet) build(t *testing.T) goldenSet {
	g := goldenSet{Name: s.name, Tables: s.paths, SHA256: s.hashes(t)}
	seen := map[string]bool{}
	for _, a := range s.grid(s.set) {
		key := fmt.Sprintf("%v|%s|%s|%s", a.GPU, a.Kernel, a.DType, a.Shape)
		if seen[key] || s.nearTie(t, a) {
			continue
		}
		seen[key] = true
		a.Lookup = s.answer(t, a, true)
		a.Hint = s.answer(t, a, false)
		g.Asks = append(g.Asks, a)
	}
	return g
}

func (s tableSet) compare(t *testing.T, g goldenSet) {
	if g.Name != s.name || !slices.Equal(g.Tables, s.paths) {
		t.Fatalf("golden set %s of %v, want %s of %v", g.Name, g.Tables, s.name, s.paths)
	}
	for p, sum := range s.hashes(t) {
		if g.SHA256[p] != sum {
			t.Fatalf("%s changed since the golden file was written: go test ./configs -run TestLookupGolden -update", p)
		}
	}
	for _, a := range g.Asks {
		for _, c := range []struct {
			name       string
			launchable bool
			want       goldenAnswer
		}{{"Lookup", true, a.Lookup}, {"Hint", false, a.Hint}} {
			got := s.answer(t, a, c.launchable)
			if !sameAnswer(got, c.want) {
				t.Errorf("%s %v %s %s %s:\n got  %s\n want %s", c.name, a.GPU, a.Kernel, a.DType, a.Shape, jsonText(got), jsonText(c.want))
			}
		}
	}
}

func sameAnswer(a, b goldenAnswer) bool {
	d := math.Abs(a.Distance - b.Distance)
	a.Distance, b.Distance = 0, 0
	return d <= 1e-9*math.Max(1, math.Abs(b.Distance)) && jsonText(a) == jsonText(b)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (s tableSet) answer(t *testing.T, a goldenAsk, launchable bool) goldenAnswer {
	shape, err := ParseShape(a.Shape)
	if err != nil {
		t.Fatalf("ask %s: %v", a.Shape, err)
	}
	find := s.set.Hint
	if launchable {
		find = s.set.Lookup
	}
	m, err := find(a.GPU, a.Kernel, a.DType, shape)
	if err != nil {
		for sentinel, name := range sentinels {
			if errors.Is(err, sentinel) {
				return goldenAnswer{Table: -1, Error: name, Message: err.Error()}
			}
		}
		t.Fatalf("ask %+v: %v", a, err)
	}
	ans := goldenAnswer{Rule: m.Rule.String(), Table: slices.Index(s.set.Tables, m.Table), Entry: m.Entry.Key(), Distance: round12(m.Distance)}
	if launchable {
		first := planOf(m, goldenSMs[0])
		ans.Plans = map[string]goldenPlan{strconv.Itoa(goldenSMs[0]): first}
		for _, sms := range goldenSMs[1:] {
			if p := planOf(m, sms); jsonText(p) != jsonText(first) {
				ans.Plans[strconv.Itoa(sms)] = p
			}
		}
	}
	return ans
}

func round12(d float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(d, 'g', 12, 64), 64)
	return v
}

func planOf(m Match, sms int) goldenPlan {
	p, err := m.Plan(sms)
	if err != nil {
		return goldenPlan{Error: err.Error()}
	}
	var g goldenPlan
	for _, b := range p.Buffers {
		g.Buffers = append(g.Buffers, fmt.Sprintf("%s %s %d %s", b.Name, b.DType, b.Elems, b.Role))
	}
	for _, l := range p.Launches {
		gl := goldenLaunch{Launch: fmt.Sprintf("%s grid=%v block=%v cluster=%v shared=%d opt_in=%v dependent=%v",
			l.Entry, l.Grid, l.Block, l.Cluster, l.SharedBytes, l.OptIn, l.Dependent)}
		for _, a := range l.Args {
			gl.Args = append(gl.Args, argText(a))
		}
		g.Launches = append(g.Launches, gl)
	}
	return g
}

// argText is an argument in words: "pointer dy+0", "u32 2048", or
// "tensor_map dy bf16 dims=[..] strides=[..] box=[..] element_strides=[..]
// swizzle=128 interleave=none l2_promotion=128 oob_fill=zero", with
// " offset=N" after the buffer for a map whose offset is not 0.
func argText(a ArgSpec) string {
	switch a.Kind {
	case PointerArg:
		return fmt.Sprintf("pointer %s+%d", a.Buffer, a.Offset)
	case TensorMapArg:
		m := a.TensorMap
		off := ""
		if m.Offset != 0 {
			off = fmt.Sprintf(" offset=%d", m.Offset)
		}
		return fmt.Sprintf("tensor_map %s%s %s dims=%v strides=%v box=%v element_strides=%v swizzle=%d interleave=%s l2_promotion=%d oob_fill=%s",
			m.Buffer, off, m.DType, m.Dims, m.Strides, m.Box, m.ElemStrides, m.Swizzle, m.Interleave, m.L2Promotion, m.OOBFill)
	}
	return fmt.Sprintf("%s %d", a.Type, a.Scalar)
}

// nearTie reports whether Lookup's or Hint's best two candidates for a
// are within 1e-9 of each other without being equal.
func (s tableSet) nearTie(t *testing.T, a goldenAsk) bool {
	shape, err := ParseShape(a.Shape)
	if err != nil {
		t.Fatalf("ask %s: %v", a.Shape, err)
	}
	same, cc := s.set.byGPU(a.GPU)
	for _, launchable := range []bool{true, false} {
		for _, tables := range [][]*Table{same, cc} {
			var ds []float64
			for _, tb := range tables {
				for _, e := range tb.Entries {
					es, _ := ParseShape(e.Shape)
					if e.Kernel != a.Kernel || e.DType != a.DType || (launchable && e.Launchable(shape) != nil) {
						continue
					}
					if d, ok := shape.Distance(es); ok {
						ds = append(ds, d)
					}
				}
			}
			slices.Sort(ds)
			if len(ds) >= 2 && ds[1] != ds[0] && ds[1]-ds[0] <= 1e-9*math.Max(1, ds[0]) {
				return true
			}
		}
	}
	return false
}

// committedGrid asks, for every committed entry, its tuned shape and, for
// each size, that size at v/2+1 and at 2v; for the first entry of each
// kernel, other GPUs (by name in other case, another model of the compute
// capability, another capability), an unknown kernel, another dtype and
// other dims.
func committedGrid(s *Set) []goldenAsk {
	var out []goldenAsk
	firsts := map[string]bool{}
	for _, tb := range s.Tables {
		for _, e := range tb.Entries {
			ask := func(gpu GPU, kernel, dt, shape string) {
				out = append(out, goldenAsk{GPU: gpu, Kernel: kernel, DType: dt, Shape: canonical(shape)})
			}
			ask(tb.GPU, e.Kernel, e.DType, e.Shape)
			tuned, _ := ParseShape(e.Shape)
			for _, n := range sortedSizes(tuned) {
				v := tuned.Sizes[n]
				for _, x := range []float64{math.Floor(v/2) + 1, 2 * v} {
					sh, _ := ParseShape(e.Shape)
					sh.Sizes[n] = x
					ask(tb.GPU, e.Kernel, e.DType, sh.String())
				}
			}
			if firsts[e.Kernel] {
				continue
			}
			firsts[e.Kernel] = true
			ask(GPU{Name: " " + strings.ToLower(tb.GPU.Name) + " "}, e.Kernel, e.DType, e.Shape)
			ask(GPU{Name: "NVIDIA H100 80GB HBM3", CC: tb.GPU.CC}, e.Kernel, e.DType, e.Shape)
			ask(GPU{Name: "NVIDIA A100-SXM4-80GB", CC: "8.0"}, e.Kernel, e.DType, e.Shape)
			ask(tb.GPU, "no_such_bwd", e.DType, e.Shape)
			ask(tb.GPU, e.Kernel, "f64x", e.Shape)
			ask(tb.GPU, e.Kernel, e.DType, "q=3")
		}
	}
	return out
}

// syntheticGrid asks, for each kernel and dtype of the synthetic tables,
// a ladder of token counts on each GPU of the tables and on an unknown
// model of their compute capability.
func syntheticGrid(s *Set) []goldenAsk {
	gpus := []GPU{{Name: "Test GPU A", CC: "9.0"}, {Name: "test gpu a"}, {Name: "Test GPU B", CC: "9.0"},
		{Name: "Test GPU C", CC: "9.0"}, {Name: "Test GPU D", CC: "7.5"}}
	type ladder struct{ kernel, dtype, shape string }
	var out []goldenAsk
	for _, l := range []ladder{
		{"rows_bwd", "bf16", "m=%d,n=1536"}, {"rows_bwd", "bf16", "m=%d,n=1024"},
		{"gemm_like", "bf16", "m=%d,n=1536,k=1536,grad=dx"}, {"gemm_like", "bf16", "m=%d,n=1536,k=1536,grad=dz"},
		{"pool_like", "f32", "n=%d,p=1.5"}, {"only_b_bwd", "f32", "m=%d,n=4096"}, {"only_b_bwd", "bf16", "m=%d,n=4096"},
	} {
		for _, gpu := range gpus {
			for _, m := range []int{1, 3, 64, 100, 512, 700, 1000, 1024, 1025, 2000, 2048, 3000, 4096, 65536, 65537, 131072, 200000} {
				out = append(out, goldenAsk{GPU: gpu, Kernel: l.kernel, DType: l.dtype, Shape: canonical(fmt.Sprintf(l.shape, m))})
			}
		}
	}
	for _, shape := range []string{"n=3.5,p=1.5", "n=4,p=2", "n=64,p=1.5", "n=65,p=1.5"} {
		out = append(out, goldenAsk{GPU: gpus[0], Kernel: "pool_like", DType: "f32", Shape: shape})
	}
	return out
}

func canonical(s string) string {
	sh, _ := ParseShape(s)
	return sh.String()
}

func sortedSizes(s Shape) []string {
	var out []string
	for n := range s.Sizes {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

var exprEnv = Env{"m": 2049, "n": 1536, "sms": 132}

// goldenExprs evaluates the expression cases in exprEnv.
func goldenExprs() []goldenExpr {
	var out []goldenExpr
	for _, text := range []string{
		"7", "m*n", "cdiv(m, 128)", "div(m, 128)", "min(sms*2, cdiv(m*n, 1024))", "max(1, m - 4096)", "(m + 1)*2",
		"m - (n - 1)", "m - n - 1", "-3 + m", "m*1 + 0", "m*0", "cdiv(m*8960, 1024)", "cdiv(2049, 128)", "div(m, 1)",
		"1*m", "0 + m", "m - 0", "2*(3 + 4)", "m*(n*2)", "(m*n)*2", "m - -3", "m*-3", "min(m, n) + max(m, n)", "  m  +  n ",
		"cdiv(m, 0)", "k*2", "m*4611686018427387904", "div(0 - m, 2)", "9223372036854775807 + m", "0 - m - 9223372036854775807",
		"cdiv(1, 0)", "4611686018427387904*4", "m - 2050", "cdiv(0, 5)", "sms_count + 1",
		"", "m +", "cdiv(m)", "cdiv(m, 2", "M", "m ^ 2", "(m", "m)", "99999999999999999999", "-", "m*", "min m", "m·2", "cdiv(m,,2)",
	} {
		g := goldenExpr{Text: text, Env: exprEnv}
		e, err := ParseExpr(text)
		if err != nil {
			g.ParseError = err.Error()
			out = append(out, g)
			continue
		}
		g.Printed = e.String()
		if g.Value, err = e.Eval(exprEnv); err != nil {
			g.EvalError = err.Error()
		}
		out = append(out, g)
	}
	return out
}

// goldenRefusals are tables Parse refuses, made from committed ones.
func goldenRefusals(t *testing.T) []goldenRefusal {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join("h200", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	pool, gemm := read("pool.json"), read("gemm.json")
	edit := func(text, old, new string) string {
		if !strings.Contains(text, old) {
			t.Fatalf("refusal case: no %q in the table", old)
		}
		return strings.Replace(text, old, new, 1)
	}
	var out []goldenRefusal
	for _, c := range []struct {
		name, table string
		exact       bool
	}{
		{"not json", "{", false},
		{"an array", "[]", false},
		{"no schema", `{"gpu": {"name": "x", "cc": "9.0"}}`, true},
		{"schema null", `{"schema": null}`, true},
		{"schema a string", `{"schema": "2"}`, false},
		{"newer schema", `{"schema": 3, "what": "comes next"}`, true},
		{"older schema", `{"schema": 1, "gpu": {"name": "x", "cc": "9.0"}}`, true},
		{"schema in capitals", `{"SCHEMA": 1}`, true},
		{"unknown buffer", edit(pool, `"buffer": "x"`, `"buffer": "xx"`), true},
		{"unknown field", edit(pool, `"source"`, `"sauce"`), false},
		{"unknown field in a launch", edit(pool, `"dependent"`, `"dependant"`), false},
		{"unknown field in a tensor map", edit(gemm, `"oob_fill"`, `"oob"`), false},
		{"bad cc", edit(pool, `"cc": "9.0"`, `"cc": "sm90"`), true},
		{"no gpu name", edit(pool, `"name": "NVIDIA H200"`, `"name": "  "`), true},
		{"bad l2", edit(pool, `"l2": "flushed"`, `"l2": "cold"`), true},
		{"no median", edit(pool, `"median_us": `, `"median_us": -`), true},
		{"bad shape", edit(pool, `"shape": "n=32,`, `"shape": "n=,`), true},
		{"trailing data", pool + "{}", false},
		{"NaN", edit(pool, `"registers": `, `"registers": NaN, "x": `), false},
		{"fractional int", edit(pool, `"registers": `, `"registers": 1.5, "x": `), false},
		{"bad expression", edit(gemm, `"elems": "m*1536"`, `"elems": "m +"`), false},
		{"expression of a boolean", edit(gemm, `"elems": "m*1536"`, `"elems": true`), false},
		{"an unknown field beside the launches", edit(pool, `"launches": [`, `"launches": [], "x": [`), false},
		{"opt-in without shared memory", edit(gemm, `"shared_opt_in": true`, `"shared_opt_in": false`), false},
		{"bad argument kind", edit(gemm, `"kind": "tensor_map"`, `"kind": "texture"`), false},
		{"rank disagrees", edit(gemm, `"rank": 2`, `"rank": 3`), false},
		{"bad swizzle", edit(gemm, `"swizzle": 128`, `"swizzle": 96`), true},
		{"map beyond its buffer", edit(gemm, `"elems": "m*1536"`, `"elems": 1024`), true},
		{"variable nothing gives", edit(gemm, `"grid": [
            128`, `"grid": [
            "tokens"`), true},
		{"runtime dim not a size", edit(pool, `"launches": [`, `"runtime": {"q": {"min": 1, "max": 4}}, "launches": [`), true},
		{"runtime range without the tuned value", edit(pool, `"launches": [`, `"runtime": {"n": {"min": 1, "max": 4}}, "launches": [`), true},
		{"bad dtype", edit(pool, `"dtype": "bf16",
          "elems"`, `"dtype": "int8",
          "elems"`), false},
		{"ptx outside the directory", edit(pool, `"ptx": "lp_pool1d`, `"ptx": "../lp_pool1d`), true},
		{"duplicate entry", strings.Replace(pool, `"kernel": "lp_pool1d_bwd",
      "dtype": "f16"`, `"kernel": "lp_pool1d_bwd",
      "dtype": "bf16"`, 1), true},
	} {
		_, err := Parse(strings.NewReader(c.table))
		r := goldenRefusal{Name: c.name, Table: c.table, Exact: c.exact}
		for _, s := range []struct {
			err  error
			name string
		}{{ErrMalformed, "malformed"}, {ErrSchemaTooNew, "schema_too_new"}, {ErrSchemaTooOld, "schema_too_old"}} {
			if errors.Is(err, s.err) {
				r.Error = s.name
			}
		}
		if r.Error == "" {
			t.Fatalf("refusal %s: Parse returned %v", c.name, err)
		}
		r.Message = err.Error()
		out = append(out, r)
	}
	return out
}
