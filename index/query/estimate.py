"""How many rows a query will read, known before it runs, from the index's own statistics.

The planner (`plan`) generates an AND's rows from its most selective part and tests the
others on those rows only, and facets count the rows matched: a query's work follows
the rows of its most selective condition, and the posting list sizes say how many those
are without reading them. `spec_reads` and `package_reads` give that bound from the
criteria alone, with nothing built: a few dictionary lookups and offset reads.

The bound is conservative. A condition whose size is not known that cheaply (a
`prefix`, `contains` or lone `ne` over a dictionary, a `depends_on` other than a
package name, a spec-syntax `query`) counts as reading the whole tag; one whose
planning alone costs work (a `depends_on` that walks the DAG, a `not`) keeps that cost
even inside an AND. A full-text `search` adds what its words bring (`search_reads`: each
word's candidate documents in the text index and their rows), known from the postings of
the words' terms without scoring anything; `UNBOUNDED_READS` where the text index cannot
tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from cachegql.index.disk.columns import Offsets
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.query.criteria import PackageCriteria, SpecCriteria, StringMatch
from cachegql.index.query.search import search_reads

__all__ = ["UNBOUNDED_READS", "package_reads", "spec_reads"]

_C = TypeVar("_C", SpecCriteria, PackageCriteria)

UNBOUNDED_READS = 1 << 62
"""What a query reads when rows do not measure it (a search of a text index that whoosh
searches itself)."""


@dataclass(frozen=True, slots=True)
class _Bound:
    matches: int
    """At most this many rows match."""
    fixed: int
    """Rows read whatever the other conditions of an AND: planning it, a DAG walk."""


def spec_reads(
    snapshot: Snapshot,
    criteria: SpecCriteria | None,
    *,
    query: str | None = None,
    search: str | None = None,
    scope_rows: int | None = None,
    enough: int | None = None,
) -> int:
    """At most how many spec rows answering these read (`find_specs`, then its facets),
    `scope_rows` the size of a scope, if any; a search's reads are counted up to `enough`
    (`search_reads`)."""
    searched = None if search is None else search_reads(snapshot, search, specs=True, enough=enough)
    total = snapshot.num_specs
    bound = _spec_bound(snapshot, criteria)
    matches = bound.matches if scope_rows is None else min(bound.matches, scope_rows)
    fixed = bound.fixed if query is None else total  # spec syntax: not estimated
    return _with_search(search, searched, matches, fixed)


def package_reads(
    snapshot: Snapshot,
    criteria: PackageCriteria | None,
    *,
    search: str | None = None,
    enough: int | None = None,
) -> int:
    """At most how many rows (package ids, and spec rows for `hasSpec`) answering these
    read (`find_packages`); a search's reads are counted up to `enough` (`search_reads`)."""
    searched = (
        None if search is None else search_reads(snapshot, search, specs=False, enough=enough)
    )
    bound = _package_bound(snapshot, criteria)
    return _with_search(search, searched, bound.matches, bound.fixed)


def _with_search(search: str | None, searched: int | None, matches: int, fixed: int) -> int:
    """The rows of a query's conditions, and of its search if any: the search's ids join
    the AND (the rows tested and counted are at most as many), plus what finding them
    read."""
    if search is None:
        return max(matches, fixed)
    if searched is None:
        return UNBOUNDED_READS
    return searched + max(min(matches, searched), fixed)


def _spec_bound(snapshot: Snapshot, criteria: SpecCriteria | None) -> _Bound:
    total = snapshot.num_specs
    if criteria is None:
        return _Bound(total, 0)
    parts: list[_Bound] = []
    if criteria.hash_prefix is not None:
        lo, hi = snapshot.hash_prefix_rows(criteria.hash_prefix)
        parts.append(_Bound(hi - lo, 0))
    if criteria.hashes is not None:
        parts.append(_Bound(len(criteria.hashes), 0))
    for field, match in criteria.fields:
        parts.append(_match_bound(snapshot, field, match, total))
    if criteria.stack is not None:
        parts.append(_match_bound(snapshot, "stacks", criteria.stack, total))
    atoms = snapshot.dictionaries["atoms"].ids
    postings = snapshot.sets["atoms"].postings
    for atom in (a for v in criteria.variants for a in v.atoms):
        atom_id = atoms.get(atom)
        parts.append(_Bound(0 if atom_id is None else _size(postings.offsets, atom_id), 0))
    if criteria.depends_on is not None:
        parts.append(_depends_bound(snapshot, criteria.depends_on, total))
    parts.extend(
        _logic(snapshot, total, criteria.all_of, criteria.any_of, criteria.not_, _spec_bound)
    )
    return _all(parts, total)


def _package_bound(snapshot: Snapshot, criteria: PackageCriteria | None) -> _Bound:
    total = snapshot.num_packages
    if criteria is None:
        return _Bound(total, 0)
    parts: list[_Bound] = []
    if criteria.name is not None:
        match = criteria.name
        known = snapshot.dictionaries["package"].ids
        values = _listed(match)
        parts.append(_Bound(total if values is None else len(values & known.keys()), 0))
    if criteria.stack is not None:
        parts.append(_Bound(total, 0))
    if criteria.has_spec is not None:
        specs = _spec_bound(snapshot, criteria.has_spec)
        # Tested on few candidates, or all its spec rows generated once.
        parts.append(_Bound(min(specs.matches, total), max(specs.fixed, specs.matches)))
    parts.extend(
        _logic(snapshot, total, criteria.all_of, criteria.any_of, criteria.not_, _package_bound)
    )
    return _all(parts, total)


def _logic(
    snapshot: Snapshot,
    total: int,
    all_of: Sequence[_C],
    any_of: Sequence[_C] | None,
    not_: _C | None,
    bound: Callable[[Snapshot, _C], _Bound],
) -> list[_Bound]:
    """The bounds of a filter's `allOf`, `anyOf` and `not`: a NOT may match everything, but
    plans what it negates."""
    parts = [bound(snapshot, sub) for sub in all_of]
    if any_of is not None:
        parts.append(_any(bound(snapshot, sub) for sub in any_of))
    if not_ is not None:
        parts.append(_Bound(total, bound(snapshot, not_).fixed))
    return parts


def _all(parts: list[_Bound], total: int) -> _Bound:
    """An AND: as few matches as its most selective part, the planning of every part."""
    if not parts:
        return _Bound(total, 0)
    return _Bound(min(p.matches for p in parts), max(p.fixed for p in parts))


def _any(parts: Iterable[_Bound]) -> _Bound:
    """An OR: the matches of all its parts, the planning of every part."""
    bounds = list(parts)
    return _Bound(sum(b.matches for b in bounds), max((b.fixed for b in bounds), default=0))


def _listed(match: StringMatch) -> set[str] | None:
    """The values an `eq` or `in` allows (the other operators only narrow them); None
    when neither is given."""
    if match.eq is not None:
        return {match.eq}
    if match.in_ is not None:
        return set(match.in_)
    return None


def _match_bound(snapshot: Snapshot, field: str, match: StringMatch, total: int) -> _Bound:
    """The rows of the values an `eq` or `in` names: their posting lists' sizes."""
    values = _listed(match)
    if values is None:
        return _Bound(total, 0)
    ids = snapshot.dictionaries[field].ids
    postings = (
        snapshot.sets[field].postings if field == "stacks" else snapshot.columns[field].postings
    )
    return _Bound(sum(_size(postings.offsets, ids[v]) for v in values if v in ids), 0)


def _depends_bound(snapshot: Snapshot, inner: SpecCriteria, total: int) -> _Bound:
    """A `depends_on` of a package name alone is a posting list of the DAG (or a hub's
    bits), tested on the candidates; anything else matches its nodes over the whole DAG
    before any candidate is tested."""
    if snapshot.dag is not None and len(inner.fields) == 1 and not _others(inner):
        field, match = inner.fields[0]
        if field == "package" and match == StringMatch(eq=match.eq):
            return _Bound(total, 0)
    return _Bound(total, total)


def _others(criteria: SpecCriteria) -> bool:
    """Whether `criteria` has anything besides its `fields`."""
    return criteria != SpecCriteria(fields=criteria.fields)


def _size(offsets: Offsets, value: int) -> int:
    size: int = offsets.item(value + 1) - offsets.item(value)
    return size
