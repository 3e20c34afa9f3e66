package reports

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/eval"
	"github.com/gradtune/gradtune/internal/outfile"
	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/store"
)

func load(t *testing.T, name string) *results.Set {
	t.Helper()
	db, err := store.OpenReadOnly(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	set, err := results.Load(db, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func readPeers(t *testing.T, name string) *Peers {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := ReadPeers(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	files, err := Write(load(t, "h200-pool.db"), dir, Options{Peers: &Peers{}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"index.html": false, "report.md": false, "roofline-nvidia-h200.png": false,
		"failures.svg": false, "shape-lp_pool1d_bwd-32x256x4096x4x2x2-f64.svg": false, "progress-lp_pool1d_bwd.png": false}
	for _, f := range files {
		if _, ok := want[filepath.Base(f)]; ok {
			want[filepath.Base(f)] = true
		}
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	for f, ok := range want {
		if !ok {
			t.Errorf("no %s among %d files", f, len(files))
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	if n := bytes.Count(html, []byte(`src="data:image/svg+xml;base64,`)); n != len(files)/2-1 {
		t.Errorf("index.html embeds %d SVG images, want one per chart (%d)", n, len(files)/2-1)
	}
	if bytes.Contains(html, []byte(`src="img/`)) || bytes.Contains(html, []byte("http")) {
		t.Error("index.html refers to files or the network; it must be self-contained")
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, s := range []string{"| lp_pool1d_bwd | 32×256×4096×4×2×2 | f64 |", "skipped: prescreen", "](img/roofline-nvidia-h200.png)"} {
		if !bytes.Contains(md, []byte(s)) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	if _, err := Write(load(t, "h200-pool.db"), dir, Options{}); !errors.Is(err, ErrExists) {
		t.Errorf("second write: err = %v, want ErrExists", err)
	}
}

// TestWriteNeverReplacesADatabase: --force replaces the report's files
// but not a database among them, nor a file, whatever it holds, given as
// the directory; nothing changes in either case.
func TestWriteNeverReplacesADatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "report.md")
	data := []byte("SQLite format 3\x00 a results database named report.md")
	if err := os.WriteFile(db, data, 0o644); err != nil {
		t.Fatal(err)
	}
	set := load(t, "h200-pool.db")
	_, err := Write(set, dir, Options{Force: true, NoPNG: true})
	if !errors.Is(err, outfile.ErrDatabase) || !strings.Contains(err.Error(), db+" is an SQLite database") {
		t.Errorf("into a directory holding a database: err = %v, want ErrDatabase naming %s", err, db)
	}
	_, err = Write(set, db, Options{Force: true, NoPNG: true})
	if !errors.Is(err, outfile.ErrPath) || !strings.Contains(err.Error(), "it is an SQLite database, want a directory for the report") {
		t.Errorf("-o the database: err = %v, want ErrPath", err)
	}
	if got, _ := os.ReadFile(db); !bytes.Equal(got, data) {
		t.Error("the database changed")
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("%d entries in %s, want report.md alone", len(es), dir)
	}
}

// TestPeersTable checks the comparison that replaced bench/compare.py
// against the table it produced for the same database and peers.
func TestPeersTable(t *testing.T) {
	r, err := Build(load(t, "h200-rows.db"), readPeers(t, "peers-rows.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := r.Markdown(false)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(filepath.Join("..", "testdata", "h200-rows.md"))
	for _, line := range strings.Split(string(old), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) != 9 || !strings.HasPrefix(line, "| ") || strings.Contains(line, "kernel") {
			continue
		}
		// ours µs (CI), GB/s, % copy, PyTorch µs, PyTorch GB/s, speedup
		for _, c := range []string{cells[3], cells[4], cells[5], cells[6], cells[7], strings.TrimSuffix(cells[8], " |")} {
			if !strings.Contains(md, "| "+c+" |") {
				t.Errorf("peers table lacks %q of compare.py's row %s", c, line)
			}
		}
	}
}

func TestReadPeersRefuses(t *testing.T) {
	for _, s := range []string{`{"kernel": "relu_bwd"`, `{"kernel": "relu_bwd", "shape": "m=1", "median_us": 0}`} {
		if _, err := ReadPeers(strings.NewReader(s)); !errors.Is(err, ErrBadPeers) {
			t.Errorf("%q: err = %v", s, err)
		}
	}
}

func TestShowTables(t *testing.T) {
	set := load(t, "h200-activations.db")
	var b bytes.Buffer
	if err := WriteWinners(&b, set); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"relu_bwd  2048×8960    f32", "block=128,cache=default,ept=2,grid=once,maxnreg=64,vec=2", "56.77", "91.1% BW", "× default"} {
		if !strings.Contains(out, s) {
			t.Errorf("winners table lacks %q:\n%s", s, out)
		}
	}
	b.Reset()
	if err := WriteVariants(&b, set.Shapes[0]); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2+216 || !strings.Contains(lines[2], "winner") {
		t.Errorf("ranked list: %d lines, first %q", len(lines), lines[2])
	}
}

// TestWinnersOtherBaselines: a shape with a baseline of its own beside
// the one its winner is compared with gets a "vs others" column, and the
// table says what dequant+cublas is; a set without one has no column.
func TestWinnersOtherBaselines(t *testing.T) {
	w := &results.Variant{Evaluation: store.Evaluation{Key: store.Key{Params: "dequant=streamed"}, MedianUS: 80}}
	sh := &results.Shape{Kernel: "nf4_gemm_bwd", Size: "2048×8960×1536", DType: "bf16", Winner: w,
		Baseline: &results.Baseline{Name: "cublaslt-best", MedianUS: 72}, Others: []results.Baseline{{Name: "dequant+cublas", MedianUS: 100}}}
	var b strings.Builder
	if err := WriteWinners(&b, &results.Set{Shapes: []*results.Shape{sh}}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "vs others") || !strings.Contains(out, "1.25× dequant+cublas") ||
		!strings.Contains(out, "0.90× cublaslt-best") || !strings.Contains(out, "dequant+cublas: a dequantization kernel") {
		t.Errorf("winners table:\n%s", out)
	}
	sh.Others = nil
	b.Reset()
	if err := WriteWinners(&b, &results.Set{Shapes: []*results.Shape{sh}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "vs others") {
		t.Errorf("a column of other baselines without any:\n%s", b.String())
	}
}

// TestVariantsMarkSkipped: the ranked list counts and marks a variant the
// early-stop rule abandoned as skipped, and a launch failure as failed.
func TestVariantsMarkSkipped(t *testing.T) {
	ev := func(params string, st eval.Status, msg string) *results.Variant {
		return &results.Variant{Evaluation: store.Evaluation{Key: store.Key{Params: params}, Status: st, Message: msg}}
	}
	sh := &results.Shape{Kernel: "lora_bwd", Key: "t=2048", Run: store.Run{ID: 1, GPUName: "H100"},
		Failed: []*results.Variant{ev("bt=64", eval.Skipped, "abandoned after 6 samples"), ev("bt=128", eval.LaunchError, "worker died")}}
	var b strings.Builder
	if err := WriteVariants(&b, sh); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"0 valid, 1 failed, 1 skipped", "\nskipped  bt=64  ", "\nfailed   bt=128  "} {
		if !strings.Contains(out, want) {
			t.Errorf("ranked list lacks %q:\n%s", want, out)
		}
	}
}
