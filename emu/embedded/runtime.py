"""v1model runtime of the embedded switch: compiles an IR Program into Python once.

``Pipeline(program)`` generates one Python function for ingress (parser, verify
checksum, ingress control) and one for egress (egress control, compute checksum,
deparser), ``exec``s them once, and runs them per packet: headers, metadata and
``standard_metadata`` are plain Python locals, header bytes are read with one
``int.from_bytes`` per header and split with precomputed shifts and masks, tables are
dict lookups (exact), per-prefix-length dicts (lpm) or a priority-ordered scan
(ternary/range/optional). Semantics follow the P4_16 spec and v1model as bmv2
(simple_switch) implements them; ``docs/p4-subset.md`` lists them.

``optimize=True`` (the default) makes the same semantics cheaper: headers are read and
written with one precompiled ``struct`` per header, a header that nothing can have
changed since ``extract`` is re-emitted from its original bytes, extracted fields that
nothing reads are not computed, egress receives only the variables it reads, an
acyclic parser is inlined instead of run as a state loop, and csum16 is inlined.
``optimize=False`` keeps the straightforward code (the reference for the tests).

Control-plane methods (``table_add`` ... ``counter_read``) take fully qualified P4
names and raise :class:`ControlError` with a one-line message.
"""

from __future__ import annotations

import ast
import difflib
import ipaddress
import logging
import random as _random
import struct as _struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import ir
from .errors import ControlError, P4FrontendError

__all__ = ["ControlError", "IngressResult", "Pipeline", "csum16"]

logger = logging.getLogger(__name__)

DROP_PORT = 511  #: v1model: egress_spec value that drops the packet (bmv2 default drop port)

#: standard_metadata fields that the runtime sets (v1model.p4 names).
_SM_FIELDS = (
    "ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
    "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth", "ingress_global_timestamp",
    "egress_global_timestamp", "mcast_grp", "egress_rid", "checksum_error", "parser_error",
    "priority",
)


def csum16(x: int, bits: int) -> int:
    """RFC 1071 ones'-complement checksum of the ``bits``-bit big-endian value ``x``.

    The value is zero-padded at the end to a multiple of 16 bits. Uses
    sum(words) == x mod 0xFFFF (2**16 == 1 mod 0xFFFF) with 0xFFFF for a non-zero
    multiple (ones' complement has two zeros). Returns the 16-bit checksum (~sum).
    """
    pad = (-bits) % 16
    if pad:
        x <<= pad
    s = x % 0xFFFF
    if s == 0 and x:
        s = 0xFFFF
    return 0xFFFF - s


def _csum(x: int) -> int:
    s = x % 0xFFFF
    if s == 0 and x:
        s = 0xFFFF
    return 0xFFFF - s


_CRC16_TABLE: list[int] = []


def _crc16(data: bytes) -> int:
    """CRC-16/ARC (poly 0x8005 reflected, init 0), bmv2's ``crc16``."""
    if not _CRC16_TABLE:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0xA001 if c & 1 else c >> 1
            _CRC16_TABLE.append(c)
    crc = 0
    for b in data:
        crc = (crc >> 8) ^ _CRC16_TABLE[(crc ^ b) & 0xFF]
    return crc


def _hash(algo: str, x: int, bits: int) -> int:
    nbytes = (bits + 7) // 8
    x <<= nbytes * 8 - bits
    data = x.to_bytes(nbytes, "big")
    if algo == "crc32":
        return zlib.crc32(data)
    if algo == "crc16":
        return _crc16(data)
    if algo == "csum16":
        return csum16(x, nbytes * 8)
    if algo == "identity":
        return x
    if algo == "xor16":
        r = 0
        while x:
            r ^= x & 0xFFFF
            x >>= 16
        return r
    raise ValueError(algo)


class _Exit(Exception):
    """Raised by ``exit;`` inside a control."""


# ======================================================================= control plane


def _closest(name: str, options: Iterable[str]) -> str:
    m = difflib.get_close_matches(name, list(options), n=1, cutoff=0.5)
    return f" (did you mean {m[0]}?)" if m else ""


def _to_int(value: Any, width: int, what: str) -> int:
    """Convert a control-plane value (int, '10.0.0.1', 'aa:bb:..', '0x..', '12') to an int."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        v = value
    elif isinstance(value, str):
        s = value.strip()
        try:
            if ":" in s and width == 48:
                parts = s.split(":")
                if len(parts) != 6:
                    raise ValueError
                v = int("".join(p.zfill(2) for p in parts), 16)
            elif s.count(".") == 3:
                v = int(ipaddress.IPv4Address(s))
            elif ":" in s:
                v = int(ipaddress.IPv6Address(s))
            else:
                v = int(s, 0)
        except ValueError:
            raise ControlError(f"{what}: cannot parse value {value!r}") from None
    else:
        raise ControlError(f"{what}: expected int or string, got {type(value).__name__}")
    if v < 0 or v >> width:
        raise ControlError(f"{what}: value {value!r} does not fit in bit<{width}>")
    return v


@dataclass
class KeySpec:
    """One table key field: name as written, match kind, width in bits."""

    name: str
    kind: str
    width: int


@dataclass
class ActionSpec:
    """An action a table may use: fully qualified name, id in the table, params (name, width)."""

    name: str
    aid: int
    params: list[tuple[str, int]]
    short: str = ""


class Table:
    """A match-action table and its entries (P4_16 spec 14.2; bmv2 match semantics).

    Entries are stored as ``(aid, args, True)``; the default as ``(aid, args, False)``.
    Ternary/range/optional: the entry with the highest ``priority`` wins (P4Runtime
    and p4c STF convention; bmv2's CLI numbers priorities the other way round).
    """

    def __init__(self, name: str, keys: list[KeySpec], actions: list[ActionSpec],
                 size: int | None, const_default: bool) -> None:
        self.name = name
        self.keys = keys
        self.actions = {a.name: a for a in actions}
        self.by_short = {a.short: a for a in actions}
        self.size = size
        self.const_default = const_default
        self.default: tuple = (0, (), False)
        self.default_desc: tuple[str, dict[str, int]] = ("", {})
        self.entries: dict[tuple, tuple[int, tuple, int, str, dict[str, int]]] = {}
        kinds = [k.kind for k in keys]
        self.needs_priority = any(k in ("ternary", "range", "optional") for k in kinds)
        if all(k == "exact" for k in kinds):
            self.mode = "exact"
        elif len(kinds) == 1 and kinds[0] == "lpm":
            self.mode = "lpm"
        else:
            self.mode = "scan"
        self.exact: dict[Any, tuple] = {}
        self._lpm: list[tuple[int, dict[int, tuple]]] = []
        self._scan: list[tuple[tuple, tuple, tuple]] = []

    # -- lookups (called from generated code)
    def lookup_lpm(self, key: int) -> tuple:
        """:meth:`lookup` of an lpm table."""
        for mask, d in self._lpm:
            e = d.get(key & mask)
            if e is not None:
                return e
        return self.default

    def lookup(self, key: Any) -> tuple:
        """Return the matching entry ``(aid, args, hit)`` or the default."""
        if self.mode == "exact":
            return self.exact.get(key, self.default)
        if self.mode == "lpm":
            for mask, d in self._lpm:
                e = d.get(key & mask)
                if e is not None:
                    return e
            return self.default
        k = key if isinstance(key, tuple) else (key,)
        for vals, masks, entry in self._scan:
            for kv, v, m in zip(k, vals, masks, strict=True):
                if m is None:
                    if not (v[0] <= kv <= v[1]):
                        break
                elif kv & m != v:
                    break
            else:
                return entry
        return self.default

    # -- control plane
    def _action(self, action: str) -> ActionSpec:
        a = self.actions.get(action) or self.by_short.get(action)
        if a is None:
            raise ControlError(f"{self.name}: unknown action {action}{_closest(action, self.actions)}")
        return a

    def _args(self, a: ActionSpec, params: dict[str, Any] | None) -> tuple[tuple, dict[str, int]]:
        params = dict(params or {})
        out, desc = [], {}
        for pname, width in a.params:
            if pname not in params:
                raise ControlError(f"{self.name}: action {a.name} needs parameter {pname}")
            v = _to_int(params.pop(pname), width, f"{self.name}: action {a.name} parameter {pname}")
            out.append(v)
            desc[pname] = v
        if params:
            extra = next(iter(params))
            names = [p for p, _ in a.params]
            raise ControlError(f"{self.name}: action {a.name} has no parameter {extra}{_closest(extra, names)}")
        return tuple(out), desc

    def _canon(self, match: dict[str, Any], priority: int | None) -> tuple[tuple, int]:
        match = dict(match or {})
        canon = []
        plen_total = 0
        for ks in self.keys:
            what = f"{self.name}: key {ks.name}"
            if ks.name not in match:
                if ks.kind in ("ternary", "optional", "lpm"):
                    canon.append((0, 0) if ks.kind != "lpm" else (0, 0))
                    continue
                raise ControlError(f"{what}: missing from match")
            v = match.pop(ks.name)
            if ks.kind == "exact":
                canon.append(_to_int(v, ks.width, what))
            elif ks.kind == "lpm":
                if isinstance(v, str) and "/" in v:
                    addr, _, ln = v.partition("/")
                    value, plen = _to_int(addr, ks.width, what), int(ln)
                elif isinstance(v, list | tuple) and len(v) == 2:
                    value, plen = _to_int(v[0], ks.width, what), int(v[1])
                else:
                    value, plen = _to_int(v, ks.width, what), ks.width
                if not 0 <= plen <= ks.width:
                    raise ControlError(f"{what}: prefix length {plen} out of range 0..{ks.width}")
                mask = ((1 << plen) - 1) << (ks.width - plen)
                canon.append((value & mask, plen))
                plen_total += plen
            elif ks.kind in ("ternary", "optional"):
                if isinstance(v, list | tuple) and len(v) == 2:
                    value, mask = _to_int(v[0], ks.width, what), _to_int(v[1], ks.width, what + " mask")
                else:
                    value, mask = _to_int(v, ks.width, what), (1 << ks.width) - 1
                canon.append((value & mask, mask))
            elif ks.kind == "range":
                if not (isinstance(v, list | tuple) and len(v) == 2):
                    raise ControlError(f"{what}: range match needs [low, high]")
                canon.append((_to_int(v[0], ks.width, what), _to_int(v[1], ks.width, what)))
        if match:
            extra = next(iter(match))
            raise ControlError(f"{self.name}: unknown key field {extra}{_closest(extra, [k.name for k in self.keys])}")
        if self.needs_priority:
            if priority is None:
                raise ControlError(f"{self.name}: ternary/range/optional table needs a priority")
            return tuple(canon) + (("priority", int(priority)),), int(priority)
        return tuple(canon), plen_total

    def add(self, match, action, params=None, priority=None, *, modify: bool = False) -> None:
        """Insert (or with ``modify`` replace) an entry."""
        key, prio = self._canon(match, priority)
        a = self._action(action)
        args, desc = self._args(a, params)
        if modify:
            if key not in self.entries:
                raise ControlError(f"{self.name}: no entry with match {match}")
        else:
            if key in self.entries:
                raise ControlError(f"{self.name}: duplicate entry for match {match}")
            if self.size is not None and len(self.entries) >= self.size:
                raise ControlError(f"{self.name}: table full ({self.size} entries)")
        self.entries[key] = ((a.aid, args, True), args, prio, a.name, desc)
        self._rebuild()

    def delete(self, match, priority=None) -> None:
        """Remove an entry."""
        key, _ = self._canon(match, priority)
        if self.entries.pop(key, None) is None:
            raise ControlError(f"{self.name}: no entry with match {match}")
        self._rebuild()

    def clear(self) -> None:
        """Remove every entry (the default action stays)."""
        self.entries.clear()
        self._rebuild()

    def set_default(self, action, params=None, *, force: bool = False) -> None:
        """Set the default (miss) action; refused for ``const default_action``."""
        if self.const_default and not force:
            raise ControlError(f"{self.name}: default action is const")
        a = self._action(action)
        args, desc = self._args(a, params)
        self.default = (a.aid, args, False)
        self.default_desc = (a.name, desc)

    def _rebuild(self) -> None:
        if self.mode == "exact":
            self.exact.clear()
            single = len(self.keys) == 1
            for key, (entry, *_rest) in self.entries.items():
                self.exact[key[0] if single else key] = entry
        elif self.mode == "lpm":
            w = self.keys[0].width
            by_len: dict[int, dict[int, tuple]] = {}
            for key, (entry, *_rest) in self.entries.items():
                value, plen = key[0]
                by_len.setdefault(plen, {})[value] = entry
            self._lpm[:] = [(((1 << p) - 1) << (w - p), by_len[p]) for p in sorted(by_len, reverse=True)]
        else:
            rows = []
            for order, (key, (entry, _args, prio, _n, _d)) in enumerate(self.entries.items()):
                vals, masks = [], []
                for ks, c in zip(self.keys, key, strict=False):
                    if ks.kind == "exact":
                        vals.append(c)
                        masks.append((1 << ks.width) - 1)
                    elif ks.kind == "lpm":
                        vals.append(c[0])
                        masks.append(((1 << c[1]) - 1) << (ks.width - c[1]))
                    elif ks.kind == "range":
                        vals.append(c)
                        masks.append(None)
                    else:
                        vals.append(c[0])
                        masks.append(c[1])
                rows.append((-prio, order, tuple(vals), tuple(masks), entry))
            rows.sort(key=lambda r: (r[0], r[1]))
            self._scan[:] = [(v, m, e) for _p, _o, v, m, e in rows]

    def dump(self) -> list[dict[str, Any]]:
        """Entries as dicts (match canon, action, params, priority)."""
        return [{"match": k, "action": n, "params": d, "priority": p}
                for k, (_e, _a, p, n, d) in self.entries.items()]


class Register:
    """``register<bit<W>>(N)``: values in a list (bmv2: out-of-range read 0, write ignored)."""

    def __init__(self, name: str, width: int, size: int) -> None:
        self.name, self.width, self.size = name, width, size
        self.values = [0] * size


class Counter:
    """``counter(N, type)``: per-index packet and byte counts."""

    def __init__(self, name: str, size: int, kind: str) -> None:
        self.name, self.size, self.kind = name, size, kind
        self.packets = [0] * size
        self.bytes = [0] * size


@dataclass(slots=True)
class IngressResult:
    """Outcome of ingress for a packet that was not dropped.

    ``egress_spec`` is the port chosen by ingress (bit<9>), ``mcast_grp`` its multicast
    group (0: unicast), ``packet_length`` the received frame length in bytes; the rest
    is opaque state that :meth:`Pipeline.egress` consumes.
    """

    egress_spec: int
    mcast_grp: int
    packet_length: int
    state: tuple = field(repr=False)


# ======================================================================= compiler

@dataclass
class _V:
    """A compiled expression: Python code, P4 type, constant value, may-exceed-width flag."""

    code: str
    type: Any
    const: int | None = None
    dirty: bool = False


@dataclass
class _HdrRef:
    """A header instance: validity var and (name, width, var) fields."""

    valid: str
    fields: list[tuple[str, int, str]]
    type: ir.HeaderT
    path: str


@dataclass
class _StructRef:
    """A struct instance: member name -> binding."""

    members: dict[str, Any]
    type: ir.StructT
    path: str


@dataclass
class _Leaf:
    """A scalar storage location (Python variable) of a given type."""

    var: str
    type: Any


def _mask(w: int) -> int:
    return (1 << w) - 1


class _Compiler:
    """Generates the Python source of a v1model pipeline from an IR Program."""

    def __init__(self, prog: ir.Program, pipe: Pipeline) -> None:
        self.prog = prog
        self.pipe = pipe
        self.lines: list[str] = []
        self.ind = 1
        self.n = 0
        self.slots: list[tuple[str, Any]] = []  # (var, initial value)
        self.ns: dict[str, Any] = {"_Exit": _Exit, "_csum": _csum, "_hash": _hash}
        self.errors = {e: i for i, e in enumerate(prog.errors)}
        self.pre: list[str] = []
        self._globs: dict[int, str] = {}
        self.optimize = pipe.optimize
        #: optimize: header valid var -> var holding the bytes of its last extract
        self.raw: dict[str, str] = {}
        #: optimize: var -> number of stores to it emitted by extract()
        self.extract_stores: dict[str, int] = {}
        #: optimize: (line index in self.lines, header, rebuild code) of each deparser emit
        self.deparse: list[tuple[int, _HdrRef, str]] = []
        #: optimize: per extract, (index of its ``_x = ...`` line, [(index of a field line, field var)])
        self.extract_lines: list[tuple[int, list[tuple[int, str]]]] = []
        self.structs: dict[str, _struct.Struct] = {}
        #: optimize: (line index, raw var) of each ``raw = _pkt[...]`` line of extract()
        self.raw_lines: list[tuple[int, str]] = []

    # ---------------------------------------------------------------- helpers
    def fresh(self, base: str) -> str:
        self.n += 1
        clean = "".join(c if c.isalnum() else "_" for c in base)
        return f"_{clean}_{self.n}"

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    def fail(self, loc: ir.Loc, msg: str):
        raise P4FrontendError(loc[0], loc[1], msg)

    def glob(self, base: str, obj: Any) -> str:
        """Bind ``obj`` as a global of the generated code (one name per object)."""
        name = self._globs.get(id(obj))
        if name is None:
            name = self._globs[id(obj)] = self.fresh(base)
            self.ns[name] = obj
        return name

    # ---------------------------------------------------------------- storage
    def alloc_struct(self, t: ir.StructT, path: str) -> _StructRef:
        members: dict[str, Any] = {}
        for fname, ftype in t.fields:
            p = f"{path}.{fname}"
            if isinstance(ftype, ir.HeaderT):
                members[fname] = self.alloc_header(ftype, p)
            elif isinstance(ftype, ir.StructT):
                members[fname] = self.alloc_struct(ftype, p)
            elif isinstance(ftype, ir.BitT | ir.IntT | ir.BoolT | ir.ErrorT | ir.EnumT):
                var = self.fresh(p)
                self.slots.append((var, False if isinstance(ftype, ir.BoolT) else 0))
                members[fname] = _Leaf(var, ftype)
            else:
                self.fail((self.prog.source, 0), f"unsupported struct member type in {t.name}.{fname}")
        return _StructRef(members, t, path)

    def alloc_header(self, t: ir.HeaderT, path: str) -> _HdrRef:
        valid = self.fresh(path + "_valid")
        self.slots.append((valid, False))
        fields = []
        for fname, ftype in t.fields:
            var = self.fresh(f"{path}.{fname}")
            self.slots.append((var, 0))
            fields.append((fname, ftype.width, var))  # type: ignore[union-attr]
        return _HdrRef(valid, fields, t, path)

    # ---------------------------------------------------------------- typing helpers
    def clean(self, v: _V) -> str:
        """Code of ``v`` reduced to its width."""
        if v.dirty and isinstance(v.type, ir.BitT):
            return f"(({v.code}) & {hex(_mask(v.type.width))})"
        if v.dirty and isinstance(v.type, ir.IntT):
            w = v.type.width
            return f"(((({v.code}) + {1 << (w - 1)}) & {hex(_mask(w))}) - {1 << (w - 1)})"
        return v.code

    def const(self, value: int, t: Any) -> _V:
        if isinstance(t, ir.BitT):
            value &= _mask(t.width)
        elif isinstance(t, ir.IntT):
            w = t.width
            value = ((value + (1 << (w - 1))) & _mask(w)) - (1 << (w - 1))
        return _V(repr(value), t, value)

    def unify(self, a: _V, b: _V, loc: ir.Loc, op: str) -> tuple[_V, _V, Any]:
        ta, tb = a.type, b.type
        if isinstance(ta, ir.IntLitT) and isinstance(tb, ir.IntLitT):
            return a, b, ta
        if isinstance(ta, ir.IntLitT):
            return self.const(a.const, tb) if a.const is not None else a, b, tb  # type: ignore[arg-type]
        if isinstance(tb, ir.IntLitT):
            return a, self.const(b.const, ta) if b.const is not None else b, ta  # type: ignore[arg-type]
        if ta != tb:
            self.fail(loc, f"type error: {_tname(ta)} {op} {_tname(tb)}")
        return a, b, ta

    def convert(self, v: _V, t: Any, loc: ir.Loc) -> str:
        """Code of ``v`` as a value of type ``t`` (implicit literal conversion only)."""
        if isinstance(v.type, ir.IntLitT) and isinstance(t, ir.BitT | ir.IntT):
            if v.const is None:
                return f"(({v.code}) & {hex(_mask(t.width))})"
            return self.const(v.const, t).code
        if isinstance(t, ir.BitT) and isinstance(v.type, ir.BitT) and t.width != v.type.width:
            self.fail(loc, f"type error: cannot assign {_tname(v.type)} to {_tname(t)}")
        if isinstance(t, ir.BoolT) != isinstance(v.type, ir.BoolT):
            self.fail(loc, f"type error: cannot assign {_tname(v.type)} to {_tname(t)}")
        return self.clean(v)

    # ---------------------------------------------------------------- scopes
    def lookup(self, scopes: list[dict[str, Any]], name: str, loc: ir.Loc) -> Any:
        for s in reversed(scopes):
            if name in s:
                return s[name]
        if name in self.prog.consts:
            c = self.prog.consts[name]
            v = self.expr(c.value, scopes[:1])
            if v.const is None:
                self.fail(c.loc, f"const {name} is not a compile-time constant")
            return self.const(v.const, c.type) if not isinstance(c.type, ir.BoolT) else v
        self.fail(loc, f"unknown name {name}")

    # ---------------------------------------------------------------- expressions
    def ref(self, e: ir.Expr, scopes) -> Any:
        """Resolve a name/member chain to a binding (_Leaf, _HdrRef, _StructRef, objects)."""
        if isinstance(e, ir.Name):
            return self.lookup(scopes, e.name, e.loc)
        if isinstance(e, ir.Member):
            base = self.ref(e.expr, scopes)
            if isinstance(base, _StructRef):
                if e.name not in base.members:
                    self.fail(e.loc, f"{base.path} has no member {e.name}")
                return base.members[e.name]
            if isinstance(base, _HdrRef):
                for fname, w, var in base.fields:
                    if fname == e.name:
                        return _Leaf(var, ir.BitT(w))
                self.fail(e.loc, f"header {base.type.name} has no field {e.name}")
            return ("member", base, e.name)
        return None

    def expr(self, e: ir.Expr, scopes) -> _V:
        if isinstance(e, ir.Lit):
            return _V(repr(e.value), e.type or ir.IntLitT(), e.value)
        if isinstance(e, ir.BoolLit):
            return _V("True" if e.value else "False", ir.BoolT(), int(e.value))
        if isinstance(e, ir.Name | ir.Member):
            if isinstance(e, ir.Member) and e.name in ("hit", "miss") and isinstance(e.expr, ir.Call):
                return self.table_hit(e, scopes)
            b = self.ref(e, scopes)
            if isinstance(b, _Leaf):
                return _V(b.var, b.type)
            if isinstance(b, _V):
                return b
            self.fail(e.loc, "unsupported use of a header, struct or object as a value")
        if isinstance(e, ir.TypeMember):
            if e.type_name == "error":
                if e.member not in self.errors:
                    self.fail(e.loc, f"unknown error {e.member}")
                return _V(str(self.errors[e.member]), ir.ErrorT(), self.errors[e.member])
            t = self.prog.types.get(e.type_name)
            if isinstance(t, ir.EnumT) and e.member in t.members:
                i = t.members.index(e.member)
                return _V(str(i), t, i)
            self.fail(e.loc, f"unknown member {e.type_name}.{e.member}")
        if isinstance(e, ir.Cast):
            return self.cast(e, scopes)
        if isinstance(e, ir.Slice):
            v = self.expr(e.expr, scopes)
            hi, lo = self.const_of(e.hi, scopes), self.const_of(e.lo, scopes)
            if not isinstance(v.type, ir.BitT | ir.IntT) or not (0 <= lo <= hi < v.type.width):
                self.fail(e.loc, "bad slice")
            w = hi - lo + 1
            code = f"(({self.clean(v)} >> {lo}) & {hex(_mask(w))})" if lo else f"({self.clean(v)} & {hex(_mask(w))})"
            return _V(code, ir.BitT(w))
        if isinstance(e, ir.Unary):
            return self.unary(e, scopes)
        if isinstance(e, ir.Binary):
            return self.binary(e, scopes)
        if isinstance(e, ir.Cond):
            c = self.expr(e.cond, scopes)
            a, b = self.expr(e.then, scopes), self.expr(e.other, scopes)
            a, b, t = self.unify(a, b, e.loc, "?:")
            return _V(f"({self.clean(a)} if {c.code} else {self.clean(b)})", t)
        if isinstance(e, ir.Call):
            return self.call_expr(e, scopes)
        self.fail(e.loc, f"unsupported expression {type(e).__name__}")

    def const_of(self, e: ir.Expr, scopes) -> int:
        v = self.expr(e, scopes)
        if v.const is None:
            self.fail(e.loc, "expected a compile-time constant")
        return v.const  # type: ignore[return-value]

    def cast(self, e: ir.Cast, scopes) -> _V:
        v = self.expr(e.expr, scopes)
        t, s = e.type, v.type
        if isinstance(t, ir.BitT):
            if v.const is not None and not isinstance(s, ir.BoolT):
                return self.const(v.const, t)
            if isinstance(s, ir.BoolT):
                return _V(f"(1 if {v.code} else 0)", t)
            if isinstance(s, ir.BitT) and s.width <= t.width:
                return _V(self.clean(v), t)
            if isinstance(s, ir.BitT | ir.IntT):
                return _V(f"({v.code} & {hex(_mask(t.width))})", t)
        elif isinstance(t, ir.IntT):
            if v.const is not None:
                return self.const(v.const, t)
            if isinstance(s, ir.BitT | ir.IntT):
                return _V(v.code, t, dirty=True)
        elif isinstance(t, ir.BoolT):
            if isinstance(s, ir.BoolT):
                return v
            if isinstance(s, ir.BitT) and s.width == 1:
                return _V(f"({v.code} != 0)", t)
        elif t == s:
            return v
        self.fail(e.loc, f"unsupported cast from {_tname(s)} to {_tname(t)}")

    def unary(self, e: ir.Unary, scopes) -> _V:
        v = self.expr(e.expr, scopes)
        if e.op == "!":
            if not isinstance(v.type, ir.BoolT):
                self.fail(e.loc, "type error: ! needs bool")
            return _V(f"(not {v.code})", v.type)
        if v.const is not None and isinstance(v.type, ir.IntLitT):
            return _V(repr(-v.const if e.op == "-" else ~v.const), v.type, -v.const if e.op == "-" else ~v.const)
        if isinstance(v.type, ir.BitT):
            m = hex(_mask(v.type.width))
            if e.op == "~":
                return _V(f"({self.clean(v)} ^ {m})", v.type)
            return _V(f"(-{self.clean(v)})", v.type, dirty=True)
        if isinstance(v.type, ir.IntT):
            return _V(f"({'~' if e.op == '~' else '-'}{self.clean(v)})", v.type, dirty=True)
        self.fail(e.loc, f"type error: {e.op} on {_tname(v.type)}")

    def binary(self, e: ir.Binary, scopes) -> _V:
        op = e.op
        a, b = self.expr(e.left, scopes), self.expr(e.right, scopes)
        if op in ("&&", "||"):
            if not (isinstance(a.type, ir.BoolT) and isinstance(b.type, ir.BoolT)):
                self.fail(e.loc, f"type error: {op} needs bool operands")
            return _V(f"({a.code} {'and' if op == '&&' else 'or'} {b.code})", ir.BoolT())
        if op == "++":
            if not (isinstance(a.type, ir.BitT) and isinstance(b.type, ir.BitT)):
                self.fail(e.loc, "type error: ++ needs bit<N> operands")
            return _V(f"(({self.clean(a)} << {b.type.width}) | {self.clean(b)})", ir.BitT(a.type.width + b.type.width))
        if op in ("<<", ">>"):
            if a.const is not None and b.const is not None and isinstance(a.type, ir.IntLitT):
                val = a.const << b.const if op == "<<" else a.const >> b.const
                return _V(repr(val), a.type, val)
            if not isinstance(a.type, ir.BitT | ir.IntT):
                self.fail(e.loc, f"type error: {op} on {_tname(a.type)}")
            if op == "<<":
                return _V(f"({a.code} << {self.clean(b)})", a.type, dirty=True)
            return _V(f"({self.clean(a)} >> {self.clean(b)})", a.type)
        a, b, t = self.unify(a, b, e.loc, op)
        if a.const is not None and b.const is not None and not isinstance(t, ir.BoolT):
            folds = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
                     "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y,
                     "/": lambda x, y: x // y if y else 0, "%": lambda x, y: x % y if y else 0}
            if op in folds:
                val = folds[op](a.const, b.const)
                return self.const(val, t) if not isinstance(t, ir.IntLitT) else _V(repr(val), t, val)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if op not in ("==", "!=") and not isinstance(t, ir.BitT | ir.IntT | ir.IntLitT):
                self.fail(e.loc, f"type error: {op} on {_tname(t)}")
            return _V(f"({self.clean(a)} {op} {self.clean(b)})", ir.BoolT())
        if isinstance(t, ir.BoolT) or not isinstance(t, ir.BitT | ir.IntT | ir.IntLitT):
            self.fail(e.loc, f"type error: {op} on {_tname(t)}")
        if op in ("+", "-", "*"):
            return _V(f"({a.code} {op} {b.code})", t, dirty=True)
        if op == "&":
            dirty = a.dirty and b.dirty or isinstance(t, ir.IntT) and (a.dirty or b.dirty)
            return _V(f"({a.code} & {b.code})", t, dirty=dirty)
        if op in ("|", "^"):
            return _V(f"({a.code} {op} {b.code})", t, dirty=a.dirty or b.dirty)
        if op in ("/", "%"):
            ca, cb = self.clean(a), self.clean(b)
            pop = "//" if op == "/" else "%"
            return _V(f"(({ca} {pop} {cb}) if {cb} else 0)", t)
        self.fail(e.loc, f"unsupported operator {op}")

    # ---------------------------------------------------------------- calls
    def call_target(self, e: ir.Call, scopes):
        """Return (kind, obj, method) for a call."""
        f = e.func
        if isinstance(f, ir.Name):
            return ("func", f.name, None)
        if isinstance(f, ir.Member):
            base = self.ref(f.expr, scopes)
            return ("method", base, f.name)
        self.fail(e.loc, "unsupported call")

    def call_expr(self, e: ir.Call, scopes) -> _V:
        kind, obj, meth = self.call_target(e, scopes)
        if kind == "method" and isinstance(obj, _HdrRef) and meth == "isValid":
            return _V(obj.valid, ir.BoolT())
        self.fail(e.loc, f"unsupported call in an expression: {_desc_call(e)}")

    def table_hit(self, e: ir.Member, scopes) -> _V:
        call = e.expr
        assert isinstance(call, ir.Call)
        kind, obj, meth = self.call_target(call, scopes)
        if not (kind == "method" and isinstance(obj, tuple) and obj[0] == "table" and meth == "apply"):
            self.fail(e.loc, f"unsupported .{e.name}")
        hitvar = self.apply_table(obj[1], scopes, call.loc, want_hit=True)
        return _V(hitvar if e.name == "hit" else f"(not {hitvar})", ir.BoolT())

    # ---------------------------------------------------------------- statements
    def flush_pre(self) -> None:
        pre, self.pre = self.pre, []
        for line in pre:
            self.emit(line)

    def block(self, stmts: list[ir.Stmt], scopes, ctx) -> None:
        start = len(self.lines)
        scopes = scopes + [{}]
        for s in stmts:
            self.stmt(s, scopes, ctx)
        if len(self.lines) == start:
            self.emit("pass")

    def stmt(self, s: ir.Stmt, scopes, ctx) -> None:
        if isinstance(s, ir.Block):
            self.block(s.stmts, scopes, ctx)
        elif isinstance(s, ir.Empty):
            pass
        elif isinstance(s, ir.VarDecl):
            var = self.fresh(s.name)
            if isinstance(s.type, ir.HeaderT | ir.StructT):
                self.fail(s.loc, "unsupported local variable of header or struct type")
            if s.init is not None:
                v = self.expr(s.init, scopes)
                code = self.convert(v, s.type, s.loc)
            else:
                code = "False" if isinstance(s.type, ir.BoolT) else "0"
            self.flush_pre()
            self.emit(f"{var} = {code}")
            scopes[-1][s.name] = _Leaf(var, s.type)
        elif isinstance(s, ir.ConstDecl):
            v = self.expr(s.value, scopes)
            if v.const is None:
                self.fail(s.loc, "const initialiser is not a compile-time constant")
            scopes[-1][s.name] = self.const(v.const, s.type) if not isinstance(s.type, ir.BoolT) else v
        elif isinstance(s, ir.Assign):
            self.assign(s.target, s.value, scopes, s.loc)
        elif isinstance(s, ir.If):
            c = self.expr(s.cond, scopes)
            if not isinstance(c.type, ir.BoolT):
                self.fail(s.loc, "type error: if condition is not bool")
            self.flush_pre()
            self.emit(f"if {c.code}:")
            self.ind += 1
            self.block([s.then], scopes, ctx)
            self.ind -= 1
            if s.other is not None:
                self.emit("else:")
                self.ind += 1
                self.block([s.other], scopes, ctx)
                self.ind -= 1
        elif isinstance(s, ir.CallStmt):
            self.call_stmt(s.call, scopes, ctx)
        elif isinstance(s, ir.Exit):
            if ctx.get("kind") != "control":
                self.fail(s.loc, "unsupported exit outside a control")
            ctx["uses_exit"] = True
            self.emit("raise _Exit")
        elif isinstance(s, ir.Return):
            if s.value is not None:
                self.fail(s.loc, "unsupported return with a value")
            if not ctx.get("in_loop"):
                self.fail(s.loc, "unsupported return here")
            self.emit("break")
        else:
            self.fail(s.loc, f"unsupported statement {type(s).__name__}")

    def assign(self, target: ir.Expr, value: ir.Expr, scopes, loc) -> None:
        if isinstance(target, ir.Slice):
            b = self.ref(target.expr, scopes)
            if not isinstance(b, _Leaf) or not isinstance(b.type, ir.BitT):
                self.fail(loc, "unsupported slice assignment target")
            hi, lo = self.const_of(target.hi, scopes), self.const_of(target.lo, scopes)
            w = hi - lo + 1
            v = self.expr(value, scopes)
            code = self.convert(v, ir.BitT(w), loc)
            keep = _mask(b.type.width) ^ (_mask(w) << lo)
            self.flush_pre()
            self.emit(f"{b.var} = ({b.var} & {hex(keep)}) | ({code} << {lo})")
            return
        b = self.ref(target, scopes)
        if isinstance(b, _Leaf):
            v = self.expr(value, scopes)
            code = self.convert(v, b.type, loc)
            self.flush_pre()
            self.emit(f"{b.var} = {code}")
            return
        if isinstance(b, _HdrRef | _StructRef):
            src = self.ref(value, scopes)
            if type(src) is not type(b) or src.type != b.type:
                self.fail(loc, "unsupported header/struct assignment between different types")
            self.copy_ref(b, src)
            return
        self.fail(loc, "unsupported assignment target")

    def copy_ref(self, dst, src) -> None:
        if isinstance(dst, _HdrRef):
            self.emit(f"{dst.valid} = {src.valid}")
            for (_n, _w, dv), (_n2, _w2, sv) in zip(dst.fields, src.fields, strict=True):
                self.emit(f"{dv} = {sv}")
        else:
            for name, d in dst.members.items():
                s = src.members[name]
                if isinstance(d, _Leaf):
                    self.emit(f"{d.var} = {s.var}")
                else:
                    self.copy_ref(d, s)

    def out_target(self, e: ir.Expr, scopes, loc) -> _Leaf:
        b = self.ref(e, scopes)
        if not isinstance(b, _Leaf):
            self.fail(loc, "out argument must be a scalar variable or field")
        return b

    def call_stmt(self, e: ir.Call, scopes, ctx) -> None:
        kind, obj, meth = self.call_target(e, scopes)
        loc = e.loc
        if kind == "method":
            if isinstance(obj, _HdrRef):
                if meth in ("setValid", "setInvalid"):
                    self.emit(f"{obj.valid} = {meth == 'setValid'}")
                    return
                if meth == "isValid":
                    return
            if isinstance(obj, tuple):
                okind = obj[0]
                if okind == "packet_in" and meth == "extract":
                    return self.extract(e, scopes, ctx)
                if okind == "packet_out" and meth == "emit":
                    return self.emit_hdr(e, scopes)
                if okind == "table" and meth == "apply":
                    self.apply_table(obj[1], scopes, loc)
                    return
                if okind == "register" and meth in ("read", "write"):
                    return self.register_call(obj[1], meth, e, scopes)
                if okind == "counter" and meth == "count":
                    return self.counter_call(obj[1], e, scopes)
            self.fail(loc, f"unsupported method call {_desc_call(e)}")
        name = obj
        for sc in reversed(scopes):
            if name in sc and isinstance(sc[name], tuple) and sc[name][0] == "action":
                return self.inline_action(sc[name][1], e.args, scopes, ctx, loc)
        if name in self.prog.actions and not any(name in sc for sc in scopes):
            return self.inline_action(self.prog.actions[name], e.args, scopes, ctx, loc)
        if name == "mark_to_drop":
            sm = ctx["sm"]
            self.emit(f"{sm.members['egress_spec'].var} = {DROP_PORT}")
            self.emit(f"{sm.members['mcast_grp'].var} = 0")
            return
        if name == "verify":
            if ctx.get("kind") != "parser":
                self.fail(loc, "verify() outside a parser")
            c = self.expr(e.args[0], scopes)
            err = self.expr(e.args[1], scopes)
            self.flush_pre()
            self.emit(f"if not {c.code}:")
            self.emit(f"    _perr = {err.code}")
            self.emit("    break")
            return
        if name == "random":
            out = self.out_target(e.args[0], scopes, loc)
            lo, hi = self.expr(e.args[1], scopes), self.expr(e.args[2], scopes)
            w = out.type.width
            if lo.const == 0 and hi.const is not None and hi.const & (hi.const + 1) == 0 and hi.const:
                bits = hi.const.bit_length()
                code = f"_rng.getrandbits({bits})"
                if bits > w:
                    code = f"({code} & {hex(_mask(w))})"
            else:
                code = f"(_rng.randint({self.clean(lo)}, {self.clean(hi)}) & {hex(_mask(w))})"
            self.emit(f"{out.var} = {code}")
            return
        if name in ("verify_checksum", "update_checksum"):
            return self.checksum(name, e, scopes, ctx)
        if name == "hash":
            return self.hash_call(e, scopes)
        if name in self.prog.extern_functions:
            self.fail(loc, f"unsupported extern {name}")
        self.fail(loc, f"unknown function {name}")

    # -- actions
    def inline_action(self, act: ir.Action, args: list[ir.Expr], scopes, ctx, loc, bound: dict | None = None) -> None:
        depth = ctx.get("depth", 0)
        if depth > 16:
            self.fail(loc, "action calls nested too deeply")
        if bound is None and len(args) != len(act.params):
            self.fail(loc, f"action {act.name} takes {len(act.params)} arguments, got {len(args)}")
        scope: dict[str, Any] = {}
        copy_out = []
        for i, p in enumerate(act.params):
            if bound is not None and p.name in bound:
                scope[p.name] = bound[p.name]
                continue
            a = args[i]
            if p.direction in ("out", "inout"):
                tgt = self.out_target(a, scopes, loc)
                var = self.fresh(p.name)
                self.emit(f"{var} = {tgt.var if p.direction == 'inout' else '0'}")
                scope[p.name] = _Leaf(var, p.type)
                copy_out.append((tgt.var, var))
            else:
                if isinstance(p.type, ir.StructT | ir.HeaderT):
                    scope[p.name] = self.ref(a, scopes)
                    continue
                v = self.expr(a, scopes)
                var = self.fresh(p.name)
                code = self.convert(v, p.type, loc)
                self.flush_pre()
                self.emit(f"{var} = {code}")
                scope[p.name] = _Leaf(var, p.type)
        uses_return = _contains(act.body, ir.Return)
        sub = dict(ctx, depth=depth + 1, in_loop=uses_return or ctx.get("in_loop"))
        if uses_return:
            self.emit("while True:")
            self.ind += 1
        self.block(act.body.stmts, ctx["action_scopes"] + [scope], sub)
        if uses_return:
            self.emit("break")
            self.ind -= 1
        for tvar, var in copy_out:
            self.emit(f"{tvar} = {var}")

    # -- tables
    def apply_table(self, t: tuple, scopes, loc, want_hit: bool = False) -> str | None:
        table, decl, actions, ctx = t
        keys = []
        for k in decl.keys:
            b = self.ref(k.expr, ctx["action_scopes"])
            v = self.expr(k.expr, ctx["action_scopes"])
            code = self.clean(v)
            if isinstance(v.type, ir.BoolT):
                code = f"(1 if {code} else 0)"
            hdr = self.key_header(k.expr, ctx["action_scopes"])
            if hdr is not None and isinstance(b, _Leaf):
                code = f"({code} if {hdr.valid} else 0)"
            keys.append(code)
        tname = self.glob("T_" + table.name, table)
        ent = self.fresh("e")
        if not keys:
            self.pre_or_emit(f"{ent} = {tname}.default", want_hit)
        elif table.mode == "exact" and len(keys) == 1:
            dname = self.glob("D_" + table.name, table.exact)
            self.pre_or_emit(f"{ent} = {dname}.get({keys[0]})", want_hit)
            self.pre_or_emit(f"if {ent} is None: {ent} = {tname}.default", want_hit)
        else:
            key = keys[0] if len(keys) == 1 and table.mode != "scan" else "(" + ", ".join(keys) + ",)"
            if table.mode == "exact":
                dname = self.glob("D_" + table.name, table.exact)
                self.pre_or_emit(f"{ent} = {dname}.get({key})", want_hit)
                self.pre_or_emit(f"if {ent} is None: {ent} = {tname}.default", want_hit)
            else:
                meth = "lookup_lpm" if table.mode == "lpm" and self.optimize else "lookup"
                self.pre_or_emit(f"{ent} = {tname}.{meth}({key})", want_hit)
        if want_hit:
            # hit/miss in a condition: run the actions before the condition is tested
            lines_before = self.lines
            self.lines = []
            saved_ind = self.ind
            self.dispatch(table, decl, actions, ctx, ent, loc)
            body, self.lines, self.ind = self.lines, lines_before, saved_ind
            base = "    " * self.ind
            self.pre.extend(line[len(base):] if line.startswith(base) else line.lstrip() for line in body)
            return f"{ent}[2]"
        self.dispatch(table, decl, actions, ctx, ent, loc)
        return None

    def pre_or_emit(self, line: str, to_pre: bool) -> None:
        if to_pre:
            self.pre.append(line)
        else:
            self.flush_pre()
            self.emit(line)

    def key_header(self, e: ir.Expr, scopes) -> _HdrRef | None:
        if isinstance(e, ir.Member):
            b = self.ref(e.expr, scopes)
            if isinstance(b, _HdrRef):
                return b
        if isinstance(e, ir.Slice | ir.Cast):
            return self.key_header(e.expr, scopes)
        return None

    def dispatch(self, table: Table, decl: ir.Table, actions: list[ir.Action], ctx, ent: str, loc) -> None:
        first = True
        for aid, act in enumerate(actions):
            self.emit(f"{'if' if first else 'elif'} {ent}[0] == {aid}:")
            first = False
            self.ind += 1
            bound = {}
            names = []
            for p in act.params:
                if p.direction == "":
                    var = self.fresh(p.name)
                    names.append(var)
                    bound[p.name] = _Leaf(var, p.type)
            if names:
                self.emit(f"{', '.join(names)}, = {ent}[1]")
            start = len(self.lines)
            ref_args = []
            if len(bound) != len(act.params):
                self.fail(act.loc, f"unsupported directional parameters in table action {act.name}")
            self.inline_action(act, ref_args, ctx["action_scopes"], ctx, loc, bound=bound)
            if len(self.lines) == start:
                self.emit("pass")
            self.ind -= 1

    # -- externs
    def register_call(self, reg: Register, meth: str, e: ir.Call, scopes) -> None:
        rv = self.glob("R_" + reg.name, reg.values)
        if meth == "read":
            out = self.out_target(e.args[0], scopes, e.loc)
            idx = self.clean(self.expr(e.args[1], scopes))
            iv = self.fresh("i")
            self.flush_pre()
            self.emit(f"{iv} = {idx}")
            self.emit(f"{out.var} = {rv}[{iv}] if {iv} < {reg.size} else 0")
        else:
            idx = self.clean(self.expr(e.args[0], scopes))
            val = self.convert(self.expr(e.args[1], scopes), ir.BitT(reg.width), e.loc)
            iv = self.fresh("i")
            self.flush_pre()
            self.emit(f"{iv} = {idx}")
            self.emit(f"if {iv} < {reg.size}: {rv}[{iv}] = {val}")

    def counter_call(self, c: Counter, e: ir.Call, scopes) -> None:
        pv = self.glob("CP_" + c.name, c.packets)
        bv = self.glob("CB_" + c.name, c.bytes)
        idx = self.clean(self.expr(e.args[0], scopes))
        iv = self.fresh("i")
        self.flush_pre()
        self.emit(f"{iv} = {idx}")
        self.emit(f"if {iv} < {c.size}:")
        self.emit(f"    {pv}[{iv}] += 1")
        self.emit(f"    {bv}[{iv}] += _plen")

    def field_list(self, e: ir.Expr, scopes) -> tuple[str, int]:
        items = e.items if isinstance(e, ir.ListExpr) else [e]
        code, width = "", 0
        for it in items:
            b = self.ref(it, scopes) if isinstance(it, ir.Name | ir.Member) else None
            leaves: list[tuple[str, int]] = []
            if isinstance(b, _HdrRef):
                leaves = [(var, w) for _n, w, var in b.fields]
            else:
                v = self.expr(it, scopes)
                if not isinstance(v.type, ir.BitT):
                    self.fail(it.loc, "checksum/hash data must be bit<N> fields or headers")
                leaves = [(self.clean(v), v.type.width)]
            for c, w in leaves:
                code = c if not code else f"(({code}) << {w} | {c})"
                width += w
        return code or "0", width

    def checksum(self, name: str, e: ir.Call, scopes, ctx) -> None:
        if len(e.args) != 4:
            self.fail(e.loc, f"{name} takes 4 arguments")
        algo = self.expr(e.args[3], scopes)
        enum_t = self.prog.types.get("HashAlgorithm")
        if not isinstance(enum_t, ir.EnumT) or algo.const is None or enum_t.members[algo.const] != "csum16":
            self.fail(e.loc, f"unsupported {name} algorithm (only HashAlgorithm.csum16)")
        cond = self.expr(e.args[0], scopes)
        data, width = self.field_list(e.args[1], scopes)
        pad = (-width) % 16
        if pad:
            data = f"(({data}) << {pad})"
        tgt = self.out_target(e.args[2], scopes, e.loc)
        self.flush_pre()
        self.emit(f"if {cond.code}:")
        if self.optimize:
            # _csum inlined
            t = self.fresh("c")
            self.emit(f"    {t} = {data}")
            data = f"(0xffff - ({t} % 0xffff or (0xffff if {t} else 0)))"
            if name == "verify_checksum":
                self.emit(f"    if {data} != {tgt.var}:")
                self.emit(f"        {ctx.get('sm_verify').members['checksum_error'].var} = 1")
            else:
                self.emit(f"    {tgt.var} = {data}")
            return
        if name == "verify_checksum":
            sm = ctx.get("sm_verify")
            self.emit(f"    if _csum({data}) != {tgt.var}:")
            self.emit(f"        {sm.members['checksum_error'].var} = 1")
        else:
            self.emit(f"    {tgt.var} = _csum({data})")

    def hash_call(self, e: ir.Call, scopes) -> None:
        if len(e.args) != 5:
            self.fail(e.loc, "hash takes 5 arguments")
        out = self.out_target(e.args[0], scopes, e.loc)
        algo = self.expr(e.args[1], scopes)
        enum_t = self.prog.types.get("HashAlgorithm")
        aname = enum_t.members[algo.const] if isinstance(enum_t, ir.EnumT) and algo.const is not None else "?"
        if aname not in ("crc32", "crc16", "csum16", "identity", "xor16"):
            self.fail(e.loc, f"unsupported hash algorithm {aname}")
        base = self.clean(self.expr(e.args[2], scopes))
        data, width = self.field_list(e.args[3], scopes)
        mx = self.clean(self.expr(e.args[4], scopes))
        h = self.fresh("h")
        m = self.fresh("m")
        self.flush_pre()
        self.emit(f"{h} = _hash({aname!r}, {data}, {width})")
        self.emit(f"{m} = {mx}")
        self.emit(f"{out.var} = ({base} + ({h} % {m} if {m} else {h})) & {hex(_mask(out.type.width))}")

    # -- parser pieces
    def extract(self, e: ir.Call, scopes, ctx) -> None:
        if ctx.get("kind") != "parser":
            self.fail(e.loc, "extract outside a parser")
        if len(e.args) != 1:
            self.fail(e.loc, "unsupported varbit extract")
        h = self.ref(e.args[0], scopes)
        if not isinstance(h, _HdrRef):
            self.fail(e.loc, "extract needs a header")
        nbytes = h.type.width // 8
        self.emit(f"if _pos + {nbytes} > _n:")
        self.emit(f"    _perr = {self.errors['PacketTooShort']}")
        self.emit("    break")
        if not self.optimize:
            self.emit(f"_x = int.from_bytes(_pkt[_pos:_pos + {nbytes}], 'big')")
            self.emit(f"_pos += {nbytes}")
            self._split(h.fields, "_x", h.type.width, None)
            self.emit(f"{h.valid} = True")
            return
        raw = self.raw.get(h.valid)
        if raw is None:
            raw = self.raw[h.valid] = self.fresh(h.path + "_raw")
        self.raw_lines.append((len(self.lines), raw))
        self.emit(f"{raw} = _pkt[_pos:_pos + {nbytes}]")
        for var in [h.valid] + [v for _n, _w, v in h.fields]:
            self.extract_stores[var] = self.extract_stores.get(var, 0) + 1
        field_lines: list[tuple[int, str]] = []
        self.extract_lines.append((len(self.lines), field_lines))
        layout = self.struct_layout(h)
        if layout is None:
            self.emit(f"_x = int.from_bytes(_pkt[_pos:_pos + {nbytes}], 'big')")
            self.emit(f"_pos += {nbytes}")
            self._split(h.fields, "_x", h.type.width, field_lines)
        else:
            # one struct.unpack of byte-aligned pieces, then split the pieces holding several fields
            sname, chunks = layout
            targets, post = [], []
            for nb, fs, pieces in chunks:
                if len(fs) == 1 and len(pieces) == 1:
                    targets.append(fs[0][2])
                    continue
                pvars = [self.fresh("p") for _ in pieces]
                targets.extend(pvars)
                if len(fs) == 1:
                    code, off = "", nb * 8
                    for pv, size in zip(pvars, pieces, strict=True):
                        off -= size * 8
                        part = f"{pv} << {off}" if off else pv
                        code = part if not code else f"{code} | {part}"
                    post.append(("line", fs[0][2], code))
                else:
                    post.append(("split", fs, pvars[0], nb * 8))
            self.emit(f"{', '.join(targets)}, = {sname}.unpack_from(_pkt, _pos)")
            self.emit(f"_pos += {nbytes}")
            for item in post:
                if item[0] == "line":
                    field_lines.append((len(self.lines), item[1]))
                    self.emit(f"{item[1]} = {item[2]}")
                else:
                    self._split(item[1], item[2], item[3], field_lines)
        self.emit(f"{h.valid} = True")

    def _split(self, fields, src: str, width: int, field_lines: list | None) -> None:
        """Assign ``fields`` (name, width, var) from the ``width``-bit value in ``src``."""
        shift = width
        for _n, w, var in fields:
            if field_lines is not None:
                field_lines.append((len(self.lines), var))
            shift -= w
            if shift == 0:
                self.emit(f"{var} = {src} & {hex(_mask(w))}")
            elif shift + w == width:
                self.emit(f"{var} = {src} >> {shift}")
            else:
                self.emit(f"{var} = ({src} >> {shift}) & {hex(_mask(w))}")

    def struct_layout(self, h: _HdrRef) -> tuple[str, list[tuple[int, list, list[int]]]] | None:
        """A ``struct.Struct`` (global name) covering header ``h`` in byte-aligned pieces, and its chunks.

        Fields are grouped into chunks that start and end on byte boundaries; a chunk is
        one struct item of 1, 2, 4 or 8 bytes, or one field split over several items.
        None when a header does not fit that scheme (then the int path is used).
        """
        chunks, cur, bits = [], [], 0
        for f in h.fields:
            if f[1] <= 0:
                return None
            cur.append(f)
            bits += f[1]
            if bits % 8 == 0:
                chunks.append((bits // 8, cur))
                cur, bits = [], 0
        if cur:
            return None
        out, fmt = [], "!"
        for nb, fs in chunks:
            pieces, left = [], nb
            for size in (8, 4, 2, 1):
                while left >= size:
                    pieces.append(size)
                    left -= size
            if len(pieces) > 1 and len(fs) > 1:
                return None
            fmt += "".join({8: "Q", 4: "I", 2: "H", 1: "B"}[x] for x in pieces)
            out.append((nb, fs, pieces))
        st = self.structs.get(fmt)
        if st is None:
            st = self.structs[fmt] = _struct.Struct(fmt)
        return self.glob("S_" + h.type.name, st), out

    def emit_hdr(self, e: ir.Call, scopes) -> None:
        b = self.ref(e.args[0], scopes)
        hdrs: list[_HdrRef] = []

        def walk(x):
            if isinstance(x, _HdrRef):
                hdrs.append(x)
            elif isinstance(x, _StructRef):
                for m in x.members.values():
                    walk(m)

        walk(b)
        if not hdrs:
            self.fail(e.loc, "emit needs a header or a struct of headers")
        for h in hdrs:
            code = ""
            for _n, w, var in h.fields:
                code = var if not code else f"({code} << {w} | {var})"
            code = f"({code}).to_bytes({h.type.width // 8}, 'big')"
            layout = self.struct_layout(h) if self.optimize else None
            if layout is not None:
                args = []
                for nb, fs, pieces in layout[1]:
                    if len(pieces) == 1:
                        part = ""
                        for _n, w, var in fs:
                            part = var if not part else f"{part} << {w} | {var}"
                        args.append(part)
                        continue
                    var, off = fs[0][2], nb * 8
                    for size in pieces:
                        off -= size * 8
                        part = f"{var} >> {off}" if off else var
                        args.append(part if off + size * 8 == nb * 8 else f"({part}) & {hex(_mask(size * 8))}")
                code = f"{layout[0]}.pack({', '.join(args)})"
            if self.optimize:
                # the operand is chosen after the whole program is generated (Pipeline._finish_deparse)
                self.deparse.append((len(self.lines), h, code))
            self.emit(f"if {h.valid}: _out.append({code})")


_PARSER_INLINE_LIMIT = 64  #: most state copies an inlined (acyclic) parser may have


def _parser_inline_cost(decl: ir.ParserDecl) -> float:
    """Number of state copies inlining ``decl`` from ``start`` makes; inf if cyclic or unknown states."""
    memo: dict[str, float] = {}
    active: set[str] = set()

    def targets(st: ir.ParserState) -> list[str]:
        if st.select is None:
            return [st.next_state or "reject"]
        out = []
        for case in st.cases:
            out.append(case.next_state)
            if all(k[0] == "default" for k in case.keys):
                break
        return out

    def cost(name: str) -> float:
        if name in ("accept", "reject"):
            return 0
        if name in memo:
            return memo[name]
        if name in active or name not in decl.states:
            return float("inf")
        active.add(name)
        total = 1 + sum(cost(t) for t in targets(decl.states[name]))
        active.discard(name)
        memo[name] = total
        return total

    return cost("start")


def _names(body: list[str]) -> tuple[set[str], dict[str, int]]:
    """Names read, and how often each name is stored, in the generated function body ``body``."""
    tree = ast.parse("def _f():\n" + "\n".join(body))
    loads: set[str] = set()
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                stores[node.id] = stores.get(node.id, 0) + 1
            else:
                loads.add(node.id)
    return loads, stores


def _contains(node: Any, cls: type) -> bool:
    if isinstance(node, cls):
        return True
    if isinstance(node, ir.Block):
        return any(_contains(s, cls) for s in node.stmts)
    if isinstance(node, ir.If):
        return _contains(node.then, cls) or (node.other is not None and _contains(node.other, cls))
    return False


def _tname(t: Any) -> str:
    if isinstance(t, ir.BitT):
        return f"bit<{t.width}>"
    if isinstance(t, ir.IntT):
        return f"int<{t.width}>"
    if isinstance(t, ir.BoolT):
        return "bool"
    if isinstance(t, ir.IntLitT):
        return "int"
    if isinstance(t, ir.ErrorT):
        return "error"
    return getattr(t, "name", type(t).__name__)


def _desc_call(e: ir.Call) -> str:
    f = e.func
    if isinstance(f, ir.Member):
        return f"{f.name}()"
    if isinstance(f, ir.Name):
        return f"{f.name}()"
    return "call"


# ======================================================================= pipeline

_ROLES = {
    0: ("parser", ["packet_in", "H", "M", "S"]),
    1: ("verify", ["H", "M"]),
    2: ("ingress", ["H", "M", "S"]),
    3: ("egress", ["H", "M", "S"]),
    4: ("compute", ["H", "M"]),
    5: ("deparser", ["packet_out", "H"]),
}


class Pipeline:
    """A v1model program compiled to Python (see module docstring).

    ``tables``, ``registers``, ``counters`` map fully qualified names
    (``MyIngress.ipv4_lpm``) to :class:`Table`, :class:`Register`, :class:`Counter`.
    ``stats`` counts ``parsed`` (frames given to ingress), ``parser_errors`` (packets whose parser_error is
    not NoError), ``ingress_drops``, ``egress_drops``, ``packets_out``.
    ``source`` is the generated Python (for debugging).

    Raises :class:`P4FrontendError` (FILE:LINE) for constructs the runtime does not
    support, e.g. a program that is not a V1Switch.
    """

    def __init__(self, program: ir.Program, seed: int | None = None, *, optimize: bool = True) -> None:
        self.program = program
        self.optimize = optimize
        self.rng = _random.Random(seed)
        self.tables: dict[str, Table] = {}
        self.registers: dict[str, Register] = {}
        self.counters: dict[str, Counter] = {}
        self.stats: dict[str, int] = {"parsed": 0, "parser_errors": 0, "ingress_drops": 0,
                                      "egress_drops": 0, "packets_out": 0}
        self.error_codes = {e: i for i, e in enumerate(program.errors)}
        self._build()

    # ------------------------------------------------------------ compilation
    def _build(self) -> None:
        prog = self.program
        main = prog.main
        if main is None or main.type.name != "V1Switch" or len(main.args) != 6:
            raise P4FrontendError(prog.source, 0, "unsupported package (need V1Switch with 6 blocks)")
        blocks: list[Any] = []
        for i, a in enumerate(main.args):
            if not isinstance(a, ir.Ctor) or not isinstance(a.type, ir.NamedT):
                raise P4FrontendError(main.loc[0], main.loc[1], "V1Switch arguments must be MyBlock()")
            name = a.type.name
            decl = prog.parsers.get(name) if i == 0 else prog.controls.get(name)
            if decl is None:
                raise P4FrontendError(a.loc[0], a.loc[1], f"unknown {'parser' if i == 0 else 'control'} {name}")
            blocks.append(decl)
        c = _Compiler(prog, self)
        self._c = c
        parser = blocks[0]
        htype, mtype = parser.params[1].type, parser.params[2].type
        stype = prog.types.get("standard_metadata_t")
        for t, what in ((htype, "headers"), (mtype, "metadata"), (stype, "standard_metadata_t")):
            if not isinstance(t, ir.StructT):
                raise P4FrontendError(parser.loc[0], parser.loc[1], f"{what} type must be a struct")
        H = c.alloc_struct(htype, "hdr")
        M = c.alloc_struct(mtype, "meta")
        S = c.alloc_struct(stype, "sm")
        for f in _SM_FIELDS:
            if f not in S.members:
                raise P4FrontendError(parser.loc[0], parser.loc[1], f"standard_metadata_t lacks {f}")
        self._H, self._M, self._S = H, M, S
        roots = {"H": H, "M": M, "S": S, "packet_in": ("packet_in",), "packet_out": ("packet_out",)}
        ctxs = []
        for i, decl in enumerate(blocks):
            kind, roles = _ROLES[i]
            if len(decl.params) != len(roles):
                raise P4FrontendError(decl.loc[0], decl.loc[1],
                                      f"{decl.name} has {len(decl.params)} parameters, v1model expects {len(roles)}")
            scope = {p.name: roots[r] for p, r in zip(decl.params, roles, strict=True)}
            ctx = {"kind": "parser" if i == 0 else "control", "sm": S, "sm_verify": S,
                   "action_scopes": [scope], "name": decl.name}
            ctxs.append(ctx)
        all_slots = [v for v, _ in c.slots]
        c.ns["_rng"] = self.rng
        c.ns["_STATS"] = self.stats
        sm = S.members

        # ---- ingress body (parser, verify checksum, ingress control)
        c.lines = []
        c.ind = 1
        c.emit("_pos = 0")
        c.emit("_perr = 0")
        self._gen_parser(c, parser, ctxs[0])
        c.emit(f"{sm['parser_error'].var} = _perr")
        c.emit("if _perr: _STATS['parser_errors'] += 1")
        self._gen_control(c, blocks[1], ctxs[1])
        self._gen_control(c, blocks[2], ctxs[2])
        c.emit(f"if {sm['egress_spec'].var} == {DROP_PORT}: return None")
        ingress_body = c.lines

        # ---- egress body (egress control, compute checksum, deparser)
        c.lines = []
        c.ind = 1
        self._gen_control(c, blocks[3], ctxs[3])
        c.emit(f"if {sm['egress_spec'].var} == {DROP_PORT}: return None")
        self._gen_control(c, blocks[4], ctxs[4])
        c.emit("_out = []")
        self._gen_control(c, blocks[5], ctxs[5])
        c.emit("_out.append(_pkt[_pos:])")
        c.emit("return b''.join(_out)")
        egress_body = c.lines

        # standard_metadata set from the arguments: (var, code)
        ingress_setup = [(sm["ingress_port"].var, "_port & 0x1ff"), (sm["packet_length"].var, "_n"),
                         (sm["ingress_global_timestamp"].var, "_now & 0xffffffffffff")]
        egress_setup = [(sm["egress_port"].var, "_eport & 0x1ff"), (sm["enq_qdepth"].var, "_enq_qdepth & 0x7ffff"),
                        (sm["deq_qdepth"].var, "_deq_qdepth & 0x7ffff"),
                        (sm["deq_timedelta"].var, "_deq_td & 0xffffffff"),
                        (sm["enq_timestamp"].var, "_enq_ts & 0xffffffff"),
                        (sm["egress_global_timestamp"].var, "_now & 0xffffffffffff")]
        inits = dict(c.slots)
        if self.optimize:
            passed, ingress_setup, egress_setup = self._optimize(c, ingress_body, egress_body, all_slots,
                                                                 ingress_setup, egress_setup)
            live_in = _names(ingress_body)[0] | set(passed) | {sm["egress_spec"].var, sm["mcast_grp"].var}
            ingress_setup = [(v, code) for v, code in ingress_setup if v in live_in]
            init_vars = [v for v in all_slots + list(c.raw.values()) if v in live_in]
            inits.update((v, b"") for v in c.raw.values())
        else:
            passed = all_slots
            init_vars = all_slots

        c.lines = ["def _ingress(_pkt, _port, _now):"]
        c.ind = 1
        for v in init_vars:
            c.emit(f"{v} = {inits[v]!r}")
        c.emit("_n = _plen = len(_pkt)")
        for v, code in ingress_setup:
            c.emit(f"{v} = {code}")
        ingress_src = c.lines + ingress_body
        state = ", ".join(["_pkt", "_pos", *passed])
        ingress_src.append(f"    return ({sm['egress_spec'].var}, {sm['mcast_grp'].var}, _plen, ({state},))")

        c.lines = ["def _egress(_st, _eport, _enq_qdepth, _deq_qdepth, _deq_td, _enq_ts, _now):"]
        c.emit(f"{state}, = _st")
        if not self.optimize or "_plen" in _names(egress_body)[0]:
            c.emit(f"_plen = {sm['packet_length'].var}")
        for v, code in egress_setup:
            c.emit(f"{v} = {code}")
        egress_src = c.lines + egress_body
        self.source = "\n".join(ingress_src + [""] + egress_src) + "\n"
        code = compile(self.source, f"<p4 pipeline {prog.source}>", "exec")
        exec(code, c.ns)  # noqa: S102 - generated from the parsed program, see _Compiler
        self._ingress_fn = c.ns["_ingress"]
        self._egress_fn = c.ns["_egress"]
        logger.info("compiled %s: %d lines of Python, %d tables, %d registers, %d counters",
                    prog.source, self.source.count("\n"), len(self.tables), len(self.registers),
                    len(self.counters))

    def _optimize(self, c: _Compiler, ingress_body: list[str], egress_body: list[str], all_slots: list[str],
                  ingress_setup, egress_setup):
        """Pick the deparser operands and the state egress needs (``optimize=True``).

        A header whose fields and validity are stored only by ``extract`` (checked on the
        generated code: every store to a Python name is an ``ast.Name`` in Store context)
        still holds exactly the bytes it was extracted from, so the deparser emits those
        bytes instead of rebuilding them. Egress then gets only the variables it reads.
        Returns (passed state vars, ingress setup, egress setup).
        """
        _lin, st_in = _names(ingress_body)
        _leg, st_eg = _names(egress_body)
        for i, h, code in c.deparse:
            raw = c.raw.get(h.valid)
            untouched = raw is not None and all(
                st_in.get(v, 0) + st_eg.get(v, 0) == c.extract_stores.get(v, -1)
                for v in [h.valid] + [v for _n, _w, v in h.fields])
            line = egress_body[i] if i < len(egress_body) else ""
            if untouched and line.strip() == f"if {h.valid}: _out.append({code})":
                egress_body[i] = line.replace(code, raw)
        load_eg = _names(egress_body)[0]
        # extracted fields that nothing reads: skip computing them
        loads = _names(ingress_body)[0] | load_eg
        for xline, fields in c.extract_lines:
            dead = [(i, v) for i, v in fields
                    if v not in loads and ingress_body[i].strip().startswith(f"{v} = ")]
            for i, _v in dead:
                ingress_body[i] = ""
            if len(dead) == len(fields) and ingress_body[xline].strip().startswith("_x = "):
                ingress_body[xline] = ""
        for i, raw in c.raw_lines:
            if raw not in loads and ingress_body[i].strip().startswith(f"{raw} = "):
                ingress_body[i] = ""
        if "_plen" in load_eg:
            load_eg.add(self._S.members["packet_length"].var)
        egress_setup = [(v, code) for v, code in egress_setup if v in load_eg]
        # egress_setup assigns its vars first thing in egress: no need to pass them
        set_first = {v for v, _code in egress_setup}
        passed = [v for v in all_slots + list(c.raw.values()) if v in load_eg and v not in set_first]
        return passed, ingress_setup, egress_setup

    def _declare_locals(self, c: _Compiler, decl, ctx) -> None:
        """Control/parser locals, instances, actions and tables into the block scope."""
        scope = ctx["action_scopes"][0]
        for inst in getattr(decl, "instances", []):
            self._instance(c, decl, inst, scope)
        for loc_decl in decl.locals:
            if isinstance(loc_decl, ir.Instance):
                self._instance(c, decl, loc_decl, scope)
            elif isinstance(loc_decl, ir.ConstDecl | ir.VarDecl):
                c.stmt(loc_decl, ctx["action_scopes"], ctx)
        for act in getattr(decl, "actions", {}).values():
            scope[act.name] = ("action", act)
        for t in getattr(decl, "tables", {}).values():
            scope[t.name] = ("table", self._table(c, decl, t, ctx))

    def _instance(self, c: _Compiler, decl, inst: ir.Instance, scope) -> None:
        fq = f"{decl.name}.{inst.name}"
        tname = inst.type.name
        if tname == "register":
            if len(inst.type.args) != 1 or not isinstance(inst.type.args[0], ir.BitT):
                raise P4FrontendError(inst.loc[0], inst.loc[1], "unsupported register element type (need bit<W>)")
            size = c.const_of(inst.args[0], [scope])
            reg = Register(fq, inst.type.args[0].width, size)
            self.registers[fq] = reg
            scope[inst.name] = ("register", reg)
        elif tname == "counter":
            size = c.const_of(inst.args[0], [scope])
            kind_v = c.expr(inst.args[1], [scope]) if len(inst.args) > 1 else None
            enum_t = self.program.types.get("CounterType")
            kind = enum_t.members[kind_v.const] if isinstance(enum_t, ir.EnumT) and kind_v and kind_v.const is not None else "packets"
            cnt = Counter(fq, size, kind)
            self.counters[fq] = cnt
            scope[inst.name] = ("counter", cnt)
        else:
            raise P4FrontendError(inst.loc[0], inst.loc[1], f"unsupported extern {tname}")

    def _table(self, c: _Compiler, decl, t: ir.Table, ctx) -> tuple:
        fq = f"{decl.name}.{t.name}"
        scopes = ctx["action_scopes"]
        keys = []
        for k in t.keys:
            v = c.expr(k.expr, scopes)
            if isinstance(v.type, ir.BoolT):
                w = 1
            elif isinstance(v.type, ir.BitT):
                w = v.type.width
            else:
                raise P4FrontendError(k.loc[0], k.loc[1], f"unsupported key type {_tname(v.type)}")
            keys.append(KeySpec(k.text, k.match_kind, w))
        c.pre = []
        actions: list[ir.Action] = []
        specs: list[ActionSpec] = []
        for aid, ref in enumerate(t.actions):
            act = self._find_action(decl, ref.name, ref.loc)
            actions.append(act)
            params = []
            for p in act.params:
                if p.direction == "":
                    if not isinstance(p.type, ir.BitT):
                        raise P4FrontendError(p.loc[0], p.loc[1], "unsupported action data type (need bit<W>)")
                    params.append((p.name, p.type.width))
            owner = decl.name if act.name in getattr(decl, "actions", {}) else ""
            spec_name = f"{owner}.{act.name}" if owner else act.name
            specs.append(ActionSpec(spec_name, aid, params, act.name))
        table = Table(fq, keys, specs, t.size, t.const_default)
        if t.default_action is not None:
            ref = t.default_action
            names = [a.name for a in actions]
            if ref.name not in names:
                raise P4FrontendError(ref.loc[0], ref.loc[1],
                                      f"default action {ref.name} is not in the actions of table {t.name}")
            aid = names.index(ref.name)
            spec = specs[aid]
            vals = [c.const_of(a, scopes) for a in (ref.args or [])]
            if len(vals) != len(spec.params):
                raise P4FrontendError(ref.loc[0], ref.loc[1], f"default action {ref.name} needs {len(spec.params)} arguments")
            table.set_default(spec.name, {n: v & _mask(w) for (n, w), v in zip(spec.params, vals, strict=True)}, force=True)
        else:
            names = [a.name for a in actions]
            if "NoAction" in names:
                table.set_default("NoAction", force=True)
            else:
                table.default = (-1, (), False)  # no action at all on a miss
        self.tables[fq] = table
        return (table, t, actions, ctx)

    def _find_action(self, decl, name: str, loc) -> ir.Action:
        acts = getattr(decl, "actions", {})
        if name in acts:
            return acts[name]
        if name in self.program.actions:
            return self.program.actions[name]
        raise P4FrontendError(loc[0], loc[1], f"unknown action {name}")

    def _gen_parser(self, c: _Compiler, decl: ir.ParserDecl, ctx) -> None:
        scopes = ctx["action_scopes"]
        self._declare_locals(c, decl, ctx)
        names = list(decl.states)
        idx = {n: i for i, n in enumerate(names)}
        inline = c.optimize and _parser_inline_cost(decl) <= _PARSER_INLINE_LIMIT
        if inline:
            # the state-machine form is still generated (so every state is checked as before), then replaced
            mark, saved_stores, saved_ind = len(c.lines), dict(c.extract_stores), c.ind
            n_extracts, n_raws = len(c.extract_lines), len(c.raw_lines)
        c.emit("_st = 0")
        c.emit("while True:")
        c.ind += 1
        first = True
        order = ["start"] + [n for n in names if n != "start"]
        for name in order:
            st = decl.states[name]
            c.emit(f"{'if' if first else 'elif'} _st == {idx[name]}:  # state {name}")
            first = False
            c.ind += 1
            self._gen_state(c, st, scopes, ctx, lambda target, loc: self._goto(c, target, idx, loc))
            c.ind -= 1
        c.emit("else:")
        c.emit("    break")
        c.ind -= 1
        if inline:
            # acyclic and small: each transition becomes the target state's code, inline
            del c.lines[mark:]
            c.extract_stores, c.ind = saved_stores, saved_ind
            del c.extract_lines[n_extracts:]
            del c.raw_lines[n_raws:]

            def goto(target: str, loc) -> None:
                if target in ("accept", "reject"):
                    c.emit("break" if target == "accept" else "break  # reject")
                else:
                    c.emit(f"# state {target}")
                    self._gen_state(c, decl.states[target], scopes, ctx, goto)

            c.emit("while True:")
            c.ind += 1
            goto("start", decl.loc)
            c.ind -= 1

    def _gen_state(self, c: _Compiler, st: ir.ParserState, scopes, ctx, goto) -> None:
        """The statements and the transition of parser state ``st``; ``goto(target, loc)`` emits a transition."""
        sc = scopes + [{}]
        for s in st.stmts:
            c.stmt(s, sc, ctx)
        if st.select is None:
            goto(st.next_state or "reject", st.loc)
            return
        keys = []
        for e in st.select:
            v = c.expr(e, sc)
            kv = c.fresh("k")
            c.flush_pre()
            c.emit(f"{kv} = {c.clean(v)}")
            keys.append((kv, v.type))
        cfirst = True
        has_default = False
        for case in st.cases:
            conds = []
            for (kv, kt), k in zip(keys, case.keys, strict=True):
                if k[0] == "default":
                    continue
                if k[0] == "value":
                    conds.append(f"{kv} == {c.convert(c.expr(k[1], sc), kt, case.loc)}")
                elif k[0] == "mask":
                    val = c.convert(c.expr(k[1], sc), kt, case.loc)
                    m = c.convert(c.expr(k[2], sc), kt, case.loc)
                    conds.append(f"{kv} & {m} == {val} & {m}")
                else:
                    lo = c.convert(c.expr(k[1], sc), kt, case.loc)
                    hi = c.convert(c.expr(k[2], sc), kt, case.loc)
                    conds.append(f"{lo} <= {kv} <= {hi}")
            if not conds:
                if cfirst:
                    goto(case.next_state, case.loc)
                else:
                    c.emit("else:")
                    c.ind += 1
                    goto(case.next_state, case.loc)
                    c.ind -= 1
                has_default = True
                break
            c.emit(f"{'if' if cfirst else 'elif'} {' and '.join(conds)}:")
            cfirst = False
            c.ind += 1
            goto(case.next_state, case.loc)
            c.ind -= 1
        if not has_default:
            if cfirst:
                c.emit(f"_perr = {self.error_codes['NoMatch']}")
                c.emit("break")
            else:
                c.emit("else:")
                c.emit(f"    _perr = {self.error_codes['NoMatch']}")
                c.emit("    break")

    def _goto(self, c: _Compiler, target: str, idx: dict[str, int], loc) -> None:
        if target == "accept":
            c.emit("break")
        elif target == "reject":
            c.emit("break  # reject")
        elif target in idx:
            c.emit(f"_st = {idx[target]}")
            c.emit("continue")
        else:
            raise P4FrontendError(loc[0], loc[1], f"unknown parser state {target}")

    def _gen_control(self, c: _Compiler, decl: ir.ControlDecl, ctx) -> None:
        c.emit(f"# control {decl.name}")
        self._declare_locals(c, decl, ctx)
        uses_exit = _contains_deep(decl, ir.Exit)
        uses_return = _contains(decl.apply, ir.Return)
        if uses_exit:
            c.emit("try:")
            c.ind += 1
        if uses_return:
            c.emit("while True:")
            c.ind += 1
        sub = dict(ctx, in_loop=uses_return)
        c.block(decl.apply.stmts, ctx["action_scopes"], sub)
        if uses_return:
            c.emit("break")
            c.ind -= 1
        if uses_exit:
            c.ind -= 1
            c.emit("except _Exit:")
            c.emit("    pass")

    # ------------------------------------------------------------ per packet
    def ingress(self, frame: bytes, ingress_port: int, now_us: int) -> IngressResult | None:
        """Run parser, verify-checksum and ingress on ``frame`` (bytes of an Ethernet frame).

        ``now_us`` is the ingress_global_timestamp in microseconds. Returns None when the
        packet is dropped (``mark_to_drop`` / egress_spec 511); never raises on malformed
        frames (they get a parser_error and follow the program's logic).
        """
        self.stats["parsed"] += 1
        r = self._ingress_fn(bytes(frame), ingress_port, now_us)
        if r is None:
            self.stats["ingress_drops"] += 1
            return None
        return IngressResult(*r)

    def egress(self, st: IngressResult, *, egress_port: int, enq_qdepth: int = 0, deq_qdepth: int = 0,
               deq_timedelta_us: int = 0, enq_timestamp_us: int = 0, now_us: int = 0) -> bytes | None:
        """Run egress, compute-checksum and the deparser; return the frame or None (dropped).

        Queue depths are in packets (v1model enq_qdepth/deq_qdepth, 19 bits), times in us.
        The payload after the last extracted header is appended unchanged.
        """
        out = self._egress_fn(st.state, egress_port, enq_qdepth, deq_qdepth, deq_timedelta_us,
                              enq_timestamp_us, now_us)
        if out is None:
            self.stats["egress_drops"] += 1
        else:
            self.stats["packets_out"] += 1
        return out

    def process(self, frame: bytes, ingress_port: int, now_us: int = 0, *, enq_qdepth: int = 0,
                deq_qdepth: int = 0) -> tuple[int, bytes] | None:
        """Ingress then egress on the port ingress chose, no queue: ``(port, frame)`` or None."""
        st = self.ingress(frame, ingress_port, now_us)
        if st is None:
            return None
        out = self.egress(st, egress_port=st.egress_spec, enq_qdepth=enq_qdepth, deq_qdepth=deq_qdepth,
                          now_us=now_us)
        return None if out is None else (st.egress_spec, out)

    # ------------------------------------------------------------ control plane
    def table(self, name: str) -> Table:
        """The table ``name`` (fully qualified; a unique short name is accepted)."""
        t = self.tables.get(name)
        if t is None:
            matches = [v for k, v in self.tables.items() if k.split(".")[-1] == name]
            if len(matches) == 1:
                return matches[0]
            raise ControlError(f"unknown table {name}{_closest(name, self.tables)}")
        return t

    def table_add(self, table: str, match: dict[str, Any], action: str, params: dict[str, Any] | None = None,
                  priority: int | None = None) -> None:
        """Add an entry. Match values: exact int/str, lpm 'a.b.c.d/len' or [v, len], ternary [v, mask]."""
        self.table(table).add(match, action, params, priority)

    def table_modify(self, table: str, match: dict[str, Any], action: str, params: dict[str, Any] | None = None,
                     priority: int | None = None) -> None:
        """Replace the action of an existing entry."""
        self.table(table).add(match, action, params, priority, modify=True)

    def table_delete(self, table: str, match: dict[str, Any], priority: int | None = None) -> None:
        """Delete an entry."""
        self.table(table).delete(match, priority)

    def table_clear(self, table: str) -> None:
        """Delete every entry of a table."""
        self.table(table).clear()

    def table_set_default(self, table: str, action: str, params: dict[str, Any] | None = None) -> None:
        """Set the default action (refused when the program declares it const)."""
        self.table(table).set_default(action, params)

    def _register(self, name: str) -> Register:
        r = self.registers.get(name)
        if r is None:
            matches = [v for k, v in self.registers.items() if k.split(".")[-1] == name]
            if len(matches) == 1:
                return matches[0]
            raise ControlError(f"unknown register {name}{_closest(name, self.registers)}")
        return r

    def register_read(self, name: str, index: int | None = None) -> int | list[int]:
        """One cell, or the whole array when ``index`` is None."""
        r = self._register(name)
        if index is None:
            return list(r.values)
        if not 0 <= index < r.size:
            raise ControlError(f"{r.name}: index {index} out of range 0..{r.size - 1}")
        return r.values[index]

    def register_write(self, name: str, index: int, value: int) -> None:
        """Write one cell (value must fit the register width)."""
        r = self._register(name)
        if not 0 <= index < r.size:
            raise ControlError(f"{r.name}: index {index} out of range 0..{r.size - 1}")
        r.values[index] = _to_int(value, r.width, f"{r.name}[{index}]")

    def register_reset(self, name: str) -> None:
        """Zero every cell."""
        r = self._register(name)
        r.values[:] = [0] * r.size

    def counter_read(self, name: str, index: int | None = None) -> tuple[int, int] | list[tuple[int, int]]:
        """(packets, bytes) of one index, or of every index when ``index`` is None."""
        c = self.counters.get(name)
        if c is None:
            matches = [v for k, v in self.counters.items() if k.split(".")[-1] == name]
            if len(matches) != 1:
                raise ControlError(f"unknown counter {name}{_closest(name, self.counters)}")
            c = matches[0]
        if index is None:
            return list(zip(c.packets, c.bytes, strict=True))
        if not 0 <= index < c.size:
            raise ControlError(f"{c.name}: index {index} out of range 0..{c.size - 1}")
        return (c.packets[index], c.bytes[index])

    def counter_reset(self, name: str) -> None:
        """Zero a counter array."""
        self.counter_read(name)
        c = self.counters.get(name) or next(v for k, v in self.counters.items() if k.split(".")[-1] == name)
        c.packets[:] = [0] * c.size
        c.bytes[:] = [0] * c.size


def _contains_deep(decl: ir.ControlDecl, cls: type) -> bool:
    return _contains(decl.apply, cls) or any(_contains(a.body, cls) for a in decl.actions.values())
