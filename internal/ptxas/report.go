package ptxas

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// usedRE matches the start of the line with an entry function's resource usage.
var usedRE = regexp.MustCompile(`^Used \S+ registers?\b`)

// Report is what `ptxas -v` says about one function.
//
// Entry functions (kernels) get every field. A non-entry function (.func) that ptxas did not
// inline gets only its "Function properties" line: StackBytes, SpillStores and SpillLoads; its
// Registers, SharedBytes and ConstBytes stay 0.
type Report struct {
	Arch        string // target, e.g. "sm_90", from "Compiling entry function 'f' for 'sm_90'"
	Function    string // name as in the PTX (mangled if the PTX is)
	Registers   int    // "Used N registers"
	SpillStores int    // bytes, "N bytes spill stores"
	SpillLoads  int    // bytes, "N bytes spill loads"
	StackBytes  int    // "N bytes stack frame" (not the cumulative stack size of the call tree)
	SharedBytes int    // static shared memory, "N bytes smem"
	ConstBytes  int    // constant memory summed over banks, "N bytes cmem[0], M bytes cmem[2]"
	// PerfLoss holds the "(C75xx) Potential Performance Loss" notes of an entry function, e.g.
	// wgmma.mma_async serialized (C7513, C7515) or setmaxnreg ignored: code that assembles but
	// does not run as written.
	PerfLoss []string
}

// Spills reports whether the function spills registers or keeps a stack frame.
func (r Report) Spills() bool { return r.SpillStores != 0 || r.SpillLoads != 0 || r.StackBytes != 0 }

// Faults describes what keeps the function from running as written: its spills and stack
// frame, and each performance-loss note; none for a clean function.
func (r Report) Faults() []string {
	var out []string
	if r.Spills() {
		out = append(out, fmt.Sprintf("%s: spills %d/%d bytes, stack %d, %d registers", r.Function, r.SpillStores, r.SpillLoads, r.StackBytes, r.Registers))
	}
	for _, l := range r.PerfLoss {
		out = append(out, r.Function+": "+l)
	}
	return out
}

// ParseReport parses the verbose output (stderr) of `ptxas -v`. It returns one Report per
// function, in the order ptxas first names them. Lines it does not know (warnings, "bytes gmem",
// compile times) are ignored; output without functions gives no reports and no error. It fails
// when a line it knows is malformed or names no function.
//
// Reports of non-entry functions have the Arch of the entry functions when the output names only
// one architecture.
func ParseReport(out string) ([]Report, error) {
	var (
		reports []Report
		index   = map[[2]string]int{} // {arch, function} -> reports index
		cur     = -1                  // function of the last "Function properties" or "Compiling"
		entry   = -1                  // function of the last "Compiling entry function"
		arch    string                // arch of the last "Compiling entry function"
		archs   = map[string]bool{}
		notes   [][2]string // {function, line} of the performance notes
	)
	get := func(name, arch string) int {
		k := [2]string{arch, name}
		if i, ok := index[k]; ok {
			return i
		}
		reports = append(reports, Report{Arch: arch, Function: name})
		index[k] = len(reports) - 1
		return len(reports) - 1
	}

	for n, line := range strings.Split(out, "\n") {
		n++
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "ptxas info"); ok {
			_, line, ok = strings.Cut(rest, ":")
			if !ok {
				continue
			}
			line = strings.TrimSpace(line)
		}
		bad := func(err error) error { return fmt.Errorf("ptxas output line %d %q: %w", n, line, err) }

		switch {
		case strings.HasPrefix(line, "Compiling entry function "):
			name, a, err := parseCompiling(line)
			if err != nil {
				return nil, bad(err)
			}
			arch = a
			archs[a] = true
			entry = get(name, a)
			cur = entry

		case strings.HasPrefix(line, "Function properties for "):
			name := strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "Function properties for ")), "'")
			if name == "" {
				return nil, bad(fmt.Errorf("no function name"))
			}
			cur = get(name, arch)

		case strings.Contains(line, "bytes stack frame"):
			if cur < 0 {
				return nil, bad(fmt.Errorf("stack frame line before any function"))
			}
			if err := parseProperties(line, &reports[cur]); err != nil {
				return nil, bad(err)
			}

		case strings.Contains(line, "Potential Performance Loss"):
			// ptxas writes these to stderr, which may come before the
			// function's report: the note names it ("... in the function 'f'")
			_, rest, _ := strings.Cut(line, "in the function ")
			name, _, ok := quoted(strings.TrimSpace(rest))
			if !ok {
				return nil, bad(fmt.Errorf("performance note that names no function"))
			}
			notes = append(notes, [2]string{name, line})

		case usedRE.MatchString(line):
			if entry < 0 {
				return nil, bad(fmt.Errorf("register line before any entry function"))
			}
			if err := parseUsed(line, &reports[entry]); err != nil {
				return nil, bad(err)
			}
		}
	}

	for _, n := range notes {
		found := false
		for i := range reports {
			if reports[i].Function == n[0] {
				reports[i].PerfLoss = append(reports[i].PerfLoss, n[1])
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("ptxas output: performance note for %q, a function it does not report: %q", n[0], n[1])
		}
	}
	if len(archs) == 1 {
		for a := range archs {
			for i := range reports {
				if reports[i].Arch == "" {
					reports[i].Arch = a
				}
			}
		}
	}
	return reports, nil
}

// parseCompiling parses "Compiling entry function 'NAME' for 'ARCH'".
func parseCompiling(line string) (name, arch string, err error) {
	rest := strings.TrimPrefix(line, "Compiling entry function ")
	name, rest, ok := quoted(rest)
	if !ok {
		return "", "", fmt.Errorf("no quoted function name")
	}
	rest, ok = strings.CutPrefix(strings.TrimSpace(rest), "for ")
	if !ok {
		return "", "", fmt.Errorf("no architecture")
	}
	arch, _, ok = quoted(strings.TrimSpace(rest))
	if !ok || arch == "" {
		return "", "", fmt.Errorf("no quoted architecture")
	}
	return name, arch, nil
}

// quoted splits "'x' rest" into x and rest.
func quoted(s string) (inner, rest string, ok bool) {
	s, ok = strings.CutPrefix(s, "'")
	if !ok {
		return "", "", false
	}
	return strings.Cut(s, "'")
}

// parseProperties parses "N bytes stack frame, N bytes spill stores, N bytes spill loads".
func parseProperties(line string, r *Report) error {
	for item := range strings.SplitSeq(line, ",") {
		num, what, err := splitItem(item)
		if err != nil {
			return err
		}
		switch what {
		case "bytes stack frame":
			r.StackBytes = num
		case "bytes spill stores":
			r.SpillStores = num
		case "bytes spill loads":
			r.SpillLoads = num
		}
	}
	return nil
}

// parseUsed parses "Used N registers, used N barriers, N bytes cumulative stack size,
// N bytes smem, N bytes cmem[0], N bytes cmem[2]"; items may be missing or in another order.
func parseUsed(line string, r *Report) error {
	r.ConstBytes = 0
	for i, item := range strings.Split(line, ",") {
		item = strings.TrimSpace(item)
		if i == 0 {
			item = strings.TrimPrefix(item, "Used ")
		} else {
			item = strings.TrimPrefix(item, "used ")
		}
		num, what, err := splitItem(item)
		if err != nil {
			return err
		}
		switch {
		case what == "registers" || what == "register":
			r.Registers = num
		case what == "bytes smem":
			r.SharedBytes = num
		case strings.HasPrefix(what, "bytes cmem["):
			r.ConstBytes += num
		}
	}
	return nil
}

// splitItem splits " 28 registers" into 28 and "registers".
func splitItem(item string) (int, string, error) {
	numText, what, _ := strings.Cut(strings.TrimSpace(item), " ")
	num, err := strconv.Atoi(numText)
	if err != nil {
		return 0, "", fmt.Errorf("item %q: not a number: %q", strings.TrimSpace(item), numText)
	}
	return num, strings.TrimSpace(what), nil
}
