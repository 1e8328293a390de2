"""The registry of switch targets: name -> ``"module:Class"`` (no imports, so the CLI's
``--target`` choices cost nothing). Adding a target is one line here and one
:class:`emu.mininet.switch.SwitchTarget` subclass."""

from __future__ import annotations

#: Target name -> "module:Class"; the first is the default.
TARGETS: dict[str, str] = {
    "embedded": "emu.mininet.embedded:EmbeddedSwitch",
    "bmv2": "emu.mininet.bmv2:Bmv2Switch",
}


def target_names() -> list[str]:
    """Registered target names, the default (``embedded``) first."""
    return list(TARGETS)
