package evidence

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs are the pages that quote H200 figures: the README and docs/ with
// its kernels/ and history/ pages.
func docs(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, pat := range []string{"docs/*.md", "docs/kernels/*.md", "docs/history/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.ToSlash(rel))
		}
	}
	return files
}

// citeRE is a path under the repository's testdata/ as the docs write
// one: at the start of a word, a code span or a link, maybe after ../.
var citeRE = regexp.MustCompile("(?:^|[\\s`(])(?:\\.\\./)*(testdata/[^\\s`)]*)")

// cited lists the testdata paths (globs included) a doc names.
func cited(md string) []string {
	var out []string
	for _, m := range citeRE.FindAllStringSubmatch(md, -1) {
		for _, p := range strings.Split(m[1], ",") {
			p = strings.TrimRight(p, ".,;:")
			if strings.HasPrefix(p, "testdata/") {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestCitedEvidenceExists: every testdata path or pattern the docs cite
// names committed files.
func TestCitedEvidenceExists(t *testing.T) {
	n := 0
	for _, doc := range docs(t) {
		for _, p := range cited(read(t, doc)) {
			n++
			m, err := filepath.Glob(filepath.Join(root, p))
			if err != nil || len(m) == 0 {
				t.Errorf("%s cites %s: no such file", doc, p)
			}
		}
	}
	if n < 20 {
		t.Errorf("%d citations of testdata in the docs: the pattern misses them", n)
	}
}

// runFileRE is a run's log or ratios file: its stem names its database.
var runFileRE = regexp.MustCompile(`^(testdata/.*/?h200-[^/]*?)(?:\.log|-ratios\.txt)$`)

// TestCitedRunsKeepDatabases: a run whose log or ratios file the docs
// cite keeps its database beside it (stem.db or stem.db.gz), unless a
// doc says that it was not kept and that the figures come from its log,
// in those words: "database not kept: figures from `stem.log`".
func TestCitedRunsKeepDatabases(t *testing.T) {
	all := ""
	for _, doc := range docs(t) {
		all += read(t, doc)
	}
	for _, doc := range docs(t) {
		for _, p := range cited(read(t, doc)) {
			m := runFileRE.FindStringSubmatch(p)
			if m == nil {
				continue
			}
			stem := m[1]
			if exists(stem+".db") || exists(stem+".db.gz") {
				continue
			}
			if strings.Contains(all, "database not kept: figures from `"+stem+".log`") && exists(stem+".log") {
				continue
			}
			t.Errorf("%s cites %s, whose run's database (%s.db) is not under testdata/ and no doc marks it %q",
				doc, p, stem, "database not kept: figures from `"+stem+".log`")
		}
	}
}

func exists(rel string) bool {
	_, err := os.Stat(filepath.Join(root, rel))
	return err == nil
}
