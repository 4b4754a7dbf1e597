"""Loading a tag's files, each checked against the others.

The arrays must fit together (lengths, codes within their dictionaries, offsets
ascending), so that a build whose files are intact but inconsistent is refused with the
file named instead of failing, or answering wrongly, at some later query.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cachegql.index.disk.columns import Offsets, Postings, load_array, narrow_offsets
from cachegql.index.disk.dag import Dag
from cachegql.index.disk.layout import DAG_FILE
from cachegql.index.disk.verify import IndexLoadError, read_json

__all__ = ["Dictionaries", "bounds", "checked_dag", "value_names"]


def value_names(stored: list[Any]) -> list[str]:
    """A set column's value names; variants are stored as [name, value, raw]."""
    return [value[-1] if isinstance(value, list) else value for value in stored]


class Dictionaries:
    """A tag's `dictionaries.json`: a missing or malformed entry is refused, naming it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        stored = read_json(path)
        if not isinstance(stored, dict):
            raise IndexLoadError(f"{path} is not a JSON object")
        self._stored: dict[str, Any] = stored

    def values(self, name: str) -> Any:
        value = self._stored.get(name)
        if not isinstance(value, list):
            raise IndexLoadError(f"{self.path} has no list {name!r}")
        return value


def bounds(folder: Path, name: str, num_ranges: int, end: int, what: str = "") -> Offsets:
    """Offsets of `num_ranges` consecutive ranges covering 0 to `end` (`what` it is)."""
    offsets: Offsets = load_array(folder, name, "int64", num_ranges + 1)
    if offsets[0] != 0 or offsets[-1] != end or (np.diff(offsets) < 0).any():
        to = f"{end} ({what})" if what else str(end)
        raise IndexLoadError(f"{folder / name}.npy does not ascend from 0 to {to}")
    return offsets


def checked_dag(folder: Path, num_specs: int, num_nodes: int) -> Dag:
    """The tag's DAG, checked against its spec and node tables (`num_nodes`: its specs
    and the rows of its nodes table)."""
    try:
        dag = Dag(folder)
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexLoadError(f"{folder / DAG_FILE} is malformed: {exc!r}") from exc
    edges = len(dag.edge_targets)
    types = (dag.edge_offsets, dag.edge_targets, dag.recorded)
    checks = {
        "the types of its arrays": [a.dtype for a in types]
        == [np.dtype(t) for t in ("int64", "int32", "bool")],
        "the tag's specs": dag.num_specs == num_specs,
        "the tag's specs and nodes": dag.num_nodes == num_nodes,
        "the edges' offsets": len(dag.edge_offsets) == num_nodes + 1
        and dag.edge_offsets[0] == 0
        and dag.edge_offsets[-1] == edges
        and not (np.diff(dag.edge_offsets) < 0).any(),
        "the edges": len(dag.recorded) == num_nodes,
        "the edges' targets": not edges
        or 0 <= dag.edge_targets.min() <= dag.edge_targets.max() < num_nodes,
        "the hubs": set(dag.hub_bits) <= set(dag.name_ids) and len(dag.hub_bits) <= 64,
    }
    for what, holds in checks.items():
        if not holds:
            raise IndexLoadError(f"{folder} does not agree with {what}: the DAG is damaged")
    dag.edge_offsets = narrow_offsets(dag.edge_offsets)
    dag.parents = Postings(dag.parents.items, narrow_offsets(dag.parents.offsets))
    return dag
