"""What `write_mirror` is asked to write, and what it says it wrote."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["SPEC_BLOB_LIMIT", "MirrorConfig", "MirrorSummary"]

#: Below this many specs the gzipped spec files are written as blobs (by default).
SPEC_BLOB_LIMIT = 10_000


@dataclass(frozen=True)
class MirrorConfig:
    """What to generate.

    `specs`: binaries (records with `in_buildcache: true` in the root index), each with a
    spec manifest; `packages`: distinct package names to draw them from; `stacks`: how many
    CI stacks (views, v2 mirrors, listing labels) besides root, at most `len(STACK_NAMES)`;
    `dangling`: dependency edges whose hash is in no index; `spec_blobs`: write the gzipped
    spec files (None: below `SPEC_BLOB_LIMIT` specs).
    """

    specs: int = 5000
    packages: int = 200
    stacks: int = 10
    seed: int = 1
    tag: str = "develop"
    dangling: int = 5
    spec_blobs: bool | None = None

    @property
    def writes_spec_blobs(self) -> bool:
        """Whether the spec files are written as blobs."""
        return self.specs < SPEC_BLOB_LIMIT if self.spec_blobs is None else self.spec_blobs


@dataclass(frozen=True)
class MirrorSummary:
    """What was written: counts of the root index and where things are.

    `specs`: binaries; `nodes`: records of the root index (binaries, externals, nodes not
    pushed); `edges`: direct dependency edges of those records, `dangling` of them to a hash
    that no index holds; `packages`: distinct names of the binaries; `stacks`: (label,
    binaries) for root and then each stack, in listing order.
    """

    tag: str
    specs: int
    nodes: int
    edges: int
    dangling: int
    packages: int
    stacks: tuple[tuple[str, int], ...]
    spec_blobs: bool
    mirror: Path
    listing: Path
