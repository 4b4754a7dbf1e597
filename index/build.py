"""`cachegql index`: ingest sources, write a new index, publish it atomically."""

from __future__ import annotations

import gc
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cachegql.index.binary_urls import public_base
from cachegql.index.disk import publish
from cachegql.index.disk.write import write_index
from cachegql.index.ingest import (
    DEFAULT_STACK,
    Ingested,
    Opener,
    Reader,
    SourceLimits,
    ingest_plan,
    plan_sources,
)
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
    caches: int
    specs: int
    tags: dict[str, int]
    seconds: float
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    merged_duplicates: int = 0
    # The process's peak resident memory so far (the build's, when it runs the CLI).
    peak_rss_mb: int = 0

    def summary(self) -> str:
        read = f"{self.pages} pages"
        if self.caches:
            read += f" and {self.caches} build cache{'s' if self.caches != 1 else ''}"
        return (
            f"indexed {read}, {self.specs} specs, {len(self.tags)} tags, "
            f"{len(self.problems)} problems in {self.seconds:.1f} s, peak RSS "
            f"{self.peak_rss_mb} MB -> {self.out}"
        )


def build_index(
    sources: Sequence[str | Path],
    out: Path,
    *,
    strict: bool = False,
    tag: str | None = None,
    stack: str = DEFAULT_STACK,
    reader: Reader | None = None,
    limits: SourceLimits | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    lock_timeout: float = publish.LOCK_TIMEOUT,
    on_wait: Callable[[str], None] | None = None,
) -> BuildReport:
    """Build an index of `sources` and publish it at `out`; raise before publishing on failure.

    `tag` and `stack` place a lone build cache (an index file or mirror); `reader` reads
    the http(s) URLs among the sources, within `limits` (see SourceLimits: also the bounds
    on listings and compressed blobs, for any source). One build of `out` runs at a time: this one
    waits up to `lock_timeout` seconds for another to end, telling `on_wait` first.
    Whether `out` can be written is checked before the sources are read.
    """
    with publish.staged(out, lock_timeout=lock_timeout, on_wait=on_wait) as staging:
        started = time.perf_counter()  # the build's own time, not its wait for the lock
        ingested = _ingest(
            sources,
            strict=strict,
            tag=tag,
            stack=stack,
            reader=reader,
            limits=limits,
            on_progress=on_progress,
        )
        folder = _write_and_publish(ingested, staging, sources)
    return BuildReport(
        out=out,
        folder=folder,
        pages=ingested.pages,
        caches=ingested.caches,
        specs=ingested.specs,
        tags={tag: len(table) for tag, table in sorted(ingested.tables.items())},
        seconds=time.perf_counter() - started,
        problems=ingested.problems,
        skipped=ingested.skipped,
        merged_duplicates=ingested.merged_duplicates,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    )


def _ingest(
    sources: Sequence[str | Path],
    *,
    strict: bool,
    tag: str | None,
    stack: str,
    reader: Reader | None,
    limits: SourceLimits | None,
    on_progress: Callable[[int, int], None] | None,
) -> Ingested:
    """Read the sources into records; raise BuildError if they hold no spec."""
    opener = Opener(reader, limits)
    plan = plan_sources(sources, opener=opener, tag=tag, stack=stack)
    total = len(plan.candidates) + len(plan.caches)
    done = 0

    def count(_: str) -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total)

    with collector_paused():
        ingested = ingest_plan(plan, opener=opener, strict=strict, on_source=count)
    if not ingested.specs:
        raise BuildError(_nothing_found(ingested, total))
    return ingested


def _write_and_publish(
    ingested: Ingested, staging: publish.Staging, sources: Sequence[str | Path]
) -> Path:
    """Write the build and publish it. A failed write (a full disk, a quota) is one
    PublishError; `staged` then removes what was written, and `out` is untouched."""
    try:
        write_index(
            ingested, staging.folder, staging.build_id, [public_base(str(s)) for s in sources]
        )
        return publish.publish(staging)
    except OSError as exc:
        raise publish.write_failed(staging, exc) from exc


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector while the ingest allocates millions of objects
    that all live until the build ends: scanning them again and again made reading a
    large index five times slower (28 MB/s of JSON instead of 160)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _nothing_found(ingested: Ingested, sources: int) -> str:
    message = (
        f"no specs found in {sources} sources ({ingested.pages} pages and "
        f"{ingested.caches} build caches read)"
    )
    if ingested.problems:
        message += f"; {len(ingested.problems)} problems, the first: {ingested.problems[0]}"
    return message + "; nothing was published"
