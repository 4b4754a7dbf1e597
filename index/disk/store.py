"""An opened index: its manifest, one `Snapshot` per tag, and the whoosh text index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cachegql.index.disk.layout import FORMAT_VERSION, MANIFEST
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.errors import CriteriaError

__all__ = ["IndexLoadError", "IndexStore", "UnknownTagError"]

PREFERRED_DEFAULT_TAG = "develop"


class IndexLoadError(Exception):
    """The folder does not hold a usable index."""


class UnknownTagError(CriteriaError):
    """A tag that is not in the index."""


class IndexStore:
    """A complete, read-only index build, ready to answer queries."""

    def __init__(self, path: Path, default_tag: str | None = None) -> None:
        self.path = path
        try:
            self.folder = path.resolve(strict=True)
            manifest: dict[str, Any] = json.loads((self.folder / MANIFEST).read_text())
        except (OSError, ValueError) as exc:
            raise IndexLoadError(
                f"{path} is not an index built by 'cachegql index': {exc}"
            ) from exc
        if manifest.get("format") != FORMAT_VERSION:
            raise IndexLoadError(
                f"{path} was built in index format {manifest.get('format')}, this version reads "
                f"format {FORMAT_VERSION}; rebuild it with 'cachegql index'"
            )
        self.manifest = manifest
        self.build_id: str = manifest["build_id"]
        self.snapshots = {
            t["name"]: Snapshot(t["name"], self.folder / t["folder"]) for t in manifest["tags"]
        }
        self.tags = sorted(self.snapshots)
        if default_tag is not None and default_tag not in self.snapshots:
            raise IndexLoadError(
                f"default tag {default_tag!r} is not in the index; {self._known()}"
            )
        self.default_tag = default_tag or (
            PREFERRED_DEFAULT_TAG if PREFERRED_DEFAULT_TAG in self.snapshots else self.tags[0]
        )

    def _known(self) -> str:
        return "indexed tags: " + ", ".join(self.tags)

    def snapshot(self, tag: str | None = None) -> Snapshot:
        """The snapshot of `tag`, or of the default tag."""
        name = self.default_tag if tag is None else tag
        snapshot = self.snapshots.get(name)
        if snapshot is None:
            raise UnknownTagError(f"unknown tag {name!r}; {self._known()}")
        return snapshot

    def close(self) -> None:
        for snapshot in self.snapshots.values():
            snapshot.close()
