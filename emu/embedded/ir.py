"""Intermediate representation of a P4_16 program, produced by :mod:`frontend`.

Every node carries ``loc = (file, line)`` of the original source (after the
preprocessor's ``#line`` markers are mapped back). Types are resolved by the front
end (typedefs expanded); expressions are untyped trees that the runtime types and
compiles (:mod:`runtime`). Node and field names follow the P4_16 specification.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Loc = tuple[str, int]

# ---------------------------------------------------------------- types


@dataclass(frozen=True)
class BitT:
    """``bit<width>``: unsigned, arithmetic modulo 2**width (P4_16 spec 8.6).

    ``newtype``: the name of the ``type`` declaration (spec 7.6) this is the representation
    of, if any; it takes no part in equality (values of it behave as ``bit<width>`` here),
    ``typeinfer.TypeInference`` reads it where P4_16 tells the two apart."""

    width: int
    newtype: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class IntT:
    """``int<width>``: two's complement signed (P4_16 spec 8.6); ``newtype`` as :class:`BitT`'s."""

    width: int
    newtype: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class VarbitT:
    """``varbit<width>``: a header field of 0..width bits, its length set by the two-argument
    ``extract`` (P4_16 spec 7.1.6.3)."""

    width: int


@dataclass(frozen=True)
class BoolT:
    """``bool``; ``newtype`` as :class:`BitT`'s."""

    newtype: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ErrorT:
    """``error``."""


@dataclass(frozen=True)
class IntLitT:
    """The infinite-precision type of an unsized integer literal or constant."""


@dataclass(frozen=True)
class EnumT:
    """A (non-serializable) ``enum``; members are numbered 0.. in declaration order."""

    name: str
    members: tuple[str, ...]


@dataclass(frozen=True)
class HeaderT:
    """``header``: ordered fields of fixed width plus a validity bit."""

    name: str
    fields: tuple[tuple[str, Type], ...]

    @property
    def width(self) -> int:
        """Header width in bits (a varbit field counted at its largest)."""
        return sum(t.width for _, t in self.fields)  # type: ignore[union-attr]

    @property
    def fixed_width(self) -> int:
        """Header width in bits without its varbit field (``minSizeInBits()``)."""
        return sum(t.width for _, t in self.fields if not isinstance(t, VarbitT))  # type: ignore[union-attr]

    @property
    def varbit(self) -> str | None:
        """The name of its varbit field, if it has one."""
        return next((n for n, t in self.fields if isinstance(t, VarbitT)), None)


@dataclass(frozen=True)
class UnionT:
    """``header_union``: headers of which at most one is valid (P4_16 spec 8.20)."""

    name: str
    fields: tuple[tuple[str, Type], ...]


@dataclass(frozen=True)
class StructT:
    """``struct``: ordered members."""

    name: str
    fields: tuple[tuple[str, Type], ...]


@dataclass(frozen=True)
class NamedT:
    """An extern, parser, control or package type (with type arguments)."""

    name: str
    args: tuple[Type, ...] = ()


@dataclass(frozen=True)
class StackT:
    """A header stack ``T[n]`` of ``size`` headers of type ``elem`` (P4_16 spec 8.18)."""

    elem: Type
    size: int


@dataclass(frozen=True, eq=False)
class TypeOfT:
    """The type of a temporary a pass introduces: that of the first of ``exprs`` whose type is
    not an unsized literal's (resolved when the declaration is emitted)."""

    exprs: tuple


Type = BitT | IntT | VarbitT | BoolT | ErrorT | IntLitT | EnumT | HeaderT | UnionT | StructT | NamedT | StackT | TypeOfT

# ---------------------------------------------------------------- expressions


@dataclass
class Expr:
    """Base class of expressions."""

    loc: Loc


@dataclass
class Lit(Expr):
    """Integer literal; ``type`` is ``BitT``/``IntT`` for width-prefixed ones, else None."""

    value: int
    type: Type | None = None


@dataclass
class BoolLit(Expr):
    """``true`` / ``false``."""

    value: bool


@dataclass
class StringLit(Expr):
    """String literal (annotations only)."""

    value: str


@dataclass
class Name(Expr):
    """A reference to a declared name."""

    name: str


@dataclass
class Member(Expr):
    """``expr.name``."""

    expr: Expr
    name: str


@dataclass
class TypeMember(Expr):
    """``Type.member`` (enum member) or ``error.member``."""

    type_name: str
    member: str


@dataclass
class Index(Expr):
    """``expr[index]``: an element of a header stack (constant index)."""

    expr: Expr
    index: Expr


@dataclass
class Slice(Expr):
    """``expr[hi:lo]`` (P4_16 spec 8.6)."""

    expr: Expr
    hi: Expr
    lo: Expr


@dataclass
class Call(Expr):
    """``func(args)`` or ``func<typeargs>(args)``; ``func`` is a Name or Member."""

    func: Expr
    args: list[Expr]
    type_args: tuple[Type, ...] = ()


@dataclass
class Unary(Expr):
    """Unary operator: ``!``, ``~``, ``-``."""

    op: str
    expr: Expr


@dataclass
class Binary(Expr):
    """Binary operator (``+ - * / % ++ & | ^ << >> == != < <= > >= && ||``)."""

    op: str
    left: Expr
    right: Expr


@dataclass
class Cast(Expr):
    """``(type) expr``."""

    type: Type
    expr: Expr


@dataclass
class Cond(Expr):
    """``cond ? a : b``."""

    cond: Expr
    then: Expr
    other: Expr


@dataclass
class ListExpr(Expr):
    """``{a, b, ...}`` (field lists, list initialisers) or ``{m = a, ...}`` (``names`` given:
    a struct-valued initialiser, P4_16 spec 8.13)."""

    items: list[Expr]
    names: list[str] | None = None


@dataclass
class DontCare(Expr):
    """``_``."""


@dataclass
class Ctor(Expr):
    """``Type(args)`` in an instantiation argument (e.g. ``MyParser()``)."""

    type: Type
    args: list[Expr]


# ---------------------------------------------------------------- statements


@dataclass
class Stmt:
    """Base class of statements."""

    loc: Loc


@dataclass
class Assign(Stmt):
    """``lvalue = expr;``."""

    target: Expr
    value: Expr


@dataclass
class CallStmt(Stmt):
    """A method or function call statement."""

    call: Call


@dataclass
class If(Stmt):
    """``if (cond) then else other``."""

    cond: Expr
    then: Stmt
    other: Stmt | None


@dataclass
class Block(Stmt):
    """``{ stmts }`` (a new scope)."""

    stmts: list[Stmt]


@dataclass
class VarDecl(Stmt):
    """Local variable; uninitialised ones read 0 (bmv2 behaviour)."""

    type: Type
    name: str
    init: Expr | None


@dataclass
class ConstDecl(Stmt):
    """``const T name = value;`` (top level, control local or statement)."""

    type: Type
    name: str
    value: Expr


@dataclass
class Exit(Stmt):
    """``exit;``."""


@dataclass
class Return(Stmt):
    """``return;`` (action, control, function) or ``return expr;`` (function)."""

    value: Expr | None


@dataclass
class Switch(Stmt):
    """``switch (expr) { labels: block ... }`` (P4_16 spec 12.7).

    ``cases`` pairs the labels of a case (``None`` = ``default``) with its block; a
    case without a block (``a: b: {...}``) falls through to the next one, so its labels
    are merged into that case by the front end.
    """

    expr: Expr
    cases: list[tuple[list[Expr | None], Block]]


@dataclass
class Function:
    """A top-level function ``T name(params) { body }``; ``ret`` is None for ``void``."""

    loc: Loc
    name: str
    ret: Type | None
    params: list[Param]
    body: Block
    #: after ``passes.RemoveReturns``: the variable the body assigns its value to (None: void, or
    #: returns not removed yet)
    result: str | None = None


@dataclass
class Empty(Stmt):
    """``;``."""


@dataclass
class ApplySub(Stmt):
    """After ``passes.CopyInCopyOut``: ``inst.apply()`` of a control or parser instantiated inside
    another, its arguments already copied into the instance's parameters (``inst.param``, a
    :class:`Member` of the instance, names that storage). ``packets`` are the caller's
    ``packet_in`` arguments a sub-parser shares (not copied); ``copy_out`` assigns each
    ``out``/``inout`` argument its parameter, left to right, when the body ends: also when an
    ``exit`` leaves it (spec 12.5) or the sub-parser rejects."""

    inst: Name
    packets: list[Expr]
    copy_out: list[Stmt]


# ---------------------------------------------------------------- declarations


@dataclass
class Param:
    """A parameter; ``direction`` is 'in', 'out', 'inout' or '' (action data)."""

    loc: Loc
    direction: str
    type: Type
    name: str
    #: ``@optional`` (an extern's parameter a call may leave out)
    optional: bool = False


@dataclass
class Action:
    """``action name(params) { body }``."""

    loc: Loc
    name: str
    params: list[Param]
    body: Block
    annotations: tuple[str, ...] = ()


@dataclass
class KeyElement:
    """One table key: expression and match kind name; ``text`` is its control-plane name (the key
    as written, or its ``@name``)."""

    loc: Loc
    expr: Expr
    match_kind: str
    text: str


@dataclass
class ActionRef:
    """An action named in a table: ``name`` or ``name(args)``."""

    loc: Loc
    name: str
    args: list[Expr] | None = None
    #: after ``passes.RemoveActionParameters``: this table's copy of the action, its directional
    #: arguments copied in and out in its body (None: the action as declared)
    action: Action | None = None
    #: ``@defaultonly`` / ``@tableonly`` on the element of ``actions`` (P4_16 spec 14.2.1.2):
    #: "default_only", "table_only", or "" (both, the default)
    scope: str = ""


@dataclass
class Table:
    """``table name { key; actions; size; default_action }`` (P4_16 spec 14.2)."""

    loc: Loc
    name: str
    keys: list[KeyElement]
    actions: list[ActionRef]
    default_action: ActionRef | None
    const_default: bool
    size: int | None
    #: ``counters = c;`` / ``meters = m;``: property -> the direct_counter/direct_meter instance name
    direct: dict[str, str] = field(default_factory=dict)
    #: ``const entries = { ... }`` in source order (None: no const entries)
    entries: list[TableEntry] | None = None
    #: ``implementation = ap;`` or ``= action_selector(...)``: a Name or a Ctor (None: direct)
    implementation: Expr | None = None


@dataclass
class TableEntry:
    """One ``const entries`` entry: a keyset per key (as :class:`SelectCase` keys) and its action."""

    loc: Loc
    keys: list[tuple]
    action: ActionRef
    #: ``@priority(n)``: bmv2's convention as p4c's bmv2 back end passes it through (the smaller
    #: n wins); None: the entry's position 1, 2, ... in the list
    priority: int | None = None


@dataclass
class Method:
    """An abstract method implemented in an instantiation (``void apply(...) { ... }``)."""

    loc: Loc
    name: str
    params: list[Param]
    body: Block


@dataclass
class Instance:
    """``Type<args>(ctor args) name;`` (register, counter, package instance...).

    ``methods``: the abstract methods the instance implements (``RegisterAction<...>(r)
    name = { void apply(...) {...} };``), by name.
    """

    loc: Loc
    type: NamedT
    args: list[Expr]
    name: str
    methods: dict[str, Method] = field(default_factory=dict)


@dataclass
class SelectCase:
    """One case of a select: ``keys`` is one entry per select expression.

    Each key is ``('default',)``, ``('value', expr)``, ``('mask', value, mask)`` or
    ``('range', lo, hi)``.
    """

    loc: Loc
    keys: list[tuple]
    next_state: str


@dataclass
class ParserState:
    """``state name { stmts; transition }``; ``select`` is None for a direct transition."""

    loc: Loc
    name: str
    stmts: list[Stmt]
    next_state: str | None
    select: list[Expr] | None = None
    cases: list[SelectCase] = field(default_factory=list)


@dataclass
class ParserDecl:
    """A parser with its locals and states."""

    loc: Loc
    name: str
    params: list[Param]
    locals: list[Stmt | Instance]
    states: dict[str, ParserState]


@dataclass
class ControlDecl:
    """A control with its locals, actions, tables and ``apply`` body."""

    loc: Loc
    name: str
    params: list[Param]
    #: its variables and constants (after ``passes.InlineFunctions`` also the Blocks of calls in
    #: their initialisers)
    locals: list[VarDecl | ConstDecl | Block]
    instances: list[Instance]
    actions: dict[str, Action]
    tables: dict[str, Table]
    apply: Block
    #: constructor parameters ``control C(...)(bit<8> k)``: compile-time values given where it
    #: is instantiated (``C(8w1) c;``)
    ctor_params: list[Param] = field(default_factory=list)


@dataclass
class Program:
    """A whole P4 program after preprocessing, parsing and type resolution.

    ``errors`` lists error members in numbering order (core.p4's first);
    ``main`` is the top-level package instance (``V1Switch(...) main``).
    """

    source: str
    types: dict[str, Type]
    consts: dict[str, ConstDecl]
    errors: list[str]
    match_kinds: list[str]
    actions: dict[str, Action]
    parsers: dict[str, ParserDecl]
    controls: dict[str, ControlDecl]
    externs: dict[str, Loc]
    extern_functions: dict[str, Loc]
    instances: list[Instance]
    main: Instance | None
    functions: dict[str, Function] = field(default_factory=dict)
    #: how many arguments a call may pass: extern function name -> counts (overloads,
    #: ``@optional`` parameters), and (extern type, method) -> counts
    extern_arity: dict[str, set[int]] = field(default_factory=dict)
    method_arity: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    #: the declared parameters (directions) of each overload: extern function name -> lists, and
    #: (extern type, method) -> lists (``optimize.def_use`` reads the directions)
    extern_params: dict[str, list[list[Param]]] = field(default_factory=dict)
    method_params: dict[tuple[str, str], list[list[Param]]] = field(default_factory=dict)
    #: (extern type, method) -> its declared return type (None: void), in terms of the extern's
    #: type parameters ``extern_type_params[type]`` (``NamedT("W")`` for ``W get()``)
    method_types: dict[tuple[str, str], Type | None] = field(default_factory=dict)
    extern_type_params: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: ``@field_list(n)`` annotations: list n -> [(struct name, member name)] in declaration order
    field_lists: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    #: serializable enums ``enum bit<8> E { A = 1 }``: name -> member -> value (the type is its bit<N>)
    ser_enums: dict[str, dict[str, int]] = field(default_factory=dict)
    #: after ``typeinfer.TypeInference``: the type of every expression and temporary it typed
    typed: Any = None
