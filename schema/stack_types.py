"""A stack of a tag: its spec counts per compiler, OS, platform and target, and its
packages and specs."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from cachegql.index import Scope, StackSummary
from cachegql.schema.context import Context
from cachegql.schema.inputs import PackageFilterArg, SpecFilterArg
from cachegql.schema.package_types import PackageConnection, package_connection
from cachegql.schema.pagination import DEFAULT_FIRST
from cachegql.schema.spec_types import SpecConnection, spec_connection
from cachegql.schema.value_types import Bucket

__all__ = ["Stack", "stack_object"]


@strawberry.type
class Stack:
    name: str
    tag: str
    num_specs: int
    num_packages: int
    compilers: list[Bucket] = strawberry.field(
        description="Per-value spec counts, count descending then value ascending."
    )
    oss: list[Bucket]
    platforms: list[Bucket]
    targets: list[Bucket]

    @strawberry.field
    def packages(
        self,
        info: Info[Context, None],
        filter: PackageFilterArg = None,
        search: str | None = None,
        first: int | None = DEFAULT_FIRST,
        after: str | None = None,
    ) -> PackageConnection:
        return package_connection(
            info.context, self.tag, Scope.stack(self.name), filter, search, first, after
        )

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
            info.context, self.tag, Scope.stack(self.name), filter, query, search, first, after
        )


def stack_object(summary: StackSummary) -> Stack:
    buckets = {
        facet: [Bucket(value=v, count=c) for v, c in pairs]
        for facet, pairs in summary.buckets.items()
    }
    return Stack(
        name=summary.name,
        tag=summary.tag,
        num_specs=summary.num_specs,
        num_packages=summary.num_packages,
        compilers=buckets["compilers"],
        oss=buckets["oss"],
        platforms=buckets["platforms"],
        targets=buckets["targets"],
    )
