"""The helper processes a build starts beside it, started alike: the reader of a v3
mirror's spec manifests (tarball_sizes.py) and the looks ahead at local mirrors
(look_ahead.py).

A helper is a daemon (it ends with the build, whichever way the build ends) that leaves
the stop signals to the build: Ctrl-C reaches every process of the terminal's group, and
a helper that took it as its own would print a traceback of its own, or stop half way. So
it is started with SIGINT and SIGTERM blocked (a new process keeps the mask, through an
exec too) and unblocks them once it ignores SIGINT and takes SIGTERM's default action
(`as_helper`, its first call): the build, told to stop, ends it with `terminate()`.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from multiprocessing.context import ForkContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = ["as_helper", "start_helper"]

_STOPS = {signal.SIGINT, signal.SIGTERM}


def start_helper(
    context: ForkContext | SpawnContext, target: Callable[..., None], args: tuple[Any, ...]
) -> BaseProcess | None:
    """`target(*args)` in a daemon process of `context`, started; None where none can be
    (no process here, whatever the reason: the build then does the work itself)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        process = context.Process(target=target, args=args, daemon=True)
        process.start()
    except Exception:
        return None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return process


def as_helper() -> None:
    """In a helper, first: SIGINT ignored, SIGTERM's default action (a forked helper has
    the build's handlers), then both unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
