"""How long each kind of list in an answer can be, in the index being served.

A query's cost is priced before it runs (the schema's cost model): a list field costs its
items' cost times how many items it can have, read from the index. Lists of a tag (its
stacks, the values of a facet, its packages) are priced by their real length in the
largest tag. Lists of one spec or one package (its variants, dependencies, versions...)
are priced by the length 99% of them stay within: priced by the longest, every query
would pay for the one outlier package in every row (and twice as many levels of
dependencies, the square of it); the rare query that meets many outliers is stopped by
the time budget instead. Computed once per index build, from arrays already in memory.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.disk.store import IndexStore
from cachegql.index.fields import FACETS, STACKS_FACET

__all__ = ["SizeBounds", "size_bounds"]


@dataclass(frozen=True, slots=True)
class SizeBounds:
    """The longest lists an answer over this index can hold, by kind."""

    tags: int
    packages: int
    """Packages of the largest tag."""
    specs_per_package: int
    """99% of packages have at most this many specs (so as many distinct values)."""
    facet_values: Mapping[str, int]
    """Per facet name (`compilers`, `versions`, `stacks`, ...): the most distinct values
    one tag has, so the most buckets a facet can list."""
    per_spec: Mapping[str, int]
    """Per list of a spec (`versions`, `stacks`, `variants`, `dependencies`): the length
    99% of specs stay within."""


_BOUNDS: weakref.WeakKeyDictionary[IndexStore, SizeBounds] = weakref.WeakKeyDictionary()


def size_bounds(store: IndexStore) -> SizeBounds:
    """The bounds of `store`, computed on first use."""
    bounds = _BOUNDS.get(store)
    if bounds is None:
        bounds = _BOUNDS[store] = _compute(list(store.snapshots.values()))
    return bounds


def _compute(snapshots: list[Snapshot]) -> SizeBounds:
    facet_values = {
        facet: max(
            (
                len(s.sets["stacks"].values) if field is None else len(s.columns[field].values)
                for s in snapshots
            ),
            default=0,
        )
        for facet, field in FACETS.items()
    }
    assert STACKS_FACET in facet_values
    per_spec = {
        name: max((_longest_set(s, name) for s in snapshots), default=0)
        for name in ("versions", "stacks", "variants")
    }
    per_spec["dependencies"] = max((_most_edges(s) for s in snapshots), default=0)
    return SizeBounds(
        tags=len(snapshots),
        packages=max((s.num_packages for s in snapshots), default=0),
        specs_per_package=max((_typical(np.diff(s.package_start)) for s in snapshots), default=0),
        facet_values=facet_values,
        per_spec=per_spec,
    )


TYPICAL = 0.99


def _typical(lengths: npt.NDArray[np.int64], weights: npt.NDArray[np.int64] | None = None) -> int:
    """The length `TYPICAL` of the lists stay within (each length counted `weights` times).

    Counted by length, not sorted: the lengths are short, and a sort of a 1M-spec tag's
    made 38 MB of temporaries on the first query, which the allocator kept for good."""
    if len(lengths) == 0:
        return 0
    per_length = np.bincount(lengths, weights)
    cumulative = np.cumsum(per_length)
    if not cumulative[-1]:  # nothing counts: the shortest list, as a sort would put first
        return int(lengths.min())
    return int(np.searchsorted(cumulative, TYPICAL * cumulative[-1]))


def _longest_set(snapshot: Snapshot, name: str) -> int:
    column = snapshot.sets[name]
    uses = np.bincount(column.codes, minlength=column.num_sets)
    return _typical(column.members.sizes(), uses)


def _most_edges(snapshot: Snapshot) -> int:
    if snapshot.dag is None:
        return 0
    return _typical(np.diff(snapshot.dag.edge_offsets)[: snapshot.num_specs])
