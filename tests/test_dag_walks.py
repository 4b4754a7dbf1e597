"""The dependency index (parents walked from the matched nodes, hubs' bits) against an
oracle: each spec's full set of nodes below it, by a plain recursive walk of its edges.

Every package name is asked as `^name` (generated and tested, hub or walk), and random
sets of nodes as a `dependsOn`, over a generated mirror and Spack's own test mirrors.
"""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index import IndexStore, build_index
from cachegql.index.disk.dag import Dag, edge_kinds
from cachegql.index.disk.dagwrite import MAX_DEPTH, CycleError, write_dag
from cachegql.index.disk.layout import DAG_FOLDER
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.disk.walk import ancestors
from cachegql.index.ingest.dag_nodes import Edge
from cachegql.index.ingest.edge_arrays import EdgeArrays
from cachegql.index.query.reach import DependsLeaf
from tests.conftest import shared_or_skip

MIRROR = MirrorConfig(specs=1500, packages=120, stacks=3, seed=11, dangling=6)
SHARED_MIRRORS = [
    "spack-test-v2_layout-unsigned-db-v7",
    "spack-test-v2_layout-unsigned-db-v8",
    "spack-test-v2_layout-signed",
    "spack-test-legacy_yaml-db-v6",
]


def _names(tag: Snapshot) -> list[str]:
    """Each node's package name, spec rows then the nodes table's rows."""
    tables = [tag, *([tag.nodes] if tag.nodes is not None else [])]
    column = [t.columns["package"] for t in tables]
    return [c.values[code] for c in column for code in c.codes.tolist()]


def _oracle(dag: Dag) -> list[frozenset[int]]:
    """For each node, every node it depends on at any depth (itself excluded)."""
    children = [[e.target for e in edges or ()] for edges in dag.edges(list(range(dag.num_nodes)))]

    @cache
    def below(node: int) -> frozenset[int]:
        found: set[int] = set()
        for child in children[node]:
            found.add(child)
            found |= below(child)
        return frozenset(found)

    return [below(n) for n in range(dag.num_nodes)]


def _check(tag: Snapshot, rng: random.Random) -> int:
    """Compare every `^name` and some node sets with the oracle; the number of checks."""
    dag = tag.dag
    assert dag is not None
    below = _oracle(dag)
    names = _names(tag)
    tables = [(0, tag.num_specs)]
    if tag.nodes is not None:
        tables.append((tag.num_specs, tag.nodes.num_specs))
    checks = 0
    queries: list[tuple[np.ndarray, str | None]] = [
        (dag.named(name).astype(np.intp), name) for name in sorted(set(names))
    ]
    for size in (1, 3, 40, dag.num_nodes // 3):
        picked = sorted(rng.sample(range(dag.num_nodes), min(size, dag.num_nodes)))
        queries.append((np.array(picked, dtype=np.intp), None))
    for matched, name in queries:
        wanted = set(matched.tolist())
        assert name is None or wanted == {n for n, m in enumerate(names) if m == name}
        for offset, size in tables:
            expected = [r for r in range(size) if below[offset + r] & wanted]
            leaf = DependsLeaf(dag, offset, size, matched, name)
            sample = np.array(sorted(rng.sample(range(size), min(size, 7))), dtype=np.int32)
            # Tested before generating: a leaf that has its answer tests with it.
            assert leaf.test(sample).tolist() == [int(r) in expected for r in sample], name
            assert leaf.rows(0, size).tolist() == expected, name
            assert leaf.test(sample).tolist() == [int(r) in expected for r in sample], name
            checks += 1
    return checks


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> IndexStore:
    out = tmp_path_factory.mktemp("dagwalk")
    summary = write_mirror(MIRROR, out / "m")
    build_index([summary.mirror], out / "ix", tag="develop")
    return IndexStore(out / "ix")


def test_a_generated_mirror_answers_as_the_oracle(generated: IndexStore) -> None:
    tag = generated.snapshot("develop")
    assert tag.dag is not None and tag.dag.hub_bits, "the generated tag has hubs"
    assert _check(tag, random.Random(1)) > 100


def test_a_hub_is_answered_from_its_bits(generated: IndexStore) -> None:
    dag = generated.snapshot("develop").dag
    assert dag is not None
    hub = max(dag.hub_bits, key=lambda name: int(dag.hub_rows(dag.hub_bits[name]).sum()))
    leaf = DependsLeaf(dag, 0, dag.num_specs, dag.named(hub).astype(np.intp), hub)
    rows = leaf.rows(0, dag.num_specs)
    walked = dag.depending_on(dag.named(hub).astype(np.intp))
    assert rows.tolist() == walked[walked < dag.num_specs].tolist()
    # The hubs are the packages the most edges point to: most of the tag uses one.
    assert len(rows) > dag.num_specs // 4


def test_many_candidates_are_tested_against_the_whole_answer(generated: IndexStore) -> None:
    dag = generated.snapshot("develop").dag
    assert dag is not None
    matched = np.array([dag.num_specs + 1, 5], dtype=np.intp)
    candidates = np.arange(dag.num_specs, dtype=np.int32)
    assert dag.test_depending_on(np.zeros(dag.num_nodes, dtype=np.bool_), candidates) is None
    leaf = DependsLeaf(dag, 0, dag.num_specs, matched)
    whole = leaf.test(candidates)
    assert np.flatnonzero(whole).tolist() == leaf.rows(0, dag.num_specs).tolist()
    assert not DependsLeaf(dag, 0, 10, matched[:0]).test(candidates[:10]).any()


@pytest.mark.parametrize("folder", SHARED_MIRRORS)
def test_spack_test_mirrors_answer_as_the_oracle(folder: str, tmp_path: Path) -> None:
    mirror = shared_or_skip() / "mirrors" / folder
    build_index([mirror], tmp_path / "ix", tag="develop")
    tag = IndexStore(tmp_path / "ix").snapshot("develop")
    assert tag.dag is not None, f"{folder} has dependencies"
    assert _check(tag, random.Random(2)) > 0


def test_a_cycle_is_refused(tmp_path: Path) -> None:
    edges = {"a": [Edge("y", "b", ("link",), ())], "b": [Edge("x", "a", ("link",), ())]}
    with pytest.raises(CycleError, match="cycle") as refused:
        write_dag(tmp_path, EdgeArrays.of(edges), ["a", "b"], [], ["x", "y"])
    assert refused.value.nodes == [("x", "a"), ("y", "b")]


def _link(target: str) -> Edge:
    return Edge(target, target, ("link",), ())


def _refused(tmp_path: Path, edges: dict[str, list[Edge]], hashes: list[str]) -> CycleError:
    with pytest.raises(CycleError) as refused:
        write_dag(tmp_path, EdgeArrays.of(edges), hashes, [], hashes)
    assert not (tmp_path / DAG_FOLDER / "hubs.npy").exists()
    return refused.value


def test_a_cycle_names_its_nodes_not_those_around_it(tmp_path: Path) -> None:
    """`top` depends on the cycle b -> c -> d -> b, which depends on `leaf`; `e` is a
    node on its own cycle (e -> e): only the nodes of cycles are named."""
    edges = {
        "top": [_link("b")],
        "b": [_link("c"), _link("leaf")],
        "c": [_link("d")],
        "d": [_link("b")],
        "e": [_link("e"), _link("leaf")],
    }
    hashes = ["top", "b", "c", "d", "e", "leaf"]
    error = _refused(tmp_path, edges, hashes)
    assert str(error) == "its dependencies form a cycle"
    assert error.nodes == [(h, h) for h in ("b", "c", "d", "e")]


def test_a_node_between_two_cycles_is_named_with_them(tmp_path: Path) -> None:
    """a <-> b depends on `x`, which depends on c <-> d: `x` is on no cycle, but between
    two (so the message says so)."""
    edges = {
        "a": [_link("b")],
        "b": [_link("a"), _link("x")],
        "x": [_link("c")],
        "c": [_link("d")],
        "d": [_link("c")],
    }
    hashes = ["a", "b", "x", "c", "d"]
    assert [h for _, h in _refused(tmp_path, edges, hashes).nodes] == hashes


def test_a_chain_deeper_than_the_limit_is_told_as_one(tmp_path: Path) -> None:
    """No cycle, but a chain no Spack DAG is as deep as: refused as such, quickly (the
    placing stops at the limit)."""
    hashes = [f"n{i:05}" for i in range(MAX_DEPTH + 2)]
    edges = {hashes[i]: [_link(hashes[i + 1])] for i in range(len(hashes) - 1)}
    error = _refused(tmp_path, edges, hashes)
    assert str(error) == f"a chain of its dependencies is deeper than {MAX_DEPTH}"
    assert error.nodes == []


def test_a_chain_as_deep_as_the_limit_is_written(tmp_path: Path) -> None:
    hashes = [f"n{i:05}" for i in range(MAX_DEPTH + 1)]
    edges = {hashes[i]: [_link(hashes[i + 1])] for i in range(len(hashes) - 1)}
    write_dag(tmp_path, EdgeArrays.of(edges), hashes, [], hashes)
    dag = Dag(tmp_path / DAG_FOLDER)
    assert dag.depending_on(np.array([MAX_DEPTH], dtype=np.intp)).tolist() == list(range(MAX_DEPTH))


@pytest.mark.parametrize("asked", ["x", "y"])
def test_a_node_whose_edges_come_last_is_found_by_both_walks(tmp_path: Path, asked: str) -> None:
    """`a` depends on `x` and `y`, which have no edges and come last: the walk over every
    edge at once (a wide frontier) finds `a` through its last edge as the walk up does."""
    edges = {"a": [Edge("x", "x", ("link",), ()), Edge("y", "y", ("link",), ())]}
    write_dag(tmp_path, EdgeArrays.of(edges), ["a", "x", "y"], [], ["a", "x", "y"])
    dag = Dag(tmp_path / DAG_FOLDER)
    node = np.array([["a", "x", "y"].index(asked)], dtype=np.intp)
    assert dag.depending_on(node).tolist() == [0]
    assert np.flatnonzero(ancestors(dag.parents, node, dag.num_nodes)).tolist() == [0]


def test_an_edge_to_a_node_without_a_row_is_refused(tmp_path: Path) -> None:
    edges = {"a": [Edge("z", "z", ("link",), ())]}
    with pytest.raises(ValueError, match="neither a spec nor a node row"):
        write_dag(tmp_path, EdgeArrays.of(edges), ["a"], [], ["a"])


def test_the_walk_over_every_edge_answers_as_the_walk_up(tmp_path: Path) -> None:
    """Random DAGs whose last nodes have no edges: both ways of taking a level agree."""
    rng = random.Random(5)
    hashes = [f"h{i:03}" for i in range(300)]
    edges = {
        hashes[i]: [Edge(t, t, ("link",), ()) for t in rng.sample(hashes[i + 1 :], 3)]
        for i in range(200)  # nodes 200-299 depend on nothing
    }
    write_dag(tmp_path, EdgeArrays.of(edges), hashes, [], hashes)
    dag = Dag(tmp_path / DAG_FOLDER)
    for size in (1, 2, 5, 30, 60, 100, 150) * 3:  # the wider ones take the pass over edges
        seeds = np.array(sorted(rng.sample(range(300), size)), dtype=np.intp)
        walked_up = ancestors(dag.parents, seeds, dag.num_nodes)
        assert dag.depending_on(seeds).tolist() == np.flatnonzero(walked_up).tolist()


def test_the_last_few_hubs_keep_their_rows(generated: IndexStore) -> None:
    dag = generated.snapshot("develop").dag
    assert dag is not None
    bits = sorted(dag.hub_bits.values())[:6]
    first = dag.hub_answer(bits[0])
    assert dag.hub_answer(bits[0]) is first, "kept"
    assert not first.flags.writeable
    for bit in bits[1:]:
        dag.hub_answer(bit)
    again = dag.hub_answer(bits[0])
    assert again is not first and again.tolist() == first.tolist(), "dropped, then made again"
    assert again.tolist() == np.flatnonzero(dag.hub_rows(bits[0])).tolist()


@pytest.mark.parametrize(("virtual_names", "dtype"), [(8, "uint8"), (300, "uint16")])
def test_each_edge_reads_back_its_deptypes_and_virtuals_as_one_narrow_kind(
    tmp_path: Path, virtual_names: int, dtype: str
) -> None:
    """An edge's deptypes and virtuals are held as one code into the pairs that occur (a
    byte an edge under 256 pairs), and every edge reads back as written."""
    rng = random.Random(virtual_names)
    deptype_sets = [("build",), ("link",), ("build", "link"), ("run", "test"), ()]
    virtual_sets = [(), *((f"v{i}",) for i in range(virtual_names))]
    hashes = [f"h{i:04}" for i in range(400)]
    edges = {
        hashes[i]: [
            Edge(t, t, rng.choice(deptype_sets), rng.choice(virtual_sets))
            for t in rng.sample(hashes[i + 1 :], min(3, 399 - i))
        ]
        for i in range(399)
    }
    write_dag(tmp_path, EdgeArrays.of(edges), hashes, [], hashes)
    dag = Dag(tmp_path / DAG_FOLDER)
    assert dag.edge_kinds.dtype == np.dtype(dtype)
    read = dag.edges(list(range(len(hashes))))
    written = [[(e.hash, e.deptypes, e.virtuals) for e in edges.get(h, [])] for h in hashes]
    assert [
        [(hashes[e.target], e.deptypes, e.virtuals) for e in node_edges or []]
        for node_edges in read
    ] == written
    # Past the table's limit the pairs are sorted instead: the same codes.
    folder = tmp_path / DAG_FOLDER
    deptypes, virtuals = (np.load(folder / f"edges.{k}.npy") for k in ("deptypes", "virtuals"))
    codes, kinds = edge_kinds(deptypes, virtuals, dag.virtual_sets, table_limit=0)
    assert codes.tolist() == dag.edge_kinds.tolist() and kinds == dag.kinds
    assert edge_kinds(deptypes[:0], virtuals[:0], dag.virtual_sets, table_limit=0)[1] == []


@pytest.mark.parametrize("table_limit", [1 << 22, 0])
def test_mask_bits_past_the_deptypes_are_left_out_as_they_were_read(table_limit: int) -> None:
    """A byte of `edges.deptypes.npy` past the four deptypes' bits reads as its known bits
    (as stop 66's `Dag.edges` read it), either way the pairs are counted."""
    deptypes = np.array([0b10001, 0b10000, 0b00001], dtype=np.uint8)
    codes, kinds = edge_kinds(deptypes, np.zeros(3, dtype=np.int32), [()], table_limit)
    assert codes.tolist() == [1, 0, 1] and kinds == [((), ()), (("build",), ())]


def test_a_deptype_given_twice_reads_back_once(tmp_path: Path) -> None:
    """A source may repeat a deptype: it is one bit of the edge's mask, not the next one
    up (`test` twice was `test` lost, `build` twice read back as `link`)."""
    edges = {
        "a": [Edge("b", "b", ("test", "test"), ()), Edge("c", "c", ("build", "build", "run"), ())]
    }
    write_dag(tmp_path, EdgeArrays.of(edges), ["a", "b", "c"], [], ["a", "b", "c"])
    read = Dag(tmp_path / DAG_FOLDER).edges([0])[0]
    assert read is not None
    assert [edge.deptypes for edge in read] == [("test",), ("build", "run")]
