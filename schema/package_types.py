"""Pages of packages (the `Package` node itself is in `spec_types`, beside `Spec`)."""

from __future__ import annotations

import strawberry

from cachegql.index import Scope, find_packages
from cachegql.schema.context import Context
from cachegql.schema.inputs import PackageFilter, package_criteria
from cachegql.schema.pagination import fingerprint, window
from cachegql.schema.spec_types import Package, package_object
from cachegql.schema.value_types import PageInfo, page_info

__all__ = ["PackageConnection", "PackageEdge", "package_connection"]


@strawberry.type
class PackageEdge:
    cursor: str
    node: Package


@strawberry.type
class PackageConnection:
    total_count: int
    page_info: PageInfo
    edges: list[PackageEdge]
    nodes: list[Package]


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
    criteria = package_criteria(filter)
    ids = find_packages(snapshot, criteria, search=search, scope=scope)
    key = fingerprint(store.build_id, snapshot.tag, "packages", scope, criteria, search)
    page = window(key, len(ids), first, after, context.max_first)
    page_ids = ids[page.start : page.stop].tolist()
    nodes = [package_object(context, snapshot.package(i)) for i in page_ids]
    return PackageConnection(
        total_count=page.total,
        page_info=page_info(page),
        edges=[
            PackageEdge(cursor=page.cursor(page.start + i), node=n) for i, n in enumerate(nodes)
        ],
        nodes=nodes,
    )
