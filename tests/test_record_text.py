"""An index record read from its text (`read_record`) is the node `read_node` reads from the
parsed record; a record it does not read (None) is left to `read_node`, which says what is
wrong with it, so a build reads every index as it did before.

Compared on the records of a generated mirror, on every shape of node Spack has written
(DB 5 to 9, built here), on records `read_node` refuses, and on the real indexes of
../shared/mirrors (the corpus suite).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index.ingest.dag_nodes import Database, Node
from cachegql.index.ingest.node_reader import NodeMemo, read_node, read_record
from cachegql.index.ingest.spackdb import read_database
from tests.conftest import shared_or_skip

ZLIB = "t5mczux3tfqpxwmg7egp7axy2jvyulqk"
GCC = "ifo2q2el7pbwbwfhsyldwcfgtjhghgcl"
DIGEST = "aa7q7ze5r5be6vwfbzlaln3no7ea3cww"


def node_of(record: Any, digest: str, memo: NodeMemo | None = None) -> Node:
    """What a build read from a parsed record before `read_record` (spackdb.py)."""
    if not isinstance(record, dict) or not isinstance(record.get("spec"), dict):
        raise ValueError("expected {'spec': {...}, 'in_buildcache': ...}")
    flag = bool(record.get("in_buildcache"))
    return read_node(record["spec"], digest, flag, memo or NodeMemo())


def spec(**changes: Any) -> dict[str, Any]:
    """A DB 8 node (Spack 1.0), with `changes` (a None value drops the key)."""
    node: dict[str, Any] = {
        "name": "gcc-runtime",
        "version": "11.4.0",
        "arch": {"platform": "linux", "platform_os": "ubuntu22.04", "target": "x86_64_v3"},
        "namespace": "builtin",
        "parameters": {
            "build_system": "generic",
            "shared": True,
            "pic": False,
            "patches": ["0123456789abcdef", "fedcba9876543210"],
            "languages": ["c", "c++"],
            "cflags": ["-O2"],
            "cppflags": [],
            "cxxflags": [],
            "fflags": [],
            "ldflags": [],
            "ldlibs": [],
        },
        "package_hash": "dby2idbud6ufexh5spbf45jn6r6sf7qkwavefobv6qkvyl3ligka====",
        "dependencies": [
            {"name": "gcc", "hash": GCC, "parameters": {"deptypes": ["build"], "virtuals": []}},
            {
                "name": "zlib",
                "hash": ZLIB,
                "parameters": {"deptypes": ["build", "link"], "virtuals": ["c", "cxx"]},
            },
        ],
        "annotations": {"original_specfile_version": 5},
        "hash": DIGEST,
    }
    node.update(changes)
    return {key: value for key, value in node.items() if value is not None}


def record(node: Any, **changes: Any) -> bytes:
    return orjson.dumps({"spec": node, "ref_count": 2, "in_buildcache": True, **changes})


READ_ALIKE = {
    "DB 8": record(spec()),
    "not a binary": record(spec(), in_buildcache=False),
    "no flag": orjson.dumps({"spec": spec()}),
    "DB 6 edges (type)": record(
        spec(dependencies=[{"name": "zlib", "hash": ZLIB, "type": ["build", "link"]}])
    ),
    "DB 5 edges in a flat node": record(
        spec(dependencies={"zlib": {"hash": ZLIB, "type": ["link"]}})
    ),
    "DB 7 compiler": record(spec(compiler={"name": "gcc", "version": "10.2.1"})),
    "a compiler version that is a number": record(spec(compiler={"name": "gcc", "version": 10})),
    "a compiler of no version": record(spec(compiler={"name": "apple-clang"})),
    "an annotated compiler": record(spec(annotations={"compiler": "gcc@=12.3.0"})),
    "an annotation that is no compiler": record(spec(annotations={"compiler": "@@"})),
    "a microarchitecture target": record(
        spec(
            arch={
                "platform": "test",
                "platform_os": "debian6",
                "target": {"name": "core2", "vendor": "GenuineIntel", "features": ["mmx"]},
            }
        )
    ),
    "no namespace": record(spec(namespace=None)),
    "a null namespace": orjson.dumps({"spec": {**spec(), "namespace": None}}),
    "no parameters": record(spec(parameters=None)),
    "null parameters": orjson.dumps({"spec": {**spec(), "parameters": None}}),
    "no dependencies": record(spec(dependencies=None)),
    "null dependencies": orjson.dumps({"spec": {**spec(), "dependencies": None}}),
    "no edges": record(spec(dependencies=[])),
    "a '},{' in a dependency's value (the list is not cut there)": record(
        spec(
            dependencies=[
                {"name": "zlib", "hash": ZLIB, "parameters": {"virtuals": ["a},{b"]}},
                {"name": "gcc", "hash": GCC, "parameters": {"deptypes": ["build"], "virtuals": []}},
            ]
        )
    ),
    "a space between dependencies": record(spec()).replace(b'}},{"name"', b'}}, {"name"'),
    "variants of every kind": record(
        spec(parameters={"a": None, "b": 1.5, "c": ["y", "x"], "d": [], "e": "v", "f": True})
    ),
    "escapes in values": b'{"spec":{"name":"zlib","version":"1.2\\u002e11","arch":{"platform":'
    b'"linux","platform_os":"ubuntu22.04","target":"x86_64"},"parameters":{"tag":"a\\u0062"}}}',
    "a key given twice (the last counts)": orjson.dumps({"spec": spec()})[:-2]
    + b',"version":"12.1.0"}}',
    "pretty-printed": orjson.dumps({"spec": spec()}, option=orjson.OPT_INDENT_2),
    "a large number in a field not read": record(spec())[:-1]
    + b',"n":123456789012345678901234567}',
}


@pytest.mark.parametrize("name", list(READ_ALIKE))
def test_a_record_of_each_shape_is_read_as_read_node_reads_it(name: str) -> None:
    text = READ_ALIKE[name]
    node = read_record(text, DIGEST, NodeMemo())
    assert node is not None
    assert node == node_of(orjson.loads(text), DIGEST)


HUGE = b"9" * 400  # an integer beyond a double's range: orjson refuses it

LEFT_TO_READ_NODE = {
    "a flag that is not a boolean": record(spec(), in_buildcache=1),
    "a null flag": record(spec(), in_buildcache=None),
    "a flag beyond a double": record(spec())[:-5] + HUGE + b"}",
    "a version that is a number": record(spec(version=2)),
    "a name that is a number": record(spec(name=7)),
    "an empty name": record(spec(name="")),
    "an empty version": record(spec(version="")),
    "an empty platform": record(
        spec(arch={"platform": "", "platform_os": "debian6", "target": "x86_64"})
    ),
    "an empty os": record(spec(arch={"platform": "linux", "platform_os": "", "target": "x86_64"})),
    "no target": record(spec(arch={"platform": "linux", "platform_os": "debian6"})),
    "an empty target": record(
        spec(arch={"platform": "linux", "platform_os": "debian6", "target": ""})
    ),
    "a target of no name": record(
        spec(arch={"platform": "linux", "platform_os": "debian6", "target": {"vendor": "x"}})
    ),
    "a target that is a number": record(
        spec(arch={"platform": "linux", "platform_os": "debian6", "target": 5})
    ),
    "an arch that is a string": record(spec(arch="linux-debian6-x86_64")),
    "no arch": record(spec(arch=None)),
    "a namespace that is a number": record(spec(namespace=3)),
    "parameters that are a string": record(spec(parameters="shared")),
    "a variant that cannot be read": record(spec(parameters={"": True})),
    "a dependency of no hash": record(spec(dependencies=[{"name": "zlib"}])),
    "a dependency hash that is no hash": record(
        spec(dependencies=[{"name": "zlib", "hash": "ZLIB"}])
    ),
    "dependencies that are a string": record(spec(dependencies="zlib")),
    "a dependency that is a string": record(spec(dependencies=["zlib"])),
    "deptypes that are numbers": record(
        spec(dependencies=[{"name": "zlib", "hash": ZLIB, "type": [1]}])
    ),
    "a DB 5 node (name-keyed)": record({"zlib": {k: v for k, v in spec().items() if k != "name"}}),
    "a spec that is a list": record([spec()]),
    "no spec": orjson.dumps({"in_buildcache": True}),
    "a record that is a list": orjson.dumps([spec()]),
    "text that is not ASCII": record(spec(version="1.0-é")),
    "not ASCII in a field not read": record(spec(description="naïve")),
}


@pytest.mark.parametrize("name", list(LEFT_TO_READ_NODE))
def test_a_record_read_node_must_judge_is_left_to_it(name: str) -> None:
    assert read_record(LEFT_TO_READ_NODE[name], DIGEST, NodeMemo()) is None


GOOD = record(spec())
NOT_JSON = {
    "cut short": GOOD[:-3],
    "a lone surrogate": GOOD.replace(b'"generic"', b'"gen\\ud800"'),
    "NaN in a field not read": GOOD[:-1] + b',"x":NaN}',
    "a control character": GOOD.replace(b'"gcc-runtime"', b'"gcc\x01runtime"'),
    "nesting deeper than orjson reads": GOOD[:-1] + b',"x":' + b"[" * 1100 + b"]" * 1100 + b"}",
    "text after the record": GOOD + b"x",
}


@pytest.mark.parametrize("name", list(NOT_JSON))
def test_text_that_is_not_json_is_left_to_the_parser(name: str) -> None:
    """A whole record but for what makes it not JSON (orjson refuses it too)."""
    assert read_record(GOOD, DIGEST, NodeMemo()) is not None
    text = NOT_JSON[name]
    assert text != GOOD
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(text)
    assert read_record(text, DIGEST, NodeMemo()) is None


def test_a_digest_that_is_no_hash_is_left_to_read_node() -> None:
    assert read_record(READ_ALIKE["DB 8"], "not-a-hash", NodeMemo()) is None


def test_a_memo_for_spec_files_is_not_used() -> None:
    """A spec file's memo (YAML: no keys) is read_node's alone."""
    assert read_record(READ_ALIKE["DB 8"], DIGEST, NodeMemo(keyed=False)) is None


def test_one_memo_shares_what_both_ways_read() -> None:
    """Parameters and edges are memoised by their text, whichever way read them first: equal
    values are one object, and a node read either way is the same."""
    texts = [
        READ_ALIKE["DB 8"],
        READ_ALIKE["pretty-printed"],  # other text, the same values: other keys
        READ_ALIKE["not a binary"],
        READ_ALIKE["DB 7 compiler"],
        READ_ALIKE["escapes in values"],
        READ_ALIKE["DB 6 edges (type)"],
    ] * 2
    texts[:0] = [READ_ALIKE["a '},{' in a dependency's value (the list is not cut there)"]] * 2
    memo = NodeMemo()
    nodes = []
    for position, text in enumerate(texts):
        fast = position % 2 == 0
        node = (
            read_record(text, DIGEST, memo) if fast else node_of(orjson.loads(text), DIGEST, memo)
        )
        assert node is not None
        nodes.append(node)
    assert nodes == [node_of(orjson.loads(text), DIGEST) for text in texts]
    first, second = nodes[2], nodes[8]  # the same text, both read from it
    assert first.edges[1] is second.edges[1] and first.variants is second.variants


def test_a_node_is_read_with_its_compiler_edges_one_tuple_per_set() -> None:
    """Either way, a node carries those of its edges that provide languages (what names its
    compiler when it records none), as one tuple for every node of a source with the same
    ones; the compiler they name is the one worked out from the edges themselves."""
    gcc = {"name": "gcc", "hash": GCC, "parameters": {"deptypes": ["build"], "virtuals": ["c"]}}
    zlib = {"name": "zlib", "hash": ZLIB, "parameters": {"deptypes": ["link"], "virtuals": []}}
    texts = [record(spec(dependencies=[gcc, zlib])), record(spec(dependencies=[zlib, gcc]))]
    texts.append(record(spec(dependencies=[zlib])))
    memo = NodeMemo()
    fast = [read_record(text, DIGEST, memo) for text in texts]
    slow = [node_of(orjson.loads(text), DIGEST, memo) for text in texts]
    assert fast == slow and None not in fast
    providing = [node.compiler_edges or () for node in [*fast, *slow] if node is not None]
    assert [[edge.name for edge in edges] for edges in providing] == [["gcc"], ["gcc"], []] * 2
    assert len({id(edges) for edges in providing if edges}) == 1  # one tuple, shared
    gcc_node = node_of(orjson.loads(record(spec(name="gcc", version="13.2.0"))), GCC)
    compilers = []
    for node in fast:
        assert node is not None
        unset = node._replace(compiler_edges=None)  # made elsewhere: worked out from edges
        # A database each: one keeps the compiler of each set of edges it has worked out.
        set_, found = (Database("index.json", 8, {GCC: gcc_node}) for _ in range(2))
        compilers.append((set_.compiler_of(node).raw, found.compiler_of(unset).raw))
    assert compilers == [("c=gcc@13.2.0",) * 2] * 2 + [("none", "none")]


def parses(text: bytes) -> bool:
    """Whether orjson reads it (an index of a record it refuses is not read at all)."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def _index(records: dict[str, bytes]) -> bytes:
    body = b",".join(b'"%s":%s' % (digest.encode(), text) for digest, text in records.items())
    return b'{"database":{"version":"8","installs":{' + body + b"}}}"


def test_an_index_of_records_of_every_kind_reads_as_before(tmp_path: Path) -> None:
    """A whole index, compact as Spack writes it: each record's node, or its problem, is what
    `read_node` made of the parsed record."""
    texts = [*READ_ALIKE.values(), *LEFT_TO_READ_NODE.values()]
    texts = [text for text in texts if text.startswith(b"{") and parses(text)]
    digests = [
        f"{n:032d}".translate(str.maketrans("0123456789", "abcdefghij")) for n in range(len(texts))
    ]
    index = _index(dict(zip(digests, [t.replace(b"\n", b"") for t in texts], strict=True)))
    database = read_database(index, "index.json")
    expected, problems = {}, []
    for digest, text in zip(digests, texts, strict=True):
        try:
            expected[digest] = node_of(orjson.loads(text), digest)
        except ValueError as exc:
            problems.append(f"record {digest} skipped: {exc}")
    assert database.nodes == expected
    assert [problem.message for problem in database.problems] == problems
    assert len(expected) > len(READ_ALIKE) and problems  # both kinds are there


def _records(index: bytes) -> list[tuple[str, bytes]]:
    """Each record of an index, by its hash, as compact text."""
    installs = orjson.loads(index)["database"]["installs"]
    return [(digest, orjson.dumps(body)) for digest, body in installs.items()]


def test_every_record_of_a_generated_mirror_is_read_from_its_text(tmp_path: Path) -> None:
    summary = write_mirror(MirrorConfig(specs=400, packages=30, stacks=3, seed=5), tmp_path)
    blobs = [path.read_bytes() for path in (summary.mirror / "blobs").rglob("*") if path.is_file()]
    index = max((blob for blob in blobs if blob.startswith(b'{"database"')), key=len)
    records = _records(index)
    memo = NodeMemo()
    nodes = [read_record(text, digest, memo) for digest, text in records]
    assert len(records) > 400 and None not in nodes
    assert nodes == [node_of(orjson.loads(text), digest) for digest, text in records]


@pytest.mark.corpus
def test_every_record_of_spacks_own_test_indexes_is_read_from_its_text() -> None:
    """DB 6 to 8 as Spack wrote them (compact or indented): every record is of the usual
    shape, and the whole index reads as each record's `read_node`."""
    found = sorted((shared_or_skip() / "mirrors").rglob("index.json"))
    indexes = [path for path in found if b'"database"' in path.read_bytes()[:100]]
    assert len(indexes) >= 3  # DB 6, 7 and 8
    for path in indexes:
        records = _records(path.read_bytes())
        nodes = [read_record(text, digest, NodeMemo()) for digest, text in records]
        assert records and None not in nodes, path
        assert nodes == [node_of(orjson.loads(text), digest) for digest, text in records], path
        database = read_database(path.read_bytes(), str(path))
        assert list(database.nodes.values()) == nodes and not database.problems, path


def test_a_number_beyond_a_double_is_read_where_orjson_refuses_it() -> None:
    """Valid JSON that orjson cannot hold (it refuses the whole record) is read here when it
    is in a field a node does not keep: the node is the record's without it."""
    text = record(spec())[:-1] + b',"huge":1e400}'
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(text)
    assert read_record(text, DIGEST, NodeMemo()) == node_of(orjson.loads(record(spec())), DIGEST)
