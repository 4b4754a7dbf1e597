"""How a command stops: SIGINT and SIGTERM unwind the same way, and say so in one line."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "sigterm_raises", "stopped"]


class Terminated(BaseException):
    """SIGTERM, raised in the main thread as Python raises KeyboardInterrupt for SIGINT,
    so that both unwind the same way: `finally` blocks and context managers run (a build
    removes its staging folder and releases its lock) instead of the process vanishing."""


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Turn SIGTERM into `Terminated` for the block (unless it is ignored, as the
    parent asked, or this is not the main thread, which alone receives signals)."""
    previous = signal.getsignal(signal.SIGTERM)
    if previous == signal.SIG_IGN or threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stopped(message: str) -> None:
    """One line on stderr, on a line of its own even after a progress bar or '^C'."""
    print(("\n" if sys.stderr.isatty() else "") + message, file=sys.stderr)
