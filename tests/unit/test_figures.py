"""emu.figures without running a simulation: the runs of a scenario whose text changed are not reused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emu import figures, sweep


def test_a_changed_scenario_does_not_reuse_its_old_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []

    def execute(tasks: list[sweep.SweepTask], **_: Any) -> dict[str, Any]:
        ran.append([t.out for t in tasks if not (Path(t.out) / "summary.json").exists()])
        for t in tasks:  # a finished run's folder, as run_task leaves it
            Path(t.out).mkdir(parents=True, exist_ok=True)
            (Path(t.out) / "summary.json").write_text(json.dumps({}))
        return {}

    monkeypatch.setattr(sweep, "execute", execute)
    monkeypatch.setattr(sweep, "collect", lambda configs, done: [{"results": {}, "placebo": []} for _ in configs])
    ctx = figures.FigureContext(5, tmp_path, quick=True)
    doc = figures.quick_mix()
    figures.run_grid(ctx, {"mix": doc})
    figures.run_grid(ctx, {"mix": doc})  # the same text: its runs are reused
    changed = figures.with_changes(doc, lambda d: d["jobs"][0].__setitem__("iterations", 3))
    figures.run_grid(ctx, {"mix": changed})
    assert len(ran[0]) == 2 and ran[1] == [] and sorted(ran[2]) == sorted(ran[0])
