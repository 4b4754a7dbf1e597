"""`tagDiff`: what changed between two tags, as a connection over the changed packages.

The diff itself is `cachegql.index.tag_diff`, computed once per `tagDiff` field; the
packages of a page, and each one's added and removed specs, are slices of it.
"""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.types import Info

from cachegql.index import TagDiff, tag_diff
from cachegql.schema.context import Context
from cachegql.schema.inputs import SpecFilter, spec_criteria
from cachegql.schema.pagination import DEFAULT_FIRST, Fingerprint, fingerprint, window
from cachegql.schema.types import PageInfo, SpecConnection, page_info, spec_page

__all__ = ["FromArg", "PackageDiff", "PackageDiffEdge", "TagDiffConnection", "tag_diff_connection"]

FromArg = Annotated[str, strawberry.argument(name="from")]


@strawberry.type(description="One package's changes between two tags, by spec hash.")
class PackageDiff:
    name: str
    added: int = strawberry.field(description="Specs in `to` and not in `from`.")
    removed: int = strawberry.field(description="Specs in `from` and not in `to`.")
    unchanged: int = strawberry.field(description="Specs in both tags.")
    _diff: strawberry.Private[TagDiff]
    _key: strawberry.Private[Fingerprint]
    """Names the query (build, tags, filter), for the cursors of the spec lists."""

    @strawberry.field(description="The added specs, as specs of `to`; by hash.")
    def added_specs(
        self, info: Info[Context, None], first: int | None = DEFAULT_FIRST, after: str | None = None
    ) -> SpecConnection:
        rows = self._diff.added_in(self.name)
        key = fingerprint(self._key, "added", self.name)
        return spec_page(info.context, self._diff.new, rows, key, first, after)

    @strawberry.field(description="The removed specs, as specs of `from`; by hash.")
    def removed_specs(
        self, info: Info[Context, None], first: int | None = DEFAULT_FIRST, after: str | None = None
    ) -> SpecConnection:
        rows = self._diff.removed_in(self.name)
        key = fingerprint(self._key, "removed", self.name)
        return spec_page(info.context, self._diff.old, rows, key, first, after)


@strawberry.type
class PackageDiffEdge:
    cursor: str
    node: PackageDiff


@strawberry.type(description="The packages that changed between two tags, by name, and totals.")
class TagDiffConnection:
    from_: str = strawberry.field(name="from")
    to: str
    total_count: int = strawberry.field(
        description="Packages with at least one spec added or removed."
    )
    added: int = strawberry.field(description="Specs in `to` and not in `from`, over all packages.")
    removed: int = strawberry.field(description="Specs in `from` and not in `to`.")
    unchanged: int = strawberry.field(description="Specs in both tags.")
    page_info: PageInfo
    edges: list[PackageDiffEdge]
    nodes: list[PackageDiff]


def tag_diff_connection(
    context: Context,
    old_tag: str,
    new_tag: str,
    filter: SpecFilter | None,
    first: int | None,
    after: str | None,
) -> TagDiffConnection:
    """Diff the two tags and cut out the page of changed packages asked for."""
    store = context.store
    old, new = store.snapshot(old_tag), store.snapshot(new_tag)
    criteria = spec_criteria(filter)
    diff = tag_diff(old, new, criteria)
    key = fingerprint(store.build_id, "tagDiff", old.tag, new.tag, criteria)
    page = window(key, len(diff.names), first, after, context.max_first)
    nodes = [
        PackageDiff(
            name=change.name,
            added=change.added,
            removed=change.removed,
            unchanged=change.unchanged,
            _diff=diff,
            _key=key,
        )
        for change in diff.packages(page.start, page.stop)
    ]
    return TagDiffConnection(
        from_=old.tag,
        to=new.tag,
        total_count=page.total,
        added=diff.num_added,
        removed=diff.num_removed,
        unchanged=diff.num_unchanged,
        page_info=page_info(page),
        edges=[
            PackageDiffEdge(cursor=page.cursor(page.start + i), node=n) for i, n in enumerate(nodes)
        ],
        nodes=nodes,
    )
