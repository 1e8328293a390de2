"""Exceptions of the embedded switch shared by the front end, runtime and control API.

``PacketError`` is what a pipeline raises for a frame it cannot process because of the
frame's contents (the switch core drops and counts it as malformed); any other exception
out of a pipeline is an internal error. Both frontend and control errors carry a one-line message: ``P4FrontendError`` starts with ``FILE:LINE:``;
``ControlError`` (defined in :mod:`emu.control`, shared by every target) names the table,
field, action or register and the problem.
"""

from __future__ import annotations

from emu.control import ControlError

__all__ = ["ControlError", "P4FrontendError", "PacketError"]


class P4FrontendError(Exception):
    """The P4 program uses an unsupported construct or does not parse.

    ``str(err)`` is ``FILE:LINE: unsupported <construct>`` or ``FILE:LINE: <problem>``;
    ``err.file`` and ``err.line`` hold the location (original source file, 1-based line,
    after mapping the preprocessor's ``#line`` markers back).
    """

    def __init__(self, file: str, line: int, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message
        super().__init__(f"{file}:{line}: {message}")




class PacketError(Exception):
    """A frame the pipeline cannot process because of its contents (not a program bug).

    :class:`~emu.embedded.core.SwitchCore` drops it and counts it under ``drops.malformed``;
    any other exception out of a pipeline counts under ``drops.internal`` and is logged as
    an error. ``str(err)`` says what is wrong with the frame.
    """
