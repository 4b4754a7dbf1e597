"""The bounds of the list fields that answer users' questions (`schema/questions.py`),
for the cost model (`schema/limits.py`): a list field's longest length, from the index's
bounds and the page size in effect."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cachegql.index import SizeBounds, microarchitectures
from cachegql.schema.environment import MAX_LOCKED_SPECS, MAX_NEAREST_PER_SPEC

__all__ = ["QUESTION_BOUNDS", "QUESTION_LOOKUPS"]


def _archspec_bound() -> int:
    return len(microarchitectures())


def _ancestors_bound() -> int:
    return max((len(m.ancestors) for m in microarchitectures()), default=0)


QUESTION_BOUNDS: Mapping[tuple[str, str], Callable[[SizeBounds, int], int]] = {
    ("Query", "microarchitectures"): lambda bounds, page: _archspec_bound(),
    ("Microarchitecture", "ancestors"): lambda bounds, page: _ancestors_bound(),
    # At most one per hash of the filter's `hash`, each of which the filter already
    # prices at IN_VALUE_COST, more than the item it can add here.
    ("SpecConnection", "missing"): lambda bounds, page: 1,
    # Compares every binary of one package; answers at most `first` of them.
    ("Query", "nearest"): lambda bounds, page: bounds.specs_per_package,
    ("NearestBinary", "differences"): lambda bounds, page: (
        bounds.per_spec.get("variants", 0) + bounds.per_spec.get("dependencies", 0) + 6
    ),
    # A lockfile is checked whole: priced at the most specs it may pin, each with the
    # most nearest binaries it may list.
    ("EnvironmentCheck", "roots"): lambda bounds, page: MAX_LOCKED_SPECS,
    ("EnvironmentCheck", "specs"): lambda bounds, page: MAX_LOCKED_SPECS,
    ("EnvironmentCheck", "problems"): lambda bounds, page: MAX_LOCKED_SPECS,
    ("EnvironmentSpec", "nearest"): lambda bounds, page: MAX_NEAREST_PER_SPEC,
}
QUESTION_LOOKUPS = frozenset({("Query", "nearest"), ("Query", "checkEnvironment")})
"""Root fields that read one package's binaries: priced as a lookup, plus their list."""
