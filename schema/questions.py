"""The API's answers to what users ask a build cache: which microarchitectures a binary
runs on, and which binaries are nearest to a spec the cache lacks."""

from __future__ import annotations

import strawberry

from cachegql.index import (
    Wanted,
    nearest,
    parse_spec_query,
    read_lock_node,
    wanted_from_lock,
    wanted_from_query,
)
from cachegql.index import microarchitectures as known_microarchitectures
from cachegql.schema.context import Context
from cachegql.schema.errors import UserInputError
from cachegql.schema.types import Spec, spec_objects

__all__ = [
    "DEFAULT_NEAREST",
    "Microarchitecture",
    "NearestBinary",
    "microarchitecture_objects",
    "nearest_binaries",
]

DEFAULT_NEAREST = 5


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


@strawberry.type(description="A binary near a spec, and exactly how it differs from it.")
class NearestBinary:
    spec: Spec
    differences: list[str] = strawberry.field(
        description='Each constraint it does not meet, in words: "has +mpi, you asked ~mpi", '
        '"built for x86_64_v3: runs on your zen3"; empty: the same spec.'
    )
    usable: bool = strawberry.field(
        description="Nothing blocks it: its target runs on the one asked for, and its os "
        "and platform are those asked for."
    )


def _wanted(text: str) -> Wanted:
    """A Spack spec string, or a lockfile's node (JSON) when it starts with `{`."""
    if text.lstrip().startswith("{"):
        return wanted_from_lock(read_lock_node(text))
    return wanted_from_query(parse_spec_query(text))


def nearest_binaries(
    context: Context, spec: str, first: int | None, tag: str | None
) -> list[NearestBinary]:
    """The binaries of the spec's package nearest to it: usable first, then by how few
    constraints differ."""
    if first is not None and first < 0:  # as a connection's `first`
        raise UserInputError(f"'first' must be 0 or more, got {first}")
    snapshot = context.store.snapshot(tag)
    count = min(DEFAULT_NEAREST if first is None else first, context.max_first)
    found = nearest(snapshot, _wanted(spec), count)
    objects = spec_objects(snapshot, [n.row for n in found])
    return [
        NearestBinary(spec=obj, differences=[d.text for d in near.differences], usable=near.usable)
        for near, obj in zip(found, objects, strict=True)
    ]
