package configs

import (
	"bytes"
	"errors"
	"fmt"

	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var h200 = GPU{Name: "NVIDIA H200", CC: "9.0"}

func TestEmbeddedTables(t *testing.T) {
	s, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tables) != 6 {
		t.Fatalf("%d embedded tables, want activations, gemm, nf4, nf4_gemm, pool and rows", len(s.Tables))
	}
	n := 0
	for _, tb := range s.Tables {
		for _, e := range tb.Entries {
			m, err := s.Lookup(tb.GPU, e.Kernel, e.DType, mustShape(t, e.Shape))
			if err != nil || m.Rule != Exact || m.Entry.Params != e.Params {
				t.Errorf("%s: %+v %v", e.Key(), m.Rule, err)
				continue
			}
			ptx, err := s.PTX(m)
			if err != nil {
				t.Errorf("%s: %v", e.Key(), err)
			}
			if !bytes.Contains(ptx, []byte(".entry "+e.Launches[0].Entry)) {
				t.Errorf("%s: PTX has no entry %s", e.Key(), e.Launches[0].Entry)
			}
			n++
		}
	}
	if n != 81 {
		t.Errorf("%d entries, want 81 (18 activations, 8 gemm, 8 nf4, 34 nf4_gemm, 9 rows, 4 pool)", n)
	}
}

func TestLookupRules(t *testing.T) {
	s, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		gpu           GPU
		kernel, dtype string
		shape         string
		rule          Rule
		want          string // the entry's shape
		err           error
	}{
		{"exact", h200, "relu_bwd", "bf16", "m=2048,n=8960", Exact, "m=2048,n=8960", nil},
		{"name case", GPU{Name: "nvidia h200"}, "relu_bwd", "bf16", "m=2048,n=1536", Exact, "m=2048,n=1536", nil},
		{"no entry computes other n", h200, "relu_bwd", "f32", "m=4096,n=8192", 0, "", ErrNoConfig},
		{"same cc", GPU{Name: "NVIDIA H100 80GB HBM3", CC: "9.0"}, "gelu_bwd", "f16", "m=2048,n=8960", SameCC, "m=2048,n=8960", nil},
		{"unknown gpu", GPU{Name: "NVIDIA A100-SXM4-80GB", CC: "8.0"}, "relu_bwd", "f32", "m=1,n=1", 0, "", ErrUnknownGPU},
		{"unknown kernel", h200, "no_such_bwd", "f32", "m=1,n=1", 0, "", ErrUnknownKernel},
		{"gemm choice", h200, "gemm_bwd", "bf16", "m=2048,n=1536,k=1536,grad=dw", Exact, "m=2048,n=1536,k=1536,grad=dw", nil},
		{"gemm other choice", h200, "gemm_bwd", "bf16", "m=2048,n=1536,k=1536,grad=dz", 0, "", ErrNoConfig},
		{"nf4 exact", h200, "nf4_gemm_bwd", "bf16", "m=2048,n=8960,k=1536,scales=dq", Exact, "m=2048,n=8960,k=1536,scales=dq", nil},
		{"no dtype", h200, "relu_bwd", "f64", "m=2048,n=8960", 0, "", ErrNoConfig},
		{"other dims", h200, "relu_bwd", "f32", "n=8960", 0, "", ErrNoConfig},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := s.Lookup(c.gpu, c.kernel, c.dtype, mustShape(t, c.shape))
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Rule != c.rule || m.Entry.Shape != c.want || m.Entry.Kernel != c.kernel || m.Entry.DType != c.dtype {
				t.Errorf("got %s %s %s by %v, want %s by %v", m.Entry.Kernel, m.Entry.DType, m.Entry.Shape, m.Rule, c.want, c.rule)
			}
			if m.Rule == Exact && m.Distance != 0 || m.Rule == Nearest && m.Distance == 0 {
				t.Errorf("rule %v with distance %v", m.Rule, m.Distance)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("h200", "pool.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, data string
		want       error
	}{
		{"not json", "{", ErrMalformed},
		{"no schema", `{"gpu": {"name": "x", "cc": "9.0"}}`, ErrMalformed},
		{"newer schema", `{"schema": 3, "what": "comes next"}`, ErrSchemaTooNew},
		{"older schema", `{"schema": 1, "gpu": {"name": "x", "cc": "9.0"}}`, ErrSchemaTooOld},
		{"unknown buffer", strings.Replace(string(good), `"buffer": "x"`, `"buffer": "xx"`, 1), ErrMalformed},
		{"unknown field", strings.Replace(string(good), `"source"`, `"sauce"`, 1), ErrMalformed},
		{"bad cc", strings.Replace(string(good), `"cc": "9.0"`, `"cc": "sm90"`, 1), ErrMalformed},
		{"no median", strings.Replace(string(good), `"median_us": `, `"median_us": -`, 1), ErrMalformed},
		{"bad shape", strings.Replace(string(good), `"shape": "n=32,`, `"shape": "n=,`, 1), ErrMalformed},
		{"trailing data", string(good) + "{}", ErrMalformed},
	} {
		if _, err := Parse(strings.NewReader(c.data)); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := Parse(bytes.NewReader(good)); err != nil {
		t.Errorf("the committed table: %v", err)
	}
}

// TestContractChecked: a table whose launches cannot be made as described
// is refused, naming what is wrong.
func TestContractChecked(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("h200", "gemm.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(e *Entry)
		want string
	}{
		{"tensor map of an unknown buffer", func(e *Entry) { e.Launches[0].Args[0].TensorMap.Buffer = "dz" }, `tensor map of unknown buffer "dz"`},
		{"wrong rank", func(e *Entry) {
			m := e.Launches[0].Args[0].TensorMap
			m.Dims = append(m.Dims, Int(2))
		}, "rank 3 with 1 strides"},
		{"runtime dim not in the shape", func(e *Entry) { e.Runtime = map[string]Range{"q": {1, 10}} }, `runtime dim "q" is not a size`},
		{"runtime range without the tuned value", func(e *Entry) { e.Runtime = map[string]Range{"m": {1, 10}} }, "must hold the tuned 2048"},
		{"a variable nothing gives", func(e *Entry) { e.Launches[0].Grid[0] = Var("tokens") }, `variable "tokens" has no value`},
		{"beyond the buffer at the range's end", func(e *Entry) {
			// dy sized for the tuned m only, its map for any m
			e.Runtime = map[string]Range{"m": {1, 4096}}
			for i, b := range e.Buffers {
				if b.Name == e.Launches[0].Args[0].TensorMap.Buffer {
					e.Buffers[i].Elems = Int(2048 * 1536)
				}
			}
		}, "but the buffer has"},
		{"a map offset not a multiple of 16", func(e *Entry) { e.Launches[0].Args[0].TensorMap.Offset = Int(8) }, "offset 8 bytes: want a multiple of 16"},
		{"a map its offset runs past its buffer", func(e *Entry) { e.Launches[0].Args[0].TensorMap.Offset = Int(3072) }, "from offset 3072"},
	} {
		tb, err := Parse(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		e := &tb.Entries[0]
		if e.Launches[0].Args[0].TensorMap == nil {
			t.Fatalf("%s: the first argument is not a tensor map", e.Key())
		}
		c.edit(e)
		err = tb.Check()
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

func TestPTXHashChecked(t *testing.T) {
	s, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Lookup(h200, "relu_bwd", "f32", mustShape(t, "m=2048,n=8960"))
	if err != nil {
		t.Fatal(err)
	}
	m.Entry.PTXSHA256 = strings.Repeat("0", 64)
	if _, err := s.PTX(m); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("a PTX file that does not match its hash: err = %v", err)
	}
}

func TestWriteGoAndC(t *testing.T) {
	s, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	tb := s.Tables[0]
	var g bytes.Buffer
	if err := WriteGo(&g, tb, "tables", "Activations"); err != nil {
		t.Fatal(err)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "activations.go", g.Bytes(), 0); err != nil {
		t.Fatalf("generated Go does not parse: %v", err)
	}
	var c bytes.Buffer
	if err := WriteC(&c, tb, "gradtune_rows"); err != nil {
		t.Fatal(err)
	}
	out := compileC(t, c.Bytes(), `const struct gradtune_config *c = &gradtune_rows_configs[0];
	printf("%d %s %s %s %d %s\n", GRADTUNE_ROWS_COUNT, c->kernel, c->dtype, c->shape, c->launches[0].block[0], c->launches[0].args[0].buffer);`)
	e := tb.Entries[0]
	want := strings.Join([]string{itoa(len(tb.Entries)), e.Kernel, e.DType, e.Shape, itoa(e.Launches[0].Block[0]), e.Launches[0].Args[0].Buffer}, " ")
	if out != want {
		t.Errorf("C program printed %q, want %q", out, want)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func mustShape(t *testing.T, s string) Shape {
	t.Helper()
	sh, err := ParseShape(s)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

func TestShapeChoices(t *testing.T) {
	a, err := ParseShape("m=2048,n=256,k=1536,grad=dw")
	if err != nil {
		t.Fatal(err)
	}
	if a.String() != "grad=dw,k=1536,m=2048,n=256" {
		t.Errorf("String = %q", a.String())
	}
	b := mustShape(t, "m=1024,n=256,k=1536,grad=dw")
	if d, ok := a.Distance(b); !ok || d < 0.69 || d > 0.7 {
		t.Errorf("same choice: Distance = %v %v, want ln 2", d, ok)
	}
	if _, ok := a.Distance(mustShape(t, "m=2048,n=256,k=1536,grad=dx")); ok {
		t.Error("other choice: Distance comparable")
	}
	for _, bad := range []string{"m=2048,grad=Dx", "m=x-1", "m=2048,m=dx"} {
		if _, err := ParseShape(bad); err == nil {
			t.Errorf("ParseShape(%q) succeeded", bad)
		}
	}
}

// TestTensorMapOffsetWritten: a table whose map starts a row into its
// buffer (grown by that row) checks, writes "offset" in JSON and reads it
// back, and its C header gives the offset.
func TestTensorMapOffsetWritten(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("h200", "gemm.json"))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	e := &tb.Entries[0]
	m := e.Launches[0].Args[0].TensorMap
	m.Offset = Int(3072)
	for i, b := range e.Buffers {
		if b.Name == m.Buffer {
			e.Buffers[i].Elems = b.Elems.PlusInt(1536)
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, tb); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(js.String(), `"offset": 3072`); n != 1 {
		t.Errorf("%d maps with \"offset\": 3072 in the JSON, want 1", n)
	}
	back, err := Parse(&js)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Entries[0].Launches[0].Args[0].TensorMap.Offset; !got.Equal(m.Offset) {
		t.Errorf("offset read back as %s", got)
	}
	var c bytes.Buffer
	if err := WriteC(&c, tb, "gradtune_gemm"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.String(), `"zero", "3072"};`) || !strings.Contains(c.String(), `"zero", "0"};`) {
		t.Errorf("the header does not give the maps' offsets:\n%.3000s", c.String())
	}
	i := slices.IndexFunc(tb.Entries, func(x Entry) bool { return x.Launches[0].Args[0].TensorMap == m })
	if out := compileC(t, c.Bytes(), fmt.Sprintf(`printf("%%s\n", gradtune_gemm_configs[%d].launches[0].args[0].tensor_map->offset);`, i)); out != "3072" {
		t.Errorf("C program printed %q, want 3072", out)
	}
}

// compileC compiles a C program that includes header twice (its types
// are guarded) and runs body, and returns what it printed; without gcc
// the test is skipped.
func compileC(t *testing.T, header []byte, body string) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: the C header is not compiled")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "table.h"), header, 0o644)
	os.WriteFile(filepath.Join(dir, "main.c"), []byte("#include <stdio.h>\n#include \"table.h\"\n#include \"table.h\"\nint main(void) {\n\t"+body+"\n\treturn 0;\n}\n"), 0o644)
	out, err := exec.Command(cc, "-std=c99", "-Wall", "-Werror", "-o", filepath.Join(dir, "main"), filepath.Join(dir, "main.c")).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err = exec.Command(filepath.Join(dir, "main")).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestCTAsPerSMWritten: a launch built for two CTAs an SM keeps
// ctas_per_sm through JSON and asks for the largest carveout when
// resolved, a negative count is refused by the reader and the writer, and
// the C header gives it (and a launch's When, "" where it has none).
func TestCTAsPerSMWritten(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("h200", "gemm.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "ctas_per_sm") {
		t.Fatal("the committed table already has ctas_per_sm: the test wants a table without")
	}
	tb, err := Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tb.Entries[0].Launches[0].CTAsPerSM = 2
	var js bytes.Buffer
	if err := WriteJSON(&js, tb); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(js.String(), `"ctas_per_sm": 2`); n != 1 {
		t.Errorf("%d launches with \"ctas_per_sm\": 2 in the JSON, want 1", n)
	}
	back, err := Parse(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		e := back.Entries[i]
		plan, err := e.Plan(mustShape(t, e.Shape), 132)
		if err != nil {
			t.Fatal(err)
		}
		if got := plan.Launches[0].MaxCarveout; got != want {
			t.Errorf("entry %d resolved: MaxCarveout %v, want %v", i, got, want)
		}
	}
	bad := strings.Replace(js.String(), `"ctas_per_sm": 2`, `"ctas_per_sm": -1`, 1)
	if _, err := Parse(strings.NewReader(bad)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "ctas_per_sm -1") {
		t.Errorf("a negative ctas_per_sm: err = %v", err)
	}
	tb.Entries[1].Launches[0].CTAsPerSM = -1
	if err := WriteJSON(io.Discard, tb); err == nil || !strings.Contains(err.Error(), "ctas_per_sm -1") {
		t.Errorf("writing a negative ctas_per_sm: err = %v", err)
	}
	tb.Entries[1].Launches[0].CTAsPerSM = 0
	when := Var("m").Minus(Int(2048))
	tb.Entries[1].Launches[0].When = &when
	var c bytes.Buffer
	if err := WriteC(&c, tb, "gradtune_gemm"); err != nil {
		t.Fatal(err)
	}
	out := compileC(t, c.Bytes(), `printf("%d %d [%s] [%s]\n", gradtune_gemm_configs[0].launches[0].ctas_per_sm, gradtune_gemm_configs[1].launches[0].ctas_per_sm,
		gradtune_gemm_configs[0].launches[0].when, gradtune_gemm_configs[1].launches[0].when);`)
	if out != "2 0 [] [m - 2048]" {
		t.Errorf("C program printed %q, want \"2 0 [] [m - 2048]\"", out)
	}
}
