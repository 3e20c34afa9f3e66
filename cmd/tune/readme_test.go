package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gradtune/gradtune/configs"
)

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// codeBlockAfter is the first fenced block of md after the line that
// holds marker.
func codeBlockAfter(t *testing.T, md, marker string) string {
	t.Helper()
	i := strings.Index(md, marker)
	if i < 0 {
		t.Fatalf("README.md has no %q", marker)
	}
	rest := md[i:]
	j := strings.Index(rest, "\n```\n")
	if j < 0 {
		t.Fatalf("no code block after %q", marker)
	}
	body := rest[j+len("\n```\n"):]
	k := strings.Index(body, "```\n")
	if k < 0 {
		t.Fatalf("unterminated code block after %q", marker)
	}
	return body[:k]
}

// TestReadmeHeadline: the headline's outputs the README quotes are the
// recorded run's: its table's nf4_gemm_bwd rows as
// testdata/issue21/tune-nf4.log has them, and tune show of its database
// as this build prints it.
func TestReadmeHeadline(t *testing.T) {
	md := readme(t)
	if !strings.Contains(md, "./bin/tune --kernel nf4_gemm_bwd --shapes qwen1.5b\n") {
		t.Error("README.md does not show the headline command")
	}
	log, err := os.ReadFile(filepath.Join("..", "..", "testdata", "issue21", "tune-nf4.log"))
	if err != nil {
		t.Fatal(err)
	}
	logLines := map[string]bool{}
	for _, l := range strings.Split(string(log), "\n") {
		logLines[l] = true
	}
	table := codeBlockAfter(t, md, "its\ntable's nf4_gemm_bwd rows are:")
	rows := 0
	for _, l := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		if !logLines[l] {
			t.Errorf("README's headline table has a line the log does not: %q", l)
		}
		if strings.HasPrefix(l, "  nf4_gemm_bwd") {
			rows++
		}
	}
	if rows != 8 {
		t.Errorf("README's headline table has %d nf4_gemm_bwd rows, want 8", rows)
	}
	db := "testdata/issue21/h200-nf4.db"
	code, out, errs := runResults("show", "--db", filepath.Join("..", "..", db), "--kernel", "nf4_gemm_bwd")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	out = strings.ReplaceAll(out, filepath.Join("..", "..", db), db)
	if got := codeBlockAfter(t, md, "gives the fuller table"); got != out {
		t.Errorf("README's tune show block differs from tune show today:\nREADME:\n%s\ntune show:\n%s", got, out)
	}
}

// TestReadmeFigures: the counts the README quotes are today's: the rows
// of TestBadInputs, the entries of configs/h200/*.json, and tune's flags
// in its Flags section.
func TestReadmeFigures(t *testing.T) {
	md := readme(t)
	m := regexp.MustCompile(`TestBadInputs\x60 is the table of wrong command lines \((\d+) rows`).FindStringSubmatch(md)
	if m == nil {
		t.Fatal("README.md does not count TestBadInputs' rows")
	}
	if n, _ := strconv.Atoi(m[1]); n != len(badInputs) {
		t.Errorf("README.md says TestBadInputs has %d rows; it has %d", n, len(badInputs))
	}

	m = regexp.MustCompile(`(\d+) entries \(activations\s+(\d+), rows (\d+), pool (\d+), gemm (\d+), nf4 (\d+), nf4_gemm (\d+)\)`).FindStringSubmatch(md)
	if m == nil {
		t.Fatal("README.md does not count the committed tables' entries")
	}
	total := 0
	for i, name := range []string{"activations", "rows", "pool", "gemm", "nf4", "nf4_gemm"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "configs", "h200", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var table struct{ Entries []json.RawMessage }
		if err := json.Unmarshal(b, &table); err != nil {
			t.Fatal(err)
		}
		total += len(table.Entries)
		if said, _ := strconv.Atoi(m[i+2]); said != len(table.Entries) {
			t.Errorf("README.md says %s.json has %d entries; it has %d", name, said, len(table.Entries))
		}
	}
	if said, _ := strconv.Atoi(m[1]); said != total {
		t.Errorf("README.md says %d entries in all; there are %d", said, total)
	}

	flags := md[strings.Index(md, "## Flags"):]
	commands[""].newFlagSet().VisitAll(func(f *flag.Flag) {
		if !commands[""].hiddenFlags[f.Name] && !strings.Contains(flags, "--"+f.Name+" ") {
			t.Errorf("README.md's Flags section lacks tune's --%s", f.Name)
		}
	})
	if !strings.Contains(md, "\ngo test ./...\n") {
		t.Error("README.md does not give go test ./... as the test command")
	}
}

// TestReadmeTrainerSnippet does what the README's configs.Lookup
// snippet does, short of the GPU: a token count no table was tuned at
// finds the entry whose PTX takes it at run time, its PTX, and its plan.
func TestReadmeTrainerSnippet(t *testing.T) {
	md := readme(t)
	for _, call := range []string{`configs.ParseShape("m=3001,n=8960,k=1536")`, `configs.GPU{Name: "NVIDIA H200", CC: "9.0"}`,
		`configs.Lookup(gpu, "nf4_gemm_bwd", "bf16", shape)`, "configs.Embedded()", "set.PTX(m)", "m.Plan(sms)", "launch.Bind(", "import gradtune.torch as gt"} {
		if !strings.Contains(md, call) {
			t.Errorf("README.md's trainer section lacks %s", call)
		}
	}
	shape, err := configs.ParseShape("m=3001,n=8960,k=1536")
	if err != nil {
		t.Fatal(err)
	}
	gpu := configs.GPU{Name: "NVIDIA H200", CC: "9.0"}
	m, err := configs.Lookup(gpu, "nf4_gemm_bwd", "bf16", shape)
	if err != nil {
		t.Fatal(err)
	}
	if m.Rule != configs.Runtime || m.Rule.String() != "runtime dims" || !strings.Contains(md, "`runtime\ndims`") {
		t.Errorf("m=3001 found by rule %q, want the README's runtime dims", m.Rule)
	}
	set, err := configs.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	ptx, err := set.PTX(m)
	if err != nil || !strings.Contains(string(ptx), ".entry") {
		t.Errorf("PTX of %s: %v", m.Entry.Key(), err)
	}
	if _, err := m.Plan(132); err != nil {
		t.Errorf("plan at m=3001 on 132 SMs: %v", err)
	}
}
