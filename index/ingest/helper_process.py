"""The helper processes a build starts beside it, started alike: the reader of a v3
mirror's spec manifests (tarball_sizes.py), the looks ahead at local mirrors
(look_ahead.py), and the writer of a tag's graph (index/disk/graph_writer.py, forked
or not at all).

A helper is a daemon that holds none of the build's files (so not its lock: a helper
left behind by a build killed with SIGKILL would hold it) and stops once the build is
gone (it asks, between pieces of work; the graph writer finds out at its next word with
the build, at most its DAG's writing later, into a staging folder no one publishes).
Where the build runs no other thread, the looks' helper is forked (`helper_context`): a
copy of the build, at work at once, which first points every descriptor it inherited
but its pipe at /dev/null (`as_helper`). Otherwise
it is spawned: a fresh interpreter, given no descriptor but its pipe, 0.3 to 0.6 s of
imports before its first piece of work (the build's own looks meanwhile).

A helper leaves the stop signals to the build: Ctrl-C
reaches every process of the terminal's group, and a helper that took it as its own
would print a traceback of its own, or stop half way. So SIGINT and SIGTERM are held
(blocked) in the build's thread while a helper is started and recorded (`stops_held`): a
stop that comes meanwhile is raised on leaving, once the build can end the helper too.
The helper keeps the mask through its fork or exec (and its imports), and unblocks them
once it ignores SIGINT and takes SIGTERM's default action (`as_helper`, its first call);
the build, told to stop, ends it with `terminate()` (a spawned helper still importing
then ends once it unblocks them: within its start, 0.5 to 0.8 s). Held in the calling
thread only: a program that calls the build beside other threads may have a stop raised
within the start, and its helper is then ended at the program's exit (a daemon).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = [
    "HelperContext",
    "as_helper",
    "helper_context",
    "start_helper",
    "stop_helper",
    "stops_held",
]

HelperContext = ForkContext | SpawnContext

_STOPS = {signal.SIGINT, signal.SIGTERM}
_STOPPING_SECONDS = 2.0
_DESCRIPTORS = "/proc/self/fd"

# True in a forked helper (a copy of the build as it started it), False in the build and
# in a spawned helper (which imports this module afresh).
_forked = False


def helper_context(fork: bool = True) -> HelperContext:
    """How a helper is started: forked (`fork`) where this process runs no other Python
    thread and can list its descriptors (to let go of them), else spawned.

    A fork copies the calling thread alone: another thread holding a lock (an import's,
    a stream's) would leave it held in the copy. (Threads of C libraries' own, as
    OpenBLAS's pool, stop and start around a fork by themselves.)"""
    if fork and threading.active_count() == 1 and os.path.isdir(_DESCRIPTORS):  # noqa: PTH112
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


@contextmanager
def stops_held(tracker: bool = True) -> Iterator[None]:
    """SIGINT and SIGTERM held in this thread within the block, where a helper is started
    and recorded: one that comes meanwhile is raised on leaving. `tracker`: the resource
    tracker is started first, for a spawned helper (a fork's semaphores are unlinked as
    they are made, and the tracker, a fresh interpreter, would only take a core's time)."""
    # Started here, not within: starting it unblocks the stop signals of the caller. One
    # that cannot start leaves the helper's start to fail (the build does the work).
    if tracker:
        with suppress(Exception):
            resource_tracker.ensure_running()
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def start_helper(
    context: HelperContext, target: Callable[..., None], args: tuple[Any, ...]
) -> BaseProcess | None:
    """`target(*args)` in a daemon process of `context`, started (within `stops_held`);
    None where none can be (no process here, whatever the reason: the build then does
    the work itself)."""
    global _forked  # what the forked copy finds (`as_helper`)
    _forked = isinstance(context, ForkContext)
    # The build's objects out of the copy's collections: a collection reads each object
    # it tracks, and would have the copy's memory become the build's again. (Not where
    # this process froze some itself: unfreezing would undo that too.)
    frozen = _forked and not gc.get_freeze_count()
    if frozen:
        gc.freeze()
    try:
        process = context.Process(target=target, args=args, daemon=True)
        process.start()
    except Exception:
        return None
    finally:
        if frozen:
            gc.unfreeze()
        _forked = False
    return process


def stop_helper(process: BaseProcess | None, receiver: Connection | None) -> None:
    """End a helper (terminated, killed if it has not ended within 2 s) and close the
    build's end of its pipe."""
    if process is not None:
        process.terminate()
        if not _ended_within(process, _STOPPING_SECONDS):  # no more waiting on it
            process.kill()
            process.join()
        process.close()
    if receiver is not None:
        receiver.close()


def _ended_within(process: BaseProcess, seconds: float) -> bool:
    """Whether `process` ends within `seconds`, by its exit status. Not `join(seconds)`:
    that waits on the process's sentinel, a pipe whose other end a forked helper lets go
    of with the rest (`_let_go`), which then reads as ended at once, and `join` goes on
    to wait for the exit with no bound."""
    deadline = time.monotonic() + seconds
    while process.exitcode is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def as_helper(pipe: Connection | None = None) -> None:
    """In a helper, first: SIGINT ignored, SIGTERM's default action, then both unblocked;
    forked, every descriptor it inherited but the standard streams and `pipe` pointed at
    /dev/null."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
    if _forked:
        assert pipe is not None, "a forked helper keeps its pipe, and it alone"
        _let_go(pipe.fileno())


def _let_go(kept: int) -> None:
    """Each descriptor of the build's but `kept` and the standard streams pointed at
    /dev/null: the files and locks they stood for are the build's alone again. Pointed
    elsewhere, not closed: an object of the build's copy that closes its descriptor
    later then closes /dev/null, never a file the helper opened since under its number."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for name in os.listdir(_DESCRIPTORS):  # noqa: PTH208 (names are numbers)
            fd = int(name)
            if fd > 2 and fd not in (kept, null):  # past stderr
                with suppress(OSError):  # the listing's own, closed since
                    os.fstat(fd)
                    os.dup2(null, fd)
    finally:
        os.close(null)
