"""An opened index: its manifest, one `Snapshot` per tag, and the whoosh text index.

A build is verified against its manifest (`index.disk.verify`) before it is loaded, and
loading checks that its arrays fit together: a damaged build raises `IndexLoadError`
naming the file and what is wrong, never anything else, so that a server refuses it in
one line and keeps what it serves.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from cachegql.index.disk.memory import release_freed
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.disk.verify import Change, IndexLoadError, VerifiedBuild, verify_build
from cachegql.index.errors import CriteriaError, shorten

__all__ = ["IndexLoadError", "IndexStore", "UnknownTagError"]

PREFERRED_DEFAULT_TAG = "develop"

logger = logging.getLogger("cachegql.index")


class UnknownTagError(CriteriaError):
    """A tag that is not in the index."""


class IndexStore:
    """A complete, read-only index build, ready to answer queries."""

    def __init__(self, path: Path, default_tag: str | None = None) -> None:
        self.path = path
        try:
            self.folder = path.resolve(strict=True)
        except OSError as exc:
            raise IndexLoadError(
                f"{path} is not an index built by 'cachegql index': {exc.strerror or exc}"
            ) from exc
        started = time.perf_counter()
        self.verified = verify_build(path, self.folder)
        verified = time.perf_counter()
        self.manifest = self.verified.manifest.data
        self.build_id = self.verified.manifest.build_id
        self.snapshots = _load(self.verified)
        release_freed()
        self.tags = sorted(self.snapshots)
        self.default_tag = (
            PREFERRED_DEFAULT_TAG if PREFERRED_DEFAULT_TAG in self.snapshots else self.tags[0]
        )
        if default_tag is not None:
            try:
                self.use_default_tag(default_tag)
            except IndexLoadError:
                self.close()
                raise
        logger.info(
            "index build %s: verified in %.2f s, loaded in %.2f s",
            self.build_id,
            verified - started,
            time.perf_counter() - verified,
        )

    def use_default_tag(self, tag: str) -> None:
        """Answer what names no tag from `tag`; IndexLoadError when the build has none."""
        if tag not in self.snapshots:
            raise IndexLoadError(f"default tag {tag!r} is not in the index; {self._known()}")
        self.default_tag = tag

    def _known(self) -> str:
        return "indexed tags: " + ", ".join(self.tags)

    def snapshot(self, tag: str | None = None) -> Snapshot:
        """The snapshot of `tag`, or of the default tag."""
        name = self.default_tag if tag is None else tag
        snapshot = self.snapshots.get(name)
        if snapshot is None:
            raise UnknownTagError(f"unknown tag {shorten(name)}; {self._known()}")
        return snapshot

    def changed_files(self) -> list[Change]:
        """Files of this build changed on disk since it was verified: a `stat` each. What
        was copied into memory is unaffected; a file read while serving (`files_on_disk`)
        and written in place then fails its reads with `IndexChangedError`."""
        return self.verified.changed()

    def files_on_disk(self) -> set[Path]:
        """The files read while serving, rather than copied into memory at load."""
        return {path for s in self.snapshots.values() for path in s.files_on_disk()}

    def close(self) -> None:
        for snapshot in self.snapshots.values():
            snapshot.close()


def _load(verified: VerifiedBuild) -> dict[str, Snapshot]:
    """One snapshot per tag of a verified build. A build can be intact (its files are
    what the writer wrote) and still unreadable, from a writer's bug or a manifest written
    to match damaged files: whatever loading raises then is refused as `IndexLoadError`."""
    snapshots: dict[str, Snapshot] = {}
    tag = verified.manifest.tags[0]
    try:
        for tag in verified.manifest.tags:
            snapshots[tag.name] = Snapshot(tag.name, verified.folder / tag.folder)
    except IndexLoadError:
        _close(snapshots)
        raise
    except Exception as exc:  # a damaged build must be refused, whatever it breaks
        _close(snapshots)
        raise IndexLoadError(
            f"{verified.folder / tag.folder} (tag {tag.name!r}) cannot be loaded: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    changed = verified.changed()  # while it was being loaded
    if changed:
        _close(snapshots)
        raise IndexLoadError(f"{changed[0]} while the index was loaded")
    return snapshots


def _close(snapshots: dict[str, Snapshot]) -> None:
    for snapshot in snapshots.values():
        snapshot.close()
