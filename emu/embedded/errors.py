"""Exceptions of the embedded switch shared by the front end, runtime and control API.

Both carry a one-line message: ``P4FrontendError`` starts with ``FILE:LINE:``;
``ControlError`` (defined in :mod:`emu.control`, shared by every target) names the table,
field, action or register and the problem.
"""

from __future__ import annotations

from emu.control import ControlError

__all__ = ["ControlError", "P4FrontendError"]


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


