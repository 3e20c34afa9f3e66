package evidence

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/variants"
)

// nf4Row is one row of an NF4 table as the database gives it: the fused
// winner, the cuBLAS floor (on the dequantized bf16 weight, its stored
// baseline) and nf4_dequant's winner at the same weight.
type nf4Row struct {
	fused                  *results.Shape
	floor, deq, unfused    float64
	floorFused, unfusFused float64
	params                 string
}

// nf4Shapes reads an nf4 database's row for weight n×k with scales
// ("f32" or "dq").
func nf4Shapes(t *testing.T, set *results.Set, n, k, scales string) nf4Row {
	t.Helper()
	want := map[string]string{"m": "2048", "n": n, "k": k, "dtype": "bf16", "scales": ""}
	dq := map[string]string{"n": n, "k": k, "dtype": "bf16", "scales": ""}
	if scales == "dq" {
		want["scales"], dq["scales"] = "dq", "dq"
	}
	fused := shape(t, set, "nf4_gemm_bwd", want)
	deq := shape(t, set, "nf4_dequant", dq)
	if fused.Baseline == nil || !strings.HasPrefix(fused.Baseline.Name, "cublas") {
		t.Fatalf("%s: nf4_gemm_bwd %s has no cuBLAS baseline", set.Path, fused.Key)
	}
	r := nf4Row{fused: fused, floor: fused.Baseline.MedianUS, deq: deq.Winner.MedianUS, params: fused.Winner.Key.Params}
	r.unfused = r.deq + r.floor
	r.floorFused = r.floor / fused.Winner.MedianUS
	r.unfusFused = r.unfused / fused.Winner.MedianUS
	return r
}

// nf4RatiosRE is a row of a ratios file of bench/nf4_h200.sh.
var nf4RatiosRE = regexp.MustCompile(`^\s*(\d+)×(\d+)\s+(dq|f32)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)$`)

// nf4GeomeanRE is a ratios file's last line.
var nf4GeomeanRE = regexp.MustCompile(`^geomean floor/fused ([\d.]+), unfused/fused ([\d.]+) over`)

// nf4Table checks a docs/kernels/nf4.md table (W n×k, scales, fused µs,
// cuBLAS on bf16 W, dequant+cuBLAS, floor/fused, unfused/fused, winner)
// and the geomeans under it against the run's database, and that the
// run's ratios file (what bench/nf4_h200.sh printed from its export)
// agrees with the same database.
func nf4Table(t *testing.T, rel, marker, db, ratiosFile string) {
	t.Helper()
	set := load(t, db)
	tb := tableAfter(t, rel, marker)
	cW, cS, cF, cB := tb.col(t, "W n×k"), tb.col(t, "scales"), tb.col(t, "fused µs"), tb.col(t, "cuBLAS on bf16 W")
	cU, cFF, cUF, cWin := tb.col(t, "dequant+cuBLAS"), tb.col(t, "floor/fused"), tb.col(t, "unfused/fused"), tb.col(t, "winner")
	if len(tb.rows) != 8 {
		t.Errorf("%s: %d rows, want 8", tb.where, len(tb.rows))
	}
	var fl, un []float64
	for i, row := range tb.rows {
		n, k, _ := strings.Cut(row[cW], "×")
		r := nf4Shapes(t, set, n, k, row[cS])
		c := checker{t, tb.at(i) + " " + row[cW] + " " + row[cS]}
		c.eq("fused µs", row[cF], r.fused.Winner.MedianUS)
		c.eq("cuBLAS on bf16 W", row[cB], r.floor)
		c.eq("dequant+cuBLAS", row[cU], r.unfused)
		c.eq("floor/fused", row[cFF], r.floorFused)
		c.eq("unfused/fused", row[cUF], r.unfusFused)
		nf4Desc(c, row[cWin], r.params)
		fl, un = append(fl, r.floorFused), append(un, r.unfusFused)
	}
	text := textAfter(t, rel, marker)
	m := regexp.MustCompile(`Geomean floor/fused (\d[\d.]*\d).*?unfused/fused (\d[\d.]*\d)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no geomean sentence after the table", tb.where)
	}
	c := checker{t, tb.where + " geomean sentence"}
	c.eq("geomean floor/fused", m[1], geomean(fl))
	c.eq("geomean unfused/fused", m[2], geomean(un))

	// The ratios file the table cites: the same figures from the same run.
	rows := 0
	for _, l := range strings.Split(read(t, ratiosFile), "\n") {
		if m := nf4GeomeanRE.FindStringSubmatch(l); m != nil {
			c := checker{t, ratiosFile + " geomean"}
			c.eq("floor/fused", m[1], geomean(fl))
			c.eq("unfused/fused", m[2], geomean(un))
			continue
		}
		m := nf4RatiosRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		rows++
		r := nf4Shapes(t, set, m[1], m[2], m[3])
		c := checker{t, ratiosFile + " " + m[1] + "×" + m[2] + " " + m[3]}
		c.eq("fused µs", m[4], r.fused.Winner.MedianUS)
		c.eq("cuBLAS µs", m[5], r.floor)
		c.eq("deq µs", m[7], r.deq)
		c.eq("unfused", m[8], r.unfused)
		c.eq("floor/fused", m[9], r.floorFused)
		c.eq("unfused/fused", m[10], r.unfusFused)
		if m[11] != r.params {
			t.Errorf("%s: params %s, the recorded winner is %s", c.where, m[11], r.params)
		}
	}
	if rows != 8 {
		t.Errorf("%s: %d rows, want 8", ratiosFile, rows)
	}
}

// nf4Desc checks an NF4 winner's description ("256×128 producer, cluster
// 2, codes ring, persistent") against its params: the tile, the
// dequantizing warps, and the cluster, the codes' path and persistence,
// each its default where the description leaves it out.
func nf4Desc(c checker, desc, winner string) {
	c.t.Helper()
	p := params(winner)
	var bad []string
	if m := tileRE.FindStringSubmatch(desc); m == nil || m[1] != p["bm"] || m[2] != p["bn"] {
		bad = append(bad, "tile")
	}
	deq := map[string]string{"producer": "producer", "dedicated": "dedicated", "register-A": "consumer"}
	found := false
	for word, v := range deq {
		if strings.Contains(desc, word) {
			found = true
			if p["dequant"] != v {
				bad = append(bad, "dequant")
			}
		}
	}
	if !found {
		bad = append(bad, "dequant")
	}
	cluster := "1"
	if m := clusterRE.FindStringSubmatch(desc); m != nil {
		cluster = m[1]
	}
	codes := "tma"
	if m := codesRE.FindStringSubmatch(desc); m != nil {
		codes = m[1]
	}
	if cluster != p["cluster"] {
		bad = append(bad, "cluster")
	}
	if codes != p["codes"] {
		bad = append(bad, "codes")
	}
	if strings.Contains(desc, "persistent") != (p["persistent"] == "1") {
		bad = append(bad, "persistent")
	}
	if len(bad) > 0 {
		c.t.Errorf("%s: winner %q is not the recorded winner %s (%s)", c.where, desc, winner, strings.Join(bad, ", "))
	}
}

// TestNF4Tables: docs/kernels/nf4.md's two tables of the fused GEMM on
// the H200, from their runs' databases.
func TestNF4Tables(t *testing.T) {
	const rel = "docs/kernels/nf4.md"
	nf4Table(t, rel, "the shared-memory B path (same session as cuBLAS; `testdata/nf4/h200-nf4-cluster-ratios.txt`)",
		"testdata/nf4/h200-nf4-cluster.db", "testdata/nf4/h200-nf4-cluster-ratios.txt")
	nf4Table(t, rel, "### H200, tokens 2048, bf16 (same session as cuBLAS; `testdata/nf4/h200-nf4-rs-ratios.txt`)",
		"testdata/nf4/h200-nf4-rs.db", "testdata/nf4/h200-nf4-rs-ratios.txt")
}

// rsprobeRE is a probe's line of testdata/nf4/h200-rsprobe.txt.
var rsprobeRE = regexp.MustCompile(`^(\w+)\s+kt=(\d+):\s+([\d.]+) µs\s+([\d.]+) TFLOP/s$`)

// TestNF4Probe: docs/kernels/nf4.md's table of the register-A probes,
// from the first session of testdata/nf4/h200-rsprobe.txt (the range of
// its 140-k-tile runs, the TFLOP/s of its 560-k-tile run), and its real
// kernel and cuBLAS rows from that session's harness run,
// testdata/nf4/h200-rsprobe-real.db.
func TestNF4Probe(t *testing.T) { nf4Probe(t, "docs/kernels/nf4.md") }

func nf4Probe(t *testing.T, rel string) {
	const probe = "testdata/nf4/h200-rsprobe.txt"
	txt := read(t, probe)
	const from, to = "# 2026-12-02, one session", "# 2026-12-02, a second session"
	i, j := strings.Index(txt, from), strings.Index(txt, to)
	if i < 0 || j < i {
		t.Fatalf("%s: no session between %q and %q", probe, from, to)
	}
	lo, hi, tf := map[string]float64{}, map[string]float64{}, map[string]string{}
	for _, l := range strings.Split(txt[i:j], "\n") {
		m := rsprobeRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		us := mustFloat(t, m[3])
		switch m[2] {
		case "140":
			if v, ok := lo[m[1]]; !ok || us < v {
				lo[m[1]] = us
			}
			if us > hi[m[1]] {
				hi[m[1]] = us
			}
		case "560":
			tf[m[1]] = m[4]
		}
	}
	set := load(t, "testdata/nf4/h200-rsprobe-real.db")
	real := shape(t, set, "nf4_gemm_bwd", map[string]string{"m": "2048", "n": "8960", "k": "1536", "dtype": "bf16", "scales": ""})
	if !strings.Contains(txt[i:j], "real kernel (harness, validated), gate·up f32") {
		t.Errorf("%s: the session does not name its real kernel run", probe)
	}

	tb := tableAfter(t, rel, "| probe: A from …")
	cName, cUS, cTF := tb.col(t, "probe: A from …"), tb.col(t, "140 k-tiles µs"), tb.col(t, "560 k-tiles TFLOP/s")
	nameRE := regexp.MustCompile(`\((\w+)\)`)
	seen := map[string]bool{}
	for i, row := range tb.rows {
		c := checker{t, tb.at(i) + " " + row[cName]}
		switch {
		case strings.Contains(row[cName], "the real kernel"):
			c.eq("µs", row[cUS], real.Winner.MedianUS)
			seen["real"] = true
		case strings.HasPrefix(row[cName], "cuBLAS on the bf16 weight"):
			if real.Baseline == nil {
				t.Fatalf("%s: no baseline", set.Path)
			}
			c.eq("µs", row[cUS], real.Baseline.MedianUS)
			seen["cublas"] = true
		default:
			m := nameRE.FindAllStringSubmatch(row[cName], -1)
			if m == nil {
				t.Errorf("%s: no probe name in parentheses", c.where)
				continue
			}
			name := m[len(m)-1][1]
			if _, ok := lo[name]; !ok {
				t.Errorf("%s: %s has no probe %s at 140 k-tiles in that session", c.where, probe, name)
				continue
			}
			c.span("140 k-tiles µs", row[cUS], lo[name], hi[name])
			c.eq("560 k-tiles TFLOP/s", row[cTF], mustFloat(t, tf[name]))
			seen[name] = true
		}
	}
	// Every probe of the session has a row but rsdeq (docs/history/nf4.md
	// has it), and so do the real kernel and cuBLAS.
	for _, name := range []string{"real", "cublas"} {
		if !seen[name] {
			t.Errorf("%s: no row for the %s run", tb.where, name)
		}
	}
	for name := range lo {
		if name != "rsdeq" && !seen[name] {
			t.Errorf("%s: no row for the session's probe %s", tb.where, name)
		}
	}
}

// TestNF4SearchRules recomputes the bounds nf4_gemm_bwd's search rules
// state (kernels/nf4gemm/gemmspace.go) from the run they cite: over every
// case of it, the best recorded median of each path they leave out
// (fully measured or abandoned early) divided by the case's best. The
// stated bound is that minimum, rounded down to hundredths.
func TestNF4SearchRules(t *testing.T) {
	const db = "testdata/nf4/h200-nf4-22.db.gz"
	src := read(t, "kernels/nf4gemm/gemmspace.go")
	set := load(t, db)
	minRatio := map[string]float64{"sync": math.Inf(1), "warps": math.Inf(1)}
	cases := 0
	for _, sh := range set.Shapes {
		if sh.Kernel != "nf4_gemm_bwd" {
			continue
		}
		best := map[string]float64{}
		for _, v := range sh.Order {
			p, err := variants.ParseParams(v.Key.Params)
			if err != nil || v.MedianUS <= 0 || p["dequant"] == "" {
				continue
			}
			path := "kept"
			switch {
			case p["mma"] == "sync":
				path = "sync"
			case p["dequant"] == "producer" || p["dequant"] == "dedicated":
				path = "warps"
			}
			if b, ok := best[path]; !ok || v.MedianUS < b {
				best[path] = v.MedianUS
			}
		}
		if len(best) == 0 {
			continue // the call's deadline came before the case was measured
		}
		all := math.Inf(1)
		for _, b := range best {
			all = min(all, b)
		}
		if best["kept"] != all {
			t.Errorf("%s %s: a path the search rules leave out is the fastest (%.2f µs, kept %.2f µs)", db, sh.Key, all, best["kept"])
		}
		for path := range minRatio {
			if b, ok := best[path]; ok {
				minRatio[path] = min(minRatio[path], b/all)
			}
		}
		cases++
	}
	if cases != 34 {
		t.Errorf("%s: %d nf4_gemm_bwd cases, want the 34 the rules cite", db, cases)
	}
	for path, re := range map[string]*regexp.Regexp{
		"sync":  regexp.MustCompile(`searchSync\s+= "search: the sync path, at least ([\d.]+)× the best`),
		"warps": regexp.MustCompile(`searchWarpgroups = "search: per-tile dequantization by producer or dedicated warps, at least ([\d.]+)× the best`),
	} {
		m := re.FindStringSubmatch(src)
		if m == nil {
			t.Errorf("gemmspace.go: no bound for %s", path)
			continue
		}
		if want := math.Floor(minRatio[path]*100) / 100; m[1] != strconv.FormatFloat(want, 'f', 2, 64) {
			t.Errorf("gemmspace.go states %s× for %s; %s gives %.4f", m[1], path, db, minRatio[path])
		}
	}
}
