"""`cachegql index`: ingest sources, write a new index, publish it atomically."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cachegql.index.disk import publish
from cachegql.index.disk.write import write_index
from cachegql.index.ingest import Ingested, ingest_candidates, iter_candidates
from cachegql.index.records import Problem

__all__ = ["BuildError", "BuildReport", "build_index"]


class BuildError(Exception):
    """The build produced nothing worth publishing; the previous index is untouched."""


@dataclass
class BuildReport:
    """What a build did, for the closing summary line."""

    out: Path
    folder: Path
    pages: int
    specs: int
    tags: dict[str, int]
    seconds: float
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    merged_duplicates: int = 0

    def summary(self) -> str:
        return (
            f"indexed {self.pages} pages, {self.specs} specs, {len(self.tags)} tags, "
            f"{len(self.problems)} problems in {self.seconds:.1f} s -> {self.out}"
        )


def build_index(
    sources: Sequence[Path],
    out: Path,
    *,
    strict: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> BuildReport:
    """Build an index of `sources` and publish it at `out`; raise before publishing on failure."""
    started = time.perf_counter()
    candidates = list(iter_candidates(sources))
    done = 0

    def count(_: Path) -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, len(candidates))

    ingested = ingest_candidates(candidates, strict=strict, on_file=count)
    if not ingested.specs:
        raise BuildError(_nothing_found(ingested, len(candidates)))
    build_id = publish.new_build_id()
    staging = publish.start(out, build_id)
    try:
        write_index(ingested, staging, build_id, [str(s) for s in sources])
        folder = publish.publish(staging, out)
    except BaseException:
        publish.discard(staging)
        raise
    return BuildReport(
        out=out,
        folder=folder,
        pages=ingested.pages,
        specs=ingested.specs,
        tags={tag: len(table) for tag, table in sorted(ingested.tables.items())},
        seconds=time.perf_counter() - started,
        problems=ingested.problems,
        skipped=ingested.skipped,
        merged_duplicates=ingested.merged_duplicates,
    )


def _nothing_found(ingested: Ingested, files: int) -> str:
    message = f"no specs found in {files} files ({ingested.pages} pages read)"
    if ingested.problems:
        message += f"; {len(ingested.problems)} problems, the first: {ingested.problems[0]}"
    return message + "; nothing was published"
