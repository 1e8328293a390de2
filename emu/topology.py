"""Topology loader: a YAML scenario file in, a validated :class:`Topology` out, or one error line.

The public entry of the topology (``topologies/*.yaml``, format in docs/topology-format.md).
It is four modules, each below the next:

- :mod:`emu.topology_plan`: :class:`NetworkPlan`, the pure description of what the network
  builders create (ports, interface names, MACs, queue shaping), like Mininet's ``Topo``;
- :mod:`emu.topology_schema`: the pydantic models (:class:`Topology` and its parts), each field
  checked alone, ``extra='forbid'`` everywhere;
- :mod:`emu.topology_checks`: the cross-field checks, a list of small named functions run in
  order, which also resolve the defaults (the last compares DCQCN timers with the routes'
  bandwidth bound, so it sits above :mod:`emu.routing` and :mod:`emu.metrics`);
- this module: :func:`load_topology` / :func:`parse_topology` read the YAML (duplicate keys
  rejected), validate the schema and run the checks. Every user mistake raises
  :class:`TopologyError`, whose ``str()`` is one line: ``<file>: <field.path>: <problem>; <fix>``
  (the problem ends with the YAML line of the field).

Modules below the checks (routing, metrics, the network builders) import the schema and the plan,
never this module; everything else may import the names re-exported here.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from .data import data_dir
from .topology_checks import run_checks
from .topology_plan import (
    HostPlan,
    LinkPlan,
    NetworkPlan,
    PortPlan,
    SwitchPlan,
    build_plan,
    host_mac,
    switch_port_mac,
)
from .topology_schema import (
    DEFAULT_ECN_THRESHOLD_PACKETS,
    DEFAULT_FIX,
    FIXES,
    NAME_PATTERN,
    Collective,
    EcnParams,
    FlowSpec,
    HostSpec,
    JobSpec,
    LinkDefaults,
    LinkSpec,
    SwitchSpec,
    SymphonyOverride,
    SymphonyParams,
    Topology,
    dcqcn_unit,
    ecn_lowest_threshold,
)

log = logging.getLogger(__name__)


class TopologyError(ValueError):
    """A topology file that cannot be used; ``str()`` is one line naming file and field.

    Attributes: ``file`` (path as given), ``field`` (dotted path such as
    ``links[3].bandwidth_mbps``), ``problem`` and ``fix`` (what to do).
    """

    def __init__(self, file: str, field: str, problem: str, fix: str) -> None:
        self.file = file
        self.field = field
        self.problem = _one_line(problem)
        self.fix = _one_line(fix)
        super().__init__(f"{file}: {field}: {self.problem}; {self.fix}")


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _loc_to_path(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _fix_for(loc: tuple[Any, ...]) -> str:
    for part in reversed(loc):
        if isinstance(part, str) and part in FIXES:
            return FIXES[part]
    return DEFAULT_FIX


def _num(value: Any) -> str:
    """``0.0`` -> ``0``; other values as str."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _allowed_keys(loc: tuple[Any, ...], root: Any) -> list[str]:
    """Field names of the model that holds the field at ``loc`` (a path from model ``root``)."""
    model: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return []
        model = _model_of(field.annotation)
        if model is None:
            return []
    return list(model.model_fields) if hasattr(model, "model_fields") else []


def _model_of(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def pydantic_problem(err: Mapping[str, Any], root: Any = None) -> tuple[str, str | None]:
    """(problem text, fix override) for one pydantic error of a document validated by model
    ``root`` (default :class:`Topology`): an unknown key names the keys allowed there and the
    closest one ("did you mean"), a bound or literal names what was expected and what was given."""
    root = Topology if root is None else root
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    value = err.get("input")
    loc = tuple(err.get("loc", ()))
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc, root)
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.75) if loc and allowed else []
        if close:
            fix = f"did you mean {close[0]!r}? (keys here: {', '.join(allowed)})"
        else:
            fix = f"remove it or use one of: {', '.join(allowed)}" if allowed else None
        return (f"unknown key {loc[-1]!r}" if loc else "unknown key", fix)
    if kind == "missing":
        return "required but missing", None
    if kind == "unit":
        return str(err.get("msg", "bad value")), str(ctx.get("fix") or "") or None
    comparisons = {
        "greater_than": (">", "gt"),
        "greater_than_equal": (">=", "ge"),
        "less_than": ("<", "lt"),
        "less_than_equal": ("<=", "le"),
    }
    if kind in comparisons:
        op, key = comparisons[kind]
        return f"must be {op} {_num(ctx.get(key))}, got {_short(value)}", None
    if kind == "string_pattern_mismatch":
        return f"{_short(value)} is not a valid name", None
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s)", None
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {_short(value)}", None
    msg = str(err.get("msg", "invalid value"))
    if kind == "value_error" and ctx.get("error") is not None:
        msg = str(ctx["error"])  # the validator's own words, without pydantic's "Value error, "
    msg = msg[0].lower() + msg[1:] if msg else msg
    if not isinstance(value, dict | list):
        msg += f", got {_short(value)}"
    return msg, None


def _node_line(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the YAML node at ``loc`` (or of its nearest existing parent)."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            nxt = None
            for key, val in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == part:
                    nxt = val
                    line = key.start_mark.line + 1
                    break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
        if node is None:
            break
    return line


class DuplicateKeyError(yaml.YAMLError):
    """A mapping of the YAML file names the same key twice (PyYAML keeps the last silently)."""

    def __init__(self, key: Any, line: int, first_line: int) -> None:
        self.key, self.line, self.first_line = key, line, first_line
        super().__init__(f"duplicate key {key!r} (line {line}, first on line {first_line})")


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping (merge keys ``<<`` may repeat keys)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable: SafeLoader reports it
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise DuplicateKeyError(key, line, first)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def parse_topology(text: str, source: str = "<string>") -> Topology:
    """Validate topology YAML ``text``; ``source`` names it in errors.

    Raises :class:`TopologyError` (one line) on YAML syntax errors, duplicate keys, schema
    errors (an unknown key is reported before the missing ones it causes) and cross-check failures (unknown or duplicate names, hosts with other than one link,
    disconnected graph, duplicate IPs, job id >= MAX_JOBS, ranks outside 2..MAX_RANKS).
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except DuplicateKeyError as exc:
        raise TopologyError(
            source, f"line {exc.line}", f"duplicate key {exc.key!r} (first on line {exc.first_line})",
            "keep one of them (YAML would silently use the last)",
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else "YAML"
        raise TopologyError(
            source, where, f"YAML syntax error: {exc.problem or exc}", "fix the YAML syntax at that line"
        ) from None
    except yaml.YAMLError as exc:
        raise TopologyError(source, "YAML", f"YAML error: {exc}", "fix the YAML syntax") from None
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise TopologyError(
            source,
            "(top level)",
            f"expected a mapping of keys, got {got}",
            "start the file with 'name:', 'hosts:', 'switches:', 'links:'",
        )
    try:
        topo = Topology.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key (hostz:) also makes the right one missing (hosts:): name the cause first.
        err = next((e for e in errors if e.get("type") == "extra_forbidden"), errors[0])
        loc = tuple(err.get("loc", ()))
        problem, fix = pydantic_problem(err)
        line = _node_line(root, loc)
        if line is not None:
            problem += f" (line {line})"
        more = exc.error_count() - 1
        if more:
            problem += f" (+{more} more error{'s' if more > 1 else ''})"
        raise TopologyError(source, _loc_to_path(loc), problem, fix or _fix_for(loc)) from None

    def fail(loc: tuple[Any, ...], problem: str, fix: str) -> TopologyError:
        line = _node_line(root, loc)
        if line is not None:
            problem += f" (line {line})"
        return TopologyError(source, _loc_to_path(loc), problem, fix)

    run_checks(topo, fail)
    log.debug("loaded topology %s from %s", topo.name, source)
    return topo


def shipped_topologies() -> list[str]:
    """Names of the shipped scenarios (``topologies/NAME.yaml``), sorted."""
    return sorted(f.stem for f in data_dir("topologies").glob("*.yaml"))


def resolve_topology(path: str | Path | None, base: Path | None = None) -> Path:
    """A topology path as given, else one of the shipped scenarios (``topologies/x.yaml``).

    ``None`` is ``topologies/default.yaml``. A relative path that does not exist is looked for
    beside ``base`` (a folder: the sweep spec's), then under the repository and in
    ``topologies/``, where a bare name such as ``dumbbell`` finds ``topologies/dumbbell.yaml``.
    What is found nowhere is returned as given, so that :func:`load_topology` names it.
    """
    shipped_dir = data_dir("topologies")
    if path is None:
        return shipped_dir / "default.yaml"
    given = Path(path)
    if given.exists() or given.is_absolute():
        return given
    candidates = [base / given] if base is not None else []
    candidates += [shipped_dir.parent / given, shipped_dir / given, shipped_dir / f"{given}.yaml"]
    for candidate in candidates:
        if candidate.exists():
            return candidate
    return given


def load_topology(path: str | Path) -> Topology:
    """Read and validate the topology file at ``path`` (see :func:`parse_topology`)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        shipped = shipped_topologies()
        close = difflib.get_close_matches(p.stem, shipped, n=1, cutoff=0.6)
        hint = f" or give a shipped name ({', '.join(shipped)})" if shipped else ""
        if close:
            hint = f" or did you mean the shipped {close[0]!r}? (shipped: {', '.join(shipped)})"
        raise TopologyError(
            str(path), "(file)", f"cannot read: {exc.strerror or exc}", f"check the path{hint}"
        ) from None
    except UnicodeDecodeError as exc:
        raise TopologyError(
            str(path), "(file)", f"not a UTF-8 text file (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
            "give a YAML topology file (docs/topology-format.md)"
        ) from None
    return parse_topology(text, source=str(path))



__all__ = [
    "DEFAULT_ECN_THRESHOLD_PACKETS", "NAME_PATTERN", "Collective", "DuplicateKeyError", "EcnParams", "FlowSpec",
    "HostPlan", "HostSpec", "JobSpec", "LinkDefaults", "LinkPlan", "LinkSpec", "NetworkPlan", "PortPlan",
    "SwitchPlan", "SwitchSpec", "SymphonyOverride", "SymphonyParams", "Topology", "TopologyError",
    "UniqueKeyLoader", "build_plan", "dcqcn_unit", "ecn_lowest_threshold", "host_mac", "load_topology",
    "parse_topology", "switch_port_mac",
]
