package evidence

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/internal/testdb"
	"github.com/gradtune/gradtune/reports"
	"github.com/gradtune/gradtune/store"
)

// root is the repository root, from this package's directory.
const root = "../.."

// read returns a file of the repository, by its path from the root.
func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// table is a Markdown table: its header cells and its rows' cells.
type table struct {
	where string // file:line of the header
	file  string
	head  []string
	rows  [][]string
	lines []int // each row's line number
}

// at is file:line of row i.
func (tb table) at(i int) string { return fmt.Sprintf("%s:%d", tb.file, tb.lines[i]) }

// cells splits a Markdown table line into its trimmed cells.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var out []string
	for _, c := range strings.Split(line, "|") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

// tableAfter is the first Markdown table of file rel after the first line
// that contains marker.
func tableAfter(t *testing.T, rel, marker string) table {
	t.Helper()
	lines := strings.Split(read(t, rel), "\n")
	start := -1
	for i, l := range lines {
		if strings.Contains(l, marker) {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s: no line holds %q", rel, marker)
	}
	for i := start; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") || !strings.HasPrefix(lines[i+1], "|---") {
			continue
		}
		tb := table{where: fmt.Sprintf("%s:%d", rel, i+1), file: rel, head: cells(lines[i])}
		for j := i + 2; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			row := cells(lines[j])
			if len(row) != len(tb.head) {
				t.Fatalf("%s:%d: %d cells, the header has %d", rel, j+1, len(row), len(tb.head))
			}
			tb.rows = append(tb.rows, row)
			tb.lines = append(tb.lines, j+1)
		}
		return tb
	}
	t.Fatalf("%s: no table after %q", rel, marker)
	return table{}
}

// col is the index of the column whose header is name.
func (tb table) col(t *testing.T, name string) int {
	t.Helper()
	for i, h := range tb.head {
		if h == name {
			return i
		}
	}
	t.Fatalf("%s: no column %q (columns %q)", tb.where, name, tb.head)
	return -1
}

// textAfter is the text of file rel from the first line that contains
// marker to the next heading, with runs of white space made one space.
func textAfter(t *testing.T, rel, marker string) string {
	t.Helper()
	md := read(t, rel)
	i := strings.Index(md, marker)
	if i < 0 {
		t.Fatalf("%s: no %q", rel, marker)
	}
	rest := md[i+len(marker):]
	if j := strings.Index(rest, "\n#"); j >= 0 {
		rest = rest[:j]
	}
	return strings.Join(strings.Fields(rest), " ")
}

// num is a number as a document prints it: its value and its decimals.
type num struct {
	v   float64
	dec int
}

// numRE is a printed decimal number.
var numRE = regexp.MustCompile(`^\d+(?:\.(\d+))?$`)

// parseNums reads a cell holding a number or a range "lo–hi", with any
// bold, code span or unit (µs, ×, x, %) around it.
func parseNums(cell string) ([]num, bool) {
	s := cell
	for _, cut := range []string{"**", "`", "µs", "×", "%", "x"} {
		s = strings.ReplaceAll(s, cut, "")
	}
	s = strings.TrimSpace(s)
	var out []num
	for _, part := range strings.Split(s, "–") {
		part = strings.TrimSpace(part)
		m := numRE.FindStringSubmatch(part)
		if m == nil {
			return nil, false
		}
		v, err := strconv.ParseFloat(part, 64)
		if err != nil {
			return nil, false
		}
		out = append(out, num{v, len(m[1])})
	}
	return out, len(out) == 1 || len(out) == 2
}

// near reports whether want rounds to n at n's printed precision (half a
// unit of its last digit either way).
func near(n num, want float64) bool {
	return math.Abs(n.v-want) <= 0.5*math.Pow10(-n.dec)+1e-9
}

// checker compares a document's cells with recomputed figures.
type checker struct {
	t     *testing.T
	where string
}

// eq checks that cell prints want.
func (c checker) eq(label, cell string, want float64) {
	c.t.Helper()
	ns, ok := parseNums(cell)
	if !ok || len(ns) != 1 {
		c.t.Errorf("%s: %s: %q is not a number", c.where, label, cell)
		return
	}
	if !near(ns[0], want) {
		c.t.Errorf("%s: %s: the doc prints %s, the evidence gives %.*f (%.4f)", c.where, label, cell, ns[0].dec, want, want)
	}
}

// within checks that cell prints some value in [lo, hi].
func (c checker) within(label, cell string, lo, hi float64) {
	c.t.Helper()
	ns, ok := parseNums(cell)
	if !ok || len(ns) != 1 {
		c.t.Errorf("%s: %s: %q is not a number", c.where, label, cell)
		return
	}
	h := 0.5*math.Pow10(-ns[0].dec) + 1e-9
	if ns[0].v+h < lo || ns[0].v-h > hi {
		if lo == hi {
			c.t.Errorf("%s: %s: the doc prints %s, the evidence gives %.*f (%.4f)", c.where, label, cell, ns[0].dec, lo, lo)
		} else {
			c.t.Errorf("%s: %s: the doc prints %s, the evidence gives %.4f–%.4f", c.where, label, cell, lo, hi)
		}
	}
}

// span checks that cell prints the range lo–hi, or one number where lo
// and hi print the same.
func (c checker) span(label, cell string, lo, hi float64) {
	c.t.Helper()
	ns, ok := parseNums(cell)
	if !ok {
		c.t.Errorf("%s: %s: %q is not a number or a range", c.where, label, cell)
		return
	}
	a, b := ns[0], ns[len(ns)-1]
	if !near(a, lo) || !near(b, hi) {
		c.t.Errorf("%s: %s: the doc prints %s, the evidence gives %.*f–%.*f", c.where, label, cell, a.dec, lo, b.dec, hi)
	}
}

// ratioOf checks a ratio printed beside its numerator, both rounded
// from figures the file no longer holds: some numerator that prints as
// numCell must, over some denominator in [denLo, denHi], print as cell.
func (c checker) ratioOf(label, cell, numCell string, denLo, denHi float64) {
	c.t.Helper()
	r, ok1 := parseNums(cell)
	n, ok2 := parseNums(numCell)
	if !ok1 || !ok2 || len(r) != 1 || len(n) != 1 {
		c.t.Errorf("%s: %s: %q over %q are not numbers", c.where, label, cell, numCell)
		return
	}
	hr, hn := 0.5*math.Pow10(-r[0].dec)+1e-9, 0.5*math.Pow10(-n[0].dec)+1e-9
	if (r[0].v+hr)*denHi < n[0].v-hn || (r[0].v-hr)*denLo > n[0].v+hn {
		c.t.Errorf("%s: %s: %s is not %s over %.4f–%.4f", c.where, label, cell, numCell, denLo, denHi)
	}
}

// params splits a params string into its axes.
func params(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		m[k] = v
	}
	return m
}

// sameParams checks that a cell names the winner's params, in any order.
func (c checker) sameParams(label, cell, winner string) {
	c.t.Helper()
	a, b := params(strings.Trim(cell, "`")), params(winner)
	if len(a) != len(b) {
		c.t.Errorf("%s: %s: the doc names %q, the recorded winner is %q", c.where, label, cell, winner)
		return
	}
	for k, v := range a {
		if b[k] != v {
			c.t.Errorf("%s: %s: the doc names %q, the recorded winner is %q", c.where, label, cell, winner)
			return
		}
	}
}

// geomean is the geometric mean of xs.
func geomean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

var (
	setsMu sync.Mutex
	sets   = map[string]*results.Set{}
)

// load reads a database under testdata/ read-only through package
// results, as tune show does (each shape from its newest run), once per
// test binary.
func load(t *testing.T, rel string) *results.Set {
	t.Helper()
	setsMu.Lock()
	defer setsMu.Unlock()
	if s, ok := sets[rel]; ok {
		return s
	}
	path := filepath.Join(root, rel)
	if strings.HasSuffix(rel, ".gz") {
		path = testdb.Gunzip(t, path)
	} else if _, err := os.Stat(path + "-wal"); err == nil {
		// A leftover write-ahead log beside a committed database: read a
		// copy, so that nothing beside the committed file is touched.
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(t.TempDir(), filepath.Base(rel))
		if err := os.WriteFile(path, b, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	db, err := store.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	set, err := results.Load(db, results.Options{})
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	sets[rel] = set
	return set
}

// dims splits a shape key into its dims (dtype included).
func dims(key string) map[string]string { return params(key) }

// shape is the shape of set of kernel whose key has every dim of want;
// it fails unless exactly one has.
func shape(t *testing.T, set *results.Set, kernel string, want map[string]string) *results.Shape {
	t.Helper()
	var found []*results.Shape
	for _, sh := range set.Shapes {
		if sh.Kernel != kernel {
			continue
		}
		d := dims(sh.Key)
		ok := true
		for k, v := range want {
			if d[k] != v {
				ok = false
			}
		}
		if ok {
			found = append(found, sh)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d shapes of %s match %v", set.Path, len(found), kernel, want)
	}
	if found[0].Winner == nil {
		t.Fatalf("%s: %s %s has no winner", set.Path, kernel, found[0].Key)
	}
	return found[0]
}

// peers reads a peers file under testdata/.
func peers(t *testing.T, rel string) *reports.Peers {
	t.Helper()
	f, err := os.Open(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := reports.ReadPeers(f)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return p
}
