"""P4_16 front end of the embedded switch: pcpp preprocessing + lark LALR parsing -> IR.

``load_program(path)`` returns an :class:`emu.embedded.ir.Program`. The supported subset
is documented in ``docs/p4-subset.md``; anything outside it raises
:class:`P4FrontendError` whose ``str()`` is ``FILE:LINE: unsupported <construct>``
(syntax errors: ``FILE:LINE: syntax error: ...``), with FILE and LINE of the original
source, mapped back through the preprocessor's ``#line`` markers.

Sources: P4_16 language specification v1.2.x (grammar appendix; sections 7-13),
p4c's lexer trick for ``>>`` (R_ANGLE_SHIFT), v1model.p4 for the architecture.
"""

from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import lark
from lark import Token, Transformer, v_args
from pcpp import Preprocessor

from . import ir
from .errors import P4FrontendError

__all__ = ["P4FrontendError", "load_program", "parse_text"]

logger = logging.getLogger(__name__)

P4INCLUDE_DIR = Path(__file__).resolve().parent / "p4include"
_GRAMMAR_PATH = Path(__file__).resolve().parent / "grammar.lark"
#: Where lark keeps the analysed grammar (``Lark(cache=...)``: its LALR tables, ~0.4 s to compute
#: per process, ~0.02 s to load). Lark keys the file on the SHA-256 of the grammar text, the
#: parser's options and lark's and Python's versions, and builds the parser afresh (and writes the
#: file again) when they differ: the parser is the same either way. In the checkout's ``build/``
#: (beside the compiled pipelines): a file written with the code, not a shared temporary folder.
PARSER_CACHE = Path(__file__).resolve().parents[2] / "build" / "lark" / "p4-grammar.cache"

#: NAME tokens that start an unsupported construct, with the token that must follow
#: (None: anything) and the construct name used in the error message.
_UNSUPPORTED_WORDS: dict[str, tuple[str | None, str]] = {
    "for": ("(", "for loop"),  # P4_16 1.2.5 for loops
}
#: Method names (after '.') that are unsupported.
_UNSUPPORTED_METHODS = {
}
#: Extern object types a control or parser may instantiate (v1model; T2NA). Which of them
#: an architecture implements is checked when the program is compiled.
_SUPPORTED_EXTERN_INSTANCES = {"register", "counter", "meter", "direct_counter", "direct_meter",
                               "action_profile", "action_selector",
                               "Register", "RegisterAction", "Random", "Hash", "Checksum", "Counter",
                               "ActionProfile", "ActionSelector"}
#: Package types a program may instantiate at top level (``main`` and the pipes it takes).
_PACKAGES = {"V1Switch", "Pipeline", "Switch"}
_TYPE_DECL_WORDS = {"header", "header_union", "struct", "enum", "parser", "control", "package"}


def _type_text(t: ir.Type) -> str:
    """``bit<8>``, ``int<4>``, ``bool``, a declared type's name: a type as P4 spells it."""
    if isinstance(t, ir.BitT):
        return f"bit<{t.width}>"
    if isinstance(t, ir.IntT):
        return f"int<{t.width}>"
    if isinstance(t, ir.BoolT):
        return "bool"
    return getattr(t, "name", type(t).__name__)


def display_path(path: str) -> str:
    """Path as shown in messages: relative to the working directory when below it."""
    ab = os.path.normpath(os.path.abspath(path))
    try:
        rel = os.path.relpath(ab)
    except ValueError:
        return ab
    return ab if rel.startswith("..") else rel


# ------------------------------------------------------------------ preprocessing


class _Pre(Preprocessor):
    """pcpp with P4 include resolution and errors raised as P4FrontendError."""

    def __init__(self, include_dirs: Iterable[str]) -> None:
        super().__init__()
        self.line_directive = "#line"
        self.add_path(str(P4INCLUDE_DIR))
        for d in include_dirs:
            self.add_path(str(d))

    def on_error(self, file: str, line: int, msg: str) -> None:  # noqa: D102
        raise P4FrontendError(display_path(file or "<input>"), line, f"preprocessor: {msg}")

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):  # noqa: D102
        d = self.lastdirective
        raise P4FrontendError(display_path(d.source), d.lineno, f"include file {includepath} not found")

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):  # noqa: D102
        if directive.value in ("error",):
            raise P4FrontendError(display_path(directive.source), directive.lineno,
                                  "#error " + "".join(t.value for t in toks).strip())
        logger.debug("%s:%s: ignoring #%s", directive.source, directive.lineno, directive.value)
        return True


_LINE_RE = re.compile(r'^\s*#\s*line\s+(\d+)(?:\s+"([^"]*)")?\s*$')


def preprocess(path: str, include_dirs: Iterable[str] = ()) -> tuple[str, list[tuple[str, int]]]:
    """Run pcpp on ``path``; return (text without directives, line map).

    ``linemap[i]`` is (display file, line) of line ``i + 1`` of the returned text.
    """
    src_path = os.path.abspath(path)
    try:
        text = Path(src_path).read_text()
    except OSError as exc:
        raise P4FrontendError(display_path(path), 0, f"cannot read: {exc.strerror}") from None
    pre = _Pre(include_dirs)
    pre.parse(text, src_path)
    out = io.StringIO()
    pre.write(out)
    lines = out.getvalue().split("\n")
    cur_file, cur_line = display_path(src_path), 1
    linemap: list[tuple[str, int]] = []
    clean: list[str] = []
    for raw in lines:
        m = _LINE_RE.match(raw)
        if m:
            cur_line = int(m.group(1))
            if m.group(2) is not None:
                cur_file = display_path(m.group(2))
            clean.append("")
            linemap.append((cur_file, cur_line))
            continue
        if raw.lstrip().startswith("#"):
            raw = ""  # any other directive left by pcpp
        clean.append(raw)
        linemap.append((cur_file, cur_line))
        cur_line += 1
    return "\n".join(clean), linemap


# ------------------------------------------------------------------ lexing fix-ups


class _PostLex:
    """Token-stream pass: type names, '>>' splitting, unsupported-keyword detection."""

    always_accept = ("NAME",)

    def __init__(self) -> None:
        self.where = lambda line: ("<input>", line)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        """Rewrite the token stream (see module docstring of the grammar)."""
        toks = list(stream)
        n = len(toks)
        val = [t.value if t.type != "STRING" else "" for t in toks]
        # unsupported words
        for i, t in enumerate(toks):
            if t.type == "NAME":
                prev = val[i - 1] if i else ""
                nxt = val[i + 1] if i + 1 < n else ""
                if prev == "." and t.value in _UNSUPPORTED_METHODS:
                    self._fail(t, f"unsupported {_UNSUPPORTED_METHODS[t.value]}")
                rule = _UNSUPPORTED_WORDS.get(t.value)
                if rule and prev != "." and (rule[0] is None or nxt == rule[0]):
                    self._fail(t, f"unsupported {rule[1]}")
                if t.value == "type" and prev in ("", ";", "}", ")") and (
                        nxt in ("bit", "int", "bool") or (
                        i + 3 < n and toks[i + 1].type == "NAME" and toks[i + 2].type == "NAME"
                        and val[i + 3] == ";")):
                    # `type T N;` (P4_16 spec 7.6): the keyword; `type` stays a field name elsewhere
                    toks[i] = Token.new_borrow_pos("TYPE_KW", t.value, t)
                    t = toks[i]
        # global type names
        # tuple<T1, T2> (P4_16 spec 7.2.8) and value_set<T> (12.11), the built-in generic types
        types: set[str] = {"tuple", "value_set"}
        for i, t in enumerate(toks):
            v = val[i]
            if i + 1 >= n:
                break
            if v in _TYPE_DECL_WORDS and t.type != "NAME" and toks[i + 1].type == "NAME":
                types.add(toks[i + 1].value)
            elif v == "extern" and t.type != "NAME" and toks[i + 1].type == "NAME" \
                    and i + 2 < n and val[i + 2] in ("{", "<"):
                types.add(toks[i + 1].value)
            elif v == "enum" and t.type != "NAME" and val[i + 1] in ("bit", "int"):
                j = i + 1  # enum bit<8> Name { ... }: the name follows the closing '>'
                while j < n and val[j] != ">":
                    j += 1
                if j + 1 < n and toks[j + 1].type == "NAME":
                    types.add(toks[j + 1].value)
            elif (v == "typedef" and t.type != "NAME") or t.type == "TYPE_KW":
                j = i + 1
                while j < n and val[j] != ";":
                    j += 1
                if toks[j - 1].type == "NAME":
                    types.add(toks[j - 1].value)
        # scoped type parameters: NAME '<' NAME (',' NAME)* '>' ...
        scoped: dict[int, set[str]] = {}
        for i in range(1, n):
            if val[i] != "<" or toks[i - 1].type not in ("NAME",) and val[i - 1] not in types:
                continue
            names, j = [], i + 1
            while j + 1 < n and toks[j].type == "NAME" and val[j + 1] in (",", ">"):
                names.append(val[j])
                j += 2
                if val[j - 1] == ">":
                    break
            if not names or val[j - 1] != ">" or j >= n or val[j] not in ("(", "{"):
                continue
            end, depth, opened = j, 0, False
            while end < n:
                v = val[end]
                if v in ("(", "{", "["):
                    depth += 1
                    opened = opened or (v == "{" and depth == 1)
                elif v in (")", "}", "]"):
                    depth -= 1
                    if depth == 0 and v == "}" and opened:
                        break
                elif v == ";" and depth == 0:
                    break
                end += 1
            for k in range(i - 1, end + 1):
                scoped.setdefault(k, set()).update(names)
        self._classify(toks, val, types, scoped)
        for i, t in enumerate(toks):
            if t.value == ">" and t.type != "STRING" and i + 1 < n and val[i + 1] == ">" \
                    and toks[i + 1].start_pos == t.end_pos:
                toks[i] = Token.new_borrow_pos("RANGLE_SHIFT", t.value, t)
            elif t.value == "<" and t.type != "STRING" and i >= 2 and val[i - 1] == "lookahead" \
                    and val[i - 2] == ".":
                # pkt.lookahead<T>(): a type-argument list, not a comparison (an expression
                # grammar cannot tell them apart with one token of lookahead)
                toks[i] = Token.new_borrow_pos("GENERIC_LT", t.value, t)
        yield from toks

    def _fail(self, tok: Token, msg: str) -> None:
        f, line = self.where(tok.line)
        raise P4FrontendError(f, line, msg)

    @staticmethod
    def _classify(toks: list[Token], val: list[str], types: set[str], scoped: dict[int, set[str]]) -> None:
        """Turn each NAME that denotes a type *at its position* into TYPE_NAME (P4_16 spec 6.2.2 scoping).

        Every ``(`` and ``{`` opens a scope; a parameter list's scope extends over the body
        that follows it. A name declared as a value (a parameter, local variable or
        constant, an instance, an action or table) in a scope shadows a type of the same
        name in the scopes around it, so ``out T hdr`` in core.p4 stays a parameter when
        the program declares ``header hdr``. Type parameters (``scoped``) and the program's
        types (``types``) are types where no value shadows them. A declared value is a
        name after a type (or after an instantiation's ``)``) and before ``; = , )``.
        """
        n = len(toks)
        stack: list[set[str]] = [set()]  # value names declared in each open scope, global first
        carry: set[str] | None = None  # a closed parameter list whose scope the next bracket continues
        in_typedef = False
        ends_type = {"bool", "error", "void", "string", "int", "bit", "varbit", "]", ">"}
        prev_type = False  # the previous token ends a type
        for i, t in enumerate(toks):
            v = val[i]
            if t.type == "STRING":
                prev_type, carry = False, None
                continue
            if t.type == "NAME":
                after_dot = i > 0 and val[i - 1] == "."
                prev_kw = val[i - 1] if i > 0 and toks[i - 1].type not in ("NAME", "STRING") else ""
                nxt = val[i + 1] if i + 1 < n else ""
                declares = not after_dot and not in_typedef and (
                    (prev_type and nxt in (";", "=", ",", ")"))
                    or (prev_kw == ")" and nxt == ";")
                    or prev_kw in ("action", "table", "state"))
                if declares:
                    stack[-1].add(v)
                elif not after_dot and prev_kw != "transition" and not any(v in sc for sc in stack) \
                        and (v in types or v in scoped.get(i, ())):
                    toks[i] = Token.new_borrow_pos("TYPE_NAME", v, t)
                    prev_type, carry = True, None
                    continue
                prev_type, carry = False, None
                continue
            if v == "typedef" or t.type == "TYPE_KW":
                in_typedef = True
            elif v == ";":
                in_typedef = False
            if v in ("(", "{", "["):
                stack.append(set(carry) if carry else set())
                carry = None
            elif v in (")", "}", "]") and len(stack) > 1:
                closed = stack.pop()
                carry = closed if v == ")" and i + 1 < n and val[i + 1] in ("{", "(") else None
            else:
                carry = None
            prev_type = v in ends_type


_POSTLEX = _PostLex()
_PARSER: lark.Lark | None = None


def _parser() -> lark.Lark:
    """The P4 grammar's LALR parser (one per process), loaded from :data:`PARSER_CACHE` when that
    holds this grammar's (else computed and written there; without a writable ``build/``, computed)."""
    global _PARSER
    if _PARSER is None:
        try:
            PARSER_CACHE.parent.mkdir(parents=True, exist_ok=True)
            cache: str | bool = str(PARSER_CACHE)
        except OSError:
            cache = False
        _PARSER = lark.Lark(_GRAMMAR_PATH.read_text(), parser="lalr", lexer="basic", cache=cache,
                            postlex=_POSTLEX, propagate_positions=True, maybe_placeholders=True)
    return _PARSER


# ------------------------------------------------------------------ tree -> IR


class _Default:
    """The ``default`` label of a switch case."""


def _arity(params: list[ir.Param]) -> set[int]:
    """Argument counts a call of ``params`` may pass (``@optional`` ones may be left out)."""
    return set(range(sum(not p.optional for p in params), len(params) + 1))


class _Ann:
    """A parsed annotation (kept only by name)."""

    def __init__(self, name: str, args: list | None = None) -> None:
        self.name = name
        self.args = args or []


_BINOPS = {
    "lor": "||", "land": "&&", "eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=",
    "ge": ">=", "bor": "|", "bxor": "^", "band": "&", "shl": "<<", "shr": ">>", "add": "+",
    "sub": "-", "concat": "++", "mul": "*", "div": "/", "mod": "%", "sadd": "|+|", "ssub": "|-|",
}


def _parse_int(text: str) -> tuple[int, ir.Type | None]:
    """P4 integer literal (spec 6.4.3.3): optional ``<w>w``/``<w>s`` prefix, 0x/0b/0o/0d."""
    typ: ir.Type | None = None
    m = re.match(r"(\d+)([ws])(.*)$", text)
    if m:
        w = int(m.group(1))
        typ = ir.BitT(w) if m.group(2) == "w" else ir.IntT(w)
        text = m.group(3)
    t = text.replace("_", "").lower()
    if t.startswith("0x"):
        v = int(t[2:], 16)
    elif t.startswith("0b"):
        v = int(t[2:], 2)
    elif t.startswith("0o"):
        v = int(t[2:], 8)
    elif t.startswith("0d"):
        v = int(t[2:], 10)
    else:
        v = int(t, 10)
    if typ is not None:
        w = typ.width  # type: ignore[union-attr]
        v = v & ((1 << w) - 1) if isinstance(typ, ir.BitT) else ((v + (1 << (w - 1))) % (1 << w)) - (1 << (w - 1))
    return v, typ


def _make_binop(rule: str, op: str):
    def fn(self, meta, ch):
        ch = [c for c in ch if not (isinstance(c, Token) and c.type == "RANGLE_SHIFT")]
        return ir.Binary(self._loc(meta), op, ch[0], ch[1])
    fn.__name__ = rule
    return fn


@v_args(meta=True)
class _Builder(Transformer):
    """Bottom-up transformer from the lark tree to IR, resolving types in source order."""

    def __init__(self, where) -> None:
        super().__init__()
        self.where = where
        self.types: dict[str, ir.Type] = {}
        self.consts: dict[str, ir.ConstDecl] = {}
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.actions: dict[str, ir.Action] = {}
        self.parsers: dict[str, ir.ParserDecl] = {}
        self.controls: dict[str, ir.ControlDecl] = {}
        self.externs: dict[str, ir.Loc] = {}
        self.extern_functions: dict[str, ir.Loc] = {}
        self.extern_arity: dict[str, set[int]] = {}
        self.method_arity: dict[tuple[str, str], set[int]] = {}
        self.extern_params: dict[str, list[list[ir.Param]]] = {}
        self.method_params: dict[tuple[str, str], list[list[ir.Param]]] = {}
        self.method_types: dict[tuple[str, str], ir.Type | None] = {}
        self.extern_type_params: dict[str, tuple[str, ...]] = {}
        self.instances: list[ir.Instance] = []
        self.functions: dict[str, ir.Function] = {}
        self.field_lists: dict[int, list[tuple[str, str]]] = {}
        self.ser_enums: dict[str, dict[str, int]] = {}
        self.named: set[str] = set()

    # -- helpers
    def _loc(self, meta) -> ir.Loc:
        return self.where(getattr(meta, "line", 0) or 0)

    def _fail(self, meta, msg: str):
        f, line = self._loc(meta)
        raise P4FrontendError(f, line, msg)

    @staticmethod
    def _strip(children: list) -> list:
        return [c for c in children if not isinstance(c, _Ann)]

    def const_eval(self, e: ir.Expr) -> int:
        """Evaluate a compile-time integer expression (literals, consts, + - * << etc.)."""
        if isinstance(e, ir.Lit):
            return e.value
        if isinstance(e, ir.Name) and e.name in self.consts:
            return self.const_eval(self.consts[e.name].value)
        if isinstance(e, ir.Binary):
            a, b = self.const_eval(e.left), self.const_eval(e.right)
            ops = {"+": a + b, "-": a - b, "*": a * b, "<<": a << b if b >= 0 else 0,
                   ">>": a >> b if b >= 0 else 0, "&": a & b, "|": a | b, "^": a ^ b}
            if e.op in ops:
                return ops[e.op]
            if e.op in ("/", "%") and b:
                return a // b if e.op == "/" else a % b
        if isinstance(e, ir.Cast):
            return self.const_eval(e.expr)
        f, line = e.loc
        raise P4FrontendError(f, line, "expected a compile-time constant")

    # -- annotations
    def annotation(self, meta, ch):
        return _Ann(str(ch[0]), [c for c in ch[1:] if c is not None])

    # -- types
    def width(self, meta, ch):
        c = ch[0]
        return _parse_int(str(c))[0] if isinstance(c, Token) else self.const_eval(c)

    def bit_type(self, meta, ch):
        return ir.BitT(ch[0])

    def bit1_type(self, meta, ch):
        return ir.BitT(1)

    def int_type(self, meta, ch):
        return ir.IntT(ch[0])

    def varbit_type(self, meta, ch):
        return ir.VarbitT(ch[0])

    def int_inf_type(self, meta, ch):
        return ir.IntLitT()  # ``int``: arbitrary precision, compile-time values only (spec 7.1.6.5)

    def bool_type(self, meta, ch):
        return ir.BoolT()

    def error_type(self, meta, ch):
        return ir.ErrorT()

    def named_type(self, meta, ch):
        name = str(ch[0])
        return self.types.get(name) or ir.NamedT(name)

    def generic_type(self, meta, ch):
        name = str(ch[0])
        args = tuple(c for c in ch[1:] if not isinstance(c, Token))
        if name == "tuple":  # a struct whose members are named 0, 1, ... (t[0] reads member "0")
            return ir.StructT(f"tuple<{', '.join(_type_text(a) for a in args)}>",
                              tuple((str(i), a) for i, a in enumerate(args)))
        return ir.NamedT(name, args)

    def dontcare_type(self, meta, ch):
        """``_`` as a type argument (``Hash<_>``): a type variable no declaration names, so it
        matches any argument (P4_16 spec 7.2.13, grammar ``typeArg``)."""
        return ir.NamedT("_")

    def stack_type(self, meta, ch):
        elem = ch[0]
        if not isinstance(elem, ir.HeaderT):
            self._fail(meta, "unsupported stack of a non-header type")
        size = self.const_eval(ch[1])
        if size <= 0:
            self._fail(meta, f"header stack size {size} must be positive")
        return ir.StackT(elem, size)

    def type_or_void(self, meta, ch):
        return ch[0]

    def type_params(self, meta, ch):
        return [str(c) for c in ch]

    # -- top-level declarations
    def start(self, meta, ch):
        main = next((i for i in self.instances if i.name == "main"), None)
        return ir.Program(
            source="", types=self.types, consts=self.consts, errors=self.errors,
            match_kinds=self.match_kinds, actions=self.actions, parsers=self.parsers,
            controls=self.controls, externs=self.externs, extern_functions=self.extern_functions,
            extern_arity=self.extern_arity, method_arity=self.method_arity,
            extern_params=self.extern_params, method_params=self.method_params,
            method_types=self.method_types, extern_type_params=self.extern_type_params,
            instances=self.instances, main=main, functions=self.functions, field_lists=self.field_lists,
            ser_enums=self.ser_enums)

    def top_decl(self, meta, ch):
        ch = self._strip(ch)
        item = ch[0] if ch else None
        if isinstance(item, ir.ConstDecl):
            self.consts[item.name] = item
        elif isinstance(item, ir.Action):
            self.actions[item.name] = item
        elif isinstance(item, ir.Function):
            self.functions[item.name] = item
        elif isinstance(item, ir.Instance):
            if item.type.name not in _PACKAGES:
                f, line = item.loc
                raise P4FrontendError(f, line, f"unsupported top-level instantiation of {item.type.name}")
            self.instances.append(item)
        return item

    def empty_decl(self, meta, ch):
        return None

    def const_decl(self, meta, ch):
        return ir.ConstDecl(self._loc(meta), ch[0], str(ch[1]), ch[2])

    def typedef_decl(self, meta, ch):
        self.types[str(ch[1])] = ch[0]
        return None

    def type_decl(self, meta, ch):
        """``type T N;`` (P4_16 spec 7.6): a new type with ``T``'s representation. Values of it
        behave as ``T`` here (p4c also requires casts between ``N`` and ``T``; this front end
        accepts a program that omits them, it never changes the result of one that has them); the
        type keeps its name (``newtype``) for the checks of ``typeinfer.TypeInference``."""
        base = ch[1]
        if not isinstance(base, ir.BitT | ir.IntT | ir.BoolT):
            self._fail(meta, f"unsupported type declaration of {str(ch[2])} (need bit<N>, int<N> or bool)")
        self.types[str(ch[2])] = replace(base, newtype=str(ch[2]))
        return None

    def field(self, meta, ch):
        lists = []
        for a in ch:
            if isinstance(a, _Ann) and a.name == "field_list":
                lists.extend(self.const_eval(x) for x in a.args)
        ch = self._strip(ch)
        return (str(ch[1]), ch[0], meta, lists)

    def header_decl(self, meta, ch):
        name = str(ch[0])
        fields = []
        for fname, ftype, fmeta, _lists in ch[1:]:
            if not isinstance(ftype, ir.BitT | ir.IntT | ir.VarbitT):
                self._fail(fmeta, f"unsupported header field type in header {name}")
            if isinstance(ftype, ir.VarbitT) and any(isinstance(t, ir.VarbitT) for _n, t in fields):
                self._fail(fmeta, f"header {name} has more than one varbit field")
            if isinstance(ftype, ir.VarbitT) and ftype.width % 8:
                self._fail(fmeta, f"unsupported varbit<{ftype.width}> (this model reads whole bytes)")
            fields.append((fname, ftype))
        t = ir.HeaderT(name, tuple(fields))
        if t.width % 8:
            self._fail(meta, f"header {name} is {t.width} bits, not a whole number of bytes")
        self.types[name] = t
        return None

    def header_union_decl(self, meta, ch):
        """``header_union U { H1 a; H2 b; }`` (P4_16 spec 8.20): headers, at most one valid."""
        name = str(ch[0])
        fields = []
        for fname, ftype, fmeta, _lists in ch[1:]:
            if not isinstance(ftype, ir.HeaderT):
                self._fail(fmeta, f"member {fname} of header_union {name} is not a header")
            fields.append((fname, ftype))
        self.types[name] = ir.UnionT(name, tuple(fields))
        return None

    def struct_decl(self, meta, ch):
        name = str(ch[0])
        fields = []
        for fname, ftype, fmeta, lists in ch[1:]:
            if isinstance(ftype, ir.NamedT) and ftype.name not in self.types:
                self._fail(fmeta, f"unknown type {ftype.name}")
            fields.append((fname, ftype))
            for n in lists:  # @field_list(n): preserved by clone/resubmit/recirculate with list n
                self.field_lists.setdefault(n, []).append((name, fname))
        self.types[name] = ir.StructT(name, tuple(fields))
        return None

    def error_decl(self, meta, ch):
        for c in ch:
            if c is not None and str(c) not in self.errors:
                self.errors.append(str(c))
        return None

    def match_kind_decl(self, meta, ch):
        for c in ch:
            if c is not None and str(c) not in self.match_kinds:
                self.match_kinds.append(str(c))
        return None

    def ser_enum_decl(self, meta, ch):
        base, name = ch[0], str(ch[1])
        if not isinstance(base, ir.BitT | ir.IntT):
            self._fail(meta, f"serializable enum {name} needs a bit<N> or int<N> type")
        members: dict[str, int] = {}
        pairs = [c for c in ch[2:] if c is not None]
        for k in range(0, len(pairs), 2):
            members[str(pairs[k])] = self.const_eval(pairs[k + 1])
        # values of the underlying type (P4_16 spec 8.3): the type acts as that bit<N>/int<N>
        self.types[name] = base
        self.ser_enums[name] = members
        return None

    def enum_decl(self, meta, ch):
        name = str(ch[0])
        self.types[name] = ir.EnumT(name, tuple(str(c) for c in ch[1:] if c is not None))
        return None

    def extern_decl(self, meta, ch):
        name = str(ch[0])
        self.externs[name] = self._loc(meta)
        if isinstance(ch[1], list):  # extern Hash<W>: its type parameters
            self.extern_type_params[name] = tuple(ch[1])
        for c in ch[1:]:
            if isinstance(c, tuple) and c[0] == "method":
                self.method_arity.setdefault((name, c[1]), set()).update(_arity(c[2]))
                self.method_params.setdefault((name, c[1]), []).append(c[2])
                self.method_types[(name, c[1])] = c[3]
        return None

    def method_proto(self, meta, ch):
        ch = self._strip(ch)
        params = ch[-1] or []
        names = [c for c in ch[:-1] if isinstance(c, Token) and c.type in ("NAME", "APPLY")]
        ret = next((c for c in ch[:-1] if c is not None and not isinstance(c, Token | list)), None)
        return ("method", str(names[-1]), list(params), ret) if names else None

    def ctor_proto(self, meta, ch):
        return None

    def extern_func_decl(self, meta, ch):
        self.extern_functions[str(ch[1])] = self._loc(meta)
        self.extern_arity.setdefault(str(ch[1]), set()).update(_arity(ch[-1] or []))
        self.extern_params.setdefault(str(ch[1]), []).append(list(ch[-1] or []))
        return None

    def package_decl(self, meta, ch):
        self.named.add(str(ch[0]))
        return None

    def instantiation(self, meta, ch):
        typ, args, name = ch[0], ch[1], str(ch[2])
        if not isinstance(typ, ir.NamedT):
            self._fail(meta, "unsupported instantiation of a non-extern type")
        methods = {m.name: m for m in (ch[3] or [])}
        return ir.Instance(self._loc(meta), typ, args, name, methods)

    def instance_init(self, meta, ch):
        return [c for c in ch if c is not None]

    def method_impl(self, meta, ch):
        ch = self._strip(ch)
        return ir.Method(self._loc(meta), str(ch[1]), ch[2], ch[3])

    def params(self, meta, ch):
        return [c for c in ch if c is not None]

    def direction(self, meta, ch):
        return str(ch[0])

    def param(self, meta, ch):
        optional = any(isinstance(c, _Ann) and c.name == "optional" for c in ch)
        ch = self._strip(ch)
        direction = str(ch[0]) if ch[0] is not None else ""
        return ir.Param(self._loc(meta), direction, ch[1], str(ch[2]), optional)

    # -- parsers
    def parser_decl(self, meta, ch):
        name, params, body = str(ch[0]), ch[2], (ch[3] if len(ch) > 3 else None)
        if body is None:  # parser type declaration
            self.named.add(name)
            return None
        locals_, states = body
        if "start" not in states:
            self._fail(meta, f"parser {name} has no start state")
        self.parsers[name] = ir.ParserDecl(self._loc(meta), name, params, locals_, states)
        return None

    def parser_body(self, meta, ch):
        locals_ = [c for c in ch if not isinstance(c, ir.ParserState)]
        states: dict[str, ir.ParserState] = {}
        for c in ch:
            if isinstance(c, ir.ParserState):
                states[c.name] = c
        return locals_, states

    def var_decl(self, meta, ch):
        if isinstance(ch[0], ir.VarbitT):  # supported as a header field only
            self._fail(meta, "unsupported varbit local variable")
        return ir.VarDecl(self._loc(meta), ch[0], str(ch[1]), ch[2])

    def parser_state(self, meta, ch):
        ch = self._strip(ch)
        name = str(ch[0])
        stmts = [c for c in ch[1:-1]]
        trans = ch[-1]
        st = ir.ParserState(self._loc(meta), name, stmts, "reject")
        if trans is not None:
            kind, data = trans
            if kind == "direct":
                st.next_state = data
            else:
                st.next_state = None
                st.select, st.cases = data
        return st

    def direct_transition(self, meta, ch):
        return ("direct", str(ch[0]))

    def select_transition(self, meta, ch):
        return ("select", ch[0])

    def select_expr(self, meta, ch):
        exprs = [c for c in ch if isinstance(c, ir.Expr)]
        cases = [c for c in ch if isinstance(c, ir.SelectCase)]
        for c in cases:
            if len(c.keys) == 1 and len(exprs) > 1 and c.keys[0][0] == "default":
                c.keys = c.keys * len(exprs)
            if len(c.keys) == 1 and len(exprs) > 1 and c.keys[0][0] == "value" and isinstance(c.keys[0][1], ir.Name):
                # a value_set of a struct type matching every select expression (spec 12.11)
                c.keys = [("set", c.keys[0][1])] + [("default",)] * (len(exprs) - 1)
            if len(c.keys) != len(exprs):
                f, line = c.loc
                raise P4FrontendError(f, line, f"select case has {len(c.keys)} keys, expected {len(exprs)}")
        return exprs, cases

    def select_case(self, meta, ch):
        ks = ch[0]
        keys = ks if isinstance(ks, list) else [ks]
        keys = [k if isinstance(k, tuple) else ("value", k) for k in keys]
        return ir.SelectCase(self._loc(meta), keys, str(ch[1]))

    def tuple_keyset(self, meta, ch):
        return [k if isinstance(k, tuple) else ("value", k) for k in ch]

    def mask_keyset(self, meta, ch):
        return ("mask", ch[0], ch[1])

    def range_keyset(self, meta, ch):
        return ("range", ch[0], ch[1])

    def default_keyset(self, meta, ch):
        return ("default",)

    def dontcare_keyset(self, meta, ch):
        return ("default",)

    # -- controls
    def control_decl(self, meta, ch):
        name, params, ctor = str(ch[0]), ch[2], ch[3]
        body = ch[4] if len(ch) > 4 else None
        if body is None:
            self.named.add(name)
            return None
        locals_, instances, actions, tables, apply = body
        self.controls[name] = ir.ControlDecl(self._loc(meta), name, params, locals_, instances,
                                             actions, tables, apply, ctor or [])
        return None

    def control_local(self, meta, ch):
        ch = self._strip(ch)
        return ch[0]

    def control_body(self, meta, ch):
        apply = ch[-1]
        locals_, instances, actions, tables = [], [], {}, {}
        for c in ch[:-1]:
            if isinstance(c, ir.VarDecl | ir.ConstDecl):
                locals_.append(c)
            elif isinstance(c, ir.Instance):
                tname = c.type.name
                if tname not in _SUPPORTED_EXTERN_INSTANCES and tname not in self.controls:  # sub-controls
                    f, line = c.loc
                    raise P4FrontendError(f, line, f"unsupported extern {tname}")
                instances.append(c)
            elif isinstance(c, ir.Action):
                actions[c.name] = c
            elif isinstance(c, ir.Table):
                tables[c.name] = c
        return locals_, instances, actions, tables, apply

    def function_decl(self, meta, ch):
        ret, name, tparams, params, body = ch
        if tparams:
            self._fail(meta, f"unsupported generic function {name}")
        return ir.Function(self._loc(meta), str(name), None if isinstance(ret, Token) else ret, params, body)

    def action_decl(self, meta, ch):
        return ir.Action(self._loc(meta), str(ch[0]), ch[1], ch[2])

    def table_decl(self, meta, ch):
        name = str(ch[0])
        t = ir.Table(self._loc(meta), name, [], [], None, False, None)
        seen_key = False
        for prop in ch[1:]:
            pname, is_const, value, pmeta = prop
            if pname == "key":
                if not isinstance(value, list):
                    self._fail(pmeta, "table key must be a { ... } list")
                seen_key = True
                for e, mk, emeta, text, _scope in value:
                    if mk is None:
                        self._fail(emeta, "table key element needs a match kind")
                    if mk not in ("exact", "lpm", "ternary", "optional", "range", "selector"):
                        self._fail(emeta, f"unsupported match kind {mk}")
                    t.keys.append(ir.KeyElement(self._loc(emeta), e, mk, text))
            elif pname == "actions":
                if not isinstance(value, list):
                    self._fail(pmeta, "table actions must be a { ... } list")
                for e, _mk, emeta, _text, scope in value:
                    ref = self._action_ref(e, emeta)
                    ref.scope = scope
                    t.actions.append(ref)
            elif pname == "default_action":
                t.default_action = self._action_ref(value, pmeta)
                t.const_default = is_const
            elif pname == "size":
                t.size = self.const_eval(value)
            elif pname == "entries":
                if not is_const:
                    self._fail(pmeta, "unsupported non-const entries")
                t.entries = value
            elif pname in ("counters", "meters"):
                if not isinstance(value, ir.Name):
                    self._fail(pmeta, f"table property {pname} must name a direct_counter/direct_meter instance")
                t.direct[pname] = value.name
            elif pname == "implementation":
                # an action_profile/action_selector instance, or one constructed here
                t.implementation = value
            elif pname in ("support_timeout", "max_group_size", "psa_empty_group_action"):
                logger.debug("ignoring table property %s", pname)
            else:
                self._fail(pmeta, f"unsupported table property {pname}")
        if not seen_key:
            t.keys = []
        return t

    def _action_ref(self, e, meta) -> ir.ActionRef:
        if isinstance(e, ir.Name):
            return ir.ActionRef(e.loc, e.name, None)
        if isinstance(e, ir.Call) and isinstance(e.func, ir.Name):
            return ir.ActionRef(e.loc, e.func.name, e.args)
        self._fail(meta, "expected an action name")
        raise AssertionError  # pragma: no cover

    def table_prop_entries(self, meta, ch):
        ch = self._strip(ch)
        return ("entries", ch[0] is not None, [c for c in ch[1:] if c is not None], meta)

    def table_entry(self, meta, ch):
        prio = next((a for a in ch if isinstance(a, _Ann) and a.name == "priority"), None)
        ch = self._strip(ch)
        ks, action = ch[0], ch[1]
        keys = ks if isinstance(ks, list) else [ks]
        keys = [k if isinstance(k, tuple) else ("value", k) for k in keys]
        priority = None
        if prio is not None:
            if len(prio.args) != 1:
                self._fail(meta, "@priority takes one argument")
            priority = self.const_eval(prio.args[0])
            if priority < 0:
                self._fail(meta, f"@priority({priority}) is negative")
        return ir.TableEntry(self._loc(meta), keys, self._action_ref(action, meta), priority)

    def table_prop_block(self, meta, ch):
        ch = self._strip(ch)
        return (str(ch[1]), ch[0] is not None, ch[2], meta)

    def table_prop_expr(self, meta, ch):
        ch = self._strip(ch)
        return (str(ch[1]), ch[0] is not None, ch[2], meta)

    def prop_block(self, meta, ch):
        return list(ch)

    def prop_elem(self, meta, ch):
        name = next((a for a in ch if isinstance(a, _Ann) and a.name == "name"), None)
        scopes = [a.name for a in ch if isinstance(a, _Ann) and a.name in ("defaultonly", "tableonly")]
        if len(scopes) > 1:
            self._fail(meta, "an action cannot be both @defaultonly and @tableonly")
        scope = {"defaultonly": "default_only", "tableonly": "table_only"}[scopes[0]] if scopes else ""
        ch = self._strip(ch)
        e = ch[0]
        mk = str(ch[1]) if len(ch) > 1 and ch[1] is not None else None
        text = _expr_text(e)
        if name is not None:  # @name("x") on a key: its control-plane name (p4c, P4Runtime)
            if len(name.args) != 1 or not isinstance(name.args[0], ir.StringLit):
                self._fail(meta, '@name takes one string argument')
            text = name.args[0].value
        return (e, mk, meta, text, scope)

    # -- statements
    def block(self, meta, ch):
        return ir.Block(self._loc(meta), [c for c in ch if c is not None])

    def assign_stmt(self, meta, ch):
        return ir.Assign(self._loc(meta), ch[0], ch[1])

    def call_stmt(self, meta, ch):
        return ir.CallStmt(self._loc(meta), ir.Call(self._loc(meta), ch[0], ch[1]))

    def generic_call_stmt(self, meta, ch):
        ch = [c for c in ch if not isinstance(c, Token)]  # GENERIC_LT of pkt.lookahead<T>();
        return ir.CallStmt(self._loc(meta), ir.Call(self._loc(meta), ch[0], ch[-1], tuple(ch[1:-1])))

    def if_stmt(self, meta, ch):
        return ir.If(self._loc(meta), ch[0], ch[1], ch[2])

    def switch_stmt(self, meta, ch):
        cases: list[tuple[list, ir.Block]] = []
        pending: list = []
        for labels, block in ch[1:]:
            pending.extend(labels)
            if block is not None:
                cases.append((pending, block))
                pending = []
        if pending:  # trailing labels without a block: an empty case
            cases.append((pending, ir.Block(self._loc(meta), [])))
        return ir.Switch(self._loc(meta), ch[0], cases)

    def switch_case(self, meta, ch):
        label = ch[0]
        return ([None] if isinstance(label, _Default) else [label], ch[1])

    def default_label(self, meta, ch):
        return _Default()

    def exit_stmt(self, meta, ch):
        return ir.Exit(self._loc(meta))

    def return_stmt(self, meta, ch):
        return ir.Return(self._loc(meta), ch[0])

    def empty_stmt(self, meta, ch):
        return ir.Empty(self._loc(meta))

    # -- expressions
    def name(self, meta, ch):
        return ir.Name(self._loc(meta), str(ch[0]))

    def member(self, meta, ch):
        if isinstance(ch[0], Token) or isinstance(ch[0], str):  # the `member` token rule
            return str(ch[0])
        return ir.Member(self._loc(meta), ch[0], ch[1])

    def index(self, meta, ch):
        return ir.Index(self._loc(meta), ch[0], ch[1])

    def slice(self, meta, ch):
        return ir.Slice(self._loc(meta), ch[0], ch[1], ch[2])

    def call(self, meta, ch):
        return ir.Call(self._loc(meta), ch[0], ch[1])

    def generic_call(self, meta, ch):
        ch = [c for c in ch if not isinstance(c, Token)]
        return ir.Call(self._loc(meta), ch[0], ch[-1], tuple(ch[1:-1]))

    def args(self, meta, ch):
        return [c for c in ch if c is not None]

    def list_expr(self, meta, ch):
        return ir.ListExpr(self._loc(meta), [c for c in ch if c is not None])

    def kv_pair(self, meta, ch):
        return (str(ch[0]), ch[1])

    def kv_list(self, meta, ch):
        names = [n for n, _e in ch]
        if len(set(names)) != len(names):
            self._fail(meta, "a member is named twice in the initialiser")
        return ir.ListExpr(self._loc(meta), [e for _n, e in ch], names)

    def dontcare(self, meta, ch):
        return ir.DontCare(self._loc(meta))

    def int_lit(self, meta, ch):
        v, t = _parse_int(str(ch[0]))
        return ir.Lit(self._loc(meta), v, t)

    def true_lit(self, meta, ch):
        return ir.BoolLit(self._loc(meta), True)

    def false_lit(self, meta, ch):
        return ir.BoolLit(self._loc(meta), False)

    def string_lit(self, meta, ch):
        return ir.StringLit(self._loc(meta), str(ch[0])[1:-1])

    def type_member(self, meta, ch):
        return ir.TypeMember(self._loc(meta), str(ch[0]), ch[1])

    def error_member(self, meta, ch):
        return ir.TypeMember(self._loc(meta), "error", ch[0])

    def ctor(self, meta, ch):
        name = str(ch[0])
        return ir.Ctor(self._loc(meta), self.types.get(name) or ir.NamedT(name), ch[1])

    def generic_ctor(self, meta, ch):
        return ir.Ctor(self._loc(meta), ir.NamedT(str(ch[0]), tuple(ch[1:-1])), ch[-1])

    def cond(self, meta, ch):
        return ir.Cond(self._loc(meta), ch[0], ch[1], ch[2])

    def lnot(self, meta, ch):
        return ir.Unary(self._loc(meta), "!", ch[0])

    def bnot(self, meta, ch):
        return ir.Unary(self._loc(meta), "~", ch[0])

    def neg(self, meta, ch):
        return ir.Unary(self._loc(meta), "-", ch[0])

    def cast(self, meta, ch):
        return ir.Cast(self._loc(meta), ch[0], ch[1])

    for _rule, _op in _BINOPS.items():
        locals()[_rule] = _make_binop(_rule, _op)
    del _rule, _op




def _expr_text(e: Any) -> str:
    """Source-like text of a key expression (``hdr.ipv4.dstAddr``) used as its control name."""
    if isinstance(e, ir.Name):
        return e.name
    if isinstance(e, ir.Member):
        return f"{_expr_text(e.expr)}.{e.name}"
    if isinstance(e, ir.Slice):
        return f"{_expr_text(e.expr)}[{_expr_text(e.hi)}:{_expr_text(e.lo)}]"
    if isinstance(e, ir.Lit):
        return str(e.value)
    if isinstance(e, ir.Call):
        return f"{_expr_text(e.func)}()"
    if isinstance(e, ir.Cast):
        return _expr_text(e.expr)
    return type(e).__name__


# ------------------------------------------------------------------ entry points


def parse_text(text: str, linemap: list[tuple[str, int]] | None = None, source: str = "<input>") -> ir.Program:
    """Parse preprocessed P4 text into a Program (``linemap`` as from :func:`preprocess`)."""

    def where(line: int) -> tuple[str, int]:
        if linemap and 1 <= line <= len(linemap):
            return linemap[line - 1]
        return (source, line)

    _POSTLEX.where = where
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedToken as exc:
        f, line = where(exc.line)
        tok = exc.token
        what = "end of input" if tok.type == "$END" else repr(str(tok))
        raise P4FrontendError(f, line, f"syntax error: unexpected {what}") from None
    except lark.exceptions.UnexpectedCharacters as exc:
        f, line = where(exc.line)
        raise P4FrontendError(f, line, f"syntax error: unexpected character {exc.char!r}") from None
    except lark.exceptions.UnexpectedEOF:
        f, line = where(len(linemap) if linemap else 0)
        raise P4FrontendError(f, line, "syntax error: unexpected end of input") from None
    except lark.exceptions.VisitError as exc:  # pragma: no cover - transformer wraps errors
        if isinstance(exc.orig_exc, P4FrontendError):
            raise exc.orig_exc from None
        raise
    builder = _Builder(where)
    try:
        prog = builder.transform(tree)
    except lark.exceptions.VisitError as exc:
        if isinstance(exc.orig_exc, P4FrontendError):
            raise exc.orig_exc from None
        raise
    prog.source = source
    return prog


def load_program(path: str | os.PathLike, include_dirs: Iterable[str] = ()) -> ir.Program:
    """Preprocess, parse and resolve the P4_16 program at ``path``.

    ``#include <core.p4>``, ``<v1model.p4>`` and ``<t2na.p4>`` resolve to this package's ``p4include/``;
    quoted includes are relative to the including file, then ``include_dirs``.
    Raises :class:`P4FrontendError` (``FILE:LINE: ...``) for syntax errors and
    unsupported constructs.
    """
    text, linemap = preprocess(str(path), include_dirs)
    prog = parse_text(text, linemap, display_path(str(path)))
    if prog.main is None:
        raise P4FrontendError(display_path(str(path)), len(linemap),
                              "no 'V1Switch(...) main;' or 'Switch(...) main;' instance")
    logger.debug("loaded %s: %d parsers, %d controls", path, len(prog.parsers), len(prog.controls))
    return prog
