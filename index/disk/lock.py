"""One writer at a time: an exclusive `flock` on a lock file, waited for up to a bound.

Why `flock`: the kernel releases the lock when the file is closed, and so when its
holder exits however it exits (SIGKILL and the OOM killer included); a lock can never
be left behind by a dead process, so whoever holds it knows that no other holder is
alive. The lock file is never deleted: two processes locking two generations of it
would both believe they hold the lock. The holder writes its pid into the file while
it holds it, so that a waiter can say whom it waits for.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["LockTimeoutError", "exclusive"]

POLL_SECONDS = 0.05


class LockTimeoutError(Exception):
    """Another process held the lock for longer than the caller would wait."""

    def __init__(self, holder: int | None) -> None:
        super().__init__(f"locked by pid {holder}" if holder else "locked")
        self.holder = holder


@contextmanager
def exclusive(
    path: Path, timeout: float, on_wait: Callable[[int | None], None] | None = None
) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) for the block.

    If another process holds it, call `on_wait(its pid)` once and wait up to `timeout`
    seconds (0: not at all) before raising `LockTimeoutError`. Polling rather than a
    blocking `flock` keeps the wait bounded and interruptible by signals.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    locked = False
    try:
        if not _try_lock(fd):
            _wait(fd, timeout, on_wait)
        locked = True
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        if locked:  # no pid left behind to be taken for the next holder's
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
        os.close(fd)  # releases the lock


def _wait(fd: int, timeout: float, on_wait: Callable[[int | None], None] | None) -> None:
    holder = _holder(fd)
    if timeout <= 0:
        raise LockTimeoutError(holder)
    if on_wait is not None:
        on_wait(holder)
    deadline = time.monotonic() + timeout
    while not _try_lock(fd):
        if time.monotonic() >= deadline:
            raise LockTimeoutError(_holder(fd) or holder)
        time.sleep(POLL_SECONDS)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> int | None:
    """The pid the holder wrote, if it has written it yet."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None
