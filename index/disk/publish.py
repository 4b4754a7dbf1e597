"""Atomic publishing of index builds, one build at a time, and how long builds are kept.

`--out DIR` is a symbolic link to one complete build in `DIR.builds/`. A build is
written to `DIR.builds/<id>.partial`, renamed when complete, and only then is the
link swapped with one `rename`, so a reader sees the old index or the new one,
never half of either.

One build at a time: a build holds an exclusive `flock` on `DIR.builds.lock` (see
`lock.py`) from before its ingest to after its publish (`staged`). Holding it for the
whole build rather than for the publish step alone makes a second build wait, and
buys three things: builds publish in the order they started, so a slow build that
read older sources never replaces a newer one; two ingests are never in memory at
once (0.5 GB each at 1M specs); and the holder of the lock is the only process that
can be writing a `.partial` folder, so every other one it finds is the leftover of a
killed build and is removed at once, whatever its age.

Retention: a server opens parts of a build lazily (the text index, some columns), so
deleting the build it serves fails its requests. Servers cannot say what they serve
(the index is read-only to them), so a build is kept while one could be serving it:

- every build replaced less than `GRACE_SECONDS` (5 minutes) ago. A server looks at
  the link every `--reload-interval` (2 s by default) and moves to the new build at
  its next look; 5 minutes leave room for slow loads, long requests and intervals
  a hundred times the default;
- whatever their age, the newest `KEEP_BUILDS` (3): the current build and the two
  it replaced last, for a server that did not move (its reloading off, or the newer
  build failing to load in it) and as targets of a manual rollback.

When a build stops being current, `<id>.replaced` is created beside it; its mtime says
when, so the grace period runs from the replacement, not from the build's creation.

Disk cost: KEEP_BUILDS builds while rebuilds are further apart than the grace period
(3 x 275 MB at 1M specs); rebuilt more often, one more build per rebuild of the last
5 minutes. Builds run one at a time, so that is at most 300 s / build time more
(9 at 1M specs, whose build takes 33 s).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cachegql.index.disk import lock

__all__ = [
    "GRACE_SECONDS",
    "KEEP_BUILDS",
    "LOCK_TIMEOUT",
    "PARTIAL",
    "REPLACED",
    "PublishError",
    "Staging",
    "builds_folder",
    "describe",
    "lock_file",
    "new_build_id",
    "parts_folder",
    "prune",
    "publish",
    "received",
    "staged",
    "write_failed",
]

PARTIAL = ".partial"
REPLACED = ".replaced"
KEEP_BUILDS = 3
GRACE_SECONDS = 300.0
LOCK_TIMEOUT = 600.0
# Refused below this, whatever the sources: a build of 3 specs takes 0.4 MB on disk.
MIN_FREE_BYTES = 1 << 20


class PublishError(Exception):
    """The output path cannot hold a published index."""


@dataclass(frozen=True)
class Staging:
    """A build being written: its folder becomes `DIR.builds/<build_id>` when published."""

    out: Path
    folder: Path
    build_id: str


def builds_folder(out: Path) -> Path:
    return out.with_name(out.name + ".builds")


def parts_folder(out: Path) -> Path:
    """The parts a build keeps of the indexes it read, for the next build of `out`
    (index/ingest/cache_parts.py); beside the builds folder, never served."""
    return out.with_name(out.name + ".parts")


def lock_file(out: Path) -> Path:
    """Beside the builds folder, not in it, where cleaning builds never looks."""
    return out.with_name(out.name + ".builds.lock")


def new_build_id() -> str:
    """Sortable by time, unique between concurrent builds."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


@contextlib.contextmanager
def staged(
    out: Path,
    *,
    lock_timeout: float = LOCK_TIMEOUT,
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[Staging]:
    """Hold a build of `out` for the block: locked, with an empty staging folder.

    What can be known before the ingest is checked here, so that a build that could
    not be published fails in a second, not after reading every source: `out` is not
    someone else's file, its folders can be created and written, no other build
    keeps the lock past `lock_timeout` seconds (`on_wait` is told if it must wait),
    and the free space is not obviously too small. Leftovers of killed builds and
    expired builds are removed first. If the block raises (KeyboardInterrupt too),
    the staging folder is removed; the lock is released in any case.
    """
    with _write_errors(out):
        _check_out(out)
        builds_folder(out).mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as held:
        _lock(held, out, lock_timeout, on_wait)
        _tidy(out)
        _check_free_space(out)
        build_id = new_build_id()
        folder = builds_folder(out) / (build_id + PARTIAL)
        try:
            with _write_errors(out):
                folder.mkdir()
            yield Staging(out, folder, build_id)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise


def publish(staging: Staging) -> Path:
    """Make `out` point at the finished build in `staging`; return the build's folder.

    Called inside `staged`: its lock makes reading the current build, swapping the link
    and pruning one step no other build interleaves with.
    """
    out = staging.out
    final = staging.folder.with_name(staging.build_id)
    staging.folder.rename(final)
    replaced = _current(out)
    try:
        _point(out, final)
    except BaseException:
        if _current(out) != final.name:  # never served: no one can be reading it
            shutil.rmtree(final, ignore_errors=True)
        raise
    if replaced is not None:
        _mark_replaced(builds_folder(out) / replaced)
    with contextlib.suppress(OSError):  # published: what is not pruned now is next time
        prune(out)
    return final


@contextlib.contextmanager
def received(out: Path, build_id: str, *, lock_timeout: float = LOCK_TIMEOUT) -> Iterator[Path]:
    """Publish at `out` a build made elsewhere (shipped through a store): the block
    writes it into the folder it is given; it is published, keeping its `build_id` as
    its name where that is free, only if the block ends without an error."""
    with staged(out, lock_timeout=lock_timeout) as staging:
        yield staging.folder
        taken = (builds_folder(out) / build_id).exists()
        name = f"{build_id}-{new_build_id()}" if taken else build_id
        publish(dataclasses.replace(staging, build_id=name))


def prune(out: Path, now: float | None = None) -> None:
    """Delete the builds no server can be serving any more (the module's docstring says
    which). Under the lock only. Best effort: what cannot be deleted now is next time."""
    folder = builds_folder(out)
    current = _current(out)
    now = time.time() if now is None else now
    replaced = {
        build: _replaced_at(build, now) for build in _finished(folder) if build.name != current
    }
    newest_first = sorted(replaced, key=lambda b: (replaced[b], b.name), reverse=True)
    keep = KEEP_BUILDS - (current is not None)
    for build in newest_first[keep:]:
        if now - replaced[build] >= GRACE_SECONDS:
            shutil.rmtree(build, ignore_errors=True)
            if not build.exists():  # else marked still, and tried again next time
                _marker(build).unlink(missing_ok=True)


def write_failed(staging: Staging, exc: OSError) -> PublishError:
    """A failed write of a build, in one line. numpy reports a short write without an
    errno ("1404 requested and 636 written"): with the disk left without room, that is
    a full disk, and is said so."""
    reason = describe(exc)
    if exc.errno is None and _free(staging.folder.parent) < MIN_FREE_BYTES:
        reason = os.strerror(errno.ENOSPC)
    return PublishError(
        f"writing the new build of {staging.out} failed: {reason}; nothing was published"
    )


def describe(exc: OSError) -> str:
    """An OSError in a few words, naming the path at fault."""
    path = exc.filename
    if path is not None and exc.errno in (errno.EEXIST, errno.ENOTDIR):
        blocker = _not_a_folder(Path(path))
        if blocker is not None:
            return f"{blocker} is not a folder"
    reason = exc.strerror or str(exc)
    return f"{path}: {reason}" if path is not None else reason


def _check_out(out: Path) -> None:
    """An empty folder may become the link (a deploy script made it); anything else
    at `out` that is not a link is someone's data."""
    if out.exists() and not out.is_symlink() and (not out.is_dir() or any(out.iterdir())):
        raise PublishError(
            f"{out} exists and is not an index link made by 'cachegql index'; "
            "choose another --out or remove it"
        )


@contextlib.contextmanager
def _write_errors(out: Path) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise PublishError(f"cannot write the index at {out}: {describe(exc)}") from exc


def _lock(
    held: contextlib.ExitStack,
    out: Path,
    timeout: float,
    on_wait: Callable[[str], None] | None,
) -> None:
    def waiting(holder: int | None) -> None:
        if on_wait is not None:
            on_wait(
                f"waiting for another 'cachegql index'{_pid(holder)} to finish building {out} "
                f"(up to {timeout:g} s, --lock-timeout)"
            )

    try:
        with _write_errors(out):
            held.enter_context(lock.exclusive(lock_file(out), timeout, waiting))
    except lock.LockTimeoutError as exc:
        waited = f"waited {timeout:g} s for it" if timeout > 0 else "not waiting for it"
        raise PublishError(
            f"another 'cachegql index'{_pid(exc.holder)} is building {out}; {waited} "
            "(--lock-timeout SECONDS waits longer)"
        ) from None


def _pid(holder: int | None) -> str:
    return f" (pid {holder})" if holder else ""


def _tidy(out: Path) -> None:
    """Remove what killed builds left (staging folders, temporary links, marks of
    builds deleted by hand), then expired builds. Only the holder of the lock may do
    this, knowing that no other build is running. Best effort, as `prune`."""
    folder = builds_folder(out)
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.name.endswith(PARTIAL):
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.name.endswith(REPLACED) and not (folder / entry.stem).is_dir():
                entry.unlink(missing_ok=True)
    temporary = f".{out.name}.link-"
    with contextlib.suppress(OSError):
        for entry in out.parent.iterdir():
            if entry.name.startswith(temporary) and entry.is_symlink():
                entry.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        prune(out)


def _check_free_space(out: Path) -> None:
    """Refuse when the disk obviously cannot hold a new build: less than half of what
    the current one takes (a rebuild is usually about the same size), or 1 MiB."""
    folder = builds_folder(out)
    current = _current(out)
    size = _size(folder / current) if current is not None else 0
    need = max(MIN_FREE_BYTES, size // 2)
    free = _free(folder)
    if free < need:
        less = (
            f"half the current build's {_mb(size)}"
            if need > MIN_FREE_BYTES
            else f"the {_mb(need)} minimum"
        )
        raise PublishError(
            f"not enough free space for a new build of {out}: {_mb(free)} free in {folder}, "
            f"less than {less}"
        )


def _point(out: Path, final: Path) -> None:
    """Swap `out` to `final` with one rename of a fresh link over it."""
    link = out.with_name(f".{out.name}.link-{final.name}")
    link.symlink_to(Path(builds_folder(out).name) / final.name)
    try:
        if out.is_dir() and not out.is_symlink():
            out.rmdir()  # an empty folder (made by a deploy script), checked at the start
        link.replace(out)
    except BaseException:
        link.unlink(missing_ok=True)
        raise


def _current(out: Path) -> str | None:
    """The name of the build `out` points to, if it points into its builds folder."""
    if not out.is_symlink():
        return None
    target = out.resolve()
    return target.name if target.parent == builds_folder(out).resolve() else None


def _finished(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.is_dir() and not p.name.endswith(PARTIAL)]


def _marker(build: Path) -> Path:
    return build.with_name(build.name + REPLACED)


def _mark_replaced(build: Path) -> None:
    """Record that `build` stopped being current now. Best effort: a build found
    without its mark is marked then, later than it was replaced, never earlier."""
    with contextlib.suppress(OSError):
        _marker(build).touch()


def _replaced_at(build: Path, now: float) -> float:
    try:
        return _marker(build).stat().st_mtime
    except FileNotFoundError:
        _mark_replaced(build)  # replaced by hand, or by a build killed before marking it
        return now


def _free(folder: Path) -> int:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return MIN_FREE_BYTES  # unknown: do not refuse for it


def _size(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).lstat().st_size
    return total


def _not_a_folder(path: Path) -> Path | None:
    """The nearest existing ancestor-or-self of `path`, if it is not a folder."""
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return None if candidate.is_dir() else candidate
    return None


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"
