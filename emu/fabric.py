"""Leaf-spine scenarios: a fabric, its oversubscription and where the jobs' ranks go (pure).

:func:`leaf_spine` returns a topology document (the mapping a scenario YAML holds) for
``leaves`` leaves of ``hosts_per_leaf`` hosts and ``spines`` spines, every leaf linked to every
spine. Host links run at ``host_gbps``; the uplinks at
``hosts_per_leaf * host_gbps / (spines * oversubscription)`` Gbit/s, so ``oversubscription`` is
the leaf's host bandwidth over its uplink bandwidth (1 = non-blocking, 2 = 2:1).

Placement of the jobs' ranks (job order, each job's ranks in ring order):

- ``packed``: hosts in leaf order, job after job: a job fills whole leaves, so only the ring
  hops between its leaves cross the spines (the fewest spine crossings);
- ``random``: a seeded shuffle of the hosts (``placement_seed``), as a scheduler that ignores
  the network places jobs;
- ``by-job``: each job gets its own leaves (``max(2, ceil(ranks / hosts_per_leaf))`` of them,
  in order) and its ring alternates between them, so every ring hop of the job crosses the
  spines while no link carries two jobs (in two tiers a leaf's uplinks and downlinks are its
  own): ECMP collisions within a job, no interference between jobs;
- ``striped``: rank r of every job on leaf ``r mod leaves`` (next free host), so every ring
  hop goes from leaf i to leaf i + 1 and the jobs' flows share the leaves' uplinks and
  downlinks: the multi-job interference where ECMP decides which flows meet.

scripts/make_dc_leafspine.py ``--leaves ...`` writes such a file; the shipped ECMP and
multi-job scenarios (topologies/dc-ecmp-*.yaml, dc-mix-*.yaml) are its output.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Literal

Placement = Literal["packed", "random", "by-job", "striped"]
PLACEMENTS: tuple[str, ...] = ("packed", "random", "by-job", "striped")


def host_names(leaves: int, hosts_per_leaf: int) -> list[list[str]]:
    """Host names per leaf: ``h1..`` numbered leaf by leaf."""
    return [[f"h{lf * hosts_per_leaf + i + 1}" for i in range(hosts_per_leaf)] for lf in range(leaves)]


def place(job_ranks: Sequence[int], leaves: int, hosts_per_leaf: int, placement: Placement,
          seed: int = 1) -> list[list[str]]:
    """Hosts of each job's ranks in ring order (see the module docstring).

    ValueError (one line) when the jobs need more hosts than the fabric has, a job has fewer
    than 2 ranks, or the placement is unknown.
    """
    per_leaf = host_names(leaves, hosts_per_leaf)
    flat = [h for hs in per_leaf for h in hs]
    if any(n < 2 for n in job_ranks):
        raise ValueError(f"every job needs at least 2 ranks, got {list(job_ranks)}")
    if sum(job_ranks) > len(flat):
        raise ValueError(f"{sum(job_ranks)} ranks need more than the fabric's {len(flat)} hosts")
    if placement == "packed":
        out, i = [], 0
        for n in job_ranks:
            out.append(flat[i:i + n])
            i += n
        return out
    if placement == "random":
        hosts = list(flat)
        random.Random(seed).shuffle(hosts)
        out, i = [], 0
        for n in job_ranks:
            out.append(hosts[i:i + n])
            i += n
        return out
    if placement == "by-job":
        out, leaf = [], 0
        for n in job_ranks:
            k = max(2, math.ceil(n / hosts_per_leaf))
            if leaf + k > leaves:
                raise ValueError(f"by-job placement: job of {n} ranks needs {k} leaves of its own, "
                                 f"{leaves - leaf} left")
            mine = [per_leaf[leaf + j] for j in range(k)]
            ring = [mine[r % k][r // k] for r in range(n)]  # alternate leaves: every hop crosses a spine
            if len(set(ring)) != n:
                raise ValueError(f"by-job placement: {n} ranks do not fit {k} leaves of {hosts_per_leaf} hosts")
            out.append(ring)
            leaf += k
        return out
    if placement == "striped":
        free = [list(hs) for hs in per_leaf]
        out = []
        for n in job_ranks:
            ring = []
            for r in range(n):
                if not free[r % leaves]:
                    raise ValueError(f"striped placement: leaf{r % leaves + 1} has no free host for rank {r}")
                ring.append(free[r % leaves].pop(0))
            out.append(ring)
        return out
    raise ValueError(f"unknown placement {placement!r}; use one of {', '.join(PLACEMENTS)}")


def leaf_spine(*, name: str, description: str, leaves: int, hosts_per_leaf: int, spines: int,
               jobs: Sequence[dict[str, Any]], placement: Placement = "by-job", placement_seed: int = 1,
               host_gbps: float = 100.0, oversubscription: float = 1.0, delay_us: float = 1.0,
               queue_packets: int = 1024, routing: str = "ecmp", ecmp_seed: int = 0, mtu: int = 4096,
               dcqcn_preset: str | None = "hpcc-dcqcn-100g", extra: dict[str, Any] | None = None,
               host_links: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """A leaf-spine topology document (see the module docstring).

    ``jobs``: per job the JobSpec fields but ``ranks`` and ``id``, plus ``ranks`` as a count
    (e.g. ``{"ranks": 8, "size_bytes": "4MiB", "iterations": 5}``); ids are 0, 1, ... in order.
    ``host_links``: host name -> link fields overriding its access link (a NIC-rate straggler:
    ``{"h3": {"bandwidth_mbps": "25Gbit/s"}}``). ``extra``: more top-level keys (``symphony``,
    ``dcqcn``, ``background``, ``paths``). ValueError as :func:`place`, or for a fabric
    parameter out of range.
    """
    if leaves < 1 or hosts_per_leaf < 1 or spines < 1:
        raise ValueError("a leaf-spine needs at least one leaf, one host per leaf and one spine")
    if oversubscription <= 0 or host_gbps <= 0:
        raise ValueError("host_gbps and oversubscription must be positive")
    placed = place([int(j["ranks"]) for j in jobs], leaves, hosts_per_leaf, placement, placement_seed)
    uplink_gbps = hosts_per_leaf * host_gbps / (spines * oversubscription)
    per_leaf = host_names(leaves, hosts_per_leaf)
    host_links = host_links or {}
    links: list[dict[str, Any]] = []
    for lf, hosts in enumerate(per_leaf):
        for h in hosts:
            links.append({"a": h, "b": f"leaf{lf + 1}", **host_links.get(h, {})})
    for lf in range(leaves):
        for sp in range(spines):
            link: dict[str, Any] = {"a": f"leaf{lf + 1}", "b": f"spine{sp + 1}"}
            if uplink_gbps != host_gbps:
                link["bandwidth_mbps"] = f"{uplink_gbps:g}Gbit/s"
            links.append(link)
    doc: dict[str, Any] = {
        "name": name,
        "description": description,
        "defaults": {"bandwidth_mbps": f"{host_gbps:g}Gbit/s", "delay_ms": f"{delay_us:g}us",
                     "queue_packets": queue_packets},
        "mtu": mtu,
        "routing": routing,
    }
    if routing == "ecmp":
        doc["ecmp_seed"] = ecmp_seed
    if dcqcn_preset:
        doc["dcqcn_preset"] = dcqcn_preset
    doc["hosts"] = [{"name": h} for hs in per_leaf for h in hs]
    doc["switches"] = [{"name": f"leaf{lf + 1}"} for lf in range(leaves)] + \
                      [{"name": f"spine{sp + 1}"} for sp in range(spines)]
    doc["links"] = links
    doc["jobs"] = [{"id": i, "ranks": hosts, **{k: v for k, v in j.items() if k != "ranks"}}
                   for i, (j, hosts) in enumerate(zip(jobs, placed, strict=True))]
    doc.update(extra or {})
    return doc


def to_yaml(doc: dict[str, Any], comment: str = "") -> str:
    """The document as YAML (key order kept), after ``comment`` lines (``# ``-prefixed)."""
    import yaml

    head = "".join(f"# {line}".rstrip() + "\n" for line in comment.splitlines()) if comment else ""
    return head + yaml.safe_dump(doc, sort_keys=False, width=100)


#: Shipped scenarios: name -> () -> (comment, document); scripts/make_dc_leafspine.py --scenario NAME.
SCENARIOS: dict[str, Any] = {}


def scenario_yaml(name: str) -> str:
    """The text of shipped scenario ``name`` (topologies/NAME.yaml is it byte for byte)."""
    comment, doc = SCENARIOS[name]()
    return to_yaml(doc, comment + f"\n\nWritten by: scripts/make_dc_leafspine.py --scenario {name}")


#: DCQCN and Symphony settings of the shipped data-centre scenarios (docs/virtual-time.md, "Tuning").
DC_DCQCN: dict[str, Any] = {"rate_increase_period": "55us"}
DC_SYMPHONY: dict[str, Any] = {"lead_threshold": 2, "slope": 0.02, "queue_gate": 1}


def _dc_ecmp_16() -> tuple[str, dict[str, Any]]:
    comment = """ECMP on a leaf-spine (the paper's Figure 1): hash collisions make ring flows share uplinks unevenly.

8 leaves x 2 hosts, 2 spines, 100 Gbit/s everywhere (1:1), one 16-rank ring all-reduce placed
by job (rank r on leaf r mod 8), so every ring hop crosses the spines. routing: ecmp with
ecmp_seed 2: the hash sends both of a leaf's two outgoing ring flows up the same spine at 6 of
the 8 leaves (those flows get 50 Gbit/s each while the other uplink idles) and one flow per
spine at the rest; run it to see the table of shared links (summary.json "paths" has all).
No background, no straggler: the flows that do not share run ahead of the ones that do."""
    doc = leaf_spine(
        name="dc-ecmp-16",
        description="8x2 leaf-spine, 2 spines, ECMP (seed 2): 16-rank all-reduce whose ring flows collide on "
                    "some uplinks and not others; HPCC's DCQCN at 100 Gbit/s, Symphony T = 2, slope 0.02.",
        leaves=8, hosts_per_leaf=2, spines=2, placement="by-job", ecmp_seed=2,
        jobs=[{"ranks": 16, "collective": "allreduce", "size_bytes": "2MiB", "iterations": 5, "step_timeout_s": 1}],
        extra={"dilation": 5000, "dcqcn": dict(DC_DCQCN), "symphony": dict(DC_SYMPHONY)})
    return comment, doc


SCENARIOS["dc-ecmp-16"] = _dc_ecmp_16


#: Host-name letters of the big jobs of :func:`mix_stragglers` (the small job's hosts are ``c0, c1, ...``).
_BIG_LETTERS = "abdefghijk"


def mix_stragglers(*, name: str, description: str, big_jobs: int = 2, ranks: int = 8, straggler_rank: int = 3,
                   straggler_gbps: float = 25.0, big_size: str = "4MiB", big_iterations: int = 5,
                   small_ranks: int = 2, small_size: str = "1MiB", small_iterations: int = 20,
                   link_gbps: float = 100.0, symphony: dict[str, Any] | None = None,
                   ecn: dict[str, Any] | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Several jobs with stragglers sharing one link (the multi-job family of dc-mix-stragglers).

    Two switches s1, s2 joined by one ``link_gbps`` link; host links 100 Gbit/s, 1 us. Each of
    ``big_jobs`` jobs of ``ranks`` ranks (hosts ``a0..``, ``b0..``, ``d0..``, ...) has ranks
    0..N-2 on s1 and rank N-1 on s2, and a NIC-rate straggler (``straggler_rank`` at
    ``straggler_gbps``), so its ring flows N-2 -> N-1 and N-1 -> 0 cross the shared link with
    slack. The small job (``small_ranks`` ranks ``c0..``, alternating s1, s2) has every ring flow
    on the shared link. ValueError for a job that does not fit (fewer than 2 ranks, more than 10
    big jobs, the straggler outside the ring).
    """
    if big_jobs < 0 or big_jobs > len(_BIG_LETTERS) or ranks < 2 or small_ranks < 2:
        raise ValueError(f"mix_stragglers: 0-{len(_BIG_LETTERS)} big jobs of >= 2 ranks and a small job of >= 2")
    if not 0 <= straggler_rank < ranks:
        raise ValueError(f"mix_stragglers: straggler rank {straggler_rank} is not a rank of {ranks}")
    big = [[f"{_BIG_LETTERS[j]}{i}" for i in range(ranks)] for j in range(big_jobs)]
    small = [f"c{i}" for i in range(small_ranks)]
    on_s2 = {ring[-1] for ring in big} | {h for i, h in enumerate(small) if i % 2}
    hosts = [h for ring in big for h in ring] + small
    job = {"collective": "allreduce", "step_timeout_s": 1}
    shared: dict[str, Any] = {"a": "s1", "b": "s2"}
    if link_gbps != 100.0:
        shared["bandwidth_mbps"] = f"{link_gbps:g}Gbit/s"
    doc: dict[str, Any] = {
        "name": name,
        "description": description,
        "defaults": {"bandwidth_mbps": "100Gbit/s", "delay_ms": "1us", "queue_packets": 1024},
        "mtu": 4096,
        "dilation": 5000,
        "dcqcn_preset": "hpcc-dcqcn-100g",
        "dcqcn": dict(DC_DCQCN),
    }
    if ecn:
        doc["ecn"] = dict(ecn)
    doc.update({
        "hosts": [{"name": h} for h in hosts],
        "switches": [{"name": "s1"}, {"name": "s2"}],
        "links": [{"a": h, "b": "s2" if h in on_s2 else "s1"} for h in hosts] + [shared],
        "jobs": [{"id": j, "ranks": ring, **job, "size_bytes": big_size, "iterations": big_iterations,
                  "stragglers": [{"rank": straggler_rank, "nic_mbps": f"{straggler_gbps:g}Gbit/s"}]}
                 for j, ring in enumerate(big)]
                + [{"id": big_jobs, "ranks": small, **job, "size_bytes": small_size, "iterations": small_iterations}],
        "symphony": dict(symphony or {"lead_threshold": 1, "slope": 0.25, "queue_gate": 1}),
    })
    doc.update(extra or {})
    return doc


def _dc_mix_stragglers() -> tuple[str, dict[str, Any]]:
    comment = """Several jobs with stragglers share a link (the multi-job case of issue 15).

Two switches s1 and s2 joined by one 100 Gbit/s link. Jobs 0 and 1 (8 ranks, 4 MiB) have
7 ranks on s1 and rank 7 on s2, and each has a straggler: rank 3's NIC runs at 25 Gbit/s, so
its ring runs at a quarter of the line rate and its other flows have slack ("ahead" flows that
burst a step's 512 KiB chunk at line rate). Job 2 (2 ranks, 1 MiB, 20 iterations) has c0 on s1
and c1 on s2: its flow c0 -> c1 shares the s1 -> s2 link with the ahead flows a6 -> a7 and
b6 -> b7 (and c1 -> c0 the s2 -> s1 link with a7 -> a0 and b7 -> b0). No background. The small
job runs at about 3x its bound in the baseline; Symphony (T = 1, slope 0.25: marks from a lead
of 2 steps) slows the ahead flows and the small job's mean CCT falls by 16% (0.84 [0.80, 0.88] over
seeds 1-3, docs/results.md); the big jobs' mean CCTs stay within the noise."""
    doc = mix_stragglers(
        name="dc-mix-stragglers",
        description="Two 8-rank jobs, each with a 25 Gbit/s straggler, and a 2-rank job whose flows share "
                    "the inter-switch link with their ahead flows; 100 Gbit/s, HPCC's DCQCN, Symphony T = 1, "
                    "slope 0.25.")
    return comment, doc


def _dc_train_8() -> tuple[str, dict[str, Any]]:
    comment = """A training job with compute (the paper's Figure 6), on an ECMP leaf-spine.

4 leaves x 2 hosts, 2 spines, 100 Gbit/s, routing: ecmp (seed 3: 4 links carry two ring flows),
one 8-rank data-parallel job
of a transformer-like model: 8 layers of 128 KiB of gradients, a bucket every 2 layers (4
all-reduces of 256 KiB per iteration), forward 0.2 ms and backward 0.4 ms at reduction 1. Each
bucket's all-reduce starts when the backward pass has made it and the previous one is done, so
at reduction 1 the communication hides behind the backward pass; the paper's computation-
reduction ratio (model.reduction, 1x..64x) shrinks the compute until the communication is
exposed: sweep it with symphony-emu sweep or dc_sweep --set jobs.0.model.reduction=1,8,64.
JCT, compute and exposed communication per job are in the report and summary.json."""
    doc = leaf_spine(
        name="dc-train-8",
        description="4x2 leaf-spine, ECMP, an 8-rank training job (4 gradient buckets of 256 KiB per iteration, "
                    "compute/communication overlap, reduction 1); JCT beside CCT.",
        leaves=4, hosts_per_leaf=2, spines=2, placement="by-job", ecmp_seed=3,
        jobs=[{"ranks": 8, "collective": "allreduce", "iterations": 3, "step_timeout_s": 1,
               "model": {"layers": 8, "layer_bytes": "128KiB", "bucket_layers": 2, "forward_ms": "0.2ms",
                         "backward_ratio": 2, "reduction": 1}}],
        extra={"dilation": 5000, "dcqcn": dict(DC_DCQCN), "symphony": dict(DC_SYMPHONY)})
    return comment, doc


SCENARIOS["dc-mix-stragglers"] = _dc_mix_stragglers
SCENARIOS["dc-train-8"] = _dc_train_8


def _dc_mix_3x10g() -> tuple[str, dict[str, Any]]:
    comment = """The widest room for alignment found (docs/paper.md, "When Symphony wins"): three jobs with stragglers.

dc-mix-stragglers with three 8-rank jobs (a0-a7, b0-b7, d0-d7; 4 MiB, 5 iterations), each with a
10 Gbit/s NIC straggler at rank 3, and the 2-rank job c0, c1 (1 MiB, 20 iterations) on the shared
100 Gbit/s link with one flow of each big job per direction. The big flows average 7.6 Gbit/s
but burst each step's 512 KiB chunk at line rate. Seeds 1-3, tuned baseline (HPCC's ramp, 55 us):
the small job's mean CCT is 0.272 ms; the ideal barrier takes it to 0.53 [0.47, 0.59], the
placebo to 0.72 [0.67, 0.78], Symphony (T = 1, slope 0.25) to 0.89 [0.83, 0.97]; the big jobs
stay within the noise with Symphony and the placebo (1.00-1.02). The bandwidth floor (1 MiB over
the 77 Gbit/s the big flows leave) is 0.40 of the baseline."""
    doc = mix_stragglers(
        name="dc-mix-3x10g",
        description="Three 8-rank jobs, each with a 10 Gbit/s straggler, and a 2-rank job whose flows share the "
                    "inter-switch link with their ahead flows; 100 Gbit/s, HPCC's DCQCN, Symphony T = 1, slope 0.25.",
        big_jobs=3, straggler_gbps=10)
    return comment, doc


SCENARIOS["dc-mix-3x10g"] = _dc_mix_3x10g
