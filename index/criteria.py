"""What a query asks for, as plain immutable data (no GraphQL): string matches and filters."""

from __future__ import annotations

from dataclasses import dataclass

from index.variants import Variant, parse_variant


class CriteriaError(ValueError):
    """A filter that cannot mean anything, explained for the user."""


@dataclass(frozen=True, slots=True)
class StringMatch:
    """String operators on one field; all that are given must hold. Case-sensitive."""

    eq: str | None = None
    in_: tuple[str, ...] | None = None
    prefix: str | None = None
    contains: str | None = None
    ne: str | None = None

    def matches(self, value: str) -> bool:
        return (
            (self.eq is None or value == self.eq)
            and (self.in_ is None or value in self.in_)
            and (self.prefix is None or value.startswith(self.prefix))
            and (self.contains is None or self.contains in value)
            and (self.ne is None or value != self.ne)
        )

    @property
    def is_empty(self) -> bool:
        return all(v is None for v in (self.eq, self.in_, self.prefix, self.contains, self.ne))


@dataclass(frozen=True, slots=True)
class VariantConstraint:
    """`+mpi`, `~shared`, `cuda_arch=80` or `cuda_arch=70,80` (all listed values required)."""

    variant: Variant

    @classmethod
    def parse(cls, text: str) -> VariantConstraint:
        try:
            return cls(parse_variant(text))
        except ValueError as exc:
            raise CriteriaError(str(exc)) from None

    @property
    def atoms(self) -> tuple[str, ...]:
        return self.variant.atoms


@dataclass(frozen=True, slots=True)
class SpecCriteria:
    """Constraints on specs; every given field must hold. Empty `any_of` matches nothing."""

    hash_prefix: str | None = None
    package: StringMatch | None = None
    version: StringMatch | None = None
    compiler: StringMatch | None = None
    compiler_name: StringMatch | None = None
    os: StringMatch | None = None
    platform: StringMatch | None = None
    target: StringMatch | None = None
    stack: StringMatch | None = None
    variants: tuple[VariantConstraint, ...] = ()
    all_of: tuple[SpecCriteria, ...] = ()
    any_of: tuple[SpecCriteria, ...] | None = None
    not_: SpecCriteria | None = None


@dataclass(frozen=True, slots=True)
class PackageCriteria:
    """Constraints on packages; every given field must hold."""

    name: StringMatch | None = None
    stack: StringMatch | None = None
    has_spec: SpecCriteria | None = None
    all_of: tuple[PackageCriteria, ...] = ()
    any_of: tuple[PackageCriteria, ...] | None = None
    not_: PackageCriteria | None = None
