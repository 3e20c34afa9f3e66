package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/internal/sweep"
)

// replayDBs are the recorded databases of docs/replay.md: every tune
// run under testdata (not the nightly bench runs, which hold two variants
// a shape, nor research/h200-atomic1-regs.db, recorded on axes today's
// space no longer has).
var replayDBs = strings.Join([]string{
	"h200-activations.db", "h200-rows.db", "h200-pool.db",
	"gemm/h200-gemm-sync.db", "gemm/h200-gemm-wgmma.db", "gemm/h200-gemm-wgmma-tma.db", "gemm/h200-gemm-wgmma-persistent.db",
	"gemm/h200-gemm-streamk.db", "gemm/h200-gemm-192.db", "gemm/h200-gemm-unserialized.db",
	"nf4/h200-nf4.db", "nf4/h200-nf4-cluster.db", "nf4/h200-nf4-rs.db", "research/h200-async-only.db", "research/h200-atomic1-late.db",
	"tunefast/issue13-all-today.db.gz", "tunefast/issue13-rms-today.db.gz", "tunefast/issue13-all-cold.db.gz",
	"tunefast/issue13-all-warm.db.gz", "tunefast/issue13-rms-pool.db.gz",
}, ",")

// TestReplayTable regenerates the model column of docs/replay.md for the
// pool and NF4 databases (seconds; GRADTUNE_SWEEP=ci every strategy on
// them, full every strategy on every database, five minutes of two
// cores) and compares it cell by cell
// with the committed table: a change to a strategy, the replay or the
// runner that moves a number must come with the regenerated table (its
// command line is the table's first line).
func TestReplayTable(t *testing.T) {
	strategies, dbs := "model", "h200-pool.db,nf4/h200-nf4.db"
	switch sweep.Current() {
	case sweep.CI:
		strategies = "all"
	case sweep.All:
		strategies, dbs = "all", replayDBs
	}
	var paths []string
	for _, db := range strings.Split(dbs, ",") {
		paths = append(paths, "../../testdata/"+db)
	}
	dbs = strings.Join(paths, ",")
	var out, errb bytes.Buffer
	if code := run([]string{"replay", "--db", dbs, "--strategy", strategies, "--seeds", "20"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	doc, err := os.ReadFile("../../docs/replay.md")
	if err != nil {
		t.Fatal(err)
	}
	want, got := replayCells(string(doc)), replayCells(out.String())
	if len(got) == 0 {
		t.Fatal("no table in the output")
	}
	for k, v := range got {
		if want[k] != v {
			t.Errorf("%s: regenerated %q, docs/replay.md has %q", k, v, want[k])
		}
	}
}

// replayCells maps "db|kernel|shape|strategy" to a strategy's cell.
func replayCells(md string) map[string]string {
	cells := map[string]string{}
	var db string
	var head []string
	for _, line := range strings.Split(md, "\n") {
		if name, ok := strings.CutPrefix(line, "### "); ok {
			db, _, _ = strings.Cut(name, " ")
			continue
		}
		if strings.HasPrefix(line, "#") { // another section's tables are not replay tables
			db, head = "", nil
			continue
		}
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		f := strings.Split(strings.Trim(line, "|"), "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if f[0] == "kernel" {
			head = f
			continue
		}
		for i := 3; i < len(f) && i < len(head); i++ {
			strat, _, _ := strings.Cut(head[i], ":")
			cells[db+"|"+f[0]+"|"+f[1]+"|"+strat] = f[i]
		}
	}
	return cells
}
