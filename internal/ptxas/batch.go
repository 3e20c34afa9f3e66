package ptxas

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/gradtune/gradtune/internal/parallel"
)

// Module is one PTX module to assemble for one architecture.
type Module struct {
	PTX  string
	Arch string // e.g. "sm_90a"
}

// Result is what ptxas says of one module: a report per function and its warning lines, or
// Err: a *Failure when ptxas rejected the module, another error when it could not tell.
// Cached is set when the result came from the result cache.
type Result struct {
	Reports  []Report
	Warnings []string
	Err      error
	Cached   bool
}

// Assembler assembles many modules with one ptxas binary, for callers that need ptxas' verdict
// and reports, not the cubin.
type Assembler struct {
	Path  string // the ptxas binary
	Cache string // folder of the result cache (cache.go); "" for none
}

// maxBatch is the most modules one ptxas process assembles.
const maxBatch = 32

// Check assembles mods and returns their results, in order. Results the cache holds are not
// assembled again, and modules with the same text and architecture are assembled once. The
// others are assembled in batches, several modules to one ptxas process (together), on
// GOMAXPROCS processes at once; each result is what assembling the module alone gives, and is
// stored in the cache.
func (a Assembler) Check(ctx context.Context, mods []Module) []Result {
	results := make([]Result, len(mods))
	version, err := versionOf(a.Path)
	if err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	keys := make([]string, len(mods))
	first := map[string]int{} // key → the index that is assembled
	var todo []int
	for i, m := range mods {
		keys[i] = cacheKey(version, m)
		if _, dup := first[keys[i]]; dup {
			continue
		}
		first[keys[i]] = i
		if r, ok := a.load(keys[i]); ok {
			results[i] = r
			continue
		}
		todo = append(todo, i)
	}
	parallel.Each(batches(mods, todo), func(b []int) {
		for j, r := range a.batch(ctx, mods, b) {
			results[b[j]] = r
			a.store(keys[b[j]], r)
		}
	})
	for i := range mods {
		if f := first[keys[i]]; f != i {
			results[i] = results[f]
		}
	}
	return results
}

// batches groups the modules todo (indices into mods) by architecture into batches of at most
// maxBatch, small enough that every process of a parallel run gets about two; a module that
// cannot share a process (moduleSymbols) is a batch of its own.
func batches(mods []Module, todo []int) [][]int {
	size := max(1, min(maxBatch, len(todo)/(2*runtime.GOMAXPROCS(0))))
	byArch := map[string][]int{}
	var archs []string
	var out [][]int
	for _, i := range todo {
		if _, ok := moduleSymbols(mods[i].PTX); !ok {
			out = append(out, []int{i})
			continue
		}
		a := mods[i].Arch
		if byArch[a] == nil {
			archs = append(archs, a)
		}
		byArch[a] = append(byArch[a], i)
	}
	for _, a := range archs {
		for is := byArch[a]; len(is) > 0; is = is[min(size, len(is)):] {
			out = append(out, is[:min(size, len(is))])
		}
	}
	return out
}

// batch assembles the modules b of mods (one architecture): together when there are several
// and ptxas accepts them all and its output names the module of every line that matters, else
// each alone, so that a failure names its own module.
func (a Assembler) batch(ctx context.Context, mods []Module, b []int) []Result {
	if len(b) > 1 {
		if rs, ok := a.together(ctx, mods, b); ok {
			return rs
		}
	}
	rs := make([]Result, len(b))
	for j, i := range b {
		rs[j] = a.alone(ctx, mods[i])
	}
	return rs
}

// alone assembles one module in a ptxas process of its own.
func (a Assembler) alone(ctx context.Context, m Module) Result {
	dir, err := os.MkdirTemp("", "gradtune-ptxas-")
	if err != nil {
		return Result{Err: fmt.Errorf("ptxas: %w", err)}
	}
	defer os.RemoveAll(dir)
	out, err := run(ctx, a.Path, dir, m.Arch, []source{{"kernel.ptx", m.PTX}})
	if err != nil {
		return Result{Err: err}
	}
	reports, err := parseFor(out, m.Arch)
	return Result{Reports: reports, Warnings: warnings(out), Err: err}
}

// together assembles the modules b in one ptxas process: module j is the input file mj.ptx,
// with every name it declares at module scope suffixed __pbj (renamed), so that ptxas, which
// links its inputs, sees no name twice, and every report and warning names its module. It
// reports false when ptxas fails or prints a report or a warning it cannot attribute.
func (a Assembler) together(ctx context.Context, mods []Module, b []int) ([]Result, bool) {
	dir, err := os.MkdirTemp("", "gradtune-ptxas-")
	if err != nil {
		return nil, false
	}
	defer os.RemoveAll(dir)
	files := make([]source, len(b))
	for j, i := range b {
		files[j] = source{fmt.Sprintf("m%d.ptx", j), renamed(mods[i].PTX, j)}
	}
	arch := mods[b[0]].Arch
	out, err := run(ctx, a.Path, dir, arch, files)
	if err != nil {
		return nil, false
	}
	reports, err := parseFor(out, arch)
	if err != nil {
		return nil, false
	}
	rs := make([]Result, len(b))
	for _, r := range reports {
		j, name := origin(r.Function)
		if j < 0 || j >= len(b) {
			return nil, false
		}
		r.Function = name
		for k, l := range r.PerfLoss {
			_, r.PerfLoss[k] = restore(l)
		}
		rs[j].Reports = append(rs[j].Reports, r)
	}
	for _, w := range warnings(out) {
		j, line := restore(w)
		if j < 0 || j >= len(b) {
			return nil, false
		}
		rs[j].Warnings = append(rs[j].Warnings, line)
	}
	return rs, true
}

var (
	// entryRE matches the declaration of an entry or a function at module scope; group 1 is
	// its name.
	entryRE = regexp.MustCompile(`^(?:\.(?:visible|extern|weak)\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)\s*(?:\(|$)`)
	// varRE matches the declaration of one variable at module scope; group 1 is its name.
	varRE = regexp.MustCompile(`^(?:\.(?:visible|extern|weak)\s+)*\.(?:global|const|shared)\s[^,;=\[]*?([A-Za-z_$][\w$]*)\s*(?:\[[^\]]*\]\s*)*(?:=|;)`)
	// headerRE matches the module-scope directives that declare no name.
	headerRE = regexp.MustCompile(`^\.(?:version|target|address_size|maxnreg|maxntid|reqntid|minnctapersm|maxnctapersm|reqnctapercluster|explicitcluster|maxclusterrank|noreturn|pragma)\b`)
)

// moduleSymbols returns the names ptx declares at module scope: its entries, functions and
// variables. It reports false for a module with anything else at module scope, or a block
// comment: such a module is assembled alone.
func moduleSymbols(ptx string) ([]string, bool) {
	var names []string
	braces, parens := 0, 0
	for line := range strings.SplitSeq(ptx, "\n") {
		if strings.Contains(line, "/*") {
			return nil, false
		}
		line, _, _ = strings.Cut(line, "//")
		line = strings.TrimSpace(line)
		if braces == 0 && parens == 0 && line != "" && line[0] == '.' {
			switch m := entryRE.FindStringSubmatch(line); {
			case m != nil:
				names = append(names, m[1])
			case headerRE.MatchString(line):
			default:
				v := varRE.FindStringSubmatch(line)
				if v == nil {
					return nil, false
				}
				names = append(names, v[1])
			}
		}
		braces += strings.Count(line, "{") - strings.Count(line, "}")
		parens += strings.Count(line, "(") - strings.Count(line, ")")
		if braces < 0 || parens < 0 {
			return nil, false
		}
	}
	return names, true
}

// batchSuffix marks a name renamed for a batch: name + batchSuffix + the module's position.
const batchSuffix = "__pb"

// renamed returns ptx with every name it declares at module scope suffixed with batchSuffix
// and j, wherever it occurs as a whole token.
func renamed(ptx string, j int) string {
	names, _ := moduleSymbols(ptx)
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	suffix := batchSuffix + strconv.Itoa(j)
	var b strings.Builder
	for start := 0; start < len(ptx); {
		end := start
		for end < len(ptx) && isTokenByte(ptx[end]) {
			end++
		}
		if end == start {
			b.WriteByte(ptx[start])
			start++
			continue
		}
		b.WriteString(ptx[start:end])
		if set[ptx[start:end]] {
			b.WriteString(suffix)
		}
		start = end
	}
	return b.String()
}

// isTokenByte reports whether c may be part of a PTX identifier (registers' % included).
func isTokenByte(c byte) bool {
	return c == '_' || c == '$' || c == '%' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

var (
	renamedRE = regexp.MustCompile(`([A-Za-z_$][\w$]*)` + batchSuffix + `([0-9]+)\b`)
	fileRE    = regexp.MustCompile(`\bm([0-9]+)\.ptx\b`)
)

// origin returns the position of the module that a renamed name comes from and its name
// there, or -1 when name was not renamed.
func origin(name string) (int, string) {
	m := renamedRE.FindStringSubmatch(name)
	if m == nil || m[0] != name {
		return -1, name
	}
	j, _ := strconv.Atoi(m[2])
	return j, m[1]
}

// restore returns the position of the one module a line of ptxas output names (by a renamed
// name or by its file), or -1 when it names none or several, and the line as assembling that
// module alone prints it: names unrenamed, the file called kernel.ptx.
func restore(line string) (int, string) {
	j := -1
	for _, m := range append(renamedRE.FindAllStringSubmatch(line, -1), fileRE.FindAllStringSubmatch(line, -1)...) {
		k, _ := strconv.Atoi(m[len(m)-1])
		if j >= 0 && k != j {
			j = -2
			break
		}
		j = k
	}
	line = fileRE.ReplaceAllString(renamedRE.ReplaceAllString(line, "$1"), "kernel.ptx")
	return max(j, -1), line
}
