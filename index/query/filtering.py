"""Compile criteria into plan nodes for one tag, and evaluate them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from cachegql.index.budget import check
from cachegql.index.disk.columns import Column, IdArray, Mask, Rows
from cachegql.index.disk.snapshot import Dictionary, Snapshot
from cachegql.index.errors import CriteriaError
from cachegql.index.fields import FACETS
from cachegql.index.query.criteria import PackageCriteria, SpecCriteria, StringMatch
from cachegql.index.query.hashes import hash_rows
from cachegql.index.query.plan import (
    Everything,
    ExceptLeaf,
    HashLeaf,
    Node,
    Nothing,
    RowsLeaf,
    SetLeaf,
    ValuesLeaf,
    conjunction,
    contains,
    disjunction,
    negation,
    within,
)
from cachegql.index.query.reach import DependsLeaf
from cachegql.index.spack.specsyntax import SpecQuery, UnsupportedSpecError
from cachegql.index.spack.targets import target_names

__all__ = [
    "depending_on",
    "package_node",
    "packages_of",
    "pinned_values",
    "query_node",
    "ranges",
    "select",
    "spec_node",
]

FACET_FIELDS = frozenset(field for field in FACETS.values() if field is not None)
"""The single-valued fields a facet counts: those worth pinning."""


def select(dictionary: Dictionary, match: StringMatch) -> IdArray:
    """Ids of the values that satisfy every operator of `match`, ascending.

    An empty value means the source does not say: no operator matches it. An `in` that
    chose the candidates is not tested again on them (each would be looked for among all
    its values); an `eq` or a prefix is, a comparison each (copying the match without it
    cost more).
    """
    values = dictionary.values
    rest = match
    if match.eq is not None:
        candidates = [dictionary.ids[match.eq]] if match.eq in dictionary.ids else []
    elif match.in_ is not None:
        candidates = sorted({dictionary.ids[v] for v in match.in_ if v in dictionary.ids})
        rest = replace(match, in_=None)
    elif match.prefix is not None:
        candidates = dictionary.with_prefix(match.prefix)
    else:
        candidates = list(range(len(values)))
    selected = [i for i in candidates if values[i] and rest.matches(values[i])]
    return np.array(selected, dtype=np.intp)


def pinned_values(snapshot: Snapshot, criteria: SpecCriteria | None) -> dict[str, int]:
    """The value every spec matching `criteria` has, by single-valued field: its id, where
    the criteria's own condition on the field (an `eq`) admits that value alone. Whatever
    else the criteria or a search ask, the rows they leave have it."""
    if criteria is None:
        return {}
    pinned: dict[str, int] = {}
    for field, match in criteria.fields:
        if match.eq is not None and field in FACET_FIELDS:
            ids = select(snapshot.dictionaries[field], match)
            if len(ids) == 1:
                pinned[field] = int(ids[0])
    return pinned


def _match_node(dictionary: Dictionary, column: Column, match: StringMatch) -> Node:
    """The rows of a single-valued `column` whose value satisfies `match`.

    A lone `ne` is every row but those with that value or none (the source does not
    say): kept as that complement, it costs the two values it leaves out, not the
    dictionary.
    """
    if match.ne is not None and match == StringMatch(ne=match.ne):
        known = dictionary.ids
        left_out = sorted({known[v] for v in (match.ne, "") if v in known})
        return ExceptLeaf(column, np.array(left_out, dtype=np.intp)) if left_out else Everything()
    ids = select(dictionary, match)
    return ValuesLeaf(column, ids) if len(ids) else Nothing()


def spec_node(
    snapshot: Snapshot, criteria: SpecCriteria | None, tag: Snapshot | None = None
) -> Node:
    """A plan node for the spec rows of `snapshot` that satisfy `criteria`.

    `snapshot` is a tag, or the table of its other DAG nodes (`tag.nodes`): a nested
    `depends_on` is answered over the whole DAG of `tag`.
    """
    if criteria is None:
        return Everything()
    check()  # once per node of the filter: an `or` may have thousands
    tag = tag or snapshot
    parts: list[Node] = []
    if criteria.hash_prefix is not None:
        lo, hi = snapshot.hash_prefix_rows(criteria.hash_prefix)
        parts.append(HashLeaf(snapshot.hash_rows, snapshot.hash_rank, lo, hi))
    if criteria.hashes is not None:
        parts.append(RowsLeaf(hash_rows(snapshot, criteria.hashes)))
    for field, match in criteria.fields:
        parts.append(_match_node(snapshot.dictionaries[field], snapshot.columns[field], match))
    if criteria.stack is not None:
        ids = select(snapshot.dictionaries["stacks"], criteria.stack)
        parts.append(SetLeaf(snapshot.sets["stacks"], ids) if len(ids) else Nothing())
    parts.extend(_atoms(snapshot, "atoms", (a for v in criteria.variants for a in v.atoms)))
    if criteria.depends_on is not None:
        inner = criteria.depends_on
        name = inner.fields[0][1].eq if inner == _named(inner) else None
        parts.append(
            depending_on(
                snapshot, tag, lambda table: spec_node(table, inner, tag), "dependsOn", name
            )
        )
    parts.extend(spec_node(snapshot, sub, tag) for sub in criteria.all_of)
    if criteria.any_of is not None:
        parts.append(disjunction([spec_node(snapshot, sub, tag) for sub in criteria.any_of]))
    if criteria.not_ is not None:
        parts.append(negation(spec_node(snapshot, criteria.not_, tag)))
    return conjunction(parts)


def _atoms(snapshot: Snapshot, column: str, atoms: Iterable[str]) -> Iterator[Node]:
    """One leaf per required atom of a set column (variant atoms, flag atoms)."""
    ids = snapshot.dictionaries[column].ids
    for atom in atoms:
        atom_id = ids.get(atom)
        if atom_id is None:
            yield Nothing()
        else:
            yield SetLeaf(snapshot.sets[column], np.array([atom_id], dtype=np.intp))


def depending_on(
    snapshot: Snapshot,
    tag: Snapshot,
    build: Callable[[Snapshot], Node],
    what: str,
    name: str | None = None,
) -> Node:
    """The rows of `snapshot` whose DAG has a node (at any depth) matching `build`'s node.

    Nodes are matched in both of the tag's tables: its binaries, and its other nodes
    (outside the cache, matched by what the index records of them). When the node is
    constrained by its package `name` alone, one posting list answers.
    """
    dag = tag.dag
    if dag is None:
        raise CriteriaError(
            f"{what} cannot be answered in tag {tag.tag!r}: its sources (cache pages) record "
            "no dependencies; index a Spack build cache to ask about them"
        )
    offset = 0 if snapshot is tag else tag.num_specs
    if name is not None:
        return DependsLeaf(dag, offset, snapshot.num_specs, dag.named(name).astype(np.intp), name)
    matched = [build(tag).rows(0, tag.num_specs)]
    if tag.nodes is not None:
        matched.append(build(tag.nodes).rows(0, tag.nodes.num_specs) + tag.num_specs)
    return DependsLeaf(dag, offset, snapshot.num_specs, np.concatenate(matched).astype(np.intp))


def query_node(snapshot: Snapshot, query: SpecQuery, tag: Snapshot | None = None) -> Node:
    """A plan node for the spec rows matching a parsed Spack spec query."""
    tag = tag or snapshot
    exact = {
        "package": query.name,
        "compiler_name": query.compiler.name if query.compiler else None,
        "namespace": query.namespace,
        "os": query.os,
        "platform": query.platform,
    }
    fields = tuple((f, StringMatch(eq=v)) for f, v in exact.items() if v is not None)
    if query.target is not None:
        # Spack's ranges and lists (`x86_64_v2:`, `:haswell`, `a,b`) by archspec's order.
        fields += (("target", StringMatch(in_=target_names(query.target))),)
    simple = SpecCriteria(hash_prefix=query.hash_prefix, fields=fields, variants=query.variants)
    parts = [spec_node(snapshot, simple, tag)]
    parts.extend(_atoms(snapshot, "flag_atoms", (f"{k}={f}" for k, f in query.flags)))
    if query.versions is not None:
        ids = snapshot.version_ids(query.versions.ranges)
        parts.append(ValuesLeaf(snapshot.columns["version"], ids) if len(ids) else Nothing())
    if query.compiler is not None and query.compiler.versions is not None:
        ids = snapshot.compiler_ids(query.compiler.name, query.compiler.versions.ranges)
        parts.append(ValuesLeaf(snapshot.columns["compiler"], ids) if len(ids) else Nothing())
    for dependency in query.dependencies:
        if tag.dag is None:
            raise UnsupportedSpecError(
                f"dependency constraints ('^...') cannot be answered in tag {tag.tag!r}: its "
                "sources (cache pages) list no dependencies of a spec",
                dependency.text,
                dependency.position,
            )
        name = dependency.name if _only_named(dependency) else None
        parts.append(depending_on(snapshot, tag, _query_of(dependency, tag), "^", name))
    return conjunction(parts)


def _named(criteria: SpecCriteria) -> SpecCriteria | None:
    """`criteria` as exactly `package: {eq: name}` and nothing else, if that is what it is."""
    if len(criteria.fields) != 1 or criteria.fields[0][0] != "package":
        return None
    name = criteria.fields[0][1].eq
    return SpecCriteria(fields=(("package", StringMatch(eq=name)),)) if name else None


def _only_named(query: SpecQuery) -> bool:
    """A `^name` with no other constraint on that node."""
    bare = SpecQuery(text=query.text, name=query.name, position=query.position)
    return query.name is not None and query == bare


def _query_of(query: SpecQuery, tag: Snapshot) -> Callable[[Snapshot], Node]:
    def build(table: Snapshot) -> Node:
        return query_node(table, query, tag)

    return build


def package_node(snapshot: Snapshot, criteria: PackageCriteria | None) -> Node:
    """A plan node over package ids of `snapshot` that satisfy `criteria`."""
    if criteria is None:
        return Everything()
    check()  # once per node of the filter: an `or` may have thousands
    parts: list[Node] = []
    if criteria.name is not None:
        dictionary = snapshot.dictionaries["package"]
        parts.append(_match_node(dictionary, snapshot.package_names, criteria.name))
    if criteria.stack is not None:
        ids = select(snapshot.dictionaries["stacks"], criteria.stack)
        parts.append(SetLeaf(snapshot.package_stacks, ids) if len(ids) else Nothing())
    if criteria.has_spec is not None:
        parts.append(HasSpec(snapshot, spec_node(snapshot, criteria.has_spec)))
    parts.extend(package_node(snapshot, sub) for sub in criteria.all_of)
    if criteria.any_of is not None:
        parts.append(disjunction([package_node(snapshot, sub) for sub in criteria.any_of]))
    if criteria.not_ is not None:
        parts.append(negation(package_node(snapshot, criteria.not_)))
    return conjunction(parts)


class HasSpec:
    """Packages with at least one spec matching a spec node."""

    def __init__(self, snapshot: Snapshot, specs: Node) -> None:
        self.snapshot, self.specs = snapshot, specs
        self._packages: Rows | None = None

    def estimate(self) -> int:
        return min(self.specs.estimate(), self.snapshot.num_packages)

    def _all_packages(self) -> Rows:
        if self._packages is None:
            rows = self.specs.rows(0, self.snapshot.num_specs)
            self._packages = packages_of(self.snapshot, rows)
        return self._packages

    def rows(self, lo: int, hi: int) -> Rows:
        return within(self._all_packages(), lo, hi)

    def test(self, package_ids: Rows) -> Mask:
        if self._packages is None:
            starts = self.snapshot.package_start[package_ids]
            ends = self.snapshot.package_start[package_ids + 1]
            if int((ends - starts).sum()) < self.specs.estimate():
                # Few candidate packages: test their specs rather than find all matches.
                rows = ranges(starts, ends)
                matched = packages_of(self.snapshot, rows[self.specs.test(rows)])
                return contains(matched, package_ids)
        return contains(self._all_packages(), package_ids)


def packages_of(snapshot: Snapshot, rows: Rows) -> Rows:
    """The distinct packages of sorted spec rows (rows are grouped by package)."""
    codes = snapshot.columns["package"].codes[rows]
    keep = np.empty(len(codes), dtype=np.bool_)
    keep[:1] = True
    np.not_equal(codes[1:], codes[:-1], out=keep[1:])
    # Package ids as rows: int32, whatever narrower type the codes are held in.
    distinct: Rows = codes[keep].astype(np.int32)
    return distinct


def ranges(starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]) -> Rows:
    """All rows of the ranges [starts[i], ends[i]), concatenated."""
    lengths = ends - starts
    total = int(lengths.sum())
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    rows: Rows = (np.arange(total, dtype=np.int64) + offsets).astype(np.int32)
    return rows
