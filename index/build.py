"""`cachegql index`: ingest sources, write a new index, publish it atomically."""

from __future__ import annotations

import gc
import shutil
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from cachegql.index.binary_urls import public_base
from cachegql.index.build_code import CODE_FILES, CODE_REVISION, code_digest, fingerprint_salt
from cachegql.index.build_report import BuildReport, cycle_message, nothing_found
from cachegql.index.collector import collector_paused
from cachegql.index.disk import publish
from cachegql.index.disk.dagwrite import CycleError
from cachegql.index.disk.graph_writer import GraphWriter
from cachegql.index.disk.reuse import PreviousBuild, ReusedTag
from cachegql.index.disk.verify import FileEntry
from cachegql.index.disk.write import write_manifest
from cachegql.index.ingest import (
    DEFAULT_STACK,
    CacheRequest,
    Ingested,
    Opener,
    Reader,
    SourceLimits,
    StrictModeError,
    caches_by_tag,
    ingest_caches,
    ingest_pages,
    plan_sources,
)
from cachegql.index.ingest.cache_parts import prune as prune_parts
from cachegql.index.ingest.digest_memo import write_recorded
from cachegql.index.ingest.identity import (
    RecordingOpener,
    tag_fingerprint,
    take_stock,
)
from cachegql.index.ingest.locations import UrlMap
from cachegql.index.ingest.look_ahead import LookAhead
from cachegql.index.ingest.recognise import Plan
from cachegql.index.peak_memory import peak_rss_mb
from cachegql.index.records import Problem
from cachegql.index.tag_checks import (
    Compared,
    compared_tags,
    looks_needed,
    reading_order,
    tag_parts,
)

__all__ = [
    "CODE_FILES",
    "CODE_REVISION",
    "BuildError",
    "BuildReport",
    "build_index",
    "code_digest",
    "fingerprint_salt",
]


class BuildError(Exception):
    """The build produced nothing worth publishing; the previous index is untouched."""


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
    full: bool = False,
    url_map: UrlMap = (),
) -> BuildReport:
    """Build an index of `sources` and publish it at `out`; raise before publishing on failure.

    `tag` and `stack` place a lone build cache (an index file or mirror); `reader` reads
    the http(s) URLs among the sources, within `limits` (see SourceLimits: also the bounds
    on listings and compressed blobs, for any source). One build of `out` runs at a time: this one
    waits up to `lock_timeout` seconds for another to end, telling `on_wait` first.
    Whether `out` can be written is checked before the sources are read. `url_map`:
    (prefix, replacement) pairs mapping where listings' entries are read from.

    Build caches are read, written and dropped one tag at a time, so that memory holds
    one tag's records, not all of them. Unless `full`, a tag whose sources did not change
    since the build at `out` (its fingerprint, see index/ingest/identity.py) is taken from
    that build instead of being read again (index/disk/reuse.py).
    """
    with publish.staged(out, lock_timeout=lock_timeout, on_wait=on_wait) as staging:
        started = time.perf_counter()  # the build's own time, not its wait for the lock
        previous = None if full else PreviousBuild.open(out)
        opener = Opener(reader, limits, url_map)
        plan = plan_sources(sources, opener=opener, tag=tag, stack=stack)
        counter = _counter(plan, on_progress)
        parts = publish.parts_folder(out)
        build = _TagBuild(staging.folder, previous, opener, strict, counter, parts)
        try:
            with collector_paused():
                build.run(plan)
            if not sum(build.specs.values()):
                raise BuildError(nothing_found(build.result, sources))
            _write_manifest(build, staging, sources)
            folder = publish.publish(staging)
            # Parts that no tag of the build now serving names are of no use any more.
            prune_parts(build.parts_folder, {n for e in build.entries for n in e["parts"]})
        except OSError as exc:  # a full disk, a quota: `staged` removes what was written
            raise publish.write_failed(staging, exc) from exc
    result = build.result
    return BuildReport(
        out=out,
        folder=folder,
        pages=result.pages,
        caches=result.caches,
        specs=sum(build.specs.values()),
        tags=dict(sorted(build.specs.items())),
        seconds=time.perf_counter() - started,
        problems=result.problems,
        skipped=result.skipped,
        merged_duplicates=result.merged_duplicates,
        peak_rss_mb=peak_rss_mb(),
        helper_rss_mb=result.helper_rss_mb,
        writer_mb=build.writer_mb,
        reused=build.reused,
        compared=build.compared,
        parts_taken=build.parts_taken,
        sizes_taken=build.sizes_taken,
        texts_taken=build.texts_taken,
    )


class _Counter:
    """Tells `on_progress` of each source read (or reused), out of the plan's total."""

    def __init__(self, total: int, on_progress: Callable[[int, int], None] | None) -> None:
        self.total, self.done, self.on_progress = total, 0, on_progress

    def __call__(self, _: str) -> None:
        self.done += 1
        if self.on_progress is not None:
            self.on_progress(self.done, self.total)


def _counter(plan: Plan, on_progress: Callable[[int, int], None] | None) -> _Counter:
    return _Counter(len(plan.candidates) + len(plan.caches), on_progress)


class _TagBuild:
    """Writes a build's tags into its staging folder, one at a time (those known changed
    first: index/tag_checks.py), reusing unchanged ones; `tags/<n>` numbers them by name."""

    def __init__(
        self,
        folder: Path,
        previous: PreviousBuild | None,
        opener: Opener,
        strict: bool,
        count: _Counter,
        parts_folder: Path,
    ) -> None:
        self.folder, self.previous, self.opener = folder, previous, opener
        self.strict, self.count = strict, count
        self.parts_folder = parts_folder  # where indexes are kept as read (cache_parts.py)
        self.result = Ingested()
        self.entries: list[dict[str, Any]] = []  # the manifest's `tags`
        self.known: dict[str, FileEntry] = {}  # the reused files, checked already
        self.specs: dict[str, int] = {}
        self.reused: list[str] = []
        self.compared = 0  # tags that a previous build was asked for
        self.parts_taken = 0
        self.sizes_taken = 0
        self.texts_taken = 0
        self.writer_mb = 0  # the largest own memory of a tag's graph writer (graph_writer.py)
        self.text_taken = False  # by the tag being written
        self.read_since_collected = False  # a tag was read (not reused): its cycles remain
        self.looks = LookAhead([])  # the fingerprints' looks at local mirrors (`run`'s)
        self.comparing: dict[str, Compared] = {}  # the tags compared with `previous`
        self.folders: dict[str, str] = {}

    @property
    def total(self) -> int:
        return self.count.total

    def run(self, plan: Plan) -> None:
        self.result = ingest_pages(plan, strict=self.strict, on_source=self.count)
        requests = caches_by_tag(plan)
        tags = sorted(set(self.result.tables) | set(requests))
        self.folders = {tag: f"tags/{n}" for n, tag in enumerate(tags)}
        if self.previous is not None:
            # A tag with pages is always read again: its pages were, to learn their tag.
            cached = [tag for tag in tags if self._cached_only(tag, requests.get(tag, []))]
            salt = fingerprint_salt()
            self.comparing = compared_tags(cached, requests, self.previous, self.opener, salt)
        order = reading_order(tags, self.comparing)
        self.looks = LookAhead(looks_needed(order, requests, self.comparing))
        problems, first = self.result.problems, len(self.result.problems)
        by_tag: dict[str, list[Problem]] = {}  # said in name order, however taken
        try:
            self.looks.start()
            for tag in order:
                if self.read_since_collected:
                    # The previous tag's cycles go before this one is read (the collector is
                    # paused). None is run after the last tag: a CLI build's exit frees them,
                    # where a collection made it wait 0.8 s at 1M specs; a build run in a
                    # longer process leaves them to its collector, once it is running again.
                    gc.collect()
                    self.read_since_collected = False
                before = len(problems)
                self._tag(tag, requests.get(tag, []))
                by_tag[tag] = problems[before:]
        finally:
            self.looks.close()
        problems[first:] = [problem for tag in tags for problem in by_tag.get(tag, [])]

    def _cached_only(self, tag: str, requests: list[CacheRequest]) -> bool:
        return bool(requests) and tag not in self.result.tables

    def _tag(self, tag: str, requests: list[CacheRequest]) -> None:
        cached_only = self._cached_only(tag, requests)
        folder = self.folders[tag]
        compared = self.comparing.get(tag)
        checking = compared.opener if compared is not None else None
        if compared is not None:
            self.compared += 1
        # A tag whose index fingerprint moved changed: it is read without looking first.
        if compared is not None and not compared.moved:
            assert self.previous is not None  # a tag is compared with a previous build
            compared.opener.look = self.looks.for_tag(tag)
            fingerprint = tag_fingerprint(tag, requests, compared.opener, fingerprint_salt())
            reused = None
            if fingerprint is not None and fingerprint == self.previous.fingerprint(tag):
                reused = self.previous.reuse(tag, fingerprint, self.folder / folder)
            if fingerprint is not None and reused is not None:
                for _ in requests:
                    self.count("")
                recorded = write_recorded(compared.opener.recorded())
                self._add_reused(reused, folder, fingerprint, compared.index_fingerprint, recorded)
                return
        result = self.result
        problems, caches, merged = len(result.problems), result.caches, result.merged_duplicates
        # Its fingerprint from what is read, without reading anything twice: the bodies
        # read through the opener, as read; what the ingest reads past it (the listings,
        # spec manifests and spec files of local mirrors), by names and statuses taken
        # before it reads them. Nothing is read for the fingerprint after the ingest.
        self.read_since_collected = True
        recording = RecordingOpener(self.opener)
        if cached_only:
            take_stock(requests, recording)
        parts = None
        if cached_only:
            parts = tag_parts(tag, requests, compared, self.looks, self.opener, self.parts_folder)
        with GraphWriter(self.folder / folder) as writer:
            ingest_caches(
                tag,
                requests,
                result,
                opener=recording,
                strict=self.strict,
                on_source=self.count,
                parts=parts,
                finish=writer.start,
            )
            recording.frozen = True
            table, graph = result.tables.pop(tag, None), result.graphs.pop(tag, None)
            if table is None:
                return  # none of its caches could be read: no tag
            # Its text index is taken from the previous build where made of the same names.
            earlier_text = partial(self._take_text, tag) if self.previous else None
            self.text_taken = False
            try:
                written = writer.write_tag_folder(table, graph, earlier_text)
            except CycleError as exc:
                shutil.rmtree(self.folder / folder)
                result.mirrors.pop(tag, None)
                self._report(Problem(f"tag {tag}", cycle_message(exc)))
                return
            finally:
                del table, graph  # the tag's records go now, its cycles before the next is read
        self.writer_mb = max(self.writer_mb, writer.own_mb)
        fingerprint, index_fingerprint, file_digests = None, None, {}
        self.texts_taken += int(self.text_taken)  # counted once the tag is kept
        if parts is not None:
            self.parts_taken += len(set(parts.taken))  # a cache the tag lists twice: once
            self.sizes_taken += len(parts.sizes_taken)
        # A tag missing a cache, or any part of one, that failed to read is no picture of
        # its sources: without a fingerprint, it is read again next time.
        complete = result.caches - caches == len(requests) and not recording.failures
        if cached_only and complete:
            salt = fingerprint_salt()
            fingerprint = tag_fingerprint(tag, requests, recording, salt)
            index_fingerprint = tag_fingerprint(tag, requests, recording, salt, looked=False)
            # The files taken from parts were known by their status, not read again; one
            # the ingest found other bytes in (its status not settled since) is not.
            known = checking.recorded() if checking is not None else {}
            known = {t: r for t, r in known.items() if recording.body_digest(t) in (None, r[1])}
            file_digests = write_recorded({**known, **recording.recorded()})
        self._add_entry(
            tag,
            folder,
            packages=written.packages,
            specs=written.specs,
            fingerprint=fingerprint,
            index_fingerprint=index_fingerprint,
            caches=result.caches - caches,
            merged_duplicates=result.merged_duplicates - merged,
            problems=[[p.path, p.message] for p in result.problems[problems:]],
            file_digests=file_digests,
            parts=sorted(parts.names) if parts is not None else [],
            text=written.text,
        )

    def _take_text(self, tag: str, digest: str, into: Path) -> bool:
        """The previous build's text index of `tag` put `into` (`PreviousBuild.take_text`)."""
        self.text_taken = self.previous is not None and self.previous.take_text(tag, digest, into)
        return self.text_taken

    def _report(self, problem: Problem) -> None:
        if self.strict:
            raise StrictModeError(problem)
        self.result.problems.append(problem)

    def _add_reused(
        self,
        reused: ReusedTag,
        folder: str,
        fingerprint: str,
        index_fingerprint: str | None,
        file_digests: dict[str, list[int | str]],
    ) -> None:
        result = self.result
        for problem in reused.problems:
            self._report(problem)
        result.caches += reused.caches
        result.merged_duplicates += reused.merged_duplicates
        if reused.mirrors:
            result.mirrors[reused.name] = reused.mirrors
        for name, file in reused.files.items():
            self.known[f"{folder}/{name}"] = file
        self.reused.append(reused.name)
        self._add_entry(
            reused.name,
            folder,
            packages=reused.packages,
            specs=reused.specs,
            fingerprint=fingerprint,
            index_fingerprint=index_fingerprint,
            caches=reused.caches,
            merged_duplicates=reused.merged_duplicates,
            problems=[[p.path, p.message] for p in reused.problems],
            file_digests=file_digests,
            parts=list(reused.parts),
            text=reused.text,
        )

    def _add_entry(self, tag: str, folder: str, **fields: Any) -> None:
        self.entries.append({"name": tag, "folder": folder, **fields})
        self.specs[tag] = fields["specs"]


def _write_manifest(
    build: _TagBuild, staging: publish.Staging, sources: Sequence[str | Path]
) -> None:
    result = build.result
    write_manifest(
        staging.folder,
        build.known,
        build_id=staging.build_id,
        sources=[public_base(str(s)) for s in sources],
        tags=sorted(build.entries, key=lambda entry: str(entry["name"])),
        pages=result.pages,
        caches=result.caches,
        specs=sum(build.specs.values()),
        problems=[str(p) for p in result.problems],
        mirrors=dict(sorted(result.mirrors.items())),
    )
