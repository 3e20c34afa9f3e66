package export

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
	"github.com/gradtune/gradtune/internal/outfile"
	"github.com/gradtune/gradtune/internal/results"
	"github.com/gradtune/gradtune/internal/testdb"
)

// load reads the results of testdata/db (gunzipped first when it ends in
// .gz).
func load(t *testing.T, db string, opt results.Options) *results.Set {
	t.Helper()
	d := testdb.Open(t, filepath.Join("..", "testdata", db))
	defer d.Close()
	set, err := results.Load(d, opt)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The recorded H200 databases the committed tables come from, and the
// kernels of each table.
const (
	smallDB = "issue21/h200-small.db.gz"
	gemmDB  = "issue21/h200-gemm.db"
	nf4DB   = "issue21/h200-nf4.db"
)

var (
	poolKernels = results.Options{Kernels: []string{"lp_pool1d_bwd"}}
	rowsKernels = results.Options{Kernels: []string{"softmax_bwd", "rmsnorm_bwd", "layernorm_bwd"}}
)

// TestCommittedTablesInSync regenerates the tables under configs/h200/
// from the recorded databases and compares them byte for byte, PTX files
// included: a change of the exporter, the table format or the generator
// that would change them fails here (regenerate with the commands in
// the package documentation of configs).
func TestCommittedTablesInSync(t *testing.T) {
	for name, src := range map[string]struct {
		db  string
		opt results.Options
	}{
		"activations": {smallDB, results.Options{Kernels: []string{"relu_bwd", "gelu_bwd", "silu_bwd"}}},
		"rows":        {smallDB, rowsKernels},
		"pool":        {smallDB, poolKernels},
		"gemm":        {gemmDB, results.Options{Kernels: []string{"gemm_bwd"}}},
		"nf4":         {nf4DB, results.Options{Kernels: []string{"nf4_dequant"}}},
		"nf4_gemm":    {"nf4/h200-nf4-22.db.gz", results.Options{Kernels: []string{"nf4_gemm_bwd"}}},
	} {
		t.Run(name, func(t *testing.T) {
			tb, err := Build(load(t, src.db, src.opt))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			files, err := Write(tb, filepath.Join(dir, name+".json"), Options{Format: "json", PTX: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				got, _ := os.ReadFile(f)
				want, err := os.ReadFile(filepath.Join("..", "configs", "h200", filepath.Base(f)))
				if err != nil {
					t.Errorf("%s is not committed under configs/h200: %v", filepath.Base(f), err)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("configs/h200/%s differs from a fresh export of testdata/%s", filepath.Base(f), src.db)
				}
			}
		})
	}
}

func TestWriteRefusesToOverwrite(t *testing.T) {
	tb, err := Build(load(t, smallDB, poolKernels))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "pool.h")
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(tb, path, Options{Format: "c", PTX: true}); !errors.Is(err, outfile.ErrExists) {
		t.Fatalf("err = %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "mine" {
		t.Fatal("the existing file was changed")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files in the directory, want none written beside the refused one", len(entries))
	}
	files, err := Write(tb, path, Options{Format: "c", PTX: true, Force: true})
	if err != nil || len(files) != 5 {
		t.Fatalf("with Force: %v %v", files, err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "gradtune_pool_configs[4]") {
		t.Errorf("header has no gradtune_pool_configs[4]:\n%.400s", b)
	}
	if _, err := Write(tb, filepath.Join(dir, "no", "such.json"), Options{Format: "json"}); err == nil {
		t.Error("a missing directory was accepted")
	}
}

func TestGoFormatRoundTrips(t *testing.T) {
	tb, err := Build(load(t, smallDB, rowsKernels))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Write(tb, filepath.Join(dir, "rows.go"), Options{Format: "go", Package: "main", Name: "Rows"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "rows.go"))
	// The source declares Rows as configs.MustParse of one string literal:
	// that string must parse back into the table, PTX names left out.
	f, err := parser.ParseFile(token.NewFileSet(), "rows.go", b, 0)
	if err != nil {
		t.Fatalf("generated Go does not parse: %v", err)
	}
	var lit string
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && len(c.Args) == 1 {
			if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "MustParse" {
				if bl, ok := c.Args[0].(*ast.BasicLit); ok {
					lit, _ = strconv.Unquote(bl.Value)
				}
			}
		}
		return true
	})
	if f.Name.Name != "main" || !bytes.Contains(b, []byte("var Rows = configs.MustParse(")) || lit == "" {
		t.Fatalf("Go source is not package main declaring Rows = configs.MustParse(\"...\"):\n%.300s", b)
	}
	back, err := configs.Parse(strings.NewReader(lit))
	if err != nil {
		t.Fatal(err)
	}
	var want, got bytes.Buffer
	noPTX := *tb.Table
	noPTX.Entries = append([]configs.Entry(nil), tb.Entries...)
	for i := range noPTX.Entries {
		noPTX.Entries[i].PTX = ""
	}
	configs.WriteJSON(&want, &noPTX)
	configs.WriteJSON(&got, back)
	if got.String() != want.String() {
		t.Error("the table embedded in the Go source differs from the exported one")
	}
}

func TestBuildRefuses(t *testing.T) {
	set := load(t, smallDB, poolKernels)
	set.Shapes[0].Winner.Key.PTXSHA256 = strings.Repeat("ab", 32)
	tb, err := Build(set)
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, e := range tb.Entries {
		if e.Note != "" {
			stale++
			if e.PTX != "" || !strings.Contains(e.Note, "stale") {
				t.Errorf("stale entry %s: ptx %q, note %q", e.Key(), e.PTX, e.Note)
			}
		}
	}
	if stale != 1 || len(tb.PTX) != 3 {
		t.Errorf("%d stale entries and %d PTX files, want 1 and 3", stale, len(tb.PTX))
	}
	if _, err := Write(tb, filepath.Join(t.TempDir(), "t.json"), Options{Format: "json", PTX: true}); !errors.Is(err, ErrPTXChanged) {
		t.Errorf("--ptx with a stale entry: err = %v, want ErrPTXChanged", err)
	}
	if _, err := Write(tb, filepath.Join(t.TempDir(), "t.json"), Options{Format: "json"}); err != nil {
		t.Errorf("without --ptx: %v", err)
	}
	set = load(t, smallDB, poolKernels)
	set.Shapes[1].Run.GPUName = "NVIDIA A100-SXM4-80GB"
	if _, err := Build(set); !errors.Is(err, ErrMixedGPUs) {
		t.Errorf("two GPUs: err = %v, want ErrMixedGPUs", err)
	}
	set = load(t, smallDB, poolKernels)
	set.Shapes[0].Kernel = "no_such_kernel"
	tb, err = Build(set)
	if err != nil || len(tb.Entries) != 3 || len(tb.Skipped) != 1 || !strings.Contains(tb.Skipped[0], "unknown kernel") {
		t.Errorf("one unknown kernel: %v, skipped %q", err, tb.Skipped)
	}
	for _, sh := range set.Shapes {
		sh.Kernel = "no_such_kernel"
	}
	if _, err := Build(set); !errors.Is(err, results.ErrNoResults) || !strings.Contains(err.Error(), "unknown kernel") {
		t.Errorf("only unknown kernels: err = %v", err)
	}
	for _, sh := range set.Shapes {
		sh.Winner = nil
	}
	if _, err := Build(set); !errors.Is(err, results.ErrNoResults) {
		t.Errorf("no winners: err = %v", err)
	}
}

// TestWriteNeverReplacesADatabase: with Force, Write still refuses an
// SQLite file under any name and a protected file under another name (a
// link), leaving both byte-identical and writing nothing beside them.
func TestWriteNeverReplacesADatabase(t *testing.T) {
	tb, err := Build(load(t, smallDB, poolKernels))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "results.json") // a database named as a table
	data, err := os.ReadFile(filepath.Join("..", "testdata", "h200-pool.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, data, 0o644); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Link(notes, link); err != nil {
		t.Fatal(err)
	}
	keep := []outfile.Protected{{Path: notes, What: "the --db database"}}
	for _, c := range []struct{ path, want string }{
		{db, "is an SQLite database: no output replaces a database, even with --force"},
		{link, "is the --db database: no output replaces a database"},
	} {
		for _, format := range Formats {
			_, err := Write(tb, c.path, Options{Format: format, PTX: true, Force: true, Keep: keep})
			if !errors.Is(err, outfile.ErrDatabase) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s as %s: err = %v, want ErrDatabase and %q", filepath.Base(c.path), format, err, c.want)
			}
		}
	}
	if got, _ := os.ReadFile(db); !bytes.Equal(got, data) {
		t.Error("the database changed")
	}
	if got, _ := os.ReadFile(notes); string(got) != "mine" {
		t.Error("the protected file changed")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("%d files in the directory, want the 3 it had", len(entries))
	}
}

// TestOptionsCheck: names, packages and formats are checked before any
// work, each with what is accepted.
func TestOptionsCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pool.go")
	for _, c := range []struct {
		opt  Options
		want string
	}{
		{Options{Format: "yaml"}, `format "yaml": want one of json, go, c`},
		{Options{Format: "go", Package: "my-pkg"}, `package "my-pkg": want a Go identifier`},
		{Options{Format: "go", Package: "go"}, `package "go": want a Go identifier`},
		{Options{Format: "json", Package: "tables"}, "a package (\"tables\") is for --format go, not json"},
		{Options{Format: "go", Name: "9bad"}, `name "9bad": want a Go identifier`},
		{Options{Format: "c", Name: "9bad"}, `name "9bad": want a C identifier`},
		{Options{Format: "json", Name: "Pool"}, "is for --format go or c, not json"},
		{Options{Format: "go"}, ""},
		{Options{Format: "c", Name: "pool_v2"}, ""},
	} {
		err := c.opt.Check(path)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.opt, err, c.want)
		}
	}
}

// TestRuntimeBound: an entry's runtime range ends at its program's own
// bound where that is below the family's (a split-K dX program: where
// the split rule stops admitting it), and at the family's otherwise.
func TestRuntimeBound(t *testing.T) {
	const (
		shape = "m=512,n=1536,k=1536,grad=dx,dtype=bf16"
		tail  = ",bk=32,bm=128,bn=128,cluster=1,consumers=1,epilogue=direct,mma=sync,multicast=0,order=m,persistent=0,reduce=launch,regsplit=0,stages=4"
	)
	mMax := func(splitk string) int64 {
		v, err := Emit("gemm_bwd", shape, "splitk="+splitk+tail)
		if err != nil {
			t.Fatal(err)
		}
		r := v.Runtime()["m"]
		if r.Min != 1 {
			t.Errorf("splitk=%s: m from %d, want 1", splitk, r.Min)
		}
		return r.Max
	}
	// 12 tile columns: 10 tile rows of 128 keep 120 tiles under a wave.
	if got := mMax("2"); got != 1280 {
		t.Errorf("splitk=2: m up to %d, want 1280", got)
	}
	if got := mMax("1"); got < 1<<20 {
		t.Errorf("splitk=1: m up to %d, want the family's bound (millions)", got)
	}
}
