"""The questions the API asks of an index, as plain functions over a snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from cachegql.index.disk.columns import Rows
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.errors import CriteriaError
from cachegql.index.fields import BUCKET_FIELDS
from cachegql.index.query.criteria import PackageCriteria, SpecCriteria
from cachegql.index.query.facets import Bucket
from cachegql.index.query.filtering import package_node, query_node, spec_node
from cachegql.index.query.plan import Node, Nothing, RangeLeaf, RowsLeaf, conjunction
from cachegql.index.query.search import Ranked, WordsMatched, search_packages, search_specs
from cachegql.index.spack.hashes import normalize_prefix
from cachegql.index.spack.specsyntax import parse_spec_query

__all__ = [
    "MAX_CANDIDATES",
    "AmbiguousHashError",
    "Scope",
    "StackSummary",
    "find_packages",
    "find_spec",
    "find_specs",
    "stack",
    "stacks",
]

MAX_CANDIDATES = 10


class AmbiguousHashError(CriteriaError):
    """A hash prefix that matches more than one spec."""

    def __init__(self, prefix: str, candidates: list[str], count: int) -> None:
        super().__init__(
            f"hash prefix {prefix!r} matches {count} specs; give more characters "
            f"(candidates: {', '.join(candidates)}{', ...' if count > len(candidates) else ''})"
        )
        self.candidates = candidates
        self.count = count


@dataclass(frozen=True, slots=True)
class Scope:
    """Where in a tag a query looks: the specs (or packages) of one package or one stack,
    or the specs with a direct dependency on one spec (`name` is then its hash)."""

    kind: Literal["package", "stack", "dependents"]
    name: str

    @classmethod
    def package(cls, name: str) -> Scope:
        return cls("package", name)

    @classmethod
    def stack(cls, name: str) -> Scope:
        return cls("stack", name)

    @classmethod
    def dependents(cls, digest: str) -> Scope:
        return cls("dependents", digest)

    def spec_node(self, snapshot: Snapshot) -> Node:
        if self.kind == "dependents":
            lo, hi = snapshot.hash_prefix_rows(self.name)
            if snapshot.dag is None or hi - lo != 1:
                return Nothing()
            return RowsLeaf(snapshot.dag.dependents(int(snapshot.hash_rows[lo])))
        if self.kind == "package":
            package_id = snapshot.package_id(self.name)
            return (
                Nothing() if package_id is None else RangeLeaf(*snapshot.package_range(package_id))
            )
        stack_id = snapshot.dictionaries["stacks"].ids.get(self.name)
        return (
            Nothing() if stack_id is None else RowsLeaf(snapshot.sets["stacks"].postings(stack_id))
        )

    def package_node(self, snapshot: Snapshot) -> Node:
        if self.kind == "dependents":
            raise ValueError("packages are not scoped by a spec's dependents")
        if self.kind == "package":
            package_id = snapshot.package_id(self.name)
            return Nothing() if package_id is None else RangeLeaf(package_id, package_id + 1)
        stack_id = snapshot.dictionaries["stacks"].ids.get(self.name)
        return (
            Nothing() if stack_id is None else RowsLeaf(snapshot.package_stacks.postings(stack_id))
        )


def find_spec(snapshot: Snapshot, text: str) -> int | None:
    """The row of the one spec whose hash starts with `text` (a full hash or a prefix,
    `/` allowed); None if none; AmbiguousHashError if several."""
    prefix = normalize_prefix(text)
    lo, hi = snapshot.hash_prefix_rows(prefix)
    if hi - lo > 1:
        rows = snapshot.hash_rows[lo : min(hi, lo + MAX_CANDIDATES)]
        raise AmbiguousHashError(prefix, [snapshot.hash_of(int(r)) for r in rows], hi - lo)
    if hi == lo:
        return None
    return int(snapshot.hash_rows.item(lo))


def find_specs(
    snapshot: Snapshot,
    criteria: SpecCriteria | None = None,
    *,
    query: str | None = None,
    search: str | None = None,
    scope: Scope | None = None,
    words: WordsMatched | None = None,
    ordered: bool = True,
) -> Rows:
    """Rows matching everything given, in result order (best first when searching);
    `words`: what the search's words matched already, in this request (`search_specs`);
    not `ordered`: ascending whatever the order of the result (for a count and facets,
    which do not depend on it: sorting 164k rows by score took 2.5 ms). Read, never
    written: they may be a shared, read-only array (a posting list, every row)."""
    parts = [spec_node(snapshot, criteria)]
    if scope is not None:
        parts.append(scope.spec_node(snapshot))
    if query is not None:
        parts.append(query_node(snapshot, parse_spec_query(query)))
    ranked = None if search is None else search_specs(snapshot, search, words)
    return _matching(parts, ranked, snapshot.num_specs, ordered)


def find_packages(
    snapshot: Snapshot,
    criteria: PackageCriteria | None = None,
    *,
    search: str | None = None,
    scope: Scope | None = None,
    words: WordsMatched | None = None,
    ordered: bool = True,
) -> Rows:
    """Package ids matching everything given, by name (or best first when searching);
    `words` and `ordered` as for `find_specs`."""
    parts = [package_node(snapshot, criteria)]
    if scope is not None:
        parts.append(scope.package_node(snapshot))
    ranked = None if search is None else search_packages(snapshot, search, words)
    return _matching(parts, ranked, snapshot.num_packages, ordered)


def _matching(parts: list[Node], ranked: Ranked | None, size: int, ordered: bool = True) -> Rows:
    """Ids in [0, size) matching every part: ascending, or by relevance when searching
    and `ordered`."""
    if ranked is not None:
        parts.append(RowsLeaf(ranked.ids))
    ids = conjunction(parts).rows(0, size)
    if ranked is None or not ordered:
        return ids
    # `ids` are among `ranked.ids` (a `RowsLeaf` of them is one of the parts), and both
    # strictly ascending: as many means the same array.
    if len(ids) == len(ranked.ids):
        own_scores = ranked.scores
    else:
        own_scores = ranked.scores[np.searchsorted(ranked.ids, ids)]
    if not len(ids) or own_scores.min() == own_scores.max():
        return ids  # one score: by id, as the sort below would leave them
    by_relevance: Rows = ids[np.lexsort((ids, -own_scores))]
    return by_relevance


@dataclass(frozen=True, slots=True)
class StackSummary:
    """A stack's counts, and its per-value spec counts for each bucket field by facet name."""

    name: str
    tag: str
    num_specs: int
    num_packages: int
    buckets: dict[str, list[Bucket]]


def stacks(snapshot: Snapshot) -> list[StackSummary]:
    """Every stack of the tag, by name, with its precomputed aggregates."""
    return [_summary(snapshot, s) for s in snapshot.stack_summaries]


def stack(snapshot: Snapshot, name: str) -> StackSummary | None:
    stack_id = snapshot.dictionaries["stacks"].ids.get(name)
    return None if stack_id is None else _summary(snapshot, snapshot.stack_summaries[stack_id])


def _summary(snapshot: Snapshot, data: dict[str, Any]) -> StackSummary:
    facets = [str(field.facet) for field in BUCKET_FIELDS]
    return StackSummary(
        name=data["name"],
        tag=snapshot.tag,
        num_specs=data["specs"],
        num_packages=data["packages"],
        buckets={facet: [(value, count) for value, count in data[facet]] for facet in facets},
    )
