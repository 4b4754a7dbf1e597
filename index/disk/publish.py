"""Atomic publishing of index builds.

`--out DIR` is a symbolic link to one complete build in `DIR.builds/`. A build is
written to `DIR.builds/<id>.partial`, renamed when complete, and only then is the
link swapped with one `rename`, so a reader sees the old index or the new one,
never half of either. The build it replaced is kept for servers still reading it;
older ones are deleted.
"""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path

__all__ = ["PublishError", "builds_folder", "discard", "new_build_id", "publish", "start"]

PARTIAL = ".partial"
STALE_PARTIAL_SECONDS = 6 * 3600


class PublishError(Exception):
    """The output path cannot hold a published index."""


def builds_folder(out: Path) -> Path:
    return out.with_name(out.name + ".builds")


def new_build_id() -> str:
    """Sortable by time, unique between concurrent builds."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def start(out: Path, build_id: str) -> Path:
    """Create and return an empty staging folder for a build of `out`."""
    if out.exists() and not out.is_symlink():
        if not out.is_dir() or any(out.iterdir()):
            raise PublishError(
                f"{out} exists and is not an index link made by 'cachegql index'; "
                "choose another --out or remove it"
            )
        out.rmdir()
    staging = builds_folder(out) / (build_id + PARTIAL)
    staging.mkdir(parents=True)
    return staging


def discard(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)


def publish(staging: Path, out: Path) -> Path:
    """Make `out` point at the finished build in `staging`; return the build's folder."""
    final = staging.with_name(staging.name.removesuffix(PARTIAL))
    staging.rename(final)
    replaced = out.resolve().name if out.is_symlink() else None
    link = out.with_name(f".{out.name}.link-{final.name}")
    link.symlink_to(Path(builds_folder(out).name) / final.name)
    link.replace(out)
    _prune(builds_folder(out), keep={final.name, replaced})
    return final


def _prune(folder: Path, keep: set[str | None]) -> None:
    """Delete finished builds other than `keep` (the new one and the one it replaced)."""
    older = [
        p
        for p in folder.iterdir()
        if p.is_dir() and not p.name.endswith(PARTIAL) and p.name not in keep
    ]
    now = time.time()
    stale = [
        p
        for p in folder.iterdir()
        if p.name.endswith(PARTIAL) and now - p.stat().st_mtime > STALE_PARTIAL_SECONDS
    ]
    for path in older + stale:
        shutil.rmtree(path, ignore_errors=True)
