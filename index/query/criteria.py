"""What a query asks for, as plain immutable data (no GraphQL): string matches and filters."""

from __future__ import annotations

from dataclasses import dataclass

from cachegql.index.errors import CriteriaError, shorten
from cachegql.index.spack.variants import Variant, parse_variant

__all__ = ["PackageCriteria", "SpecCriteria", "StringMatch", "parse_variant_constraint"]

# Longer than any variant a page holds: parsed without the parser's memo, which would
# otherwise keep every long value a client sends alive (it holds 65,536 of them).
MEMO_LIMIT = 256


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
        return (
            self.eq is None
            and self.in_ is None
            and self.prefix is None
            and self.contains is None
            and self.ne is None
        )


def parse_variant_constraint(text: str, what: str = "") -> Variant:
    """`+mpi`, `~shared`, `cuda_arch=80` or `cuda_arch=70,80` (all listed values required).

    A malformed one is a CriteriaError, prefixed by `what` (e.g. "search term"); the
    message quotes the text shortened.
    """
    parse = parse_variant if len(text) <= MEMO_LIMIT else parse_variant.__wrapped__
    try:
        return parse(text)
    except ValueError as exc:
        # The parser quotes the whole text: quote it shortened instead.
        message = str(exc).replace(repr(text), shorten(text))
        raise CriteriaError(f"{what} {shorten(text)}: {message}" if what else message) from None


@dataclass(frozen=True, slots=True)
class SpecCriteria:
    """Constraints on specs; every given one must hold. Empty `any_of` matches nothing.

    `fields` pairs a spec field's name (see `index.fields`) with what its value must match.
    """

    hash_prefix: str | None = None
    fields: tuple[tuple[str, StringMatch], ...] = ()
    hashes: tuple[str, ...] | None = None
    """Full hashes (lower-case), one of which the spec has; empty matches nothing."""
    stack: StringMatch | None = None
    variants: tuple[Variant, ...] = ()
    depends_on: SpecCriteria | None = None
    """Some node of the spec's DAG (any depth, any deptype) satisfies these."""
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
