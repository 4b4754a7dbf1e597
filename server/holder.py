"""Holds the index being served and swaps in a newly published build without a restart.

A new build is verified and loaded (`IndexStore`) while the current one keeps serving:
the reload runs in a worker thread (`app._watch`). A build refused as damaged is logged
in one line and not tried again until it changes. The served build is watched too: a
file of it changed on disk is logged, once, with what it means for the answers.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from pathlib import Path

from cachegql.index import IndexLoadError, IndexStore, size_bounds

__all__ = ["IndexHolder", "settle"]

logger = logging.getLogger("cachegql.server")

RETRY_REFUSED_SECONDS = 60.0
"""A refused build is tried again after this long (a failure may have been passing: out
of memory or of file descriptors), or at once if its manifest changes."""


class IndexHolder:
    """The current `IndexStore`; each request takes it once and keeps it to the end."""

    def __init__(
        self, path: Path, default_tag: str | None = None, store: IndexStore | None = None
    ) -> None:
        """`store`: the build at `path` if the caller opened it already (`cachegql serve`
        does, to refuse a damaged one before it starts): it is served rather than opened
        and verified a second time."""
        self.path = path
        self.default_tag = default_tag
        self.store = _load(path, default_tag) if store is None else _prepared(store)
        self.on_reload: Callable[[bool], None] = _ignore
        """Told whether each attempt to load a newly published build succeeded."""
        self._refused: tuple[Path, float] | None = None
        """The build last refused and its manifest's change time: not tried again as is..."""
        self._retry_at = 0.0
        """...until then (`time.monotonic`)."""
        self._reported: set[Path] = set()
        """Files of the served build already reported as changed."""
        settle()

    def reload_if_changed(self) -> bool:
        """Open the build `path` now points to, if it changed; keep the old one on failure."""
        self._report_changes()
        try:
            folder = self.path.resolve(strict=True)
        except OSError as exc:
            logger.error(
                "index %s is unreadable (%s); still serving %s", self.path, exc, self.store.build_id
            )
            return False
        if folder == self.store.folder or self._still_refused(folder):
            return False
        try:
            store = _load(self.path, self.default_tag)
        except IndexLoadError as exc:
            logger.error(
                "refused index build %s: %s; still serving %s", folder, exc, self.store.build_id
            )
            self._refuse(folder)
            return False
        except Exception:
            logger.exception(
                "new index at %s failed to load; still serving %s", folder, self.store.build_id
            )
            self._refuse(folder)
            return False
        settle()
        # Requests already running keep the old store; it holds no reference cycle, so it
        # is freed by reference counting when the last of them finishes.
        self.store = store
        self._reported.clear()
        logger.info("now serving index build %s", store.build_id)
        self.on_reload(True)
        return True

    def _refuse(self, folder: Path) -> None:
        self._refused = (folder, _changed_at(folder))
        self._retry_at = time.monotonic() + RETRY_REFUSED_SECONDS
        self.on_reload(False)

    def _still_refused(self, folder: Path) -> bool:
        """Whether `folder` was refused, has not changed since, and is not due a retry."""
        same = self._refused == (folder, _changed_at(folder))
        return same and time.monotonic() < self._retry_at

    def _report_changes(self) -> None:
        """Log each file of the served build changed on disk since it was verified, once,
        with what it means for the answers: a `stat` per file (~170 a build), no reading."""
        on_disk = self.store.files_on_disk()
        for change in self.store.changed_files():
            if change.path in self._reported:
                continue
            self._reported.add(change.path)
            if not change.in_place:
                effect = "answers are unaffected (the server holds its copy and open files)"
            elif change.path in on_disk:
                effect = "the queries that read it fail until a new build is published"
            else:
                effect = "answers are unaffected (they come from its copy in memory)"
            logger.error(
                "index build %s: %s since it was verified; %s",
                self.store.build_id,
                change,
                effect,
            )


def _changed_at(folder: Path) -> float:
    """When the folder's manifest last changed (0 when it cannot be read): a refused build
    rewritten in place is tried again."""
    try:
        return (folder / "manifest.json").stat().st_ctime
    except OSError:
        return 0.0


FULL_COLLECTION_THRESHOLD = 100


def _ignore(ok: bool) -> None:
    pass


def _load(path: Path, default_tag: str | None) -> IndexStore:
    return _prepared(IndexStore(path, default_tag))


def _prepared(store: IndexStore) -> IndexStore:
    """`store` with what its first inline operations would compute on the event loop
    computed here, off it: its size bounds (tens of ms at 1M specs), for the first priced,
    and each tag's hash directory (10 to 15 ms), for the first hash lookup."""
    size_bounds(store)
    for snapshot in store.snapshots.values():
        _ = snapshot.hash_directory  # a cached property: made here, once
    return store


def settle() -> None:
    """Move what was just loaded out of the garbage collector's sight.

    The index's long-lived objects would otherwise be scanned by every full collection:
    at 1M specs the p99 of a 100-spec page is 34 ms without this and 7 ms with it. The
    collection first frees what loading left behind (numpy's header parsing leaves
    cycles), which would otherwise be frozen for good; it does not scan what is already
    frozen, so it is cheap.

    Full collections then run a tenth as often as Python's default (after 100 collections
    of the middle generation, not 10): what queries cache as they go (the members of each
    set of versions and variants, ...) still makes one take about 5 ms, and at the default
    one came every 50 answers of a 100-spec page, its p99 5.7 ms against a 1.9 ms median;
    at 100, 2.2 ms. Answers are freed by reference counting (nothing here builds cycles
    per request), so little waits for a full collection.
    """
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_THRESHOLD)
