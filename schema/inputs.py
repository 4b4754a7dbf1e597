"""Filter inputs of the API, and their translation into index criteria."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Optional

import strawberry

from cachegql.index import (
    SPEC_FIELDS,
    CriteriaError,
    PackageCriteria,
    SpecCriteria,
    StringMatch,
    full_hash,
    normalize_prefix,
    parse_variant_constraint,
    runs_on,
)

__all__ = [
    "PackageFilter",
    "PackageFilterArg",
    "SpecFilter",
    "SpecFilterArg",
    "StringFilter",
    "asked_hashes",
    "package_criteria",
    "spec_criteria",
]


@strawberry.input(description="String matching; all given operators must hold.")
class StringFilter:
    eq: str | None = None
    in_: list[str] | None = strawberry.field(name="in", default=None)
    prefix: str | None = None
    contains: str | None = None
    ne: str | None = None


@strawberry.input
class SpecFilter:
    hash_prefix: str | None = None
    package: StringFilter | None = None
    version: StringFilter | None = None
    compiler: StringFilter | None = strawberry.field(
        default=None, description='Against the normalized "name@version".'
    )
    compiler_name: StringFilter | None = None
    os: StringFilter | None = None
    platform: StringFilter | None = None
    target: StringFilter | None = None
    stack: StringFilter | None = strawberry.field(
        default=None, description="Holds when any of the spec's stacks matches."
    )
    variants: list[str] | None = strawberry.field(
        default=None,
        description='Every one must hold: "+cuda", "~shared", "cuda_arch=80", '
        '"build_system=cmake".',
    )
    and_: list[SpecFilter] | None = strawberry.field(name="and", default=None)
    or_: list[SpecFilter] | None = strawberry.field(name="or", default=None)
    not_: Optional[SpecFilter] = strawberry.field(name="not", default=None)  # noqa: UP045
    namespace: StringFilter | None = None
    depends_on: Optional[SpecFilter] = strawberry.field(  # noqa: UP045
        default=None,
        description="Some node of the spec's DAG (any depth, any deptype) matches; nodes "
        "outside the cache match with the fields the index records. An error on a tag "
        "read from pages, which record no dependencies.",
    )
    runs_on: str | None = strawberry.field(
        default=None,
        description='Binaries that run on this microarchitecture ("zen2"): built for it or for '
        "one of its ancestors in archspec's DAG (x86_64_v3, zen, x86_64, ...). An unknown "
        "name is an error naming close matches; the `microarchitectures` query lists them.",
    )
    hash: StringFilter | None = strawberry.field(
        default=None,
        description="Full hashes: `eq` or `in` (e.g. the 300 hashes of a CI job). The "
        "connection's `missing` lists those of them that match no spec.",
    )


@strawberry.input
class PackageFilter:
    name: StringFilter | None = None
    stack: StringFilter | None = strawberry.field(
        default=None, description="The package has a spec in a matching stack."
    )
    has_spec: SpecFilter | None = strawberry.field(
        default=None,
        description="Nested: the package has at least one spec matching this filter.",
    )
    and_: list[PackageFilter] | None = strawberry.field(name="and", default=None)
    or_: list[PackageFilter] | None = strawberry.field(name="or", default=None)
    not_: Optional[PackageFilter] = strawberry.field(name="not", default=None)  # noqa: UP045


def string_match(value: StringFilter | None) -> StringMatch | None:
    if value is None:
        return None
    match = StringMatch(
        eq=value.eq,
        in_=None if value.in_ is None else tuple(value.in_),
        prefix=value.prefix,
        contains=value.contains,
        ne=value.ne,
    )
    return None if match.is_empty else match


_SPEC_FIELD_NAMES = tuple(f.name for f in SPEC_FIELDS)


def spec_criteria(value: SpecFilter | None) -> SpecCriteria | None:
    """The index criteria for a SpecFilter; raises CriteriaError on unusable values."""
    if value is None:
        return None
    # The StringFilter fields of SpecFilter are the spec fields of the index, by name; a
    # filter names few of them (each field left out costs a call less).
    matches = ((name, getattr(value, name)) for name in _SPEC_FIELD_NAMES)
    criteria = SpecCriteria(
        hash_prefix=None if value.hash_prefix is None else normalize_prefix(value.hash_prefix),
        fields=tuple(
            (name, match)
            for name, given in matches
            if given is not None and (match := string_match(given)) is not None
        ),
        stack=string_match(value.stack),
        variants=tuple(map(parse_variant_constraint, value.variants)) if value.variants else (),
        depends_on=None if value.depends_on is None else spec_criteria(value.depends_on),
        all_of=tuple(c for c in map(spec_criteria, value.and_) if c is not None)
        if value.and_
        else (),
        any_of=None
        if value.or_ is None
        else tuple(spec_criteria(c) or SpecCriteria() for c in value.or_),
        not_=spec_criteria(value.not_),
        hashes=_hashes(value.hash),
    )
    if value.runs_on is not None:
        targets = StringMatch(in_=runs_on(value.runs_on))
        runs = SpecCriteria(fields=(("target", targets),))
        criteria = replace(criteria, all_of=(*criteria.all_of, runs))
    return criteria


def _hashes(value: StringFilter | None) -> tuple[str, ...] | None:
    """The full hashes of a `hash` filter: those of `eq` and of `in` (both must hold)."""
    if value is None:
        return None
    if value.prefix is not None or value.contains is not None or value.ne is not None:
        raise CriteriaError("hash takes eq and in (full hashes); use hashPrefix for a prefix")
    eq = None if value.eq is None else {full_hash(value.eq)}
    in_ = None if value.in_ is None else {full_hash(h) for h in value.in_}
    if eq is None and in_ is None:
        return None
    if eq is not None and in_ is not None:
        return tuple(sorted(eq & in_))
    return tuple(sorted(eq or in_ or ()))


def asked_hashes(value: SpecFilter | None) -> list[str]:
    """The full hashes a filter's top-level `hash` names, in the order given, once each."""
    if value is None or value.hash is None:
        return []
    listed = ([value.hash.eq] if value.hash.eq is not None else []) + list(value.hash.in_ or ())
    return list(dict.fromkeys(full_hash(h) for h in listed))


def package_criteria(value: PackageFilter | None) -> PackageCriteria | None:
    """The index criteria for a PackageFilter."""
    if value is None:
        return None
    return PackageCriteria(
        name=string_match(value.name),
        stack=string_match(value.stack),
        has_spec=None
        if value.has_spec is None
        else spec_criteria(value.has_spec) or SpecCriteria(),
        all_of=tuple(c for c in map(package_criteria, value.and_ or ()) if c is not None),
        any_of=None
        if value.or_ is None
        else tuple(package_criteria(c) or PackageCriteria() for c in value.or_),
        not_=package_criteria(value.not_),
    )


SpecFilterArg = Annotated[SpecFilter | None, strawberry.argument(name="filter")]
PackageFilterArg = Annotated[PackageFilter | None, strawberry.argument(name="filter")]
