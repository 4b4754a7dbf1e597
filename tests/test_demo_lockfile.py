"""The demo lockfile's binaries with their whole DAG in the index, found in one walk."""

from __future__ import annotations

import random

import pytest

from cachegql.demo.lockfile import _closure, _incomplete


def _nodes(rng: random.Random) -> dict[str, dict[str, object]]:
    """A random graph of nodes, edges to nodes out of it too, and cycles."""
    count = rng.randint(1, 40)
    names = [f"n{i}" for i in range(count)]
    nodes: dict[str, dict[str, object]] = {}
    for name in names:
        targets = [*names, "gone1", "gone2"]
        below = rng.sample(targets, rng.randint(0, min(4, len(targets))))
        if rng.random() < 0.7:  # mostly downwards, as a DAG; the rest may close a cycle
            below = [b for b in below if b > name or b.startswith("gone")]
        nodes[name] = {"dependencies": [{"hash": b} for b in below]} if below else {}
    return nodes


@pytest.mark.parametrize("seed", range(200))
def test_incomplete_nodes_are_those_whose_closure_leaves_the_index(seed: int) -> None:
    nodes = _nodes(random.Random(seed))
    expected = {digest for digest in nodes if _closure(digest, nodes) is None}
    assert _incomplete(nodes) == expected
