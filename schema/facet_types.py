"""The facets of a spec result: per-value spec counts over the whole matching set."""

from __future__ import annotations

import strawberry

from cachegql.index import Facets
from cachegql.schema.errors import UserInputError
from cachegql.schema.value_types import Bucket

__all__ = ["FACET_FIRST", "SpecFacets"]

FACET_FIRST = "Spec counts per value, count descending then value; `first` keeps the top ones."


@strawberry.type
class SpecFacets:
    _facets: strawberry.Private[Facets]

    def _buckets(self, name: str, first: int | None) -> list[Bucket]:
        if first is not None and first < 0:
            raise UserInputError(f"'first' must be 0 or more, got {first}")
        return [Bucket(value=v, count=c) for v, c in self._facets.buckets(name, first)]

    @strawberry.field(description=FACET_FIRST)
    def compilers(self, first: int | None = None) -> list[Bucket]:
        return self._buckets("compilers", first)

    @strawberry.field(description=FACET_FIRST)
    def oss(self, first: int | None = None) -> list[Bucket]:
        return self._buckets("oss", first)

    @strawberry.field(description=FACET_FIRST)
    def platforms(self, first: int | None = None) -> list[Bucket]:
        return self._buckets("platforms", first)

    @strawberry.field(description=FACET_FIRST)
    def targets(self, first: int | None = None) -> list[Bucket]:
        return self._buckets("targets", first)

    @strawberry.field(description=FACET_FIRST)
    def stacks(self, first: int | None = None) -> list[Bucket]:
        return self._buckets("stacks", first)

    @strawberry.field(description=FACET_FIRST)
    def versions(self, first: int | None = None) -> list[Bucket]:
        return self._buckets("versions", first)

    @strawberry.field(description=FACET_FIRST)
    def packages(self, first: int | None = None) -> list[Bucket]:
        return self._buckets("packages", first)

    @strawberry.field(description=FACET_FIRST)
    def namespaces(self, first: int | None = None) -> list[Bucket]:
        return self._buckets("namespaces", first)
