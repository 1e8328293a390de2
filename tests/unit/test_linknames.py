"""Per-run link names (emu.linknames): the 15-character limit, tag claims and dead tags.

No root: claims go to a temporary directory and the kernel's link list is faked, so no
real link (another run's) is read or deleted.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from emu import linknames


@pytest.fixture
def links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Claims under tmp_path; the kernel's links are this list (delete_links removes from it)."""
    monkeypatch.setattr(linknames, "TAG_ROOT", tmp_path / "links")
    fake: list[str] = []

    def tagged(tags: set[str] | None = None) -> list[str]:
        return [n for n in fake if (p := linknames.parse_intf(n)) and (tags is None or p[0] in tags)]

    def delete(names: list[str]) -> None:
        for n in names:
            fake.remove(n)

    monkeypatch.setattr(linknames, "tagged_links", tagged)
    monkeypatch.setattr(linknames, "delete_links", delete)
    return fake


def test_longest_name_fits_and_parses_back() -> None:
    name = linknames.switch_intf("z9", "spine123", 510)  # 8-character switch, port 510: the schema's limits
    assert name == "z9-spine123-510" and len(name) == linknames.IFNAME_MAX
    assert linknames.parse_intf(name) == ("z9", "spine123", 510)
    assert linknames.parse_intf("s1-eth1") is None and linknames.parse_intf("a0-s1") is None
    with pytest.raises(ValueError, match="does not fit 15 characters"):
        linknames.switch_intf("a0", "spine1234", 510)
    assert len(linknames.TAGS) == len(set(linknames.TAGS)) == 26 * 36


def test_two_claims_get_two_tags_and_a_release_frees_one(links: list[str]) -> None:
    first = linknames.LinkTag.claim("run-1")
    second = linknames.LinkTag.claim("run-2")
    try:
        assert (first.tag, second.tag) == ("a0", "a1")
        assert first.intf("s1", 1) != second.intf("s1", 1)
        assert linknames.held_tags() == {"a0": "run-1", "a1": "run-2"}
        links += [first.intf("s1", 1), second.intf("s1", 1)]
        first.release()
        assert links == [second.intf("s1", 1)]  # release deleted only its own links
        first.release()  # idempotent
        third = linknames.LinkTag.claim("run-3")
        assert third.tag == "a0"
        third.release()
    finally:
        second.release()
    assert links == [] and linknames.held_tags() == {}


def _claim_and_exit(root: str, q: multiprocessing.Queue) -> None:
    linknames.TAG_ROOT = Path(root)
    tag = linknames.LinkTag.claim("dead-run")
    q.put(tag.tag)  # exits without releasing: a SIGKILLed run


def test_a_dead_holders_tag_is_reclaimed_and_its_links_deleted(links: list[str], tmp_path: Path) -> None:
    live = linknames.LinkTag.claim("live-run")
    try:
        q: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
        proc = multiprocessing.get_context("fork").Process(target=_claim_and_exit, args=(str(tmp_path / "links"), q))
        proc.start()
        dead = q.get(timeout=30)
        proc.join(30)
        assert dead == "a1"
        links += [live.intf("s1", 1), f"{dead}-s1-1", f"{dead}-s2-1"]
        assert linknames.dead_tags() == {"a1": "dead-run"} and linknames.held_tags() == {"a0": "live-run"}
        assert linknames.release_dead_tags() == ["a1-s1-1", "a1-s2-1"]
        assert links == [live.intf("s1", 1)] and linknames.dead_tags() == {}
        links.append("a1-s9-2")  # a dead run's link whose claim file went: the next claim of a1 deletes it
        again = linknames.LinkTag.claim("next-run")
        assert again.tag == "a1" and links == [live.intf("s1", 1)]
        again.release()
    finally:
        live.release()


def test_mininet_topo_names_switch_ports_with_the_tag() -> None:
    """Switch ends get ``<tag>-<switch>-<port>``, host ends the plan's ``<host>-eth0``."""
    pytest.importorskip("mininet", reason="the mininet module is not installed (apt-get install mininet)")
    from emu.mininet.network import make_topo
    from emu.topology import load_topology

    plan = load_topology(Path(__file__).resolve().parents[2] / "topologies" / "single.yaml").plan
    topo = make_topo(plan, "b3")
    names = sorted((info["intfName1"], info["intfName2"]) for _, _, info in topo.links(withInfo=True))
    assert names == [("h1-eth0", "b3-s1-1"), ("h2-eth0", "b3-s1-2"), ("h3-eth0", "b3-s1-3"), ("h4-eth0", "b3-s1-4")]
