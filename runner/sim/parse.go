package sim

import (
	"strconv"
	"strings"
)

// This file reads PTX text into a syntax tree. It accepts the dialect
// kernels/ptx prints (one statement per line, registers declared in
// %x<N> ranges, structured-control-flow labels) plus the common
// variations of hand-written PTX (single register declarations,
// braces-free bodies are not among them); anything else is an ErrParse
// naming the line.

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tNum
	tPunct
)

type token struct {
	kind tokKind
	s    string
	line int
}

// lex splits PTX text into tokens, dropping // and /* */ comments.
func lex(src string) ([]token, error) {
	var toks []token
	line := 1
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, parseError(line, "", "unterminated comment")
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case isIdentStart(c):
			j := i + 1
			for j < len(src) {
				if isIdentChar(src[j]) {
					j++
				} else if src[j] == ':' && j+1 < len(src) && src[j+1] == ':' {
					j += 2
				} else {
					break
				}
			}
			toks = append(toks, token{tIdent, src[i:j], line})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && (isIdentChar(src[j])) && src[j] != '.' {
				j++
			}
			// Decimal floating literals (1.5) are not printed by the builder,
			// but accept them in .f32/.f64 contexts.
			if j < len(src) && src[j] == '.' && j+1 < len(src) && src[j+1] >= '0' && src[j+1] <= '9' {
				j++
				for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == 'e' || src[j] == 'E') {
					j++
				}
			}
			toks = append(toks, token{tNum, src[i:j], line})
			i = j
		case strings.IndexByte(",;:[]{}()<>+-|!@=", c) >= 0:
			toks = append(toks, token{tPunct, string(c), line})
			i++
		default:
			return nil, parseError(line, lineText(src, line), "unexpected character %q", c)
		}
	}
	toks = append(toks, token{tEOF, "", line})
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c == '.' || c == '%' || c == '$' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9'
}

// lineText returns line n (1-based) of src, trimmed.
func lineText(src string, n int) string { return indexLines(src).text(n) }

// lineIndex is a source text with the offset of each line's start, so
// that the parser finds a statement's line without rescanning the text.
type lineIndex struct {
	src    string
	starts []int // starts[i] is the offset of line i+1
}

func indexLines(src string) lineIndex {
	starts := []int{0}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return lineIndex{src, starts}
}

// text returns line n (1-based), trimmed; "" past the end.
func (x lineIndex) text(n int) string {
	if n < 1 || n > len(x.starts) {
		return ""
	}
	line := x.src[x.starts[n-1]:]
	if k := strings.IndexByte(line, '\n'); k >= 0 {
		line = line[:k]
	}
	return strings.TrimSpace(line)
}

// Syntax tree.

type modAST struct {
	version string
	target  string
	externs []arrDecl // module-level .extern .shared arrays
	kernels []*kernelAST
}

type kernelAST struct {
	name    string
	line    int
	params  []paramDecl
	maxnreg int
	reqntid []int
	maxntid []int
	reqncta []int // .reqnctapercluster
	regs    []regDecl
	shared  []arrDecl
	local   []arrDecl
	body    []stmt
}

type paramDecl struct {
	name  string
	typ   string // "u64", "f32", ...
	align int
	bytes int
}

type regDecl struct {
	typ   string // declared type without the dot
	names []string
	// range form %r<N>: prefix and count
	prefix string
	count  int
	line   int
}

type arrDecl struct {
	name  string
	typ   string
	align int
	count int // elements; -1 for an unsized extern array
	line  int
}

type stmt struct {
	label string // non-empty: a label definition
	guard string
	gneg  bool
	op    string
	args  []operand
	line  int
	text  string
}

type opKind uint8

const (
	oReg   opKind = iota // %r1, %tid.x, and symbols (kernel params, arrays)
	oImm                 // integer immediate
	oFloat               // 0f/0d immediate or decimal float: bits in u
	oAddr                // [base+off]
	oVec                 // {%r1, %r2}
)

type operand struct {
	kind  opKind
	name  string // register, symbol or label name; base of an address
	neg   bool   // !%p
	pipe  string // %r1|%p1: the second destination
	i     int64
	u     uint64   // float bits
	fbits int      // 32 or 64 for oFloat
	off   int64    // address offset
	elems []string // oVec: the registers; oAddr: TMA coordinates
	line  int
}

type parser struct {
	toks  []token
	pos   int
	lines lineIndex
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) errf(t token, format string, args ...any) error {
	return parseError(t.line, p.lines.text(t.line), format, args...)
}

func (p *parser) expect(s string) error {
	t := p.next()
	if t.s != s || t.kind == tEOF {
		if t.kind == tEOF {
			return p.errf(t, "unexpected end of text, want %q", s)
		}
		return p.errf(t, "want %q, found %q", s, t.s)
	}
	return nil
}

func (p *parser) accept(s string) bool {
	if t := p.peek(); t.s == s && t.kind != tEOF {
		p.pos++
		return true
	}
	return false
}

func (p *parser) number() (int64, error) {
	t := p.next()
	neg := false
	if t.s == "-" && t.kind == tPunct {
		neg = true
		t = p.next()
	}
	if t.kind != tNum {
		return 0, p.errf(t, "want a number, found %q", t.s)
	}
	v, err := parseInt(t.s)
	if err != nil {
		return 0, p.errf(t, "%v", err)
	}
	if neg {
		v = -v
	}
	return v, nil
}

func parseInt(s string) (int64, error) {
	s = strings.TrimSuffix(s, "U")
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		u, err := strconv.ParseUint(s[2:], 16, 64)
		return int64(u), err
	}
	if len(s) > 1 && s[0] == '0' && s[1] >= '0' && s[1] <= '7' {
		u, err := strconv.ParseUint(s[1:], 8, 64)
		return int64(u), err
	}
	u, err := strconv.ParseUint(s, 10, 64)
	return int64(u), err
}

// parseModule reads a whole module.
func parseModule(src string) (*modAST, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, lines: indexLines(src)}
	m := &modAST{}
	for {
		t := p.peek()
		if t.kind == tEOF {
			break
		}
		switch t.s {
		case ".version":
			p.next()
			v := p.next()
			m.version = v.s
		case ".target":
			p.next()
			v := p.next()
			m.target = v.s
			for p.accept(",") {
				p.next()
			}
		case ".address_size":
			p.next()
			n, err := p.number()
			if err != nil {
				return nil, err
			}
			if n != 64 {
				return nil, p.errf(t, ".address_size %d: only 64 is supported", n)
			}
		case ".extern", ".shared":
			d, err := p.arrayDecl()
			if err != nil {
				return nil, err
			}
			if d.space != ".shared" || d.count != -1 {
				return nil, p.errf(t, "module-level %s arrays are not supported (only .extern .shared dynamic arrays)", d.space)
			}
			m.externs = append(m.externs, d.arrDecl)
		case ".visible", ".entry":
			k, err := p.entry()
			if err != nil {
				return nil, err
			}
			m.kernels = append(m.kernels, k)
		default:
			return nil, p.errf(t, "unexpected %q at module level (want .version, .target, .address_size, .extern .shared or .visible .entry)", t.s)
		}
	}
	if len(m.kernels) == 0 {
		return nil, parseError(1, "", "module has no kernels")
	}
	return m, nil
}

type spacedDecl struct {
	arrDecl
	space string
}

// arrayDecl reads [.extern] .shared|.local [.align N] .type name[count];
func (p *parser) arrayDecl() (spacedDecl, error) {
	start := p.peek()
	var d spacedDecl
	d.line = start.line
	extern := p.accept(".extern")
	sp := p.next()
	if sp.s != ".shared" && sp.s != ".local" {
		return d, p.errf(sp, "want .shared or .local, found %q", sp.s)
	}
	d.space = sp.s
	if p.accept(".align") {
		n, err := p.number()
		if err != nil {
			return d, err
		}
		d.align = int(n)
	}
	ty := p.next()
	if ty.kind != tIdent || !strings.HasPrefix(ty.s, ".") {
		return d, p.errf(ty, "want a type, found %q", ty.s)
	}
	d.typ = ty.s[1:]
	if typeBytes(d.typ) == 0 {
		return d, p.errf(ty, "unknown type %s", ty.s)
	}
	name := p.next()
	if name.kind != tIdent {
		return d, p.errf(name, "want a name, found %q", name.s)
	}
	d.name = name.s
	if err := p.expect("["); err != nil {
		return d, err
	}
	if p.accept("]") {
		d.count = -1
	} else {
		n, err := p.number()
		if err != nil {
			return d, err
		}
		if n <= 0 {
			return d, p.errf(name, "array %s of %d elements", d.name, n)
		}
		d.count = int(n)
		if err := p.expect("]"); err != nil {
			return d, err
		}
	}
	if err := p.expect(";"); err != nil {
		return d, err
	}
	if extern != (d.count == -1) {
		return d, p.errf(name, "array %s: only .extern arrays may be unsized", d.name)
	}
	if d.align == 0 {
		d.align = typeBytes(d.typ)
	}
	if d.align&(d.align-1) != 0 {
		return d, p.errf(name, "array %s: alignment %d is not a power of two", d.name, d.align)
	}
	return d, nil
}

func (p *parser) entry() (*kernelAST, error) {
	p.accept(".visible")
	if err := p.expect(".entry"); err != nil {
		return nil, err
	}
	name := p.next()
	if name.kind != tIdent {
		return nil, p.errf(name, "want a kernel name, found %q", name.s)
	}
	k := &kernelAST{name: name.s, line: name.line}
	if p.accept("(") {
		for !p.accept(")") {
			if len(k.params) > 0 {
				if err := p.expect(","); err != nil {
					return nil, err
				}
			}
			if err := p.expect(".param"); err != nil {
				return nil, err
			}
			pd := paramDecl{}
			if p.accept(".align") {
				n, err := p.number()
				if err != nil {
					return nil, err
				}
				pd.align = int(n)
			}
			ty := p.next()
			if ty.kind != tIdent || typeBytes(strings.TrimPrefix(ty.s, ".")) == 0 || ty.s[0] != '.' {
				return nil, p.errf(ty, "want a parameter type, found %q", ty.s)
			}
			pd.typ = ty.s[1:]
			pd.bytes = typeBytes(pd.typ)
			nm := p.next()
			if nm.kind != tIdent {
				return nil, p.errf(nm, "want a parameter name, found %q", nm.s)
			}
			pd.name = nm.s
			if p.accept("[") {
				n, err := p.number()
				if err != nil {
					return nil, err
				}
				pd.bytes *= int(n)
				if err := p.expect("]"); err != nil {
					return nil, err
				}
			}
			if pd.align == 0 {
				pd.align = typeBytes(pd.typ)
			}
			k.params = append(k.params, pd)
		}
	}
	// Performance directives.
	for {
		t := p.peek()
		switch t.s {
		case ".maxnreg":
			p.next()
			n, err := p.number()
			if err != nil {
				return nil, err
			}
			k.maxnreg = int(n)
			continue
		case ".explicitcluster":
			p.next()
			continue
		case ".maxclusterrank":
			p.next()
			if _, err := p.number(); err != nil {
				return nil, err
			}
			continue
		case ".reqntid", ".maxntid", ".reqnctapercluster":
			p.next()
			var dims []int
			for {
				n, err := p.number()
				if err != nil {
					return nil, err
				}
				dims = append(dims, int(n))
				if !p.accept(",") {
					break
				}
			}
			switch t.s {
			case ".reqntid":
				k.reqntid = dims
			case ".reqnctapercluster":
				k.reqncta = dims
			default:
				k.maxntid = dims
			}
			continue
		case ".minnctapersm", ".maxnctapersm":
			p.next()
			if _, err := p.number(); err != nil {
				return nil, err
			}
			continue
		}
		break
	}
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tEOF:
			return nil, p.errf(t, "kernel %s: missing closing brace", k.name)
		case t.s == "}":
			p.next()
			return k, nil
		case t.s == "{":
			return nil, p.errf(t, "nested blocks are not supported")
		case t.s == ".reg":
			d, err := p.regDecl()
			if err != nil {
				return nil, err
			}
			k.regs = append(k.regs, d)
		case t.s == ".shared" || t.s == ".local" || t.s == ".extern":
			d, err := p.arrayDecl()
			if err != nil {
				return nil, err
			}
			if d.space == ".shared" {
				k.shared = append(k.shared, d.arrDecl)
			} else {
				k.local = append(k.local, d.arrDecl)
			}
		case t.s == ".pragma":
			for p.next().s != ";" {
			}
		default:
			s, err := p.statement()
			if err != nil {
				return nil, err
			}
			k.body = append(k.body, s)
		}
	}
}

// regDecl reads .reg .type %r<N>; or .reg .type %a, %b;
func (p *parser) regDecl() (regDecl, error) {
	start := p.next() // .reg
	d := regDecl{line: start.line}
	ty := p.next()
	if ty.kind != tIdent || ty.s[0] != '.' || regBits(ty.s[1:]) == 0 {
		return d, p.errf(ty, "want a register type, found %q", ty.s)
	}
	d.typ = ty.s[1:]
	for {
		nm := p.next()
		if nm.kind != tIdent || nm.s[0] != '%' {
			return d, p.errf(nm, "want a register name, found %q", nm.s)
		}
		if p.accept("<") {
			n, err := p.number()
			if err != nil {
				return d, err
			}
			if err := p.expect(">"); err != nil {
				return d, err
			}
			if n < 0 || n > 1<<20 {
				return d, p.errf(nm, "register range %s<%d> out of range", nm.s, n)
			}
			if d.prefix != "" || len(d.names) > 0 {
				return d, p.errf(nm, "one register range per declaration")
			}
			d.prefix, d.count = nm.s, int(n)
		} else {
			d.names = append(d.names, nm.s)
		}
		if !p.accept(",") {
			break
		}
	}
	return d, p.expect(";")
}

// statement reads a label or an instruction.
func (p *parser) statement() (stmt, error) {
	t := p.peek()
	s := stmt{line: t.line, text: p.lines.text(t.line)}
	if t.kind == tIdent && p.toks[p.pos+1].s == ":" && t.s[0] != '.' && t.s[0] != '%' {
		p.pos += 2
		s.label = t.s
		return s, nil
	}
	if p.accept("@") {
		s.gneg = p.accept("!")
		g := p.next()
		if g.kind != tIdent || g.s[0] != '%' {
			return s, p.errf(g, "want a predicate guard, found %q", g.s)
		}
		s.guard = g.s
	}
	op := p.next()
	if op.kind != tIdent || op.s[0] == '.' || op.s[0] == '%' {
		return s, p.errf(op, "want an instruction, found %q", op.s)
	}
	s.op = op.s
	if p.accept(";") {
		return s, nil
	}
	for {
		a, err := p.operand()
		if err != nil {
			return s, err
		}
		s.args = append(s.args, a)
		if p.accept(";") {
			return s, nil
		}
		if err := p.expect(","); err != nil {
			return s, err
		}
	}
}

func (p *parser) operand() (operand, error) {
	t := p.peek()
	o := operand{line: t.line}
	switch {
	case t.s == "[" && t.kind == tPunct:
		p.next()
		b := p.next()
		if b.kind == tNum {
			// [immediate]: an absolute address.
			v, err := parseInt(b.s)
			if err != nil {
				return o, p.errf(b, "%v", err)
			}
			o.kind, o.off = oAddr, v
			return o, p.expect("]")
		}
		if b.kind != tIdent {
			return o, p.errf(b, "want an address base, found %q", b.s)
		}
		o.kind, o.name = oAddr, b.s
		if p.accept(",") {
			// [tensorMap, {c0, c1}]: a TMA tensor map and coordinates.
			v, err := p.operand()
			if err != nil {
				return o, err
			}
			if v.kind != oVec {
				return o, p.errf(b, "want {coordinates} after the tensor map %s", b.s)
			}
			o.elems = v.elems
			return o, p.expect("]")
		}
		if p.accept("+") {
			n, err := p.number()
			if err != nil {
				return o, err
			}
			o.off = n
		} else if p.peek().s == "-" {
			n, err := p.number()
			if err != nil {
				return o, err
			}
			o.off = n
		}
		return o, p.expect("]")
	case t.s == "{" && t.kind == tPunct:
		p.next()
		o.kind = oVec
		for {
			e := p.next()
			if e.kind != tIdent && e.kind != tNum {
				return o, p.errf(e, "want a register or an integer in a vector, found %q", e.s)
			}
			o.elems = append(o.elems, e.s)
			if p.accept("}") {
				return o, nil
			}
			if err := p.expect(","); err != nil {
				return o, err
			}
		}
	case t.s == "!" && t.kind == tPunct:
		p.next()
		r := p.next()
		if r.kind != tIdent {
			return o, p.errf(r, "want a predicate after !, found %q", r.s)
		}
		o.kind, o.name, o.neg = oReg, r.s, true
		return o, nil
	case t.kind == tIdent:
		p.next()
		o.kind, o.name = oReg, t.s
		if p.accept("|") {
			q := p.next()
			if q.kind != tIdent {
				return o, p.errf(q, "want a predicate after |, found %q", q.s)
			}
			o.pipe = q.s
		}
		return o, nil
	case t.kind == tNum || t.s == "-":
		neg := false
		if t.s == "-" {
			p.next()
			neg = true
		}
		n := p.next()
		if n.kind != tNum {
			return o, p.errf(n, "want a number, found %q", n.s)
		}
		s := n.s
		switch {
		case len(s) == 10 && (s[:2] == "0f" || s[:2] == "0F"):
			u, err := strconv.ParseUint(s[2:], 16, 32)
			if err != nil {
				return o, p.errf(n, "bad f32 immediate %s", s)
			}
			if neg {
				u ^= 1 << 31
			}
			o.kind, o.u, o.fbits = oFloat, u, 32
		case len(s) == 18 && (s[:2] == "0d" || s[:2] == "0D"):
			u, err := strconv.ParseUint(s[2:], 16, 64)
			if err != nil {
				return o, p.errf(n, "bad f64 immediate %s", s)
			}
			if neg {
				u ^= 1 << 63
			}
			o.kind, o.u, o.fbits = oFloat, u, 64
		case strings.ContainsAny(s, ".eE") && !strings.HasPrefix(s, "0x"):
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return o, p.errf(n, "bad float %s", s)
			}
			if neg {
				f = -f
			}
			o.kind, o.fbits = oFloat, 0
			o.u = float64bits(f)
		default:
			v, err := parseInt(s)
			if err != nil {
				return o, p.errf(n, "bad integer %s", s)
			}
			if neg {
				v = -v
			}
			o.kind, o.i = oImm, v
		}
		return o, nil
	}
	return o, p.errf(t, "unexpected %q in operands", t.s)
}

// typeBytes is the size of a PTX fundamental type, 0 if unknown.
func typeBytes(t string) int {
	pt, _ := parseType(t)
	return pt.bytes()
}

// regBits is the width of a register type; 1 for pred, 0 if unknown.
func regBits(t string) int {
	if t == "pred" {
		return 1
	}
	return 8 * typeBytes(t)
}
