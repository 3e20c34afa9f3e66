package evidence

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/internal/results"
)

// compareMarker is the header of the tables bench/compare.py wrote into
// testdata/h200-*.md: gradtune's winners beside PyTorch eager.
const compareMarker = "| kernel | shape | best params | ours µs (95% CI) |"

// compareTable checks the compare.py table of md against the run's
// database and, where it is kept, the peers file PyTorch's times were
// written to (without it, the speedup against the table's own PyTorch
// column). It returns the PyTorch µs cell of each shape key.
func compareTable(t *testing.T, md, db, peersFile string) map[string]string {
	t.Helper()
	set := load(t, db)
	tb := tableAfter(t, md, compareMarker)
	cK, cS, cP := tb.col(t, "kernel"), tb.col(t, "shape"), tb.col(t, "best params")
	cO, cG, cC := tb.col(t, "ours µs (95% CI)"), tb.col(t, "ours GB/s"), tb.col(t, "% copy")
	cT, cTG, cX := tb.col(t, "PyTorch µs"), tb.col(t, "PyTorch GB/s"), tb.col(t, "speedup")
	byKey := map[string]*results.Shape{}
	for _, sh := range set.Shapes {
		byKey[sh.Kernel+" "+sh.Key] = sh
	}
	if len(tb.rows) != len(set.Shapes) {
		t.Errorf("%s: %d rows, %s has %d shapes", tb.where, len(tb.rows), db, len(set.Shapes))
	}
	text := read(t, md)
	if peersFile != "" {
		p := peers(t, peersFile)
		m := regexp.MustCompile(`PyTorch device-to-device copy \(1 GiB, do_bench median\): (\d+) GB/s`).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("%s: no PyTorch copy line", md)
		} else {
			checker{t, md}.eq("PyTorch copy GB/s", m[1], p.CopyGBps)
		}
		defer func() {
			for i, row := range tb.rows {
				peer, ok := p.Lookup(row[cK], row[cS])
				c := checker{t, tb.at(i) + " " + row[cK] + " " + row[cS]}
				if !ok {
					t.Errorf("%s: %s has no row", c.where, peersFile)
					continue
				}
				c.eq("PyTorch µs", row[cT], peer.MedianUS)
				c.eq("PyTorch GB/s", row[cTG], peer.GBps)
				c.eq("speedup", row[cX], peer.MedianUS/byKey[row[cK]+" "+row[cS]].Winner.MedianUS)
			}
		}()
	}
	pytorch := map[string]string{}
	for i, row := range tb.rows {
		c := checker{t, tb.at(i) + " " + row[cK] + " " + row[cS]}
		sh := byKey[row[cK]+" "+row[cS]]
		if sh == nil || sh.Winner == nil {
			t.Fatalf("%s: %s holds no winner of it", c.where, db)
		}
		w := sh.Winner
		c.sameParams("best params", row[cP], w.Key.Params)
		med, ci, ok := strings.Cut(row[cO], " (")
		if !ok {
			t.Errorf("%s: ours %q is not median (CI)", c.where, row[cO])
			continue
		}
		c.eq("ours µs", med, w.MedianUS)
		c.span("ours 95% CI", strings.TrimSuffix(ci, ")"), w.CILoUS, w.CIHiUS)
		c.eq("ours GB/s", row[cG], w.ThroughputGBps)
		c.eq("% copy (of the run's copy bandwidth)", row[cC], 100*w.ThroughputGBps/sh.Run.CopyGBps)
		if peersFile == "" {
			c.ratioOf("speedup", row[cX], row[cT], w.MedianUS, w.MedianUS)
		}
		pytorch[row[cS]] = row[cT]
	}
	return pytorch
}

// TestCompareTables: the tables of gradtune against PyTorch eager that
// docs/kernels cite (testdata/h200-*.md), from their databases and
// PyTorch's peers files. The pool run's peers file was not kept: its
// speedups are checked against the table's own PyTorch column.
func TestCompareTables(t *testing.T) {
	compareTable(t, "testdata/h200-activations.md", "testdata/h200-activations.db", "testdata/peers-activations.jsonl")
	compareTable(t, "testdata/h200-rows.md", "testdata/h200-rows.db", "testdata/peers-rows.jsonl")
	compareTable(t, "testdata/h200-pool.md", "testdata/h200-pool.db", "")
}

// TestPoolTable: docs/kernels/lppool.md's H200 table, from the pool
// run's database, with PyTorch's times from testdata/h200-pool.md.
func TestPoolTable(t *testing.T) {
	const rel = "docs/kernels/lppool.md"
	pytorch := compareTable(t, "testdata/h200-pool.md", "testdata/h200-pool.db", "")
	set := load(t, "testdata/h200-pool.db")
	tb := tableAfter(t, rel, "## H200 measurements")
	cD, cP, cU, cG := tb.col(t, "dtype"), tb.col(t, "best params"), tb.col(t, "µs"), tb.col(t, "GB/s")
	cC, cT, cX := tb.col(t, "% copy"), tb.col(t, "PyTorch µs"), tb.col(t, "speedup")
	if len(tb.rows) != len(set.Shapes) {
		t.Errorf("%s: %d rows, the database has %d shapes", tb.where, len(tb.rows), len(set.Shapes))
	}
	for i, row := range tb.rows {
		c := checker{t, tb.at(i) + " " + row[cD]}
		sh := shape(t, set, "lp_pool1d_bwd", map[string]string{"dtype": row[cD]})
		w := sh.Winner
		c.sameParams("best params", row[cP], w.Key.Params)
		c.eq("µs", row[cU], w.MedianUS)
		c.eq("GB/s", row[cG], w.ThroughputGBps)
		c.eq("% copy (of the run's copy bandwidth)", row[cC], 100*w.ThroughputGBps/sh.Run.CopyGBps)
		py, ok := pytorch[sh.Key]
		if !ok {
			t.Fatalf("%s: testdata/h200-pool.md has no row %s", c.where, sh.Key)
		}
		c.eq("PyTorch µs", row[cT], mustFloat(t, py))
		c.ratioOf("speedup", row[cX], py, w.MedianUS, w.MedianUS)
	}

	// The sentence above the table: the run's evaluations and copy
	// bandwidth.
	text := textAfter(t, rel, "## H200 measurements")
	m := regexp.MustCompile(`(\d+) evaluations: (\d+) timed in full, (\d+) stopped early by the abandon rule, none invalid\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: the H200 section does not count the run's evaluations", rel)
	}
	full, skipped, failed := 0, 0, 0
	for _, sh := range set.Shapes {
		full += len(sh.Valid)
		skipped += sh.Skipped()
		failed += len(sh.Failed) - sh.Skipped()
	}
	c := checker{t, rel + " H200 section"}
	c.eq("evaluations", m[1], float64(full+skipped+failed))
	c.eq("timed in full", m[2], float64(full))
	c.eq("stopped early", m[3], float64(skipped))
	if failed != 0 {
		t.Errorf("%s: %d evaluations failed; the doc says none", c.where, failed)
	}
	m = regexp.MustCompile(`the run's device-to-device copy reached (\d+) GB/s`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: the H200 section does not give the run's copy bandwidth", rel)
	}
	c.eq("copy GB/s", m[1], set.Shapes[0].Run.CopyGBps)
}

// TestRowsPeers: the PyTorch eager times docs/kernels/rows.md gives as
// measured (beside issue 4's quoted ones) are the rows session's peers
// file's.
func TestRowsPeers(t *testing.T) {
	const rel = "docs/kernels/rows.md"
	text := strings.Join(strings.Fields(read(t, rel)), " ")
	p := peers(t, "testdata/peers-rows.jsonl")
	c := checker{t, rel}
	peer := func(kernel, shape, dt string) float64 {
		r, ok := p.Lookup(kernel, shape+",dtype="+dt)
		if !ok {
			t.Fatalf("testdata/peers-rows.jsonl has no %s %s %s", kernel, shape, dt)
		}
		return r.MedianUS
	}
	m := regexp.MustCompile(`Issue 4 quotes PyTorch eager at 79\.4 and 49\.2 µs there \(the session of \x60testdata/h200-rows\.md\x60 measured ([\d.]+) and ([\d.]+) µs, \x60testdata/peers-rows\.jsonl\x60\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: softmax_bwd's measured PyTorch times are not quoted as expected", rel)
	}
	c.eq("softmax_bwd f32", m[1], peer("softmax_bwd", "m=24576,n=512", "f32"))
	c.eq("softmax_bwd bf16", m[2], peer("softmax_bwd", "m=24576,n=512", "bf16"))
	m = regexp.MustCompile(`measured eager RMSNorm at ([\d.]+) and ([\d.]+) µs and LayerNorm at ([\d.]+) and ([\d.]+) µs \(f32 and bf16, \x60testdata/peers-rows\.jsonl\x60\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: the norms' measured PyTorch times are not quoted as expected", rel)
	}
	c.eq("rmsnorm_bwd f32", m[1], peer("rmsnorm_bwd", "m=2048,n=1536", "f32"))
	c.eq("rmsnorm_bwd bf16", m[2], peer("rmsnorm_bwd", "m=2048,n=1536", "bf16"))
	c.eq("layernorm_bwd f32", m[3], peer("layernorm_bwd", "m=2048,n=1536", "f32"))
	c.eq("layernorm_bwd bf16", m[4], peer("layernorm_bwd", "m=2048,n=1536", "bf16"))
}
