"""Integer expressions of the launch contract (Go: package configs, Expr).

An expression is over named variables: the shape's dims ("m", "n", ...)
and "sms", the device's multiprocessor count. The text form is the grammar

    expr   = term { ("+" | "-") term }
    term   = factor { "*" factor }
    factor = integer | name | fn "(" expr "," expr ")" | "(" expr ")"
    fn     = "cdiv" | "div" | "min" | "max"

where div is floor division of non-negative values and cdiv is ceil(a/b);
names are a lower-case letter followed by lower-case letters, digits and
underscores. Evaluation is in int64 and fails on overflow, on a division by
a value <= 0 and on a variable the environment does not give.

Rules shared with the Go implementation, word for word in the errors:
  - constructors fold constants and the identities x+0, x-0, x*1, x*0,
    div(x, 1) and cdiv(x, 1); a constant operation that cannot be
    evaluated (a division by zero, an overflow) is kept as written, so
    that evaluating it reports the error;
  - str() prints the grammar with no more parentheses than precedence
    needs, and parse(str(e)) is e.
"""

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_CONST, _VAR, _ADD, _SUB, _MUL, _DIV, _CDIV, _MIN, _MAX = range(9)
_FN_NAMES = {_DIV: "div", _CDIV: "cdiv", _MIN: "min", _MAX: "max"}
_INFIX = {_ADD: " + ", _SUB: " - ", _MUL: "*"}


class ExprError(ValueError):
    """An expression that cannot be parsed or evaluated."""


class Expr:
    """An immutable integer expression; Expr() is the constant 0."""

    __slots__ = ("op", "value", "name", "a", "b")

    def __init__(self, op=_CONST, value=0, name="", a=None, b=None):
        self.op, self.value, self.name, self.a, self.b = op, value, name, a, b

    def const_value(self):
        """The value of a constant expression, else None."""
        return self.value if self.op == _CONST else None

    def is_const(self):
        return self.op == _CONST

    def eval(self, env):
        """The value in env (a mapping of names to ints)."""
        if self.op == _CONST:
            return self.value
        if self.op == _VAR:
            if self.name not in env:
                names = ", ".join(sorted(env)) or "none"
                raise ExprError(f'variable "{self.name}" has no value (given: {names})')
            return env[self.name]
        a = self.a.eval(env)
        b = self.b.eval(env)
        try:
            return _apply(self.op, a, b)
        except ExprError as e:
            raise ExprError(f"{self}: {e}") from None

    def eval_int(self, env):
        """eval for a value that must be >= 0."""
        v = self.eval(env)
        if v < 0:
            raise ExprError(f"{self} = {v}: want a value ≥ 0")
        return v

    def vars(self):
        """The variables, sorted."""
        out = set()

        def walk(e):
            if e is None:
                return
            if e.op == _VAR:
                out.add(e.name)
            walk(e.a)
            walk(e.b)

        walk(self)
        return sorted(out)

    def __str__(self):
        parts = []
        self._print(parts, 0)
        return "".join(parts)

    def __repr__(self):
        return f"Expr({str(self)!r})"

    def __eq__(self, other):
        return isinstance(other, Expr) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    def _precedence(self):
        if self.op in (_ADD, _SUB):
            return 1
        if self.op == _MUL:
            return 2
        return 3

    def _print(self, out, outer):
        if self.op == _CONST:
            out.append(f"({self.value})" if self.value < 0 and outer > 0 else str(self.value))
            return
        if self.op == _VAR:
            out.append(self.name)
            return
        if self.op in _FN_NAMES:
            out.append(_FN_NAMES[self.op] + "(")
            self.a._print(out, 0)
            out.append(", ")
            self.b._print(out, 0)
            out.append(")")
            return
        p = self._precedence()
        if p < outer:
            out.append("(")
        self.a._print(out, p)
        out.append(_INFIX[self.op])
        # The right operand of - and of a left-associative chain binds tighter.
        self.b._print(out, p + 1)
        if p < outer:
            out.append(")")

    def __add__(self, o):
        return binary(_ADD, self, lift(o))

    def __sub__(self, o):
        return binary(_SUB, self, lift(o))

    def __mul__(self, o):
        return binary(_MUL, self, lift(o))


def const(v):
    """The constant v."""
    return Expr(_CONST, int(v))


def var(name):
    """The variable name."""
    return Expr(_VAR, name=name)


def lift(v):
    return v if isinstance(v, Expr) else const(v)


def cdiv(a, b):
    return binary(_CDIV, lift(a), lift(b))


def div(a, b):
    return binary(_DIV, lift(a), lift(b))


def emin(a, b):
    return binary(_MIN, lift(a), lift(b))


def emax(a, b):
    return binary(_MAX, lift(a), lift(b))


def binary(op, a, b):
    """a op b, folding constants and identities as the module doc says."""
    av, bv = a.const_value(), b.const_value()
    if av is not None and bv is not None:
        try:
            return const(_apply(op, av, bv))
        except ExprError:
            pass
    if op in (_ADD, _SUB) and bv == 0:
        return a
    if op == _ADD and av == 0:
        return b
    if op == _MUL and (av == 0 or bv == 0):
        return Expr()
    if (op == _MUL or op in (_DIV, _CDIV)) and bv == 1:
        return a
    if op == _MUL and av == 1:
        return b
    return Expr(op, a=a, b=b)


def _apply(op, a, b):
    if op == _ADD:
        v = a + b
        if not INT64_MIN <= v <= INT64_MAX:
            raise ExprError(f"{a} + {b} overflows")
        return v
    if op == _SUB:
        v = a - b
        if not INT64_MIN <= v <= INT64_MAX:
            raise ExprError(f"{a} - {b} overflows")
        return v
    if op == _MUL:
        v = a * b
        if not INT64_MIN <= v <= INT64_MAX:
            raise ExprError(f"{a} * {b} overflows")
        return v
    if op in (_DIV, _CDIV):
        if b <= 0 or a < 0:
            raise ExprError(f"{_FN_NAMES[op]}({a}, {b}): want a ≥ 0 and b > 0")
        return -(-a // b) if op == _CDIV else a // b
    if op == _MIN:
        return min(a, b)
    if op == _MAX:
        return max(a, b)
    raise ExprError(f"unknown operation {op}")


_FNS = {"cdiv": _CDIV, "div": _DIV, "min": _MIN, "max": _MAX}


def parse(text):
    """Reads an expression in the grammar of the module doc."""
    # Go parses bytes: the parser walks the UTF-8 bytes, one character each.
    p = _Parser(text.encode().decode("latin-1"))
    try:
        e = p.expr()
        p.space()
        if p.pos < len(p.src):
            rest = p.src[p.pos :].encode("latin-1").decode(errors="replace")
            raise ExprError(f"unexpected {_go_quote(rest)}")
    except ExprError as err:
        raise ExprError(f"expression {_go_quote(text)}: {err}") from None
    return e


class _Parser:
    def __init__(self, src):
        self.src, self.pos = src, 0

    def space(self):
        while self.pos < len(self.src) and self.src[self.pos] == " ":
            self.pos += 1

    def peek(self):
        self.space()
        return self.src[self.pos] if self.pos < len(self.src) else ""

    def expect(self, c):
        if self.peek() != c:
            raise ExprError(f"want {_go_quote_char(c)} at offset {self._offset()}")
        self.pos += 1

    def _offset(self):
        return self.pos

    def expr(self):
        e = self.term()
        while True:
            c = self.peek()
            if c not in ("+", "-"):
                return e
            self.pos += 1
            t = self.term()
            e = binary(_ADD if c == "+" else _SUB, e, t)

    def term(self):
        e = self.factor()
        while self.peek() == "*":
            self.pos += 1
            e = binary(_MUL, e, self.factor())
        return e

    def factor(self):
        c = self.peek()
        if c == "(":
            self.pos += 1
            e = self.expr()
            self.expect(")")
            return e
        if c == "-" or "0" <= c <= "9" and c != "":
            start = self.pos
            self.pos += 1
            while self.pos < len(self.src) and "0" <= self.src[self.pos] <= "9":
                self.pos += 1
            return const(_parse_int64(self.src[start : self.pos]))
        if c != "" and "a" <= c <= "z":
            start = self.pos
            while self.pos < len(self.src) and _is_name_char(self.src[self.pos]):
                self.pos += 1
            name = self.src[start : self.pos]
            if name not in _FNS:
                return var(name)
            try:
                self.expect("(")
            except ExprError as e:
                raise ExprError(f"{name}: {e}") from None
            a = self.expr()
            try:
                self.expect(",")
            except ExprError as e:
                raise ExprError(f"{name}: {e}") from None
            b = self.expr()
            e = binary(_FNS[name], a, b)
            self.expect(")")
            return e
        if c == "":
            raise ExprError("unexpected end")
        raise ExprError(
            f"unexpected {_go_quote_char(c)} at offset {self._offset()} "
            "(want a number, a name, a call of cdiv, div, min, max, or a parenthesis)"
        )


def _is_name_char(c):
    return "a" <= c <= "z" or "0" <= c <= "9" or c == "_"


def _parse_int64(text):
    digits = text[1:] if text.startswith("-") else text
    if not digits:
        raise ExprError(f'number "{text}": strconv.ParseInt: parsing "{text}": invalid syntax')
    v = int(text)
    if not INT64_MIN <= v <= INT64_MAX:
        raise ExprError(f'number "{text}": strconv.ParseInt: parsing "{text}": value out of range')
    return v


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _go_escape(c, quote):
    if c == quote or c == "\\":
        return "\\" + c
    if c in _ESCAPES:
        return _ESCAPES[c]
    if c == " " or (c.isprintable() and not c.isspace()):
        return c
    o = ord(c)
    if o < 0x80:
        return "\\x%02x" % o
    return "\\u%04x" % o if o <= 0xFFFF else "\\U%08x" % o


def _go_quote(s):
    """Go's %q of a string."""
    return '"' + "".join(_go_escape(c, '"') for c in s) + '"'


def _go_quote_char(c):
    """Go's %q of a byte: the rune literal of its value."""
    return "'" + _go_escape(c, "'") + "'"
