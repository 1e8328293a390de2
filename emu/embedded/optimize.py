"""Optimizations of the generated pipeline (``Pipeline(optimize=True)``) on structured emit sites.

Code generation records each construct that can be made cheaper as a site holding the
very :class:`~.codegen.Line` objects it emitted (:class:`~.codegen.ExtractSite`,
:class:`~.codegen.DeparseSite`). This module decides, from which names the generated
functions read and store (Python's ``ast`` of the rendered code, so every use counts),
which sites to rewrite, and rewrites their lines directly:

- a header whose validity and fields are stored only by ``extract`` still holds exactly
  the bytes it was extracted from: the deparser emits those bytes instead of rebuilding
  them;
- extracted fields that nothing reads are not computed (their lines are dropped, and the
  whole-header int read when no field of it is left);
- egress receives only the variables it reads.

The semantics are those of ``optimize=False`` (tests/p4/test_runtime.py checks both
give the same output and state).
"""

from __future__ import annotations

import ast

from .codegen import CodeGen, Line, render

__all__ = ["names", "optimize"]


def names(body: list[Line]) -> tuple[set[str], dict[str, int]]:
    """Names read, and how often each name is stored, in the generated function body ``body``."""
    tree = ast.parse("def _f():\n" + "\n".join(render(body) or ["    pass"]))
    loads: set[str] = set()
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                stores[node.id] = stores.get(node.id, 0) + 1
            else:
                loads.add(node.id)
    return loads, stores


def optimize(gen: CodeGen, ingress_body: list[Line], egress_body: list[Line], all_slots: list[str],
             egress_setup: list[tuple[str, str]], plen_var: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Rewrite the sites of ``gen`` in place; return (state vars passed to egress, egress setup kept).

    ``all_slots`` are the storage vars in state order; ``egress_setup`` the ``(var, code)``
    assignments egress starts with (dropped when egress never reads the var);
    ``plen_var`` the var of the packet length (egress reads it through ``_plen``).
    """
    _lin, st_in = names(ingress_body)
    _leg, st_eg = names(egress_body)
    for site in gen.deparse_sites:
        h = site.hdr
        raw = gen.raw.get(h.valid)
        untouched = raw is not None and all(
            st_in.get(v, 0) + st_eg.get(v, 0) == gen.extract_stores.get(v, -1)
            for v in [h.valid] + [v for _n, _w, v in h.fields])
        if untouched:
            site.emit_bytes(raw)  # type: ignore[arg-type]
    load_eg = names(egress_body)[0]
    # extracted fields that nothing reads: skip computing them
    loads = names(ingress_body)[0] | load_eg
    for ext in gen.extract_sites:
        dead = [ln for ln, v in ext.fields if v not in loads]
        for ln in dead:
            ln.text = ""
        if len(dead) == len(ext.fields) and ext.int_line is not None:
            ext.int_line.text = ""
        if ext.raw not in loads:
            ext.raw_line.text = ""
    if "_plen" in load_eg:
        load_eg.add(plen_var)
    egress_setup = [(v, code) for v, code in egress_setup if v in load_eg]
    # egress_setup assigns its vars first thing in egress: no need to pass them
    set_first = {v for v, _code in egress_setup}
    passed = [v for v in all_slots + list(gen.raw.values()) if v in load_eg and v not in set_first]
    return passed, egress_setup
