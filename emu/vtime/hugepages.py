"""Python's object arenas in transparent huge pages, for big simulations (compiled build only).

CPython's small-object allocator (pymalloc) takes memory from the system in arenas of 1 MiB
(``ARENA_SIZE`` of CPython 3.10+, Objects/obmalloc.c), each an anonymous ``mmap`` of 4 KiB pages.
A virtual-time run at 128 ranks touches hundreds of MB of such objects between two visits of one
rank's or one switch's state, so much of a packet-hop's time goes to TLB misses. :func:`install`
replaces the arena allocator (``PyObject_SetArenaAllocator``, the C API's documented hook;
https://docs.python.org/3/c-api/memory.html#customize-pyobject-arena-allocator) with one that cuts
arenas out of 64 MiB chunks, each aligned to 2 MiB and advised ``MADV_HUGEPAGE`` (madvise(2); the
kernel's transparent huge pages in ``madvise`` or ``always`` mode), so the objects made after it
live in 2 MiB pages. A freed arena is kept for the next one (the chunks are never unmapped: the
process holds at most its peak of arenas, as before); an arena of another size, or one made
before :func:`install`, goes to the allocator it replaced.

The simulation reads no addresses, so results are unchanged (cct.csv and steps.csv byte-identical;
docs/virtual-time.md, "Speed"); what changes is where objects lie. As Python source this module
does nothing: the pure-Python path has no C API (:func:`install` returns False).
``SYMPHONY_EMU_HUGEPAGES=0`` turns it off.
"""

from __future__ import annotations

import os

#: Environment variable that, set to ``0``, leaves the arena allocator as it is.
HUGEPAGES_ENV = "SYMPHONY_EMU_HUGEPAGES"
#: Bytes of one chunk of arenas (a multiple of the 2 MiB huge page and of the 1 MiB arena).
CHUNK_BYTES = 64 << 20
#: compiled (hugepages.pxd): the allocator's C functions exist
_TYPED = not __file__.endswith(".py")

_installed = False


def install() -> bool:
    """Install the huge-page arena allocator once per process; True when it is in place (now or
    before), False as Python source, with ``SYMPHONY_EMU_HUGEPAGES=0``, or when the kernel refuses
    the advice (no transparent huge pages: the allocator is then left as it was)."""
    global _installed
    if _installed:
        return True
    if not _TYPED or os.environ.get(HUGEPAGES_ENV, "").strip() == "0":
        return False
    _installed = bool(_install_c(CHUNK_BYTES))  # noqa: F821 - hugepages.pxd, compiled only
    return _installed


def stats() -> dict[str, int]:
    """``{"chunks", "arenas_out", "arenas_free", "fallback"}`` of this process's allocator (all 0 when
    not installed): chunks mapped, arenas handed out and not freed, freed arenas kept for reuse,
    arenas the replaced allocator made (another size, or no chunk could be mapped)."""
    if not _installed:
        return {"chunks": 0, "arenas_out": 0, "arenas_free": 0, "fallback": 0}
    return _stats_c()  # noqa: F821 - hugepages.pxd, compiled only
