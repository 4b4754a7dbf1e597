"""Read sources into per-tag tables, merging specs by hash and collecting problems.

Sources are recognised by content: cache.spack.io pages (files, or folders walked for
them), Spack build caches (index files, spec files, mirror roots of layouts v2 and v3)
and listings of build caches by tag and stack; local paths and http(s) URLs alike.
Every problem names its source and says what is wrong; the rest still loads. With
`strict=True` the first problem stops the ingest instead.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import orjson

from cachegql.index.binary_urls import public_base
from cachegql.index.ingest.buildcache import (
    CacheData,
    ListingEntry,
    cache_data,
    in_index_folder,
    is_listing,
    json_error,
    read_cache,
    read_index_file,
    read_listing,
    read_mirror,
)
from cachegql.index.ingest.files import read_head, read_regular, reason
from cachegql.index.ingest.locations import Location, NotFoundError, Opener, ReadError
from cachegql.index.ingest.oci import read_oci
from cachegql.index.ingest.pages import (
    NotAPageError,
    Page,
    PageError,
    UnreadFileError,
    parse_page,
    read_page,
)
from cachegql.index.ingest.sources import Candidate, SourceError, iter_candidates
from cachegql.index.ingest.spackdb import (
    Database,
    Edge,
    SourceFormatError,
    read_database,
    read_spec_file,
)
from cachegql.index.ingest.tables import TagTable
from cachegql.index.records import Problem, SpecRecord
from cachegql.index.spack.compilers import Compiler

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

# The stack of a lone build cache, as cache.spack.io labels its top-level mirror.
DEFAULT_STACK = "root"
_SPEC_FILE = (".spec.json", ".spec.json.sig", ".spec.yaml")
_UNKNOWN_COMPILER = Compiler(name="", version=None, raw="")
_UTF8_BOM = b"\xef\xbb\xbf"


class StrictModeError(Exception):
    """Raised in strict mode on the first problem; carries it."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@dataclass
class TagGraph:
    """The DAG of one tag from its build caches: every node, the binaries' stacks, sizes.

    `finish` turns it into the nodes that are not binaries of the tag (`extras`: nodes
    outside the cache, and dependencies the index lacks, known only by name and hash)
    and the direct edges of every node.
    """

    tag: str
    database: Database = field(default_factory=lambda: Database(source="", version=None))
    stacks: dict[str, set[str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    extras: TagTable | None = None
    edges: dict[str, tuple[Edge, ...]] = field(default_factory=dict)

    def add(self, data: CacheData) -> None:
        self.database.merge(data.database)
        for label, hashes in data.stacks.items():
            for digest in hashes:
                self.stacks.setdefault(digest, set()).add(label)
        self.sizes.update(data.sizes)

    def binaries(self) -> Iterable[SpecRecord]:
        database = self.database
        for digest in sorted(self.stacks):
            node = database.nodes[digest]
            stacks = tuple(sorted(self.stacks[digest]))
            size = self.sizes.get(digest)
            yield node.record(self.tag, database.compiler_of(node), stacks, size)

    def finish(self) -> list[Edge]:
        """Fill `extras` and `edges`; return the edges to hashes no source knows."""
        database = self.database
        self.extras = TagTable(self.tag)
        dangling: dict[str, Edge] = {}
        for digest, node in sorted(database.nodes.items()):
            self.edges[digest] = node.edges
            for edge in node.edges:
                if edge.hash not in database.nodes:
                    dangling.setdefault(edge.hash, edge)
            if digest not in self.stacks:
                self.extras.add(node.record(self.tag, database.compiler_of(node), (), None), -1)
        for _, edge in sorted(dangling.items()):
            self.extras.add(_unknown_node(self.tag, edge), -1)
        return list(dangling.values())


def _unknown_node(tag: str, edge: Edge) -> SpecRecord:
    """A node no source records: only its name and hash are known."""
    return SpecRecord(
        hash=edge.hash,
        package=edge.name,
        tag=tag,
        versions=("",),
        compiler=_UNKNOWN_COMPILER,
        os="",
        platform="",
        target="",
        variants=(),
        stacks=(),
        size=None,
        tarball=None,
    )


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

    @property
    def specs(self) -> int:
        return sum(len(t) for t in self.tables.values())


@dataclass(frozen=True, slots=True)
class CacheRequest:
    """A build cache to read for one tag and stack label."""

    tag: str
    label: str
    location: Location
    kind: Literal["index", "mirror", "spec-file", "cache"]
    data: bytes | None = None  # already read while recognising the source


@dataclass
class Plan:
    """The sources, recognised: page files to try and build caches to read."""

    candidates: list[Candidate] = field(default_factory=list)
    caches: list[CacheRequest] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def plan_sources(
    sources: Sequence[str | Path],
    *,
    opener: Opener,
    tag: str | None = None,
    stack: str = DEFAULT_STACK,
) -> Plan:
    """Recognise each source by its content; raise SourceError for one that cannot be used."""
    plan = Plan()
    for source in sources:
        location = Location.of(source)
        if location.is_url:
            _plan_url(location, plan, opener, tag, stack)
        else:
            _plan_path(location, plan, opener, tag, stack)
    return plan


def _plan_path(location: Location, plan: Plan, opener: Opener, tag: str | None, stack: str) -> None:
    """A local source: a mirror folder, a file recognised by its start, or a folder of
    pages; anything else (missing: SourceError; a pipe, a device, unreadable: a problem)
    as `iter_candidates` tells it."""
    path = location.path
    mode = _mode(path)
    if mode is not None and stat.S_ISDIR(mode) and _is_mirror_folder(path):
        plan.caches.append(_lone(location, "mirror", tag, stack))
    elif mode is not None and stat.S_ISREG(mode):
        _plan_file(location, plan, opener, tag, stack)
    else:
        plan.candidates.extend(iter_candidates([path], plan.problems))


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode
    except OSError:
        return None


def _lone(
    location: Location,
    kind: Literal["index", "mirror", "spec-file", "cache"],
    tag: str | None,
    stack: str,
    data: bytes | None = None,
) -> CacheRequest:
    if tag is None:
        what = {"index": "index file", "mirror": "mirror", "spec-file": "spec file"}.get(kind, "")
        raise SourceError(
            f"{location} is a Spack build cache ({what}), which does not say which tag (snapshot) "
            "its specs belong to: give it with --tag TAG (e.g. --tag develop), and its stack "
            f"with --stack LABEL (default {DEFAULT_STACK})"
        )
    return CacheRequest(tag, stack, location, kind, data)


def _is_mirror_folder(folder: Path) -> bool:
    """A mirror root of layout v3 or v2, or a v2 `build_cache` folder itself.

    A folder that cannot be listed is not one: walked for pages, it is reported there.
    """
    try:
        return (
            (folder / "v3" / "manifests" / "index").is_dir()
            or (folder / "build_cache").is_dir()
            or (folder / "index.json").is_file()
            or any(p.name.endswith(_SPEC_FILE) for p in folder.iterdir() if p.is_file())
        )
    except OSError:
        return False


def _plan_file(location: Location, plan: Plan, opener: Opener, tag: str | None, stack: str) -> None:
    path = location.path
    if path.name.endswith(_SPEC_FILE):
        plan.caches.append(_lone(location, "spec-file", tag, stack))
        return
    try:
        head = read_head(path, 64).lstrip()
        if head.startswith(b"-----BEGIN PGP SIGNED MESSAGE"):
            plan.caches.append(_lone(location, "spec-file", tag, stack))
        elif head.startswith((b"{", b"[")):  # JSON: what it is takes reading it whole
            _plan_json(location, read_regular(path), plan, opener, tag, stack)
        else:
            plan.candidates.append(Candidate(path, expected=True))
    except OSError as exc:
        plan.problems.append(Problem(str(location), f"cannot read ({reason(exc)}); skipped"))


def _plan_url(location: Location, plan: Plan, opener: Opener, tag: str | None, stack: str) -> None:
    try:
        with opener.source():
            data = opener.read(location)
    except NotFoundError:
        plan.caches.append(_lone(location, "mirror", tag, stack))  # a root: v3, then v2
        return
    except ReadError as exc:
        plan.problems.append(Problem(str(location), _without(str(location), str(exc))))
        return
    head = data[:64].removeprefix(_UTF8_BOM).lstrip()
    if head.startswith((b"{", b"[")):
        _plan_json(location, data, plan, opener, tag, stack)
    elif head.startswith(b"-----BEGIN PGP SIGNED MESSAGE"):
        plan.caches.append(_lone(location, "spec-file", tag, stack, data))
    elif head.startswith(b"---"):
        plan.candidates.append(Candidate(Path(location.text), expected=True, data=data))
    else:  # an HTML folder listing, or anything else: try it as a mirror root
        plan.caches.append(_lone(location, "mirror", tag, stack))


def _plan_json(
    location: Location, data: bytes, plan: Plan, opener: Opener, tag: str | None, stack: str
) -> None:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        plan.problems.append(Problem(str(location), json_error(exc)))
        return
    if isinstance(document, dict) and "database" in document:
        plan.caches.append(_lone(location, "index", tag, stack, data))
    elif isinstance(document, dict) and "spec" in document:
        plan.caches.append(_lone(location, "spec-file", tag, stack, data))
    elif is_listing(document):
        try:
            entries, problems = read_listing(data, location, opener.limits.max_listing_entries)
        except SourceFormatError as exc:
            plan.problems.append(Problem(str(location), str(exc)))
            return
        plan.problems.extend(problems)
        plan.caches.extend(_entry(entry) for entry in entries)
    else:
        plan.problems.append(
            Problem(
                str(location),
                "JSON that is neither a Spack build-cache index ('database'), a spec file "
                "('spec') nor a cache listing ({tag: [{label, url}]}); skipped",
            )
        )


def _entry(entry: ListingEntry) -> CacheRequest:
    return CacheRequest(entry.tag, entry.label, entry.location, "cache")


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
) -> None:
    """Read the build caches of one tag into `result` (its table and DAG), so that a
    build can write that tag and drop it before reading the next one."""
    report = _reporter(result, strict)
    for request in requests:
        if on_source is not None:
            on_source(str(request.location))
        with opener.source():
            data = _read_cache(request, opener, report)
        if data is None:
            continue
        result.caches += 1
        result.sources.append(public_base(data.source))
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
    graph = result.graphs.get(tag)
    if graph is not None:
        _add_graph(graph, result, report)


def _reporter(result: Ingested, strict: bool) -> Callable[[Problem], None]:
    def report(problem: Problem) -> None:
        if strict:
            raise StrictModeError(problem)
        result.problems.append(problem)

    return report


def _read_cache(
    request: CacheRequest, opener: Opener, report: Callable[[Problem], None]
) -> CacheData | None:
    location = request.location
    try:
        if request.kind == "spec-file":
            data = request.data if request.data is not None else opener.read(location)
            return cache_data(read_spec_file(data, str(location)), request.label)
        if request.kind == "index":
            if request.data is not None:
                database = read_database(request.data, str(location))
                return in_index_folder(cache_data(database, request.label))
            return read_index_file(location, opener, request.label)
        if location.is_oci:  # an OCI repository is a mirror of its own layout
            return read_oci(location, opener, request.label)
        if request.kind == "mirror":
            return read_mirror(location, opener, request.label)
        return read_cache(location, opener, request.label)
    except (ReadError, SourceFormatError, OSError) as exc:
        where = f" (stack {request.label} of tag {request.tag})" if request.kind == "cache" else ""
        report(Problem(str(location), f"skipped{where}: {_without(str(location), _why(exc))}"))
        return None


def _why(error: Exception) -> str:
    """What went wrong; an OSError is a local file or folder of the cache that could not
    be looked at (permissions), named with the system's reason."""
    if isinstance(error, OSError) and error.filename:
        return f"cannot read {error.filename} ({reason(error)})"
    return str(error)


def _without(location: str, message: str) -> str:
    return message.removeprefix(f"{location}: ")


def _add_graph(graph: TagGraph, result: Ingested, report: Callable[[Problem], None]) -> None:
    table = result.tables.get(graph.tag)
    if table is None:
        table = result.tables[graph.tag] = TagTable(graph.tag)
    source_id = len(result.sources)
    result.sources.append(f"the build caches of tag {graph.tag}")
    for record in graph.binaries():
        _add_spec(table, record, source_id, result, report)
    dangling = graph.finish()
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
        head = read_head(path, 4096).removeprefix(_UTF8_BOM)
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
    if earlier is None:
        return
    kept = table.record(earlier)
    if kept == spec:
        result.merged_duplicates += 1
        return
    first = result.sources[table.source_page[earlier]]
    differing = [
        name for name in SpecRecord.__slots__ if getattr(kept, name) != getattr(spec, name)
    ]
    report(
        Problem(
            result.sources[source_id],
            f"hash {spec.hash} in tag {table.tag} was already read from {first} "
            f"with different {', '.join(differing)}; kept the first",
        )
    )
