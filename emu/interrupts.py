"""Interrupts: SIGTERM and SIGHUP end a run as Ctrl-C does, and teardown that no signal cuts short.

A run catches :class:`KeyboardInterrupt` once, at the top (the CLI), and cleans up on the way
there: :func:`signals_as_interrupt` makes SIGTERM (kill, systemd) and SIGHUP (the terminal
closed) raise :class:`SignalInterrupt`, a KeyboardInterrupt, so they take the same path;
:func:`interrupts_deferred` ignores all three while a teardown must finish (the runner's
close, the scheme processes' stop). Main thread only: elsewhere both are no-ops.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterable, Iterator
from typing import Any

#: Signals that end a run like Ctrl-C: SIGTERM (kill, systemd) and SIGHUP (the terminal closed).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class SignalInterrupt(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: the run stops and cleans up as after Ctrl-C.

    ``signum`` is the signal; the CLI exits with 128 + signum. The Mininet CLI re-raises it
    (it catches KeyboardInterrupt to keep its prompt, right for Ctrl-C, wrong for a hang-up).
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"signal {signal.Signals(signum).name}")


def _raise_interrupt(signum: int, frame: Any) -> None:  # noqa: ARG001
    raise SignalInterrupt(signum)


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """Within the block SIGTERM and SIGHUP raise :class:`SignalInterrupt`, a KeyboardInterrupt,
    so they clean up like Ctrl-C (main thread only)."""
    with _handling(STOP_SIGNALS, _raise_interrupt):
        yield


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Ignore SIGINT, SIGTERM and SIGHUP within the block (teardown must finish)."""
    with _handling((signal.SIGINT, *STOP_SIGNALS), signal.SIG_IGN):
        yield


@contextlib.contextmanager
def _handling(signals: Iterable[signal.Signals], handler: Any) -> Iterator[None]:
    """``handler`` for ``signals`` within the block, the old handlers restored after it;
    nothing changes outside the main thread (where signal.signal raises ValueError)."""
    try:
        old = {sig: signal.signal(sig, handler) for sig in signals}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


__all__ = ["STOP_SIGNALS", "SignalInterrupt", "interrupts_deferred", "signals_as_interrupt"]
