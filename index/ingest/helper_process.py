"""The helper processes a build starts beside it, started alike: the reader of a v3
mirror's spec manifests (tarball_sizes.py) and the looks ahead at local mirrors
(look_ahead.py).

A helper is a spawned daemon: a fresh interpreter, which holds no descriptor of the
build's but those it is given (so not the build's lock), and stops once the build is
gone (it asks, between pieces of work). It leaves the stop signals to the build: Ctrl-C
reaches every process of the terminal's group, and a helper that took it as its own
would print a traceback of its own, or stop half way. So SIGINT and SIGTERM are held
(blocked) in the build's thread while a helper is started and recorded (`stops_held`): a
stop that comes meanwhile is raised on leaving, once the build can end the helper too.
The helper keeps the mask through its exec and its imports, and unblocks them once it
ignores SIGINT and takes SIGTERM's default action (`as_helper`, its first call); the
build, told to stop, ends it with `terminate()` (a helper still importing then ends once
it unblocks them: within its start, 0.5 to 0.8 s). Held in the calling thread only: a
program that calls the build beside other threads may have a stop raised within the
start, and its helper is then ended at the program's exit (a daemon).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = ["as_helper", "start_helper", "stop_helper", "stops_held"]

_STOPS = {signal.SIGINT, signal.SIGTERM}
_STOPPING_SECONDS = 2.0


@contextmanager
def stops_held() -> Iterator[None]:
    """SIGINT and SIGTERM held in this thread within the block, where a helper is started
    and recorded: one that comes meanwhile is raised on leaving."""
    # Started here, not within: starting it unblocks the stop signals of the caller. One
    # that cannot start leaves the helper's start to fail (the build does the work).
    with suppress(Exception):
        resource_tracker.ensure_running()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def start_helper(
    context: SpawnContext, target: Callable[..., None], args: tuple[Any, ...]
) -> BaseProcess | None:
    """`target(*args)` in a daemon process of `context`, started (within `stops_held`);
    None where none can be (no process here, whatever the reason: the build then does
    the work itself)."""
    try:
        process = context.Process(target=target, args=args, daemon=True)
        process.start()
    except Exception:
        return None
    return process


def stop_helper(process: BaseProcess | None, receiver: Connection | None) -> None:
    """End a helper (terminated, killed if it has not ended within 2 s) and close the
    build's end of its pipe."""
    if process is not None:
        process.terminate()
        process.join(_STOPPING_SECONDS)
        if process.exitcode is None:  # has not ended: no more waiting on it
            process.kill()
            process.join()
        process.close()
    if receiver is not None:
        receiver.close()


def as_helper() -> None:
    """In a helper, first: SIGINT ignored, SIGTERM's default action, then both unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
