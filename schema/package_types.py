"""Pages of packages (the `Package` node itself is in `spec_types`, beside `Spec`)."""

from __future__ import annotations

import strawberry

from cachegql.index import Scope, find_packages
from cachegql.schema.context import Context
from cachegql.schema.inputs import PackageFilter, package_criteria
from cachegql.schema.pagination import Window, fingerprint, window
from cachegql.schema.spec_types import Package, package_object
from cachegql.schema.value_types import PageInfo, page_info

__all__ = ["PackageConnection", "PackageEdge", "package_connection"]


@strawberry.type
class PackageEdge:
    cursor: str
    node: Package


def _package_page_info(root: PackageConnection) -> PageInfo:
    return page_info(root._page)


def _package_edges(root: PackageConnection) -> list[PackageEdge]:
    """Made when asked for, as a page of specs' (`spec_types`)."""
    page = root._page
    return [
        PackageEdge(cursor=page.cursor(page.start + i), node=n) for i, n in enumerate(root.nodes)
    ]


@strawberry.type
class PackageConnection:
    total_count: int
    page_info: PageInfo = strawberry.field(resolver=_package_page_info)
    edges: list[PackageEdge] = strawberry.field(resolver=_package_edges)
    nodes: list[Package]
    _page: strawberry.Private[Window]


def package_connection(
    context: Context,
    tag: str | None,
    scope: Scope | None,
    filter: PackageFilter | None,
    search: str | None,
    first: int | None,
    after: str | None,
) -> PackageConnection:
    """Evaluate a packages field and cut out the page asked for."""
    store = context.store
    snapshot = store.snapshot(tag)
    criteria = context.converted(filter, package_criteria)
    words = context.words_matched(snapshot.tag)
    ids = find_packages(
        snapshot, criteria, search=search, scope=scope, words=words, ordered=first != 0
    )
    key = fingerprint(store.build_id, snapshot.tag, "packages", scope, criteria, search)
    page = window(key, len(ids), first, after, context.max_first)
    page_ids = ids[page.start : page.stop].tolist()
    nodes = [package_object(context, snapshot.package(i)) for i in page_ids]
    return PackageConnection(total_count=page.total, nodes=nodes, _page=page)
