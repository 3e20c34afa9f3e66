package configs

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads an expression in the grammar of Expr.
func ParseExpr(s string) (Expr, error) {
	p := &exprParser{src: s}
	e, err := p.expr()
	if err == nil {
		p.space()
		if p.pos < len(p.src) {
			err = fmt.Errorf("unexpected %q", p.src[p.pos:])
		}
	}
	if err != nil {
		return Expr{}, fmt.Errorf("expression %q: %w", s, err)
	}
	return e, nil
}

type exprParser struct {
	src string
	pos int
}

func (p *exprParser) space() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
}

// peek skips spaces and returns the next byte, or 0 at the end.
func (p *exprParser) peek() byte {
	p.space()
	if p.pos == len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *exprParser) expect(c byte) error {
	if p.peek() != c {
		return fmt.Errorf("want %q at offset %d", c, p.pos)
	}
	p.pos++
	return nil
}

func (p *exprParser) expr() (Expr, error) {
	e, err := p.term()
	for err == nil {
		c := p.peek()
		if c != '+' && c != '-' {
			return e, nil
		}
		p.pos++
		var t Expr
		if t, err = p.term(); err == nil {
			if c == '+' {
				e = e.Plus(t)
			} else {
				e = e.Minus(t)
			}
		}
	}
	return Expr{}, err
}

func (p *exprParser) term() (Expr, error) {
	e, err := p.factor()
	for err == nil {
		if p.peek() != '*' {
			return e, nil
		}
		p.pos++
		var f Expr
		if f, err = p.factor(); err == nil {
			e = e.Times(f)
		}
	}
	return Expr{}, err
}

var fnOps = map[string]func(a, b Expr) Expr{"cdiv": CeilDiv, "div": Div, "min": Min, "max": Max}

func (p *exprParser) factor() (Expr, error) {
	c := p.peek()
	switch {
	case c == '(':
		p.pos++
		e, err := p.expr()
		if err != nil {
			return Expr{}, err
		}
		return e, p.expect(')')
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		p.pos++
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		v, err := strconv.ParseInt(p.src[start:p.pos], 10, 64)
		if err != nil {
			return Expr{}, fmt.Errorf("number %q: %w", p.src[start:p.pos], err)
		}
		return Const(v), nil
	case c >= 'a' && c <= 'z':
		start := p.pos
		for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
			p.pos++
		}
		name := p.src[start:p.pos]
		fn, ok := fnOps[name]
		if !ok {
			return Var(name), nil
		}
		if err := p.expect('('); err != nil {
			return Expr{}, fmt.Errorf("%s: %w", name, err)
		}
		a, err := p.expr()
		if err != nil {
			return Expr{}, err
		}
		if err := p.expect(','); err != nil {
			return Expr{}, fmt.Errorf("%s: %w", name, err)
		}
		b, err := p.expr()
		if err != nil {
			return Expr{}, err
		}
		return fn(a, b), p.expect(')')
	case c == 0:
		return Expr{}, fmt.Errorf("unexpected end")
	}
	return Expr{}, fmt.Errorf("unexpected %q at offset %d (want a number, a name, a call of %s, or a parenthesis)", c, p.pos, strings.Join([]string{"cdiv", "div", "min", "max"}, ", "))
}

func isNameByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' }
