"""What a build did: the closing line of `cachegql index`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cachegql.index.disk.dagwrite import CycleError
from cachegql.index.ingest import Ingested
from cachegql.index.records import Problem

__all__ = ["BuildReport", "cycle_message", "nothing_found"]


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
    # That of a process reading spec manifests beside the build, at the same time (0: none).
    helper_rss_mb: int = 0
    # The memory of its own of a forked copy writing a tag's graph beside it (0: none).
    writer_mb: int = 0
    # The tags taken from the previous build unread, and how many tags it was asked for
    # (those read from build caches only, when there was a previous build to ask).
    reused: list[str] = field(default_factory=list)
    compared: int = 0
    # The index files of the tags read again that were taken as an earlier build read
    # them (index/ingest/cache_parts.py), not read.
    parts_taken: int = 0
    # The folders of spec manifests whose sizes were taken likewise.
    sizes_taken: int = 0
    # The tags read again whose text index was the previous build's (disk/text_write.py).
    texts_taken: int = 0

    def summary(self) -> str:
        read = counted(self.pages, "page")
        if self.caches:
            read += f" and {counted(self.caches, 'build cache')}"
        return (
            f"indexed {read}, {counted(self.specs, 'spec')}, {counted(len(self.tags), 'tag')}, "
            f"{counted(len(self.problems), 'problem')} in {self.seconds:.1f} s, peak RSS "
            f"{self.peak_rss_mb} MB{self._helper()}{self._reuse()} -> {self.out}"
        )

    def _helper(self) -> str:
        """` (and 150 MB in a manifest reader)`, when a second process read manifests,
        and ` (and 90 MB of its own in a graph writer)` when a third wrote a DAG."""
        helpers = [
            f"{mb} MB{what}"
            for mb, what in (
                (self.helper_rss_mb, " in a manifest reader"),
                (self.writer_mb, " of its own in a graph writer"),
            )
            if mb
        ]
        return f" (and {', '.join(helpers)})" if helpers else ""

    def _reuse(self) -> str:
        """`, reused 2 of 3 tags (develop, v0.22)`, when a previous build was asked, and
        ` and 9 indexes as read before` when index files were taken from parts (` and 9
        indexes and 9 mirrors' spec manifests ...` with the sizes of v3 mirrors, and
        ` ... and 1 text index ...` for a tag read again that took its text index)."""
        if not self.compared:
            return ""
        names = f" ({', '.join(self.reused)})" if self.reused else ""
        taken = [
            counted(count, noun, plural)
            for count, noun, plural in (
                (self.parts_taken, "index", "indexes"),
                (self.sizes_taken, "mirror's spec manifests", "mirrors' spec manifests"),
                (self.texts_taken, "text index", "text indexes"),
            )
            if count
        ]
        parts = f" and {' and '.join(taken)} as read before" if taken else ""
        return f", reused {len(self.reused)} of {counted(len(self.tags), 'tag')}{names}{parts}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 tag`, `3 tags` (`plural` where adding an s will not do)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def nothing_found(ingested: Ingested, given: Sequence[str | Path]) -> str:
    """Why a build that found no specs in the sources `given` publishes nothing."""
    named = str(given[0]) if len(given) == 1 else f"the {len(given)} sources given"
    message = (
        f"no specs found in {named} ({counted(ingested.pages, 'page')} and "
        f"{counted(ingested.caches, 'build cache')} read)"
    )
    if ingested.problems:
        problems = counted(len(ingested.problems), "problem")
        message += f"; {problems}, the first: {ingested.problems[0]}"
    elif not ingested.pages and not ingested.caches:
        message += (
            ": a source is a folder of cache.spack.io pages (_cache/TAG/PACKAGE/specs.md), "
            "a page, a Spack build cache (a folder, an http(s), s3:// or oci:// URL) or a "
            "listing of them ('cachegql index --help')"
        )
    return message + "; nothing was published"


def cycle_message(error: CycleError) -> str:
    """The problem of a tag left out for a cycle in its DAG."""
    if not error.nodes:
        return f"left out: {error}"
    shown = ", ".join(f"{name}/{digest[:7]}" for name, digest in error.nodes[:5])
    more = f" and {len(error.nodes) - 5} more" if len(error.nodes) > 5 else ""
    return (
        f"left out: {error}, through {len(error.nodes)} nodes ({shown}{more}); no Spack"
        " DAG has one, so the records of these hashes in its build caches are broken"
    )
