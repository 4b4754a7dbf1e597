"""The API's answers to what users ask a build cache: which microarchitectures a binary
runs on, and which binaries are nearest to a spec the cache lacks."""

from __future__ import annotations

import strawberry

from cachegql.index import microarchitectures as known_microarchitectures

__all__ = ["Microarchitecture", "microarchitecture_objects"]


@strawberry.type(
    description="A target of archspec's microarchitecture DAG: binaries built for it or "
    "for one of its ancestors run on it (`SpecFilter.runsOn`)."
)
class Microarchitecture:
    name: str
    family: str
    vendor: str
    generation: int
    ancestors: list[str] = strawberry.field(description="Nearest first.")


def microarchitecture_objects(family: str | None) -> list[Microarchitecture]:
    """Every microarchitecture archspec knows (of one family), generic ones first."""
    return [
        Microarchitecture(
            name=m.name,
            family=m.family,
            vendor=m.vendor,
            generation=m.generation,
            ancestors=list(m.ancestors),
        )
        for m in known_microarchitectures()
        if family is None or m.family == family
    ]
