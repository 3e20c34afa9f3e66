package evidence

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/internal/results"
)

// gemmCases are gemm_bwd's preset cases as the docs name them ("q·o dX")
// and their shape dims at 2048 tokens.
var gemmCases = map[string]map[string]string{}

func init() {
	nk := map[string][2]string{"q·o": {"1536", "1536"}, "k·v": {"256", "1536"}, "gate·up": {"8960", "1536"}, "down": {"1536", "8960"}}
	for proj, d := range nk {
		for _, grad := range []string{"dX", "dW"} {
			gemmCases[proj+" "+grad] = map[string]string{"m": "2048", "n": d[0], "k": d[1], "grad": strings.ToLower(grad), "dtype": "bf16"}
		}
	}
}

// gemmCase is the dims of a docs case name; it fails on an unknown one.
func gemmCase(t *testing.T, name string) map[string]string {
	t.Helper()
	d, ok := gemmCases[name]
	if !ok {
		t.Fatalf("unknown gemm_bwd case %q", name)
	}
	return d
}

// ratiosRow is one case of a *-ratios.txt of bench/gemm_h200.sh: ours
// (the exported winner) and torch's cuBLAS, and their ratio.
type ratiosRow struct {
	ours, torch, ratio string
	params             string
}

var (
	gemmRatiosRE  = regexp.MustCompile(`^(q/o|k/v|gate/up|down)\s+(dx|dw)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\d+\s+(\S+)$`)
	gemmGeomeanRE = regexp.MustCompile(`^geomean ratio ([\d.]+) over (\d+) cases; min ([\d.]+)`)
)

// gemmRatios reads a *-ratios.txt of bench/gemm_h200.sh: its rows by
// docs case name, and its geomean line's figures.
func gemmRatios(t *testing.T, rel string) (map[string]ratiosRow, [2]string) {
	t.Helper()
	rows := map[string]ratiosRow{}
	var gm [2]string
	for _, l := range strings.Split(read(t, rel), "\n") {
		if m := gemmRatiosRE.FindStringSubmatch(l); m != nil {
			name := strings.ReplaceAll(m[1], "/", "·") + " " + map[string]string{"dx": "dX", "dw": "dW"}[m[2]]
			rows[name] = ratiosRow{ours: m[3], torch: m[4], ratio: m[5], params: m[6]}
		}
		if m := gemmGeomeanRE.FindStringSubmatch(l); m != nil {
			gm = [2]string{m[1], m[3]}
		}
	}
	if len(rows) != 8 || gm[0] == "" {
		t.Fatalf("%s: %d cases and geomean %q, want 8 and a geomean line", rel, len(rows), gm[0])
	}
	return rows, gm
}

// gemmSentenceRE matches the sentence under a gemm_bwd table.
var gemmSentenceRE = regexp.MustCompile(`^Geomean (\d[\d.]*\d) against the harness's cuBLAS[^,]*, (\d[\d.]*\d) against torch's; (?:the )?lowest(?: case)? (\d[\d.]*\d)`)

// gemmTable checks a docs table of gemm_bwd's preset (columns case, ours
// µs, cuBLAS (harness), cuBLAS (torch), ratio vs harness, ratio vs
// torch, and optionally winner) and the geomean sentence under it.
// ours and harness give each case's figures in µs: a database's medians
// (slack 0), or a log's, printed to two decimals (slack 0.005: a ratio
// or geomean of them must print as some value they round from). Torch's
// cuBLAS and its ratio come from the run's ratios file, whose ours must
// be the same winner.
func gemmTable(t *testing.T, rel, marker string, ours, harness func(string) float64, slack float64, winner func(string) string, ratiosFile string) {
	t.Helper()
	tb := tableAfter(t, rel, marker)
	rr, rgm := gemmRatios(t, ratiosFile)
	cCase, cOurs, cHarness, cTorch := tb.col(t, "case"), tb.col(t, "ours µs"), tb.col(t, "cuBLAS (harness)"), tb.col(t, "cuBLAS (torch)")
	cRH, cRT := tb.col(t, "ratio vs harness"), tb.col(t, "ratio vs torch")
	cWin := -1
	for i, h := range tb.head {
		if h == "winner" {
			cWin = i
		}
	}
	if len(tb.rows) != 8 {
		t.Errorf("%s: %d cases, want 8", tb.where, len(tb.rows))
	}
	var lows, highs, allLo, allHi, torchLo, torchHi []float64
	stronger := 0 // cases where the harness's cuBLAS is faster than torch's
	for i, row := range tb.rows {
		name := row[cCase]
		gemmCase(t, name)
		c := checker{t, tb.at(i) + " " + name}
		r, ok := rr[name]
		if !ok {
			t.Errorf("%s: %s has no row %s", c.where, ratiosFile, name)
			continue
		}
		o, h := ours(name), harness(name)
		c.eq("ours µs", row[cOurs], o)
		c.eq(ratiosFile+"'s ours µs", r.ours, o)
		c.eq("cuBLAS (harness)", row[cHarness], h)
		torch, _ := strconv.ParseFloat(r.torch, 64)
		c.eq("cuBLAS (torch)", row[cTorch], torch)
		lo, hi := (h-slack)/(o+slack), (h+slack)/(o-slack)
		c.within("ratio vs harness", row[cRH], lo, hi)
		ratio, _ := strconv.ParseFloat(r.ratio, 64)
		c.eq("ratio vs torch", row[cRT], ratio)
		c.ratioOf(ratiosFile+"'s ratio", r.ratio, r.torch, o-slack, o+slack)
		if winner != nil {
			if w := winner(name); w != r.params {
				t.Errorf("%s: %s names %s, the recorded winner is %s", c.where, ratiosFile, r.params, w)
			}
			if cWin >= 0 {
				gemmDesc(c, row[cWin], winner(name))
			}
		}
		if h < torch {
			stronger++
		}
		lows, highs = append(lows, lo), append(highs, hi)
		allLo, allHi = append(allLo, lo, ratio), append(allHi, hi, ratio)
		torchLo, torchHi = append(torchLo, ratio-0.0005), append(torchHi, ratio+0.0005)
	}
	checker{t, ratiosFile}.within("geomean of its ratios", rgm[0], geomean(torchLo), geomean(torchHi))
	text := textAfter(t, rel, marker)
	i := strings.Index(text, "Geomean ")
	if i < 0 {
		t.Fatalf("%s: no geomean sentence after the table", tb.where)
	}
	m := gemmSentenceRE.FindStringSubmatch(text[i:])
	if m == nil {
		t.Fatalf("%s: the geomean sentence %.120q does not read as expected", tb.where, text[i:])
	}
	c := checker{t, tb.where + " geomean sentence"}
	c.within("geomean against the harness's cuBLAS", m[1], geomean(lows), geomean(highs))
	c.eq("geomean against torch's", m[2], mustFloat(t, rgm[0]))
	c.within("lowest ratio", m[3], slicesMin(allLo), slicesMin(allHi))
	if m := strongerRE.FindStringSubmatch(text[i:]); m != nil {
		if n, ok := counts[m[1]]; !ok || n != stronger {
			t.Errorf("%s: the harness's cuBLAS is %q the stronger peer; it is on %d cases of %d", c.where, m[0], stronger, len(tb.rows))
		}
	}
}

// strongerRE is the count of cases where the harness's cuBLAS was the
// stronger peer, as the geomean sentence may give it.
var strongerRE = regexp.MustCompile(`^Geomean [\d.]+ against the harness's cuBLAS \(the stronger peer on (every case|\w+ cases)[);]`)

var counts = map[string]int{"every case": 8, "seven cases": 7, "six cases": 6, "five cases": 5, "four cases": 4}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func slicesMin(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = math.Min(m, x)
	}
	return m
}

var (
	tileRE    = regexp.MustCompile(`(\d+)×(\d+)`)
	stagesRE  = regexp.MustCompile(`(\d+) stages`)
	clusterRE = regexp.MustCompile(`cluster (\d+)`)
	codesRE   = regexp.MustCompile(`codes (\w+)`)
)

// gemmDesc checks a gemm_bwd winner's short description ("192×64
// persistent tma", "64×64, 12 stages") against its params: the tile,
// persistence either way, and the epilogue, stages and cluster where
// named.
func gemmDesc(c checker, desc, winner string) {
	c.t.Helper()
	p := params(winner)
	var bad []string
	if m := tileRE.FindStringSubmatch(desc); m == nil || m[1] != p["bm"] || m[2] != p["bn"] {
		bad = append(bad, "tile")
	}
	if strings.Contains(desc, "persistent") != (p["persistent"] == "1") {
		bad = append(bad, "persistent")
	}
	if strings.Contains(desc, "tma") && p["epilogue"] != "tma" {
		bad = append(bad, "epilogue")
	}
	if m := stagesRE.FindStringSubmatch(desc); m != nil && m[1] != p["stages"] {
		bad = append(bad, "stages")
	}
	if m := clusterRE.FindStringSubmatch(desc); m != nil && m[1] != p["cluster"] {
		bad = append(bad, "cluster")
	}
	if len(bad) > 0 {
		c.t.Errorf("%s: winner %q is not the recorded winner %s (%s)", c.where, desc, winner, strings.Join(bad, ", "))
	}
}

// dbGemm gives a database's gemm_bwd winners: median, baseline median,
// params.
func dbGemm(t *testing.T, rel string) (ours, harness func(string) float64, winner func(string) string) {
	set := load(t, rel)
	sh := func(name string) *results.Shape { return shape(t, set, "gemm_bwd", gemmCase(t, name)) }
	ours = func(name string) float64 { return sh(name).Winner.MedianUS }
	harness = func(name string) float64 {
		s := sh(name)
		if s.Baseline == nil || !strings.HasPrefix(s.Baseline.Name, "cublas") {
			t.Fatalf("%s: %s has no cuBLAS baseline", rel, name)
		}
		return s.Baseline.MedianUS
	}
	winner = func(name string) string { return sh(name).Winner.Key.Params }
	return
}

// logLineRE is a shape's line of a tune log: its best (the winner)
// and the harness's cuBLAS.
var logLineRE = regexp.MustCompile(`^gemm_bwd\s+(\S+)\s+\d+ variants: .*? best ([\d.]+) µs \(\d+ GB/s\) (\S+).*?; cublas ([\d.]+) µs`)

// logGemm gives a tune log's gemm_bwd figures (two decimals, as printed)
// and winners.
func logGemm(t *testing.T, rel string) (ours, harness func(string) float64, winner func(string) string) {
	t.Helper()
	best, cub, par := map[string]float64{}, map[string]float64{}, map[string]string{}
	for _, l := range strings.Split(read(t, rel), "\n") {
		if m := logLineRE.FindStringSubmatch(l); m != nil {
			best[m[1]], par[m[1]], cub[m[1]] = mustFloat(t, m[2]), m[3], mustFloat(t, m[4])
		}
	}
	if len(best) != 8 {
		t.Fatalf("%s: %d gemm_bwd shapes, want 8", rel, len(best))
	}
	key := func(name string) string {
		d := gemmCase(t, name)
		return fmt.Sprintf("m=%s,n=%s,k=%s,grad=%s,dtype=%s", d["m"], d["n"], d["k"], d["grad"], d["dtype"])
	}
	ours = func(name string) float64 { return best[key(name)] }
	harness = func(name string) float64 { return cub[key(name)] }
	winner = func(name string) string { return par[key(name)] }
	return
}

// TestGemmLatestRun: docs/kernels/gemm.md's table of the latest run. Its
// database was not kept (its space held the withdrawn kgroups axis), so
// the table must say so, and its figures are the run's log's (ours and
// the harness's cuBLAS, two decimals) and ratios file's (torch's).
func TestGemmLatestRun(t *testing.T) {
	const rel, log = "docs/kernels/gemm.md", "testdata/gemm/h200-gemm-kgroups.log"
	const marker = "database not kept: figures from `" + log + "`"
	if !strings.Contains(read(t, rel), marker) {
		t.Fatalf("%s: the latest run's table does not say %q", rel, marker)
	}
	ours, harness, winner := logGemm(t, log)
	gemmTable(t, rel, marker, ours, harness, 0.005, winner, "testdata/gemm/h200-gemm-kgroups-ratios.txt")
}

// TestGemmHistory: docs/history/gemm.md's tables of the two runs before,
// from their databases (the recorded winner, not the fastest variant it
// tied with) and ratios files.
func TestGemmHistory(t *testing.T) {
	for _, run := range []struct{ marker, db, ratios string }{
		{"(`testdata/gemm/h200-gemm-unserialized.*`", "testdata/gemm/h200-gemm-unserialized.db", "testdata/gemm/h200-gemm-unserialized-ratios.txt"},
		{"(`testdata/gemm/h200-gemm-192.*`", "testdata/gemm/h200-gemm-192.db", "testdata/gemm/h200-gemm-192-ratios.txt"},
	} {
		ours, harness, winner := dbGemm(t, run.db)
		gemmTable(t, "docs/history/gemm.md", run.marker, ours, harness, 0, winner, run.ratios)
	}
}

// TestGemmRuntimeWinners: the winners docs/kernels/gemm.md's "M at run
// time" table names are those of the run configs/h200/gemm.json comes
// from (its registers, spills and code sizes are ptxas's, not H200
// figures).
func TestGemmRuntimeWinners(t *testing.T) {
	const rel = "docs/kernels/gemm.md"
	tb := tableAfter(t, rel, "| case | winner | registers |")
	set := load(t, "testdata/issue21/h200-gemm.db")
	cCase, cWin := tb.col(t, "case"), tb.col(t, "winner")
	for i, row := range tb.rows {
		sh := shape(t, set, "gemm_bwd", gemmCase(t, row[cCase]))
		gemmDesc(checker{t, tb.at(i) + " " + row[cCase]}, row[cWin], sh.Winner.Key.Params)
	}
}

// TestGemmRunsReadme: testdata/gemm/README.md's geomeans of each run,
// against torch's cuBLAS (its ratios file's) and, where the cell gives
// it, against the harness's (from the run's database, or its log where
// the database was not kept).
func TestGemmRunsReadme(t *testing.T) {
	const rel = "testdata/gemm/README.md"
	tb := tableAfter(t, rel, "| files | what the family had | geomean vs cuBLAS |")
	cF, cG := tb.col(t, "files"), tb.col(t, "geomean vs cuBLAS")
	cellRE := regexp.MustCompile(`^(\d[\d.]*\d)(?: \((\d[\d.]*\d) against the harness's cuBLAS\))?$`)
	checked := 0
	for i, row := range tb.rows {
		stem := "testdata/gemm/" + strings.TrimSuffix(strings.Fields(strings.NewReplacer(".*", " ", ".log", " ", ",", " ").Replace(row[cF]))[0], ".txt")
		ratios := stem + "-ratios.txt"
		if !exists(ratios) {
			continue // the sync run (per-case figures) and the k·v-only run have no ratios file
		}
		c := checker{t, tb.at(i) + " " + row[cF]}
		m := cellRE.FindStringSubmatch(row[cG])
		if m == nil {
			t.Errorf("%s: %q is not a geomean", c.where, row[cG])
			continue
		}
		_, gm := gemmRatios(t, ratios)
		c.eq("geomean against torch's cuBLAS", m[1], mustFloat(t, gm[0]))
		checked++
		if m[2] == "" {
			continue
		}
		var ours, harness func(string) float64
		slack := 0.0
		if exists(stem + ".db") {
			ours, harness, _ = dbGemm(t, stem+".db")
		} else {
			ours, harness, _ = logGemm(t, stem+".log")
			slack = 0.005
		}
		var lo, hi []float64
		for name := range gemmCases {
			o, h := ours(name), harness(name)
			lo, hi = append(lo, (h-slack)/(o+slack)), append(hi, (h+slack)/(o-slack))
		}
		c.within("geomean against the harness's cuBLAS", m[2], geomean(lo), geomean(hi))
	}
	if checked != 7 {
		t.Errorf("%s: %d runs checked, want the 7 with a ratios file", rel, checked)
	}
}
