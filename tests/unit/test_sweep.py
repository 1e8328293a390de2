"""emu.sweep (``symphony-emu sweep SPEC``): spec checks, the plan, a tiny sweep, resume, Dask."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emu import sweep

REPO = Path(__file__).resolve().parents[2]
SINGLE = REPO / "topologies" / "single.yaml"


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "words"), [
    ("topology: nowhere.yaml\n", "topology: nowhere.yaml: no such file"),
    (f"topology: {SINGLE}\nschemes: [baseline, bogus]\n", "schemes: unknown scheme 'bogus': use baseline"),
    (f"topology: {SINGLE}\nschemes: [baseline, placebo]\n", "placebo is calibrated from symphony"),
    (f"topology: {SINGLE}\nseed: [1]\n", "seed: unknown key 'seed'; did you mean 'seeds'?"),
    ("topology: singel\n", "topology: singel: no such file; did you mean 'single'?"),
    (f"topology: {SINGLE}\ngrid: {{symphony.slope: []}}\n", "symphony.slope: give at least one value"),
    ("- a\n", "a sweep spec is a mapping"),
    (f"topology: {SINGLE}\nsize: 6\n", "size: size 6: give a positive multiple of 4 bytes"),
    (f"topology: {SINGLE}\nsize: 4 parsecs\n", "size: "),
])
def test_bad_specs_are_one_line(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(sweep.SweepError, match="spec.yaml") as err:
        sweep.run_sweep(_spec(tmp_path, text), out=tmp_path / "out")
    assert words in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_a_spec_names_a_shipped_scenario_as_run_does(tmp_path: Path) -> None:
    _, topos = sweep.load_spec(_spec(tmp_path, "topology: [single, topologies/dumbbell.yaml]\n"))
    assert topos == [SINGLE.resolve(), (REPO / "topologies" / "dumbbell.yaml").resolve()]


def test_a_bad_configuration_is_named_before_anything_runs(tmp_path: Path) -> None:
    spec = _spec(tmp_path, f"topology: {SINGLE}\ngrid: {{symphony.slope: [0.1, -1]}}\n")
    with pytest.raises(sweep.SweepError, match=r"symphony.slope=-1: .*slope"):
        sweep.run_sweep(spec, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_baseline_is_shared_by_configurations_that_differ_in_symphony_keys(tmp_path: Path) -> None:
    spec, topos = sweep.load_spec(_spec(tmp_path, f"""topology: {SINGLE}
schemes: [baseline, symphony, placebo]
seeds: [1, 2]
grid: {{symphony.slope: [0.1, 0.2], ecn.kmin_packets: [5]}}
"""))
    tasks, configs = sweep.plan_tasks(spec, topos, tmp_path)
    base = [t for t in tasks if t.schemes == ("baseline",)]
    sym = [t for t in tasks if t.schemes == ("symphony", "placebo")]
    assert len(base) == 2 and len(sym) == 4  # 2 seeds; 2 slopes x 2 seeds
    assert all(dict(t.config) == {"ecn.kmin_packets": 5} for t in base)
    assert configs[0]["tasks"]["baseline"] == configs[1]["tasks"]["baseline"]
    assert configs[0]["tasks"]["symphony"] != configs[1]["tasks"]["symphony"]


def test_whole_symphony_sections_share_the_baseline(tmp_path: Path) -> None:
    """A grid over ``symphony`` itself (one section per value: the variants of DESIGN 4)."""
    spec, topos = sweep.load_spec(_spec(tmp_path, f"""topology: {SINGLE}
schemes: [baseline, symphony]
grid:
  symphony: [{{lead_threshold: 1}}, {{lead_threshold: 0, lead: slack, marking: spaced}}]
"""))
    tasks, configs = sweep.plan_tasks(spec, topos, tmp_path)
    assert len([t for t in tasks if t.schemes == ("baseline",)]) == 1
    assert len([t for t in tasks if t.schemes == ("symphony",)]) == 2
    assert configs[0]["tasks"]["baseline"] == configs[1]["tasks"]["baseline"]


def _tiny(tmp_path: Path, schemes: str = "baseline, symphony, placebo") -> Path:
    return _spec(tmp_path, f"""topology: {SINGLE}
schemes: [{schemes}]
size: 16KiB
iterations: 2
grid: {{symphony.slope: [1.0], symphony.lead_threshold: [0]}}
""")


def test_tiny_sweep_writes_its_tables_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    md, collected = sweep.run_sweep(_tiny(tmp_path), out=out)
    results = collected[0]["results"]
    assert sorted(results) == [("baseline", 0), ("placebo", 0), ("symphony", 0)]
    assert all(len(r.ccts) == 2 for r in results.values())
    text = md.read_text()
    assert "| single | symphony.slope=1.0 symphony.lead_threshold=0 | 0 | placebo |" in text
    rows = (out / "sweep.csv").read_text().splitlines()
    assert len(rows) == 1 + 3 and rows[0].startswith("topology,config,scheme,job,seed")
    written = next(out.glob("*/seed1-symphony+placebo.yaml")).read_text()
    assert "slope: 1.0" in written and "lead_threshold: 0" in written
    # a sweep's runs leave out the per-run PNGs (summary.json and the CSVs have every number)
    assert list(out.glob("*/*/cct.csv")) and not list(out.glob("*/*/*.png"))
    # resume: the finished folders are read, not run again
    stamps = {p: p.stat().st_mtime_ns for p in out.glob("*/*/summary.json")}
    partial = next(out.glob("*/seed1-baseline"))
    (partial / "summary.json").unlink()  # as if interrupted: this one is redone
    sweep.run_sweep(_tiny(tmp_path), out=out)
    again = {p: p.stat().st_mtime_ns for p in out.glob("*/*/summary.json")}
    assert [p for p in again if again[p] == stamps.get(p)] == [p for p in again if p.parent != partial]
    assert json.loads((partial / "summary.json").read_text())["baseline"]["verified"]


def test_sweep_on_a_dask_local_cluster(tmp_path: Path) -> None:
    """--scheduler: the runs go to a distributed.LocalCluster's worker process, with the results of
    a run in this process (virtual time is deterministic)."""
    distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed (setup.cfg has it)")
    from emu import runner

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        _, remote = sweep.run_sweep(_tiny(tmp_path, "baseline"), out=tmp_path / "dask", scheduler=cl.scheduler_address)
    local = runner.run(SINGLE, schemes=("baseline",), size=16384, iterations=2, mode="sim", out=tmp_path / "here",
                       parallel=1)
    ccts = [float(line.split(",")[3]) for line in (local.out_dir / "cct.csv").read_text().splitlines()[1:]]
    assert remote[0]["results"][("baseline", 0)].ccts == ccts
