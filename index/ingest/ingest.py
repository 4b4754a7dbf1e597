"""Read sources into per-tag tables, merging specs by hash and collecting problems.

Sources are recognised by content (`recognise.py`): cache.spack.io pages (files, or folders
walked for them), Spack build caches (index files, spec files, mirror roots of layouts v2 and
v3) and listings of build caches by tag and stack; local paths and http(s) URLs alike. Pages
are read first; then build caches tag by tag, each tag's into its DAG (`tag_graph.py`).
Every problem names its source and says what is wrong; the rest still loads. With
`strict=True` the first problem stops the ingest instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cachegql.index.binary_urls import public_base
from cachegql.index.ingest.buildcache import (
    CacheData,
    cache_data,
    placed,
    read_cache,
    read_index_file,
    read_mirror,
)
from cachegql.index.ingest.cache_parts import CacheParts
from cachegql.index.ingest.files import read_head, reason
from cachegql.index.ingest.inflate import inflated
from cachegql.index.ingest.listed_indexes import checked_blob
from cachegql.index.ingest.locations import Opener, ReadError
from cachegql.index.ingest.oci import read_oci
from cachegql.index.ingest.pages import (
    NotAPageError,
    Page,
    PageError,
    UnreadFileError,
    parse_page,
    read_page,
)
from cachegql.index.ingest.recognise import (
    DEFAULT_STACK,
    UTF8_BOM,
    CacheRequest,
    Plan,
    plan_sources,
    without_location,
)
from cachegql.index.ingest.seen_nodes import SeenNodes
from cachegql.index.ingest.sources import Candidate
from cachegql.index.ingest.spackdb import (
    SourceFormatError,
    read_database,
    read_spec_file,
)
from cachegql.index.ingest.tables import TagTable
from cachegql.index.ingest.tag_graph import Finisher, TagGraph, finish_after_fill
from cachegql.index.records import Problem, SpecRecord

__all__ = [
    "DEFAULT_STACK",
    "CacheRequest",
    "Ingested",
    "Plan",
    "StrictModeError",
    "TagGraph",
    "caches_by_tag",
    "ingest",
    "ingest_caches",
    "ingest_pages",
    "ingest_plan",
    "plan_sources",
]


class StrictModeError(Exception):
    """Raised in strict mode on the first problem; carries it."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@dataclass
class Ingested:
    """What an ingest produced: one table per tag, DAGs where known, everything to tell."""

    tables: dict[str, TagTable] = field(default_factory=dict)
    graphs: dict[str, TagGraph] = field(default_factory=dict)
    pages: int = 0
    caches: int = 0
    sources: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    merged_duplicates: int = 0
    # Per tag, per stack label: where the binaries of a network build cache live and in
    # which layout (`base`, `layout` of index/binary_urls.py), the first cache wins.
    mirrors: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    # The largest peak memory of a process that read part of a source beside the ingest.
    helper_rss_mb: int = 0

    @property
    def specs(self) -> int:
        return sum(len(t) for t in self.tables.values())


def ingest(
    sources: Sequence[str | Path],
    *,
    strict: bool = False,
    tag: str | None = None,
    stack: str = DEFAULT_STACK,
    opener: Opener | None = None,
    on_source: Callable[[str], None] | None = None,
) -> Ingested:
    """Read every source into per-tag tables (see `plan_sources` for what a source is)."""
    opener = opener or Opener()
    plan = plan_sources(sources, opener=opener, tag=tag, stack=stack)
    return ingest_plan(plan, opener=opener, strict=strict, on_source=on_source)


def ingest_plan(
    plan: Plan,
    *,
    opener: Opener,
    strict: bool = False,
    on_source: Callable[[str], None] | None = None,
) -> Ingested:
    """Read a whole plan: its pages, then the build caches of each tag in turn."""
    result = ingest_pages(plan, strict=strict, on_source=on_source)
    for tag, requests in sorted(caches_by_tag(plan).items()):
        ingest_caches(tag, requests, result, opener=opener, strict=strict, on_source=on_source)
    return result


def caches_by_tag(plan: Plan) -> dict[str, list[CacheRequest]]:
    """The build caches of the plan grouped by tag, each tag's in the plan's order."""
    grouped: dict[str, list[CacheRequest]] = {}
    for request in plan.caches:
        grouped.setdefault(request.tag, []).append(request)
    return grouped


def ingest_pages(
    plan: Plan, *, strict: bool = False, on_source: Callable[[str], None] | None = None
) -> Ingested:
    """The plan's own problems and its pages, into a new `Ingested`. Pages stay whole:
    a page's tag is known only once it is read, and pages are small next to caches."""
    result = Ingested()
    report = _reporter(result, strict)
    for problem in plan.problems:
        report(problem)
    for candidate in plan.candidates:
        if on_source is not None:
            on_source(str(candidate.path))
        page = _read(candidate, result, report)
        if page is not None:
            _add_page(page, result, report)
    return result


def ingest_caches(
    tag: str,
    requests: Sequence[CacheRequest],
    result: Ingested,
    *,
    opener: Opener,
    strict: bool = False,
    on_source: Callable[[str], None] | None = None,
    parts: CacheParts | None = None,
    finish: Finisher = finish_after_fill,
) -> None:
    """Read the build caches of one tag into `result` (its table and DAG), so that a
    build can write that tag and drop it before reading the next one; with `parts`, its
    index files as an earlier build read them, where it did (index/ingest/cache_parts.py).
    `finish` finishes its graph (in another process: index/disk/graph_writer.py)."""
    report = _reporter(result, strict)
    # Caches of one tag repeat each other's nodes: read each once (a lone cache has no
    # other to repeat, and keeping its nodes' digests would only cost memory).
    seen = SeenNodes() if len(requests) > 1 else None
    for request in requests:
        if on_source is not None:
            on_source(str(request.location))
        with opener.source():
            data = _read_cache(request, opener, report, seen, parts)
        if data is None:
            continue
        result.caches += 1
        result.sources.append(public_base(data.source))
        result.helper_rss_mb = max(result.helper_rss_mb, data.helper_rss_mb)
        if data.base is not None and data.layout is not None and request.location.is_url:
            mirrors = result.mirrors.setdefault(tag, {})
            for label in data.stacks:
                mirrors.setdefault(label, (public_base(data.base), data.layout))
        for problem in (*data.problems, *data.database.problems):
            report(problem)
        graph = result.graphs.get(tag)
        if graph is None:
            graph = result.graphs[tag] = TagGraph(tag)
        graph.add(data)
    seen = None  # its digests (and nodes the merge replaced) are not held while the tag is made
    graph = result.graphs.get(tag)
    if graph is not None:
        _add_graph(graph, result, report, finish)


def _reporter(result: Ingested, strict: bool) -> Callable[[Problem], None]:
    def report(problem: Problem) -> None:
        if strict:
            raise StrictModeError(problem)
        result.problems.append(problem)

    return report


def _read_cache(
    request: CacheRequest,
    opener: Opener,
    report: Callable[[Problem], None],
    seen: SeenNodes | None = None,
    parts: CacheParts | None = None,
) -> CacheData | None:
    location = request.location
    try:
        if request.kind == "spec-file":
            data = request.data if request.data is not None else opener.read(location)
            return cache_data(read_spec_file(data, str(location)), request.label)
        if request.kind == "index":
            if request.data is not None:  # a blob is checked as stored, then inflated
                blob = checked_blob(location, request.data)
                content = inflated(request.data, location, opener)
                database = read_database(content, str(location), seen)
                return placed(cache_data(database, request.label), blob)
            return read_index_file(location, opener, request.label, seen, parts)
        if location.is_oci:  # an OCI repository is a mirror of its own layout
            return read_oci(location, opener, request.label, seen)
        if request.kind == "mirror":
            return read_mirror(location, opener, request.label, seen, parts)
        return read_cache(location, opener, request.label, seen, parts)
    except (ReadError, SourceFormatError, OSError) as exc:
        where = f" (stack {request.label} of tag {request.tag})" if request.kind == "cache" else ""
        report(
            Problem(str(location), f"skipped{where}: {without_location(str(location), _why(exc))}")
        )
        return None


def _why(error: Exception) -> str:
    """What went wrong; an OSError is a local file or folder of the cache that could not
    be looked at (permissions), named with the system's reason."""
    if isinstance(error, OSError) and error.filename:
        return f"cannot read {error.filename} ({reason(error)})"
    return str(error)


def _add_graph(
    graph: TagGraph, result: Ingested, report: Callable[[Problem], None], finish: Finisher
) -> None:
    table = result.tables.get(graph.tag)
    if table is None:
        table = result.tables[graph.tag] = TagTable(graph.tag)
    source_id = len(result.sources)
    result.sources.append(f"the build caches of tag {graph.tag}")
    finished = finish(graph)
    for record, earlier in graph.fill(table, source_id):
        _report_duplicate(table, record, earlier, source_id, result, report)
    dangling = finished()
    if dangling:
        examples = ", ".join(f"{e.name}/{e.hash[:7]}" for e in dangling[:5])
        report(
            Problem(
                f"tag {graph.tag}",
                f"{len(dangling)} dependencies are not in any index of the tag ({examples}"
                f"{', ...' if len(dangling) > 5 else ''}); their edges are kept, without a spec",
            )
        )


def _read(candidate: Candidate, result: Ingested, report: Callable[[Problem], None]) -> Page | None:
    path = str(candidate.path)
    try:
        if candidate.data is not None:
            return parse_page(candidate.data.decode("utf-8"), path)
        return read_page(candidate.path)
    except UnicodeDecodeError as exc:
        report(Problem(path, f"not UTF-8 (invalid byte at offset {exc.start})"))
    except UnreadFileError as exc:
        report(Problem(path, str(exc)))
    except NotAPageError as exc:
        if candidate.expected:
            report(Problem(path, f"not a cache page: {exc}"))
        else:
            result.skipped.append(Problem(path, f"not a cache page: {exc}"))
    except PageError as exc:
        if candidate.expected or _looks_like_page(candidate.path):
            report(Problem(path, str(exc)))
        else:
            result.skipped.append(Problem(path, f"not a cache page: {exc}"))
    return None


def _looks_like_page(path: Path) -> bool:
    """A file found in a folder is only a broken page if it starts like one."""
    try:
        head = read_head(path, 4096).removeprefix(UTF8_BOM)
    except OSError:
        return False
    return head.startswith(b"---") and b"layout: cache" in head


def _add_page(page: Page, result: Ingested, report: Callable[[Problem], None]) -> None:
    source_id = len(result.sources)
    result.pages += 1
    result.sources.append(page.path)
    for problem in page.problems:
        report(problem)
    table = result.tables.get(page.tag)
    if table is None:
        table = result.tables[page.tag] = TagTable(page.tag)
    for spec in page.specs:
        _add_spec(table, spec, source_id, result, report)


def _add_spec(
    table: TagTable,
    spec: SpecRecord,
    source_id: int,
    result: Ingested,
    report: Callable[[Problem], None],
) -> None:
    earlier = table.add(spec, source_id)
    if earlier is not None:
        _report_duplicate(table, spec, earlier, source_id, result, report)


def _report_duplicate(
    table: TagTable,
    spec: SpecRecord,
    earlier: int,
    source_id: int,
    result: Ingested,
    report: Callable[[Problem], None],
) -> None:
    """`spec`'s hash was at row `earlier` of the tag: the same spec again, or a conflict."""
    kept = table.record(earlier)
    if kept == spec:
        result.merged_duplicates += 1
        return
    first = result.sources[table.source_page[earlier]]
    differing = [name for name in SpecRecord._fields if getattr(kept, name) != getattr(spec, name)]
    report(
        Problem(
            result.sources[source_id],
            f"hash {spec.hash} in tag {table.tag} was already read from {first} "
            f"with different {', '.join(differing)}; kept the first",
        )
    )
