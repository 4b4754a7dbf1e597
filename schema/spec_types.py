"""Specs, their dependencies and their package, and pages of specs.

`Spec.package` is a `Package` and `Package.specs` pages of `Spec`: the two refer to each
other, so they live in one module (the pages of packages, and stacks, build on it).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import strawberry
from strawberry.types import Info

from cachegql.index import (
    DependencyData,
    Facets,
    PackageData,
    Rows,
    Scope,
    Snapshot,
    SpecCriteria,
    SpecRecord,
    find_specs,
    format_spec,
    missing_hashes,
    spec_binary_urls,
)
from cachegql.schema.context import Context
from cachegql.schema.facet_types import SpecFacets
from cachegql.schema.inputs import SpecFilter, SpecFilterArg, asked_hashes, spec_criteria
from cachegql.schema.pagination import DEFAULT_FIRST, Fingerprint, Window, fingerprint, window
from cachegql.schema.readers import reads_many
from cachegql.schema.spec_fields import SHOWN, SHOWN_ONE
from cachegql.schema.value_types import Compiler, PageInfo, StackCount, Variant, page_info

__all__ = [
    "Dependency",
    "Package",
    "Spec",
    "SpecBatch",
    "SpecConnection",
    "SpecEdge",
    "package_object",
    "spec_connection",
    "spec_object",
    "spec_objects",
    "spec_page",
]


def _shown(field: str, **options: Any) -> Any:
    """A field of `Spec` read from its batch's columns for the whole batch, when a query
    first asks for it (a page that shows three fields reads three); a spec alone, its row's."""
    one = SHOWN_ONE[field]

    def read(root: Spec) -> Any:
        batch = root._batch
        return batch.shown(field)[root._at] if batch.row < 0 else one(batch.snapshot, batch.row)

    def read_all(roots: Sequence[Spec]) -> list[Any]:
        if roots:
            batch = roots[0]._batch
            page = None if batch.page is None else batch.page()
            # The batch's own page as made (no resolver changes a list it was given):
            # the column itself.
            if roots is page and len(page) == len(batch.rows):
                return batch.shown(field)
        return [read(root) for root in roots]

    reads_many(read, read_all)
    return strawberry.field(resolver=read, **options)


@strawberry.type(description="A binary spec of a tag.")
class Spec:
    hash: str = _shown("hash")
    short_hash: str = _shown("short_hash")
    name: str = _shown("name")
    tag: str = _shown("tag")
    version: str = _shown("version")
    versions: list[str] = _shown("versions")
    compiler: Compiler = _shown("compiler")
    os: str = _shown("os")
    platform: str = _shown("platform")
    target: str = _shown("target")
    variants: list[Variant] = _shown("variants")
    stacks: list[str] = _shown("stacks")
    size: int | None = _shown(
        "size", deprecation_reason="Int is 32-bit: use sizeBytes (this is null from 2 GiB on)."
    )
    size_bytes: float | None = _shown(
        "size_bytes",
        description="The tarball's size in bytes (exact up to 2^53); null when unknown.",
    )
    tarball: str | None = _shown("tarball")
    namespace: str | None = _shown(
        "namespace",
        description='The package repository, e.g. "builtin"; null where the source has '
        "none (pages).",
    )
    _batch: strawberry.Private[SpecBatch]
    _at: strawberry.Private[int]
    """The spec's position in its batch."""

    @property
    def _data(self) -> SpecRecord:
        # Its readers (format, package, URLs, dependents) never show the tarball name,
        # the one field kept in a file of its own.
        return self._batch.columns.record(self._at, tarballs=False)

    @property
    def _row(self) -> int:
        return self._batch.rows[self._at]

    @strawberry.field
    def package(self, info: Info[Context, None]) -> Package:
        data = self._data
        snapshot = info.context.store.snapshot(data.tag)
        return package_object(info.context, snapshot.package(snapshot.package_ids[data.package]))

    @strawberry.field(
        description="Spack-style one-line spec; pasted into `query:`, it matches this spec."
    )
    def format(self) -> str:
        return format_spec(self._data)

    @strawberry.field(
        description="Where Spack fetches this binary's spec metadata: the v2 spec file, the "
        "v3 spec manifest or the OCI image (http(s), s3:// or oci:// as the cache was "
        "indexed); null for pages and caches indexed from a local path."
    )
    def spec_file_url(self, info: Info[Context, None]) -> str | None:
        return spec_binary_urls(info.context.store.manifest.get("mirrors"), self._data)[0]

    @strawberry.field(
        description="Where Spack fetches this binary's tarball (v2: the .spack file; OCI: the "
        "image, whose layer it is); null where unknown: pages, local caches, layout v3 "
        "(its spec manifest names the tarball by checksum)."
    )
    def tarball_url(self, info: Info[Context, None]) -> str | None:
        return spec_binary_urls(info.context.store.manifest.get("mirrors"), self._data)[1]

    @strawberry.field(
        description="Direct dependencies, optionally only those of the given deptypes "
        '("build", "link", "run", "test"); null when the source records none (pages).'
    )
    def dependencies(self, deptype: list[str] | None = None) -> list[Dependency] | None:
        found = self._batch.dependencies(self._row)
        if found is None:
            return None
        wanted = set(deptype or ())
        return [
            Dependency(
                name=d.name,
                hash=d.hash,
                version=d.version,
                deptypes=list(d.deptypes),
                virtuals=list(d.virtuals),
                _row=d.row,
                _batch=self._batch,
            )
            for d in found
            if not wanted or wanted.intersection(d.deptypes)
        ]

    @strawberry.field(description="The binaries of the tag with a direct dependency on this spec.")
    def dependents(
        self,
        info: Info[Context, None],
        filter: SpecFilterArg = None,
        first: int | None = DEFAULT_FIRST,
        after: str | None = None,
    ) -> SpecConnection:
        data = self._data
        scope = Scope.dependents(data.hash)
        return spec_connection(info.context, data.tag, scope, filter, None, None, first, after)


@strawberry.type(description="A direct dependency of a spec (an edge of its DAG).")
class Dependency:
    name: str
    hash: str
    version: str | None = strawberry.field(
        description="null when the index does not record the node this edge points to."
    )
    deptypes: list[str]
    virtuals: list[str] = strawberry.field(
        description='What it provides to the spec, e.g. ["c", "cxx"] for a compiler.'
    )
    _row: strawberry.Private[int | None]
    _batch: strawberry.Private[SpecBatch]

    @strawberry.field(description="The binary with this hash in the tag; null when it has none.")
    def spec(self) -> Spec | None:
        return None if self._row is None else self._batch.dependency_spec(self._row)


class SpecBatch:
    """Specs answered together (a page, or the dependencies of a page): their dependencies,
    and those dependencies' specs, are read once for all of them, not spec by spec."""

    def __init__(self, snapshot: Snapshot, rows: list[int]) -> None:
        self.snapshot = snapshot
        self.rows = rows
        self.columns = snapshot.spec_columns(rows)
        self.row = rows[0] if len(rows) == 1 else -1
        """A batch of one row (a spec looked up by its hash), else -1: its fields are read
        off the row alone (`SHOWN_ONE`), one read each (alias or not), no column kept."""
        self._shown: dict[str, list[Any]] = {}
        # The page of specs made of it, weakly: each spec refers to its batch, and a
        # request's objects must die with it by reference counting.
        self.page: weakref.ref[_Specs] | None = None

    @cached_property
    def _dependencies(self) -> dict[int, list[DependencyData] | None]:
        return dict(zip(self.rows, self.snapshot.dependencies(self.rows), strict=True))

    def dependencies(self, row: int) -> list[DependencyData] | None:
        return self._dependencies[row]

    @cached_property
    def _dependency_specs(self) -> dict[int, Spec]:
        found = self._dependencies.values()
        rows = sorted({d.row for edges in found for d in edges or () if d.row is not None})
        return dict(zip(rows, spec_objects(self.snapshot, rows), strict=True))

    def dependency_spec(self, row: int) -> Spec:
        return self._dependency_specs[row]

    def shown(self, field: str) -> list[Any]:
        """The values of one field of `Spec`, by position in the batch, as the API shows
        them; read for the whole batch when first asked for."""
        values = self._shown.get(field)
        if values is None:
            values = self._shown[field] = SHOWN[field](self.columns)
        return values


def spec_object(snapshot: Snapshot, row: int) -> Spec:
    """The API's Spec object for `row`, alone in its batch (no page to refer to)."""
    return Spec(_batch=SpecBatch(snapshot, [row]), _at=0)


def spec_objects(snapshot: Snapshot, rows: list[int]) -> list[Spec]:
    """The API's Spec objects for `rows`, sharing one batch: nothing is read until a
    field is asked for, and then that field for all of them."""
    batch = SpecBatch(snapshot, rows)
    specs = _Specs(Spec(_batch=batch, _at=at) for at in range(len(rows)))
    batch.page = weakref.ref(specs)
    return specs


class _Specs(list[Spec]):
    """A batch's specs: a list that can be referred to weakly."""


def package_object(context: Context, data: PackageData) -> Package:
    """The Package of this request for `data`: built once, shared by every spec."""
    key = ("package", data.tag, data.id)
    package = context.cache.get(key)
    if package is None:
        package = context.cache[key] = Package(name=data.name, tag=data.tag, _data=data)
    return package


@strawberry.type
class Package:
    name: str
    tag: str
    _data: strawberry.Private[PackageData]

    @strawberry.field(description="Distinct, newest first (Spack version order).")
    def versions(self) -> list[str]:
        return self._data.versions

    @strawberry.field(description='Normalized "gcc@13.2.0", "none"; sorted.')
    def compilers(self) -> list[str]:
        return self._data.distinct("compiler")

    @strawberry.field
    def oss(self) -> list[str]:
        return self._data.distinct("os")

    @strawberry.field
    def platforms(self) -> list[str]:
        return self._data.distinct("platform")

    @strawberry.field
    def targets(self) -> list[str]:
        return self._data.distinct("target")

    @strawberry.field(description="Sorted.")
    def stacks(self) -> list[str]:
        return self._data.stacks

    @strawberry.field
    def num_specs(self) -> int:
        return self._data.num_specs

    @strawberry.field(description="Sorted by stack name.")
    def num_specs_by_stack(self) -> list[StackCount]:
        return [StackCount(stack=s, count=c) for s, c in self._data.num_specs_by_stack]

    @strawberry.field
    def specs(
        self,
        info: Info[Context, None],
        filter: SpecFilterArg = None,
        query: str | None = None,
        search: str | None = None,
        first: int | None = DEFAULT_FIRST,
        after: str | None = None,
    ) -> SpecConnection:
        return spec_connection(
            info.context, self.tag, Scope.package(self.name), filter, query, search, first, after
        )


@strawberry.type
class SpecEdge:
    cursor: str
    node: Spec


def _spec_page_info(root: SpecConnection) -> PageInfo:
    return page_info(root._page)


def _spec_edges(root: SpecConnection) -> list[SpecEdge]:
    """Made when asked for: most clients read `nodes`, and each cursor is an encoding."""
    page = root._page
    return [SpecEdge(cursor=page.cursor(page.start + i), node=n) for i, n in enumerate(root.nodes)]


@strawberry.type
class SpecConnection:
    total_count: int
    page_info: PageInfo = strawberry.field(resolver=_spec_page_info)
    edges: list[SpecEdge] = strawberry.field(resolver=_spec_edges)
    nodes: list[Spec]
    facets: SpecFacets = strawberry.field(
        description="Counts over the whole matching set (not just this page)."
    )
    missing: list[str] = strawberry.field(
        default_factory=list,
        description="The full hashes of the filter's `hash` (`eq`, `in`) that match no spec "
        "of this connection, in the order asked; empty without a `hash` filter.",
    )
    _page: strawberry.Private[Window]


def spec_connection(
    context: Context,
    tag: str | None,
    scope: Scope | None,
    filter: SpecFilter | None,
    query: str | None,
    search: str | None,
    first: int | None,
    after: str | None,
) -> SpecConnection:
    """Evaluate a specs field and cut out the page asked for."""
    store = context.store
    snapshot = store.snapshot(tag)
    criteria = context.converted(filter, spec_criteria)
    words = context.words_matched(snapshot.tag)
    # A page of none (a count and facets: the web app's search) needs no order.
    rows = find_specs(
        snapshot, criteria, query=query, search=search, scope=scope, words=words, ordered=first != 0
    )
    key = fingerprint(store.build_id, snapshot.tag, "specs", scope, criteria, query, search)
    connection = spec_page(context, snapshot, rows, key, first, after, criteria)
    asked = asked_hashes(filter)
    if asked:
        connection.missing = missing_hashes(snapshot, asked, rows)
    return connection


def spec_page(
    context: Context,
    snapshot: Snapshot,
    rows: Rows,
    key: Fingerprint,
    first: int | None,
    after: str | None,
    criteria: SpecCriteria | None = None,
) -> SpecConnection:
    """The page asked for of a result of spec `rows`, for the query named `key`;
    `criteria`, when given, hold for every row (what facets need not count)."""
    page = window(key, len(rows), first, after, context.max_first)
    nodes = spec_objects(snapshot, rows[page.start : page.stop].tolist())
    return SpecConnection(
        total_count=page.total,
        nodes=nodes,
        facets=SpecFacets(_facets=Facets(snapshot, rows, criteria)),
        _page=page,
    )
