"""How a command stops: SIGINT and SIGTERM unwind the same way, and say so in one line."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "stop_signals_raise", "stopped"]


class Terminated(BaseException):
    """SIGTERM, raised in the main thread as Python raises KeyboardInterrupt for SIGINT,
    so that both unwind the same way: `finally` blocks and context managers run (a build
    removes its staging folder and releases its lock) instead of the process vanishing."""


@contextlib.contextmanager
def stop_signals_raise() -> Iterator[None]:
    """Turn SIGTERM into `Terminated` for the block, as SIGINT is KeyboardInterrupt (unless
    it is ignored, as the parent asked, or this is not the main thread, which alone
    receives signals). A library that catches the raised stop and fails otherwise (numpy's
    `tofile`, interrupted while writing a column, raises a TypeError instead) still ends the
    block as the stop: once a stop signal arrived, any error leaving the block is that stop."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in _STOPS}

    def stop(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        raise _stop(signum)

    for signum, handler in previous.items():
        if handler not in (signal.SIG_IGN, None):
            signal.signal(signum, stop)
    try:
        yield
    except (KeyboardInterrupt, Terminated):
        raise
    except BaseException as exc:
        if received:
            raise _stop(received[-1]) from exc
        raise
    finally:
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)


_STOPS = (signal.SIGINT, signal.SIGTERM)


def _stop(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


def stopped(message: str) -> None:
    """One line on stderr, on a line of its own even after a progress bar or '^C'."""
    print(("\n" if sys.stderr.isatty() else "") + message, file=sys.stderr)
