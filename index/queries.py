"""The questions the API asks of an index, as plain functions over a snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from index.build import buckets
from index.columns import Rows
from index.criteria import CriteriaError, PackageCriteria, SpecCriteria
from index.filtering import package_node, query_node, spec_node
from index.hashes import normalize_prefix
from index.plan import Node, RowsLeaf, conjunction
from index.search import search_packages, search_specs
from index.snapshot import Snapshot, SpecData
from index.specquery import parse_spec_query
from index.store import IndexStore

MAX_CANDIDATES = 10
FACET_COLUMNS = {
    "compilers": "compiler",
    "oss": "os",
    "platforms": "platform",
    "targets": "target",
    "versions": "version",
    "packages": "package",
}
Bucket = tuple[str, int]


class AmbiguousHashError(CriteriaError):
    """A hash prefix that matches more than one spec."""

    def __init__(self, prefix: str, candidates: list[str], count: int) -> None:
        super().__init__(
            f"hash prefix {prefix!r} matches {count} specs; give more characters "
            f"(candidates: {', '.join(candidates)}{', ...' if count > len(candidates) else ''})"
        )
        self.candidates = candidates
        self.count = count


def spec_by_hash(snapshot: Snapshot, text: str) -> SpecData | None:
    """The one spec whose hash starts with `text`; None if none; AmbiguousHashError if several."""
    prefix = normalize_prefix(text)
    lo, hi = snapshot.hash_prefix_rows(prefix)
    if hi - lo > 1:
        rows = snapshot.hash_rows[lo : min(hi, lo + MAX_CANDIDATES)]
        raise AmbiguousHashError(prefix, [snapshot.hash_of(int(r)) for r in rows], hi - lo)
    if hi == lo:
        return None
    return snapshot.specs([int(snapshot.hash_rows[lo])])[0]


def find_specs(
    store: IndexStore,
    snapshot: Snapshot,
    criteria: SpecCriteria | None = None,
    *,
    query: str | None = None,
    search: str | None = None,
    within: list[Node] | None = None,
) -> Rows:
    """Rows matching everything given, in result order (best first when searching)."""
    parts = [spec_node(snapshot, criteria), *(within or [])]
    if query is not None:
        parts.append(query_node(snapshot, parse_spec_query(query)))
    ranked = search_specs(snapshot, store.text, search) if search is not None else None
    if ranked is not None:
        parts.append(RowsLeaf(ranked.ids))
    rows = conjunction(parts).rows(0, snapshot.num_specs)
    if ranked is None:
        return rows
    return _reorder(rows, ranked.ids, ranked.scores)


def find_packages(
    store: IndexStore,
    snapshot: Snapshot,
    criteria: PackageCriteria | None = None,
    *,
    search: str | None = None,
    within: list[Node] | None = None,
) -> Rows:
    """Package ids matching everything given, by name (or best first when searching)."""
    parts = [package_node(snapshot, criteria), *(within or [])]
    ranked = search_packages(snapshot, store.text, search) if search is not None else None
    if ranked is not None:
        parts.append(RowsLeaf(ranked.ids))
    ids = conjunction(parts).rows(0, snapshot.num_packages)
    if ranked is None:
        return ids
    return _reorder(ids, ranked.ids, ranked.scores)


def _reorder(ids: Rows, ranked_ids: Rows, scores: Any) -> Rows:
    """`ids` (a subset of the sorted `ranked_ids`) by score descending, then id."""
    own_scores = scores[np.searchsorted(ranked_ids, ids)]
    ordered: Rows = ids[np.lexsort((ids, -own_scores))]
    return ordered


def facets(snapshot: Snapshot, rows: Rows, name: str) -> list[Bucket]:
    """Counts per value of one facet over all `rows`, count descending then value."""
    whole = len(rows) == snapshot.num_specs
    if name == "stacks":
        column = snapshot.sets["stacks"]
        set_counts = np.bincount(column.codes[rows], minlength=column.num_sets)
        counts = np.zeros(len(column.values), dtype=np.int64)
        for code in np.flatnonzero(set_counts).tolist():
            counts[column.members(code)] += set_counts[code]
        return _buckets(counts, column.values)
    single = snapshot.columns[FACET_COLUMNS[name]]
    if whole:
        return _buckets(single.postings.sizes(), single.values)
    return buckets(single.codes[rows], single.values)


def _buckets(counts: Any, names: list[str]) -> list[Bucket]:
    present = np.flatnonzero(counts)
    return sorted(((names[i], int(counts[i])) for i in present), key=lambda b: (-b[1], b[0]))


@dataclass(frozen=True, slots=True)
class StackSummary:
    name: str
    tag: str
    num_specs: int
    num_packages: int
    compilers: list[Bucket]
    oss: list[Bucket]
    platforms: list[Bucket]
    targets: list[Bucket]


def stacks(snapshot: Snapshot) -> list[StackSummary]:
    """Every stack of the tag, by name, with its precomputed aggregates."""
    return [_summary(snapshot, s) for s in snapshot.stack_summaries]


def stack(snapshot: Snapshot, name: str) -> StackSummary | None:
    stack_id = snapshot.dictionaries["stacks"].ids.get(name)
    return None if stack_id is None else _summary(snapshot, snapshot.stack_summaries[stack_id])


def _summary(snapshot: Snapshot, data: dict[str, Any]) -> StackSummary:
    return StackSummary(
        name=data["name"],
        tag=snapshot.tag,
        num_specs=data["specs"],
        num_packages=data["packages"],
        compilers=[tuple(b) for b in data["compilers"]],
        oss=[tuple(b) for b in data["oss"]],
        platforms=[tuple(b) for b in data["platforms"]],
        targets=[tuple(b) for b in data["targets"]],
    )


def stack_rows(snapshot: Snapshot, name: str) -> Rows:
    """The spec rows of one stack, ascending."""
    stack_id = snapshot.dictionaries["stacks"].ids[name]
    rows: Rows = snapshot.sets["stacks"].postings(stack_id)
    return rows


def stack_packages(snapshot: Snapshot, name: str) -> Rows:
    stack_id = snapshot.dictionaries["stacks"].ids[name]
    ids: Rows = snapshot.package_stacks.postings(stack_id)
    return ids
