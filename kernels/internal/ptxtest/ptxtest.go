package ptxtest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var (
	genRE     = regexp.MustCompile(`\$L_(if|loop)(\d+)_(\w+)`)
	regDeclRE = regexp.MustCompile(`^\t\.reg \.(\w+) (%[a-z]+)<(\d+)>;$`)
)

// branchTarget returns the target of a branch line ("\t@%p1 bra L;").
func branchTarget(line string) (string, bool) {
	line, ok := strings.CutPrefix(line, "\t")
	if !ok {
		return "", false
	}
	if strings.HasPrefix(line, "@") {
		_, line, _ = strings.Cut(line, " ")
	}
	op, rest, _ := strings.Cut(line, " ")
	if op != "bra" && op != "bra.uni" {
		return "", false
	}
	return strings.TrimSuffix(rest, ";"), true
}

// classTypes is the declared type of each register class.
var classTypes = map[string]string{"%p": "pred", "%h": "b16", "%r": "b32", "%rd": "b64", "%f": "f32", "%fd": "f64"}

// Kernels splits a printed module into its kernels' texts, each starting
// with the kernel's name.
func Kernels(text string) []string {
	return strings.Split(text, ".visible .entry ")[1:]
}

// Labels checks every kernel of a printed module: each label is defined
// once, each branch goes to a defined label, each generated if has an end
// label and each loop a top and an end label, and the lines that mention
// one structured node span an interval that every other node's interval
// either contains or avoids. It returns the numbers of ifs and loops and a
// description of each problem.
func Labels(text string) (ifs, loops int, problems []string) {
	for _, body := range Kernels(text) {
		lines := strings.Split(body, "\n")
		defined := map[string]int{}
		var targets []string
		for _, line := range lines {
			if l, ok := strings.CutSuffix(line, ":"); ok && l != "" && !strings.ContainsAny(l, " \t") {
				defined[l]++
			}
			if l, ok := branchTarget(line); ok {
				targets = append(targets, l)
			}
		}
		for l, n := range defined {
			if n != 1 {
				problems = append(problems, fmt.Sprintf("label %s defined %d times", l, n))
			}
		}
		for _, l := range targets {
			if defined[l] == 0 {
				problems = append(problems, fmt.Sprintf("branch to undefined label %s", l))
			}
		}
		type span struct{ first, last int }
		spans := map[string]*span{}
		parts := map[string]map[string]bool{}
		for i, line := range lines {
			if !strings.Contains(line, "$L_") {
				continue
			}
			for _, m := range genRE.FindAllStringSubmatch(line, -1) {
				id := m[1] + m[2]
				if spans[id] == nil {
					spans[id] = &span{i, i}
					parts[id] = map[string]bool{}
				}
				spans[id].last = i
				parts[id][m[3]] = true
			}
		}
		for id, p := range parts {
			if strings.HasPrefix(id, "if") {
				ifs++
				if !p["end"] || defined["$L_"+id+"_end"] != 1 {
					problems = append(problems, fmt.Sprintf("%s has no end label", id))
				}
				if p["else"] && defined["$L_"+id+"_else"] != 1 {
					problems = append(problems, fmt.Sprintf("%s branches to an else label it lacks", id))
				}
			} else {
				loops++
				if defined["$L_"+id+"_top"] != 1 || defined["$L_"+id+"_end"] != 1 {
					problems = append(problems, fmt.Sprintf("%s lacks its top or end label", id))
				}
			}
		}
		for a, sa := range spans {
			for b, sb := range spans {
				if a >= b {
					continue
				}
				nested := sa.first < sb.first && sb.last < sa.last || sb.first < sa.first && sa.last < sb.last
				disjoint := sa.last < sb.first || sb.last < sa.first
				if !nested && !disjoint {
					problems = append(problems, fmt.Sprintf("regions %s %v and %s %v overlap", a, *sa, b, *sb))
				}
			}
		}
	}
	return ifs, loops, problems
}

// Regs checks the register declarations of every kernel of a printed
// module: each class is declared once with its type, every register used
// is declared, numbering starts at 1, and the highest declared register of
// each class is used. It returns each kernel's declarations (class prefix
// → the N of %x<N>) and a description of each problem.
func Regs(text string) (decls []map[string]int, problems []string) {
	for _, body := range Kernels(text) {
		d := map[string]int{}
		used := map[string]int{}
		start := strings.Index(body, "{")
		if start < 0 {
			problems = append(problems, "kernel without a body")
			decls = append(decls, d)
			continue
		}
		for _, line := range strings.Split(body[start:], "\n") {
			m := regDeclRE.FindStringSubmatch(line)
			if m == nil {
				scanRegs(line, used)
				continue
			}
			n, _ := strconv.Atoi(m[3])
			if _, dup := d[m[2]]; dup {
				problems = append(problems, fmt.Sprintf("class %s declared twice", m[2]))
			}
			d[m[2]] = n
			if classTypes[m[2]] != m[1] {
				problems = append(problems, fmt.Sprintf("class %s declared as .%s, want .%s", m[2], m[1], classTypes[m[2]]))
			}
		}
		decls = append(decls, d)
		if used[""] > 0 {
			problems = append(problems, "register numbering starts at 1, found a register 0")
		}
		delete(used, "")
		for c, n := range used {
			if d[c] != n+1 {
				problems = append(problems, fmt.Sprintf("class %s: highest register used is %d, declared %s<%d>", c, n, c, d[c]))
			}
		}
		for c := range d {
			if _, ok := used[c]; !ok {
				problems = append(problems, fmt.Sprintf("class %s declared but unused", c))
			}
		}
	}
	return decls, problems
}

// scanRegs records in used the highest number of each register class
// named in line (%r12 → used["%r"] = 12); a register numbered 0 is
// counted under "".
func scanRegs(line string, used map[string]int) {
	for i := 0; i < len(line); i++ {
		if line[i] != '%' {
			continue
		}
		j := i + 1
		for j < len(line) && line[j] >= 'a' && line[j] <= 'z' {
			j++
		}
		k := j
		for k < len(line) && line[k] >= '0' && line[k] <= '9' {
			k++
		}
		if k == j || j == i+1 || k < len(line) && (line[k] == '_' || line[k] == '.' || line[k] >= 'a' && line[k] <= 'z') {
			i = k
			continue
		}
		c := line[i:j]
		if _, ok := classTypes[c]; !ok {
			i = k
			continue
		}
		n, _ := strconv.Atoi(line[j:k])
		if n == 0 {
			used[""]++
		} else {
			used[c] = max(used[c], n)
		}
		i = k - 1
	}
}
