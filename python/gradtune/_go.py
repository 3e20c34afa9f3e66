"""What the Go implementation does that Python does differently by
default: encoding/json's decoding into typed fields, and the formatting of
numbers and strings in messages. One place, so that every module decodes
and prints as configs and contract do."""

import json
import math
from decimal import Decimal

from .errors import DecodeError

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class _Float(float):
    """A JSON number written with a fraction or an exponent."""


def _refuse_constant(name):
    raise DecodeError(f"invalid character {name[0]!r} looking for beginning of value")


def loads(text):
    """json.loads as encoding/json reads: no NaN or Infinity, numbers with a
    fraction or exponent told apart from integers."""
    return json.loads(text, parse_float=_Float, parse_constant=_refuse_constant)


def _kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _mismatch(v, where, gotype):
    return DecodeError(f"json: cannot unmarshal {_kind(v)} into {where} of type {gotype}")


def as_int(v, where):
    """An int field: a JSON integer in int64 range; null is 0."""
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _mismatch(v, where, "int")
    if isinstance(v, float) or not INT64_MIN <= v <= INT64_MAX:
        raise DecodeError(f"json: cannot unmarshal number {v} into {where} of type int")
    return v


def as_float(v, where):
    """A float64 field: any finite JSON number; null is 0."""
    if v is None:
        return 0.0
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _mismatch(v, where, "float64")
    f = float(v)
    if math.isinf(f):
        raise DecodeError(f"json: cannot unmarshal number {v} into {where} of type float64")
    return f


def as_str(v, where):
    """A string field; null is ""."""
    if v is None:
        return ""
    if not isinstance(v, str):
        raise _mismatch(v, where, "string")
    return v


def as_bool(v, where):
    """A bool field; null is false."""
    if v is None:
        return False
    if not isinstance(v, bool):
        raise _mismatch(v, where, "bool")
    return v


def as_list(v, where):
    """A slice field; null is empty."""
    if v is None:
        return []
    if not isinstance(v, list):
        raise _mismatch(v, where, "slice")
    return v


def as_array(v, n, elem, where):
    """A Go array [n]T: a shorter JSON array is padded with T's zero value
    (elem(None)), a longer one cut to n, as encoding/json does."""
    if v is None:
        v = []
    if not isinstance(v, list):
        raise _mismatch(v, where, f"[{n}]")
    return [elem(x) for x in v[:n]] + [elem(None) for _ in range(n - min(n, len(v)))]


def as_object(v, where):
    """A struct or map field: an object (its key/value pairs in order), or
    None for null."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise _mismatch(v, where, "struct")
    return v


def fields(v, names, where):
    """The fields of a struct decoded from object v with unknown fields
    refused (Decoder.DisallowUnknownFields): each key matched to a name
    exactly or else ignoring case, a later key replacing an earlier one.
    Names not given are absent from the result; null is an empty struct."""
    obj = as_object(v, where)
    out = {}
    if obj is None:
        return out
    lower = {n.lower(): n for n in names}
    for key, val in obj.items():
        name = key if key in names else lower.get(key.lower())
        if name is None:
            raise DecodeError(f'json: unknown field "{key}"')
        out[name] = val
    return out


_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def trim_space(s):
    """strings.TrimSpace."""
    return s.strip(_GO_SPACE)


def equal_fold(a, b):
    """strings.EqualFold: equal under simple case folding, rune by rune."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x != y and x.lower() != y.lower() and x.upper() != y.upper():
            return False
    return True


def _digits(v):
    """The shortest decimal digits of v and its decimal exponent: v =
    0.d1d2... × 10^point."""
    d = Decimal(repr(v)).normalize()
    sign, digits, exp = d.as_tuple()
    return "".join(map(str, digits)), len(digits) + exp


def format_f(v):
    """strconv.FormatFloat(v, 'f', -1, 64)."""
    if v == 0:
        return "0"
    s = format(Decimal(repr(v)), "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def format_v(v):
    """fmt's %v of a float64: %g with the shortest digits, exponent form
    when the exponent is < -4 or >= 6 (Go's shortest %g)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0:
        return "-0" if math.copysign(1, v) < 0 else "0"
    sign = "-" if v < 0 else ""
    digits, point = _digits(abs(v))
    exp = point - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + format_f(abs(v))


def format_ints(vs):
    """%v of a []int or [3]int: [1 2 3]."""
    return "[" + " ".join(str(v) for v in vs) + "]"
