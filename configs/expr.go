package configs

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Expr is an integer expression over named variables: the shape's dims
// ("m", "n", ...) and "sms", the device's multiprocessor count. The zero
// Expr is the constant 0. Expressions are immutable; the constructors fold
// constants, so an expression without variables is always a plain constant.
//
// The text form (String, Parse) is the grammar
//
//	expr   = term { ("+" | "-") term }
//	term   = factor { "*" factor }
//	factor = integer | name | fn "(" expr "," expr ")" | "(" expr ")"
//	fn     = "cdiv" | "div" | "min" | "max"
//
// where div is floor division of non-negative values and cdiv is ⌈a/b⌉;
// names are a lower-case letter followed by lower-case letters, digits and
// underscores. Evaluation is in int64 and fails on overflow, on a division
// by a value ≤ 0 and on a variable the environment does not give.
type Expr struct{ n *node }

type op byte

const (
	opConst op = iota
	opVar
	opAdd
	opSub
	opMul
	opDiv
	opCeilDiv
	opMin
	opMax
)

var fnNames = map[op]string{opDiv: "div", opCeilDiv: "cdiv", opMin: "min", opMax: "max"}

type node struct {
	op   op
	v    int64
	name string
	a, b *node
}

// Int is the constant v.
func Int(v int) Expr { return Const(int64(v)) }

// Const is the constant v.
func Const(v int64) Expr {
	if v == 0 {
		return Expr{}
	}
	return Expr{&node{op: opConst, v: v}}
}

// Var is the variable name.
func Var(name string) Expr { return Expr{&node{op: opVar, name: name}} }

// Ints is the constants of vs.
func Ints(vs ...int) []Expr {
	out := make([]Expr, len(vs))
	for i, v := range vs {
		out[i] = Int(v)
	}
	return out
}

// Grid is the constant grid {x, y, z}.
func Grid(x, y, z int) [3]Expr { return [3]Expr{Int(x), Int(y), Int(z)} }

// Value is e's value when it is a constant.
func (e Expr) Value() (int64, bool) {
	if e.n == nil {
		return 0, true
	}
	return e.n.v, e.n.op == opConst
}

// IsConst reports whether e has no variables.
func (e Expr) IsConst() bool { _, ok := e.Value(); return ok }

// isZero reports whether e is the constant 0.
func isZero(e Expr) bool { v, ok := e.Value(); return ok && v == 0 }

func (e Expr) node() *node {
	if e.n == nil {
		return &node{op: opConst}
	}
	return e.n
}

// binary builds a op b, folding constants and the identities x+0, x−0,
// x·1, x·0, div(x, 1) and cdiv(x, 1). A constant operation that cannot be
// evaluated (a division by zero, an overflow) is kept as written, so that
// evaluating it reports the error.
func binaryExpr(o op, a, b Expr) Expr {
	av, ac := a.Value()
	bv, bc := b.Value()
	if ac && bc {
		if v, err := apply(o, av, bv); err == nil {
			return Const(v)
		}
	}
	switch {
	case (o == opAdd || o == opSub) && bc && bv == 0:
		return a
	case o == opAdd && ac && av == 0:
		return b
	case o == opMul && ((ac && av == 0) || (bc && bv == 0)):
		return Expr{}
	case o == opMul && bc && bv == 1, (o == opDiv || o == opCeilDiv) && bc && bv == 1:
		return a
	case o == opMul && ac && av == 1:
		return b
	}
	return Expr{&node{op: o, a: a.node(), b: b.node()}}
}

// Plus is e + o.
func (e Expr) Plus(o Expr) Expr { return binaryExpr(opAdd, e, o) }

// Minus is e − o.
func (e Expr) Minus(o Expr) Expr { return binaryExpr(opSub, e, o) }

// Times is e · o.
func (e Expr) Times(o Expr) Expr { return binaryExpr(opMul, e, o) }

// PlusInt is e + v.
func (e Expr) PlusInt(v int) Expr { return e.Plus(Int(v)) }

// TimesInt is e · v.
func (e Expr) TimesInt(v int) Expr { return e.Times(Int(v)) }

// CeilDiv is ⌈a/b⌉.
func CeilDiv(a, b Expr) Expr { return binaryExpr(opCeilDiv, a, b) }

// Div is ⌊a/b⌋.
func Div(a, b Expr) Expr { return binaryExpr(opDiv, a, b) }

// Min is the smaller of a and b.
func Min(a, b Expr) Expr { return binaryExpr(opMin, a, b) }

// Max is the larger of a and b.
func Max(a, b Expr) Expr { return binaryExpr(opMax, a, b) }

// Env gives the variables' values.
type Env map[string]int64

func (env Env) names() string {
	var out []string
	for k := range env {
		out = append(out, k)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Eval computes e in env.
func (e Expr) Eval(env Env) (int64, error) { return e.node().eval(env) }

// EvalInt is Eval for a value that must fit an int of at least 0.
func (e Expr) EvalInt(env Env) (int, error) {
	v, err := e.Eval(env)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, fmt.Errorf("%s = %d: want a value ≥ 0", e, v)
	}
	return int(v), nil
}

func (n *node) eval(env Env) (int64, error) {
	switch n.op {
	case opConst:
		return n.v, nil
	case opVar:
		v, ok := env[n.name]
		if !ok {
			return 0, fmt.Errorf("variable %q has no value (given: %s)", n.name, env.names())
		}
		return v, nil
	}
	a, err := n.a.eval(env)
	if err != nil {
		return 0, err
	}
	b, err := n.b.eval(env)
	if err != nil {
		return 0, err
	}
	v, err := apply(n.op, a, b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", Expr{n}, err)
	}
	return v, nil
}

func apply(o op, a, b int64) (int64, error) {
	switch o {
	case opAdd:
		if (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b) {
			return 0, fmt.Errorf("%d + %d overflows", a, b)
		}
		return a + b, nil
	case opSub:
		if (b < 0 && a > math.MaxInt64+b) || (b > 0 && a < math.MinInt64+b) {
			return 0, fmt.Errorf("%d - %d overflows", a, b)
		}
		return a - b, nil
	case opMul:
		if a != 0 && b != 0 && (a*b/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64)) {
			return 0, fmt.Errorf("%d * %d overflows", a, b)
		}
		return a * b, nil
	case opDiv, opCeilDiv:
		if b <= 0 || a < 0 {
			return 0, fmt.Errorf("%s(%d, %d): want a ≥ 0 and b > 0", fnNames[o], a, b)
		}
		if o == opCeilDiv {
			return a/b + min(a%b, 1), nil
		}
		return a / b, nil
	case opMin:
		return min(a, b), nil
	case opMax:
		return max(a, b), nil
	}
	return 0, fmt.Errorf("unknown operation %d", o)
}

// Subst is e with every occurrence of the variable name replaced by by,
// folded as the constructors fold.
func (e Expr) Subst(name string, by Expr) Expr {
	var walk func(*node) Expr
	walk = func(n *node) Expr {
		switch {
		case n == nil:
			return Expr{}
		case n.op == opVar && n.name == name:
			return by
		case n.op == opConst || n.op == opVar:
			return Expr{n}
		}
		return binaryExpr(n.op, walk(n.a), walk(n.b))
	}
	return walk(e.n)
}

// Vars lists e's variables, sorted.
func (e Expr) Vars() []string {
	var out []string
	var walk func(*node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.op == opVar && !slices.Contains(out, n.name) {
			out = append(out, n.name)
		}
		walk(n.a)
		walk(n.b)
	}
	walk(e.n)
	slices.Sort(out)
	return out
}

// String prints e in the grammar Parse reads, with no more parentheses
// than precedence needs.
func (e Expr) String() string {
	var b strings.Builder
	e.node().print(&b, 0)
	return b.String()
}

// Equal reports whether e and o are the same expression (the same text).
func (e Expr) Equal(o Expr) bool { return e.String() == o.String() }

// precedence: 1 for + and −, 2 for ·, 3 for atoms and calls.
func (n *node) precedence() int {
	switch n.op {
	case opAdd, opSub:
		return 1
	case opMul:
		return 2
	}
	return 3
}

func (n *node) print(b *strings.Builder, outer int) {
	switch n.op {
	case opConst:
		if n.v < 0 && outer > 0 {
			fmt.Fprintf(b, "(%d)", n.v)
			return
		}
		b.WriteString(strconv.FormatInt(n.v, 10))
		return
	case opVar:
		b.WriteString(n.name)
		return
	}
	if name, ok := fnNames[n.op]; ok {
		b.WriteString(name + "(")
		n.a.print(b, 0)
		b.WriteString(", ")
		n.b.print(b, 0)
		b.WriteString(")")
		return
	}
	p := n.precedence()
	if p < outer {
		b.WriteString("(")
	}
	n.a.print(b, p)
	b.WriteString(map[op]string{opAdd: " + ", opSub: " - ", opMul: "*"}[n.op])
	// The right operand of − and of a left-associative chain binds tighter.
	n.b.print(b, p+1)
	if p < outer {
		b.WriteString(")")
	}
}

// MarshalJSON writes a constant as a JSON number and any other expression
// as its text.
func (e Expr) MarshalJSON() ([]byte, error) {
	if v, ok := e.Value(); ok {
		return []byte(strconv.FormatInt(v, 10)), nil
	}
	return json.Marshal(e.String())
}

// UnmarshalJSON reads a JSON number or an expression's text.
func (e *Expr) UnmarshalJSON(data []byte) error {
	var v int64
	if err := json.Unmarshal(data, &v); err == nil {
		*e = Const(v)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("an expression is a number or a string, not %s", data)
	}
	p, err := ParseExpr(s)
	if err != nil {
		return err
	}
	*e = p
	return nil
}
