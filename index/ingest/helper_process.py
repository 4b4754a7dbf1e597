"""The helper processes a build starts beside it, started alike: the reader of a v3
mirror's spec manifests (tarball_sizes.py) and the looks ahead at local mirrors
(look_ahead.py).

A helper is a spawned daemon (a fresh interpreter: it inherits no descriptor but those
it is given, such as the build's lock, and it ends with the build, whichever way the
build ends) that leaves Ctrl-C to the build. Ctrl-C reaches every process of the
terminal's group, and a helper that took it as its own would print a traceback of its
own, or stop half way. So Ctrl-C is held (blocked) while a helper is started and
recorded by the build (`ctrl_c_held`): the helper keeps the mask through its exec and
its imports, and unblocks it once it ignores it (`as_helper`, its first call); the
build, told to stop, ends it with `terminate()` (SIGTERM, never held: a helper still
importing ends at once).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.context import SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = ["as_helper", "ctrl_c_held", "start_helper", "stop_helper"]

_CTRL_C = {signal.SIGINT}
_STOPPING_SECONDS = 2.0


@contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Ctrl-C held in this thread within the block, where a helper is started and
    recorded: one that comes meanwhile is raised on leaving, once the build can stop it."""
    # Started here, not within: starting it unblocks the stop signals of the caller.
    resource_tracker.ensure_running()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _CTRL_C)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def start_helper(
    context: SpawnContext, target: Callable[..., None], args: tuple[Any, ...]
) -> BaseProcess | None:
    """`target(*args)` in a daemon process of `context`, started (within `ctrl_c_held`);
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
    """In a helper, first: Ctrl-C ignored, then unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _CTRL_C)
