"""Helpers shared by the P4 front-end and runtime tests: a small v1model program template."""

from __future__ import annotations

from pathlib import Path

TEMPLATE = """#include <core.p4>
#include <v1model.p4>

header h_t {{
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<8>  d;
    bit<8>  e;
}}
struct headers {{ h_t h; }}
struct metadata {{ bit<8> m; }}
{decls}
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {{
    state start {{
        pkt.extract(hdr.h);
        transition accept;
    }}
}}
control VC(inout headers hdr, inout metadata meta) {{ apply {{ }} }}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {{
{ingress}
}}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers hdr, inout metadata meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def write_program(tmp_path: Path, ingress: str, decls: str = "", name: str = "prog.p4") -> Path:
    """Write the template with ``ingress`` as the body of control I; return its path."""
    path = tmp_path / name
    path.write_text(TEMPLATE.format(ingress=ingress, decls=decls))
    return path


def line_of(path: Path, needle: str) -> int:
    """1-based line number of the first line of ``path`` containing ``needle``."""
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")
