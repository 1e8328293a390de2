"""Per-run names of the root-namespace links, so that runs on one machine coexist.

A Mininet switch of this project lives in the root namespace (``inNamespace=False``), so
its interfaces share one namespace with every other run's. Named as Mininet names them,
``<switch>-eth<port>``, a second run's ``s1-eth1`` would be the first run's (Mininet's
``makeIntfPair`` deletes a same-named interface before it makes its own), so each run claims
a **link tag** and names its switch interfaces::

    <tag>-<switch>-<port>        e.g. a0-s1-3, k7-spine12-510

- ``tag``: two characters, a letter then a letter or digit (936 tags): at most 15
  characters in all, the kernel's limit (IFNAMSIZ - 1), for the longest switch name the
  schema allows (8 characters, emu.topology_schema.NAME_PATTERN) and port (510,
  emu.topology_checks); switch names have no ``-``, so the name parses back.
- A host's interface stays ``<host>-eth0`` (emu.topology_plan): it is made inside the
  host's own namespace (``ip link add ... peer ... netns``), where no other run looks.
- The plan's names (``PortPlan.intf``, pcap files ``<switch>-eth<port>.pcap``, reports)
  stay the logical ``<switch>-eth<port>``; only the kernel's name carries the tag.

A tag is claimed by an exclusive flock(2) on ``/run/symphony-emu-links/<tag>`` held for
the life of the network (:class:`LinkTag`), the same proof of life as a run note
(emu.cleanup.register_run): the kernel drops the lock when its holder dies, in whatever PID
namespace, so a free lock means the tag's links, if any are left, are a dead run's.
Claiming a free tag first deletes such links; ``symphony-emu clean`` deletes those of every
free tag (:func:`dead_tags`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import string
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

#: Where tags are claimed (one lock file per tag).
TAG_ROOT = Path("/run/symphony-emu-links")
#: Longest interface name the kernel takes (IFNAMSIZ 16, with the NUL).
IFNAME_MAX = 15
#: Every tag, in claiming order: a letter, then a letter or digit.
TAGS = tuple(a + b for a in string.ascii_lowercase for b in string.digits + string.ascii_lowercase)
#: ``<tag>-<switch>-<port>`` (switch names: emu.topology_schema.NAME_PATTERN).
INTF_RE = re.compile(r"^(?P<tag>[a-z][a-z0-9])-(?P<switch>[A-Za-z][A-Za-z0-9_]{0,7})-(?P<port>\d{1,3})$")
#: A link in ``ip -o link show`` output (name, optionally ``@peer``).
_IP_LINK_RE = re.compile(r"^\d+:\s+([^:@\s]+)(?:@\S+)?:")


class LinkTagError(RuntimeError):
    """No tag could be claimed (one line)."""


def switch_intf(tag: str, switch: str, port: int) -> str:
    """The kernel name of ``switch``'s port ``port`` in the run holding ``tag``.

    ValueError if the name would exceed 15 characters (a switch name or port outside the
    schema's limits).
    """
    name = f"{tag}-{switch}-{port}"
    if len(name) > IFNAME_MAX or INTF_RE.match(name) is None:
        raise ValueError(f"interface name {name!r}: switch {switch!r} port {port} does not fit "
                         f"{IFNAME_MAX} characters as <tag>-<switch>-<port>")
    return name


def parse_intf(name: str) -> tuple[str, str, int] | None:
    """``(tag, switch, port)`` of a name :func:`switch_intf` made, else None."""
    m = INTF_RE.match(name)
    return (m["tag"], m["switch"], int(m["port"])) if m else None


def tagged_links(tags: set[str] | frozenset[str] | None = None) -> list[str]:
    """Root-namespace links named ``<tag>-<switch>-<port>``, only of ``tags`` when given."""
    try:
        out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=False).stdout
    except FileNotFoundError:
        return []
    links = []
    for line in out.splitlines():
        m = _IP_LINK_RE.match(line)
        parsed = parse_intf(m.group(1)) if m else None
        if parsed is not None and (tags is None or parsed[0] in tags):
            links.append(m.group(1))
    return links


def delete_links(names: list[str]) -> None:
    """``ip link del`` each (one whose namespace went away is gone already: no error)."""
    for name in names:
        subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
        log.info("deleted link %s", name)


def lock_free(path: Path) -> bool:
    """Whether nobody holds an exclusive flock(2) on ``path`` (False when it cannot be opened):
    the proof of life of a link tag here and of a run note (emu.cleanup.run_lock_free)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _owner(path: Path) -> str:
    """The run id written in a claim file ("" when unknown)."""
    try:
        note = json.loads(path.read_text())
    except (OSError, ValueError):
        return ""
    return str(note.get("run_id", "")) if isinstance(note, dict) else ""


def _claim_files() -> list[Path]:
    return [p for p in sorted(TAG_ROOT.iterdir()) if p.name in TAGS] if TAG_ROOT.is_dir() else []


def held_tags() -> dict[str, str]:
    """Tag -> run id ("" when unknown) of every tag a live process holds."""
    return {p.name: _owner(p) for p in _claim_files() if not lock_free(p)}


def dead_tags() -> dict[str, str]:
    """Tag -> run id of every claim file whose lock nobody holds (its holder died)."""
    return {p.name: _owner(p) for p in _claim_files() if lock_free(p)}


def _lock_tag(tag: str) -> int | None:
    """An fd holding the exclusive lock of ``tag``'s claim file (made if missing), or None
    when a live process holds it. The lock is on the file the path names after locking
    (one unlinked meanwhile by its releaser is not a claim). OSError when it cannot be made."""
    path = TAG_ROOT / tag
    for _ in range(10):  # bounded: each retry means the file was replaced meanwhile
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)
    return None


def release_dead_tags() -> list[str]:
    """Delete the links of every dead tag and its claim file; returns the links deleted."""
    deleted = []
    for tag in dead_tags():
        try:
            fd = _lock_tag(tag)
        except OSError:
            continue
        if fd is None:  # claimed again meanwhile
            continue
        try:
            links = tagged_links({tag})
            delete_links(links)
            deleted += links
            (TAG_ROOT / tag).unlink(missing_ok=True)
        finally:
            os.close(fd)
    return deleted


class LinkTag:
    """A tag this process holds (flock on its claim file) until :meth:`release`.

    Use :meth:`claim`. ``tag``: the two characters; :meth:`intf` names a switch port.
    """

    def __init__(self, tag: str, fd: int) -> None:
        self.tag = tag
        self._fd: int | None = fd

    @classmethod
    def claim(cls, run_id: str = "") -> LinkTag:
        """The first free tag, locked; links a dead holder of it left are deleted first.

        LinkTagError when /run/symphony-emu-links cannot be written (not root) or all 936
        tags are held by live runs.
        """
        try:
            TAG_ROOT.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LinkTagError(f"cannot claim a link tag under {TAG_ROOT}: {exc.strerror or exc} (needs root)") from None
        for tag in TAGS:
            try:
                fd = _lock_tag(tag)
            except OSError as exc:
                raise LinkTagError(f"cannot claim a link tag: {TAG_ROOT / tag}: {exc.strerror or exc}") from None
            if fd is None:
                continue
            stale = tagged_links({tag})
            if stale:
                log.info("link tag %s: deleting %d links a dead run left (%s ...)", tag, len(stale), stale[0])
                delete_links(stale)
            os.ftruncate(fd, 0)
            os.write(fd, (json.dumps({"run_id": run_id, "pid": os.getpid()}) + "\n").encode())
            return cls(tag, fd)
        raise LinkTagError(f"all {len(TAGS)} link tags are held by live runs ({TAG_ROOT}); stop one first")

    def intf(self, switch: str, port: int) -> str:
        """:func:`switch_intf` with this tag."""
        return switch_intf(self.tag, switch, port)

    def links(self) -> list[str]:
        """The root-namespace links of this tag that exist now."""
        return tagged_links({self.tag})

    def release(self) -> None:
        """Delete the links of this tag still there, remove the claim file, drop the lock (idempotent)."""
        if self._fd is None:
            return
        delete_links(self.links())
        try:
            (TAG_ROOT / self.tag).unlink(missing_ok=True)  # under the lock: see _lock_tag
        except OSError:
            pass
        os.close(self._fd)
        self._fd = None


__all__ = ["IFNAME_MAX", "INTF_RE", "TAGS", "TAG_ROOT", "LinkTag", "LinkTagError", "dead_tags", "delete_links",
           "held_tags", "parse_intf", "release_dead_tags", "switch_intf", "tagged_links"]
