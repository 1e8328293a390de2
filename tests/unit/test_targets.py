"""The target contract: every registered target is a SwitchTarget; CLI and doctor follow the registry."""

from __future__ import annotations

import click
import pytest

from emu import cli, doctor
from emu.backend import BACKENDS
from emu.mininet.cli import cli_command
from emu.mininet.switch import SwitchTarget
from emu.targets import TARGETS, TargetUnavailable, load_target, target_class, target_names


def test_every_registered_target_is_a_switch_target() -> None:
    assert target_names()[0] == "embedded"
    for name in target_names():
        cls = load_target(name)
        assert issubclass(cls, SwitchTarget) and cls.target == name
        for method in ("start", "wait_ready", "control", "stop_process"):
            assert getattr(cls, method) is not getattr(SwitchTarget, method), (name, method)
        ok, reason = cls.available()
        assert isinstance(ok, bool) and (ok or (reason and "\n" not in reason))
        assert cls.requirements(), name


def test_unknown_and_unavailable_targets_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TargetUnavailable, match=r"^unknown target 'tofino': choose one of embedded, bmv2$"):
        target_class("tofino")
    cls = load_target("bmv2")
    monkeypatch.setattr(cls, "available", classmethod(lambda c: (False, "bmv2 target: p4c is not on PATH")))
    with pytest.raises(TargetUnavailable, match=r"^bmv2 target: p4c is not on PATH$"):
        target_class("bmv2")


def test_cli_choices_and_doctor_come_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    for command in (cli.run, cli_command):
        (opt,) = [p for p in command.params if p.name == "target"]
        assert isinstance(opt.type, click.Choice) and list(opt.type.choices) == list(TARGETS)
    (mode,) = [p for p in cli.run.params if p.name == "mode"]
    assert list(mode.type.choices) == list(BACKENDS) and mode.default == "mininet"
    rows = doctor.target_checks()
    assert {c.needed_for for c in rows} == set(TARGETS)
    assert "embedded target" in [c.name for c in rows if c.needed_for == "embedded"]
    assert {"simple_switch_grpc", "p4c", "simple_switch_CLI"} <= {c.name for c in rows if c.needed_for == "bmv2"}
    # a target that cannot load is a row, not a crash
    monkeypatch.setitem(TARGETS, "broken", "emu.nonexistent:Nope")
    (row,) = [c for c in doctor.target_checks() if c.needed_for == "broken"]
    assert not row.ok and "cannot load" in row.detail
