package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/gradtune/gradtune"

// rule forbids packages under from (the package or its subpackages) to
// depend on packages under any of to; stdOnly forbids every package
// outside the standard library instead, but those under allow (module
// packages held to the standard library by rules of their own).
type rule struct {
	from    string
	to      []string
	stdOnly bool
	allow   []string
}

var rules = []rule{
	{from: "variants", to: []string{"kernels"}},
	{from: "configs", stdOnly: true},
	{from: "dtype", stdOnly: true, allow: []string{"configs"}},
	{from: "store", to: []string{"runner", "kernels"}},
	{from: "runner", to: []string{"store", "kernels/catalog", "kernels/faults"}},
	{from: "kernels", to: []string{"runner"}},
	{from: "reports", to: []string{"runner"}},
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Standard   bool
	Deps       []string
}

// under reports whether path is the module package dir or below it.
func under(path, dir string) bool {
	p := module + "/" + dir
	return path == p || strings.HasPrefix(path, p+"/")
}

// violations returns, sorted, every dependency of pkgs that breaks rules.
// std says which import paths are in the standard library.
func violations(pkgs []pkg, std map[string]bool, rules []rule) []string {
	var out []string
	for _, p := range pkgs {
		for _, r := range rules {
			if !under(p.ImportPath, r.from) {
				continue
			}
			for _, d := range p.Deps {
				bad := r.stdOnly && !std[d] && !underAny(d, r.allow)
				for _, t := range r.to {
					bad = bad || under(d, t)
				}
				if bad {
					out = append(out, fmt.Sprintf("%s imports %s (rule: %s)", p.ImportPath, d, describe(r)))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if under(path, d) {
			return true
		}
	}
	return false
}

func describe(r rule) string {
	if r.stdOnly && len(r.allow) > 0 {
		return r.from + " imports the standard library and " + strings.Join(r.allow, ", ") + " only"
	}
	if r.stdOnly {
		return r.from + " imports the standard library only"
	}
	return r.from + " ↛ " + strings.Join(r.to, ", ")
}

// goList lists every package of the module and its dependencies.
func goList(t *testing.T) ([]pkg, map[string]bool) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Deps", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	std := map[string]bool{}
	dec := json.NewDecoder(bufio.NewReader(bytes.NewReader(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		std[p.ImportPath] = p.Standard
		pkgs = append(pkgs, p)
	}
	return pkgs, std
}

func TestImportRules(t *testing.T) {
	pkgs, std := goList(t)
	for _, r := range rules {
		found := false
		for _, p := range pkgs {
			found = found || under(p.ImportPath, r.from)
		}
		if !found {
			t.Errorf("no package %s/%s: the rule %q checks nothing", module, r.from, describe(r))
		}
	}
	for _, v := range violations(pkgs, std, rules) {
		t.Error(v)
	}
}

// TestViolations: the checker finds direct and transitive breaks, and
// accepts what the rules allow.
func TestViolations(t *testing.T) {
	m := func(s string) string { return module + "/" + s }
	std := map[string]bool{"fmt": true, "strings": true}
	pkgs := []pkg{
		{ImportPath: m("variants"), Deps: []string{"fmt", m("dtype")}},
		{ImportPath: m("store"), Deps: []string{"fmt", m("eval"), m("kernels/ptx")}},
		{ImportPath: m("configs"), Deps: []string{"strings", m("dtype"), "github.com/mattn/go-sqlite3"}},
		{ImportPath: m("dtype"), Deps: []string{"strings", m("configs"), m("kernels")}},
		{ImportPath: m("kernels/catalog"), Deps: []string{m("kernels"), m("runner/sim")}},
		{ImportPath: m("runnerx"), Deps: []string{m("store")}}, // not under runner
	}
	got := violations(pkgs, std, rules)
	want := []string{
		m("configs") + " imports " + m("dtype") + " (rule: configs imports the standard library only)",
		m("configs") + " imports github.com/mattn/go-sqlite3 (rule: configs imports the standard library only)",
		m("dtype") + " imports " + m("kernels") + " (rule: dtype imports the standard library and configs only)",
		m("kernels/catalog") + " imports " + m("runner/sim") + " (rule: kernels ↛ runner)",
		m("store") + " imports " + m("kernels/ptx") + " (rule: store ↛ runner, kernels)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTrainerPackagesBuildWithoutCgo: what a trainer embeds (configs, and
// dtype's names for its element types) and the launcher it calls (launch,
// examples/trainer) build with CGO_ENABLED=0.
func TestTrainerPackagesBuildWithoutCgo(t *testing.T) {
	cmd := exec.Command("go", "build", module+"/configs", module+"/dtype", module+"/launch", module+"/examples/trainer")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
}
