"""Tuned config tables (Go: package configs): parse and check a table,
look an entry up by exactly configs.Lookup's rules, and read its PTX.

A table is JSON with a schema version; this package reads schema 2, the
launch contract. parse() refuses a malformed table, an unknown field and
any other schema version (SchemaTooNew, SchemaTooOld), naming what was
wrong, with the messages configs.Parse gives.

Lookup rules (the one specification is python/gradtune/testdata/
lookups.json, the Go answers that both implementations' tests check):
  - The tables of the asked GPU model are those whose name equals the
    asked name ignoring case and surrounding space; the others of the same
    compute capability come next.
  - Exact: the tuned shape. Runtime: the entry tuned closest in
    log-distance (the square root of the summed squared log ratios of the
    sizes) whose PTX computes the asked shape (Entry.launchable: the same
    dims and choices, every dim but the runtime ones at its tuned value,
    the runtime ones integers within their ranges). SameCC: the same
    search among the other tables of the compute capability.
  - Ties go to the first entry in table order (tables in the order given;
    a directory's in sorted path order).
  - hint() is lookup without the launchable condition (rule Nearest when
    the closest shape is not the asked one): which params to prefer.
  - A GPU no table matches, a kernel no table of it holds, a dtype or dims
    nothing was tuned for raise UnknownGPU, UnknownKernel, NoConfig.
"""

import glob
import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from . import _go
from .contract import decode_buffer, decode_launch, resolve
from .errors import (BadProgram, DecodeError, Malformed, NoConfig, NoPTX, NotLaunchable, SchemaTooNew,
                     SchemaTooOld, UnknownGPU, UnknownKernel)

SCHEMA_VERSION = 2

# The multiprocessor count a table's check resolves launches with (the
# H200's); any positive count gives the same verdicts.
CHECK_SMS = 132

EXACT, RUNTIME, SAME_CC, NEAREST = "exact", "runtime dims", "same compute capability", "nearest shape"


# ---- shapes


@dataclass
class Shape:
    """A problem: named sizes ("m": 2048.0) and named choices ("grad": "dx")."""

    sizes: Dict[str, float] = field(default_factory=dict)
    choices: Dict[str, str] = field(default_factory=dict)

    def __str__(self):
        parts = [f"{n}={_go.format_f(v)}" for n, v in self.sizes.items()]
        parts += [f"{n}={v}" for n, v in self.choices.items()]
        return ",".join(sorted(parts))

    def has(self, name):
        return name in self.sizes or name in self.choices

    def distance(self, other):
        """The log-distance to other (same dims and choices), or None."""
        if len(self.sizes) != len(other.sizes) or len(self.choices) != len(other.choices):
            return None
        for n, c in self.choices.items():
            if other.choices.get(n) != c:
                return None
        terms = []
        for n, a in self.sizes.items():
            if n not in other.sizes:
                return None
            d = math.log(a / other.sizes[n])
            terms.append(d * d)
        return math.sqrt(math.fsum(terms))

    def with_sizes(self, **sizes):
        """A copy with the given sizes replaced."""
        s = Shape(dict(self.sizes), dict(self.choices))
        for n, v in sizes.items():
            s.sizes[n] = float(v)
        return s


_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_HEX = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+\Z")
_SPECIAL = re.compile(r"[+-]?(inf|infinity|nan)\Z", re.IGNORECASE)


def _parse_float(v):
    """strconv.ParseFloat's accepted forms (without underscores), or None."""
    if _DECIMAL.match(v) or _SPECIAL.match(v):
        return float(v)
    if _HEX.match(v):
        return float.fromhex(v)
    return None


def parse_shape(s):
    """Reads "m=2048,n=8960" or "m=2048,n=256,k=1536,grad=dw": a value is a
    positive number or, for a choice, a name."""
    out = Shape()
    for kv in s.split(","):
        k, eq, v = _go.trim_space(kv).partition("=")
        if not eq or k == "":
            raise ValueError(f"shape {_q(s)}: {_q(kv)} is not name=value")
        if k == "dtype":
            raise ValueError(f"shape {_q(s)}: give the dtype apart from the dims")
        if out.has(k):
            raise ValueError(f"shape {_q(s)}: {k} given twice")
        if _NAME.match(v):
            out.choices[k] = v
            continue
        f = _parse_float(v)
        if f is None or not f > 0 or math.isinf(f):
            raise ValueError(f"shape {_q(s)}: {k}={v}: want a positive number or a choice's name")
        out.sizes[k] = f
    return out


def _q(s):
    from .expr import _go_quote

    return _go_quote(s)


def _dim_names(s):
    return "{" + ",".join(sorted(list(s.sizes) + [n + "=" for n in s.choices])) + "}"


# ---- tables


@dataclass
class GPU:
    name: str
    cc: str


@dataclass
class Range:
    min: int
    max: int


@dataclass
class Entry:
    """The tuned configuration of one kernel, dtype and shape."""

    kernel: str
    dtype: str
    shape: str
    params: str
    runtime: Dict[str, Range]
    launches: list
    buffers: list
    registers: int
    smem_bytes: int
    median_us: float
    ci_us: List[float]
    baseline: dict
    ptx: str
    ptx_sha256: str
    note: str
    provenance: dict

    @property
    def key(self):
        """"kernel dtype shape", the identity of an entry within a table."""
        return f"{self.kernel} {self.dtype} {self.shape}"

    def tuned_shape(self):
        return parse_shape(self.shape)

    def launchable(self, shape):
        """Raises NotLaunchable unless the entry's PTX computes shape: the
        same dims and choices, every dim but the runtime ones at its tuned
        value, the runtime ones integers within their ranges."""
        tuned = self.tuned_shape()
        if _dim_names(tuned) != _dim_names(shape):
            raise NotLaunchable(f"{shape} has dims {_dim_names(shape)}, the table's {self.key} has {_dim_names(tuned)}")
        for n in sorted(tuned.choices):
            c = tuned.choices[n]
            if shape.choices.get(n) != c:
                raise NotLaunchable(f"{n}={shape.choices.get(n, '')}: the entry is for {n}={c}")
        for n in sorted(tuned.sizes):
            v, got = tuned.sizes[n], shape.sizes[n]
            r = self.runtime.get(n)
            if r is None and got != v:
                raise NotLaunchable(f"{n}={_go.format_v(got)}: the entry's PTX computes {n}={_go.format_v(v)} only")
            if r is not None and (got != math.trunc(got) or got < r.min or got > r.max):
                raise NotLaunchable(f"{n}={_go.format_v(got)}: the entry computes {n} from {r.min} to {r.max}")

    def env(self, shape, sms):
        """The environment the launches are evaluated in at shape (which
        must be launchable) on a device of sms multiprocessors."""
        try:
            self.launchable(shape)
        except NotLaunchable as e:
            raise NotLaunchable(f"configs: {self.key}: {e}") from None
        return _env_of(shape, sms)

    def plan(self, shape, sms):
        """The launches and buffers resolved at shape on a device of sms
        multiprocessors."""
        env = self.env(shape, sms)
        try:
            return resolve(self.launches, self.buffers, env)
        except BadProgram as e:
            raise BadProgram(f"configs: {self.key} at {shape}: {e}") from None

    def _check(self):
        if self.kernel == "" or self.dtype == "":
            return "kernel and dtype are required"
        if not self.median_us > 0 or math.isinf(self.median_us):
            return f"median {_go.format_v(self.median_us)} µs: want a finite time > 0"
        if not self.launches:
            return "no launches"
        try:
            sh = self.tuned_shape()
        except ValueError as e:
            return str(e)
        for name in sorted(self.runtime):
            r = self.runtime[name]
            if name not in sh.sizes:
                return f"runtime dim {_q(name)} is not a size of the shape {self.shape}"
            v = sh.sizes[name]
            if r.min < 1 or r.max < r.min or r.min > v or r.max < v:
                return f"runtime dim {name}: range {r.min}..{r.max} must hold the tuned {_go.format_v(v)}"
        # The contract resolves at the tuned shape and at the ends of every
        # runtime range.
        for env in self._check_envs(sh):
            try:
                resolve(self.launches, self.buffers, env)
            except BadProgram as e:
                return f"at {_env_string(env)}: {e}"
        if self.ptx and (any(c in self.ptx for c in "/\\") or self.ptx.startswith(".")):
            return f"ptx {_q(self.ptx)}: want a file name beside the table"
        return None

    def _check_envs(self, tuned):
        envs = [_env_of(tuned, CHECK_SMS)]
        for n in sorted(self.runtime):
            for v in (self.runtime[n].min, self.runtime[n].max):
                env = _env_of(tuned, CHECK_SMS)
                env[n] = v
                envs.append(env)
        return envs


def _env_of(shape, sms):
    env = {"sms": int(sms)}
    for n, v in shape.sizes.items():
        env[n] = int(v)
    return env


def _env_string(env):
    return ",".join(sorted(f"{n}={v}" for n, v in env.items()))


@dataclass
class Table:
    schema: int
    gpu: GPU
    created: str
    source: str
    protocol: dict
    entries: List[Entry]
    directory: Optional[str] = None  # where its PTX files are

    def check(self):
        """Raises Malformed naming the first thing wrong."""

        def bad(msg):
            return Malformed(f"configs: malformed config table: {msg}")

        if self.schema != SCHEMA_VERSION:
            raise bad(f"schema {self.schema}, want {SCHEMA_VERSION}")
        l2 = self.protocol["l2"]
        if l2 not in ("flushed", "warm"):
            raise bad(f"protocol l2 {_q(l2)}: want flushed or warm")
        if _go.trim_space(self.gpu.name) == "" or not re.match(r"[0-9]+\.[0-9]+\Z", self.gpu.cc):
            raise bad(f'gpu {_q(self.gpu.name)} with compute capability {_q(self.gpu.cc)}: want a name and a capability such as "9.0"')
        if not self.entries:
            raise bad("no entries")
        seen = set()
        for i, e in enumerate(self.entries):
            err = e._check()
            if err:
                raise bad(f"entry {i} ({e.key}): {err}")
            if e.key in seen:
                raise bad(f"entry {i}: {e.key} appears twice")
            seen.add(e.key)


_TABLE_FIELDS = ("schema", "gpu", "created", "source", "protocol", "entries")
_ENTRY_FIELDS = ("kernel", "dtype", "shape", "params", "runtime", "launches", "buffers", "registers", "smem_bytes",
                 "median_us", "ci_us", "baseline", "ptx", "ptx_sha256", "note", "provenance")


def parse(data, directory=None):
    """Reads and checks a table (bytes or str of its JSON); directory is
    where its PTX files are."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    try:
        doc = _go.loads(data)
    except (ValueError, DecodeError) as e:
        raise Malformed(f"configs: malformed config table: {e}") from None
    if not isinstance(doc, dict):
        raise Malformed(f"configs: malformed config table: json: cannot unmarshal {type(doc).__name__} into a table")
    schema = None
    for k, v in doc.items():  # the head is matched as encoding/json does: ignoring case
        if k.lower() == "schema":
            schema = v
    try:
        schema = None if schema is None else _go.as_int(schema, "schema")
    except DecodeError as e:
        raise Malformed(f"configs: malformed config table: {e}") from None
    if schema is None:
        raise Malformed('configs: malformed config table: no "schema" version')
    if schema > SCHEMA_VERSION:
        raise SchemaTooNew(f"configs: config table schema is newer than this gradtune knows: the table has schema {schema}, "
                           f"this gradtune reads schema {SCHEMA_VERSION}; use a newer gradtune")
    if schema < SCHEMA_VERSION:
        raise SchemaTooOld(f"configs: config table schema is older than this gradtune reads: the table has schema {schema}, "
                           f"this gradtune reads schema {SCHEMA_VERSION}; export it again with this gradtune (tune export)")
    try:
        t = _decode_table(doc)
    except DecodeError as e:
        raise Malformed(f"configs: malformed config table: {e}") from None
    t.directory = directory
    t.check()
    return t


def _decode_table(doc):
    f = _go.fields(doc, _TABLE_FIELDS, "table")
    g = _go.fields(f.get("gpu"), ("name", "cc"), "gpu")
    p = _go.fields(f.get("protocol"), ("l2", "timer", "warmup", "statistic"), "protocol")
    protocol = {"l2": _go.as_str(p.get("l2"), "protocol.l2"), "timer": _go.as_str(p.get("timer"), "protocol.timer"),
                "warmup": _go.as_int(p.get("warmup"), "protocol.warmup"),
                "statistic": _go.as_str(p.get("statistic"), "protocol.statistic")}
    return Table(
        schema=_go.as_int(f.get("schema"), "schema"),
        gpu=GPU(_go.as_str(g.get("name"), "gpu.name"), _go.as_str(g.get("cc"), "gpu.cc")),
        created=_go.as_str(f.get("created"), "created"), source=_go.as_str(f.get("source"), "source"),
        protocol=protocol, entries=[_decode_entry(e) for e in _go.as_list(f.get("entries"), "entries")])


def _decode_entry(v):
    f = _go.fields(v, _ENTRY_FIELDS, "entry")
    runtime = {}
    rt = _go.as_object(f.get("runtime"), "entry.runtime")
    for name, r in (rt or {}).items():
        rf = _go.fields(r, ("min", "max"), "range")
        runtime[name] = Range(_go.as_int(rf.get("min"), "range.min"), _go.as_int(rf.get("max"), "range.max"))
    b = _go.fields(f.get("baseline"), ("name", "params", "median_us"), "baseline")
    pv = _go.fields(f.get("provenance"), ("run", "date", "driver", "tool", "args"), "provenance")
    return Entry(
        kernel=_go.as_str(f.get("kernel"), "entry.kernel"), dtype=_go.as_str(f.get("dtype"), "entry.dtype"),
        shape=_go.as_str(f.get("shape"), "entry.shape"), params=_go.as_str(f.get("params"), "entry.params"),
        runtime=runtime,
        launches=[decode_launch(l) for l in _go.as_list(f.get("launches"), "entry.launches")],
        buffers=[decode_buffer(x) for x in _go.as_list(f.get("buffers"), "entry.buffers")],
        registers=_go.as_int(f.get("registers"), "entry.registers"),
        smem_bytes=_go.as_int(f.get("smem_bytes"), "entry.smem_bytes"),
        median_us=_go.as_float(f.get("median_us"), "entry.median_us"),
        ci_us=_go.as_array(f.get("ci_us"), 2, lambda x: _go.as_float(x, "entry.ci_us"), "entry.ci_us"),
        baseline={"name": _go.as_str(b.get("name"), "baseline.name"), "params": _go.as_str(b.get("params"), "baseline.params"),
                  "median_us": _go.as_float(b.get("median_us"), "baseline.median_us")},
        ptx=_go.as_str(f.get("ptx"), "entry.ptx"), ptx_sha256=_go.as_str(f.get("ptx_sha256"), "entry.ptx_sha256"),
        note=_go.as_str(f.get("note"), "entry.note"),
        provenance={"run": _go.as_int(pv.get("run"), "provenance.run"), "date": _go.as_str(pv.get("date"), "provenance.date"),
                    "driver": _go.as_str(pv.get("driver"), "provenance.driver"),
                    "tool": _go.as_str(pv.get("tool"), "provenance.tool"), "args": _go.as_str(pv.get("args"), "provenance.args")})


# ---- sets of tables and lookup


@dataclass
class Match:
    """Lookup's answer: the entry, its table, the rule that chose it, the
    log-distance from the asked shape and the asked shape."""

    entry: Entry
    table: Table
    rule: str
    distance: float
    shape: Shape

    def plan(self, sms):
        """The entry's launches and buffers at the asked shape on a device of
        sms multiprocessors."""
        return self.entry.plan(self.shape, sms)


class Set:
    """Tables in order (their order breaks lookup ties)."""

    def __init__(self, tables):
        self.tables = list(tables)

    def lookup(self, gpu, kernel, dtype, shape):
        """The entry to launch for kernel in dtype at shape on gpu (see the
        module doc)."""
        return self._find(gpu, kernel, dtype, _shape(shape), True)

    def hint(self, gpu, kernel, dtype, shape):
        """The entry tuned closest to shape, launchable there or not."""
        return self._find(gpu, kernel, dtype, _shape(shape), False)

    def _find(self, gpu, kernel, dtype, shape, launchable):
        ask = f"{kernel} {dtype} {shape} on {gpu.name} (cc {gpu.cc})"
        same, cc = self._by_gpu(gpu)
        if not same and not cc:
            names = [f"{t.gpu.name} (cc {t.gpu.cc})" for t in self.tables]
            raise UnknownGPU(f"configs: {ask}: no config table for this GPU (tables: {_unique_sorted(names)})")
        both = same + cc
        if not any(e.kernel == kernel for t in both for e in t.entries):
            kernels = [e.kernel for t in both for e in t.entries]
            raise UnknownKernel(f"configs: {ask}: no config for this kernel (kernels for this GPU: {_unique_sorted(kernels)})")
        m = _closest(same, kernel, dtype, shape, launchable)
        if m is not None:
            return m
        m = _closest(cc, kernel, dtype, shape, launchable)
        if m is not None:
            m.rule = SAME_CC
            return m
        tuned = [f"{e.dtype} {e.shape}" for t in both for e in t.entries if e.kernel == kernel]
        raise NoConfig(f"configs: {ask}: no config for this dtype and shape (tuned: {_unique_sorted(tuned)})")

    def _by_gpu(self, gpu):
        same, cc = [], []
        for t in self.tables:
            if gpu.name != "" and _go.equal_fold(_go.trim_space(t.gpu.name), _go.trim_space(gpu.name)):
                same.append(t)
            elif gpu.cc != "" and t.gpu.cc == gpu.cc:
                cc.append(t)
        return same, cc

    def ptx(self, match):
        """The PTX text of the match's entry, checked against its sha256."""
        return entry_ptx(match.table, match.entry)


def _shape(shape):
    return parse_shape(shape) if isinstance(shape, str) else shape


def _closest(tables, kernel, dtype, shape, launchable):
    best = None
    for t in tables:
        for e in t.entries:
            if e.kernel != kernel or e.dtype != dtype:
                continue
            if launchable:
                try:
                    e.launchable(shape)
                except NotLaunchable:
                    continue
            d = shape.distance(e.tuned_shape())
            if d is not None and (best is None or d < best.distance):
                best = Match(e, t, RUNTIME if launchable else NEAREST, d, shape)
    if best is not None and best.distance == 0:
        best.rule = EXACT
    return best


def _unique_sorted(xs):
    out = sorted(set(xs))
    return "; ".join(out) if out else "none"


def entry_ptx(table, entry):
    """The PTX text of an entry of table, checked against its sha256."""
    if entry.ptx == "":
        raise NoPTX(f"configs: {entry.key}: the table was exported without PTX files (tune export --ptx)")
    path = os.path.join(table.directory or ".", entry.ptx)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise NoPTX(f"configs: {entry.key}: {e}") from None
    got = hashlib.sha256(data).hexdigest()
    if got != entry.ptx_sha256:
        raise NoPTX(f"configs: {entry.key}: PTX file {entry.ptx} has sha256 {got[:12]}, the table records {entry.ptx_sha256[:12]}")
    return data


def load(path):
    """The tables of a directory (*.json and */*.json, in sorted order, as
    configs.Load reads a file system) or of one table file."""
    if os.path.isfile(path):
        return load_files(path)
    names = sorted(os.path.relpath(p, path) for pat in ("*.json", "*/*.json") for p in glob.glob(os.path.join(glob.escape(path), pat)))
    if not names:
        raise Malformed(f"configs: no tables (*.json) found in {path}")
    return load_files(*(os.path.join(path, n) for n in names))


def load_files(*paths):
    """The tables at paths, in order; a path given twice is an error."""
    tables, seen = [], set()
    for p in paths:
        a = os.path.abspath(p)
        if a in seen:
            raise ValueError(f"configs: {p} is given twice")
        seen.add(a)
        with open(p, "rb") as f:
            data = f.read()
        try:
            tables.append(parse(data, directory=os.path.dirname(a)))
        except Exception as e:
            raise type(e)(f"{p}: {e}") from None
    if not tables:
        raise ValueError("configs: no tables given")
    return Set(tables)
