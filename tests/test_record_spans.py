"""The quick record scan of an index against the exact one and the whole document.

`quick_spans` finds records from their `"spec"` key and must either find every record an
index holds or refuse (SlicingError), never miss one: each layout below is read by
`read_database` and `binary_hashes` and compared with the whole document parsed at once.
"""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from cachegql.index.ingest.record_spans import (
    SlicingError,
    compact_binaries,
    compact_spans,
    exact_spans,
    last_record,
    quick_spans,
)
from cachegql.index.ingest.spackdb import binary_hashes, read_database

HASHES = [f"{letter * 31}{digit}" for letter, digit in zip("abcdefgh", "23456723", strict=True)]


def _node(name: str, digest: str, dependencies: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "version": "1.0",
        "arch": {"platform": "linux", "platform_os": "ubuntu22.04", "target": "x86_64"},
        "namespace": "builtin",
        "parameters": {"shared": True, "cflags": [], "ldflags": []},
        "dependencies": [
            {"name": f"dep{d[:1]}", "hash": d, "parameters": {"deptypes": ["link"], "virtuals": []}}
            for d in dependencies
        ],
        "hash": digest,
    }


def _installs() -> dict[str, dict[str, Any]]:
    """Eight records: the even ones binaries, each depending on the next."""
    return {
        digest: {
            "spec": _node(f"pkg{i}", digest, HASHES[i + 1 : i + 2]),
            "ref_count": 1,
            "in_buildcache": i % 2 == 0,
        }
        for i, digest in enumerate(HASHES)
    }


def _document(installs: dict[str, Any]) -> dict[str, Any]:
    return {"database": {"version": "8", "installs": installs}}


def _compact(document: dict[str, Any]) -> bytes:
    return orjson.dumps(document)


def _indented(document: dict[str, Any]) -> bytes:
    return json.dumps(document, indent=2).encode()


def _spaced(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()  # ", " and ": ", as Python writes by default


def _sorted(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True).encode()  # as `jq -S` leaves it: spec last


def _wide(document: dict[str, Any]) -> bytes:
    return json.dumps(document, indent=300).encode()  # a key far from its spec


def _reordered(installs: dict[str, Any]) -> dict[str, Any]:
    """One record's spec after its other keys."""
    record = installs[HASHES[3]]
    installs[HASHES[3]] = {"ref_count": 1, "in_buildcache": record["in_buildcache"], **record}
    return installs


def _one_without_flag(installs: dict[str, Any]) -> dict[str, Any]:
    del installs[HASHES[2]]["in_buildcache"]  # a binary no more: no flag is false
    return installs


def _flag_inside_a_node(installs: dict[str, Any]) -> dict[str, Any]:
    installs[HASHES[1]]["spec"]["external"] = {"extra_attributes": {"in_buildcache": True}}
    return installs


def _spec_key_inside_a_node(installs: dict[str, Any]) -> dict[str, Any]:
    installs[HASHES[4]]["spec"]["external"] = {"extra_attributes": {"spec": {"x": 1}}}
    return installs


def _first_reordered_without_flag(installs: dict[str, Any]) -> dict[str, Any]:
    record = installs[HASHES[0]]
    del record["in_buildcache"]
    installs[HASHES[0]] = {"ref_count": 1, **record}
    return installs


def _no_flag_then_reordered(installs: dict[str, Any]) -> dict[str, Any]:
    """The second record's flag would fall in the first's bytes if the second were missed."""
    return _reordered(_one_without_flag(installs))


def _keep(installs: dict[str, Any]) -> dict[str, Any]:
    return installs


Change = Callable[[dict[str, Any]], dict[str, Any]]
Dump = Callable[[dict[str, Any]], bytes]

# (change, whether the quick scan can read it)
CHANGES: dict[str, tuple[Change, bool]] = {
    "as written": (_keep, True),
    "a 'spec' key inside a node": (_spec_key_inside_a_node, False),
    "a record whose spec is not its first key": (_reordered, False),
    "a record without in_buildcache": (_one_without_flag, False),
    "an in_buildcache key inside a node": (_flag_inside_a_node, False),
    "a first record with its spec last and no flag": (_first_reordered_without_flag, False),
    "a record without a flag, then one with its spec last": (_no_flag_then_reordered, False),
}
DUMPS: dict[str, Dump] = {
    "compact": _compact,
    "indented": _indented,
    "spaced": _spaced,
    "sorted": _sorted,
    "wide": _wide,
}
QUICK_DUMPS = ("compact", "indented", "spaced")  # the others put keys where it does not look


def _expected(installs: dict[str, Any]) -> tuple[set[str], set[str]]:
    """All hashes, and the binaries', from the document parsed whole."""
    return set(installs), {h for h, r in installs.items() if r.get("in_buildcache")}


def _span_of_installs(data: bytes) -> tuple[int, re.Match[bytes], int]:
    """Where the installs' records start, the last record's key, where they end."""
    begin = data.index(b"{", data.index(b'"installs"')) + 1
    end = data.rindex(b"}", 0, data.rindex(b"}", 0, data.rindex(b"}")))
    last = last_record(data, begin, 1 << 20)
    assert last is not None
    return begin, last, end


@pytest.mark.parametrize("dump", DUMPS.values(), ids=DUMPS.keys())
@pytest.mark.parametrize("change", CHANGES.keys())
def test_every_record_is_read_whichever_scan_reads_it(change: str, dump: Dump) -> None:
    installs = CHANGES[change][0](_installs())
    data = dump(_document(installs))
    hashes, binaries = _expected(installs)

    database = read_database(data, "index.json")

    assert set(database.nodes) == hashes
    assert {h for h, node in database.nodes.items() if node.in_buildcache} == binaries
    assert database.problems == []
    assert binary_hashes(data, "index.json") == binaries


@pytest.mark.parametrize("dump", DUMPS.keys())
@pytest.mark.parametrize("change", CHANGES.keys())
def test_the_quick_scan_reads_an_index_whole_or_refuses_it(change: str, dump: str) -> None:
    change_of, readable = CHANGES[change]
    installs = change_of(_installs())
    data = DUMPS[dump](_document(installs))
    begin, last, end = _span_of_installs(data)
    exact = [(m.group(1), e) for m, e, _ in exact_spans(data, begin, end, lazy=False)]

    if readable and dump in QUICK_DUMPS:
        spans = list(quick_spans(data, begin, last, end))
        assert [(m.group(1), e) for m, e, _ in spans] == exact
        flags = [f is not None and f.group(0).endswith(b"true") for _, _, f in spans]
        assert flags == [installs[m.group(1).decode()]["in_buildcache"] for m, _, _ in spans]
    else:
        with pytest.raises(SlicingError):
            list(quick_spans(data, begin, last, end))


def _hostile(installs: dict[str, Any], flag: object, nested: bytes) -> bytes:
    """The first record with a flag `flag`, an object keyed by a hash inside its spec, and
    `nested` bytes beside it: the exact scan splits it there (a review's inputs)."""
    first = installs[HASHES[0]]
    first["spec"]["m"] = {HASHES[5]: {}}
    first["in_buildcache"] = flag
    return _compact(_document(installs)).replace(b'"m":', nested + b'"m":', 1)


HOSTILE = {
    "a null flag": _hostile(_installs(), None, b""),
    "a spaced spec key inside": _hostile(_installs(), True, b'"x":{"spec" :1},'),
    "a flag of another kind inside": _hostile(_installs(), True, b'"x":{"in_buildcache":1},'),
}


def _all_layouts() -> dict[str, bytes]:
    layouts = {
        f"{change}, {dump}": DUMPS[dump](_document(CHANGES[change][0](_installs())))
        for change in CHANGES
        for dump in DUMPS
    }
    return {**layouts, **HOSTILE}


@pytest.mark.parametrize("layout", _all_layouts().keys())
def test_the_compact_record_scan_reads_what_the_quick_one_reads_or_refuses(layout: str) -> None:
    """`compact_spans` runs before `quick_spans`: what it reads, the quick scan reads alike
    (so `read_database` answers as it did), and it reads every compact index the quick
    scan reads."""
    data = _all_layouts()[layout]
    begin, last, end = _span_of_installs(data)
    try:
        quick: list[tuple[bytes, int, int]] | None = [
            (m.group(1), m.start(), e) for m, e, _ in quick_spans(data, begin, last, end)
        ]
    except SlicingError:
        quick = None
    try:
        compact = [(m.group(1), m.start(), e) for m, e, _ in compact_spans(data, begin, last, end)]
    except SlicingError:
        assert quick is None or not layout.endswith(", compact")
    else:
        assert compact == quick


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"in_buildcache":false}', b'"in_buildcache":false,"in_buildcache":true}'),
        (b'"in_buildcache":false}', b'"in_buildcache":false,"x":"\\u0041"}'),  # may hide a key
        (b'"spec":', b'"spec" :'),  # a record not written compactly
    ],
    ids=["two-flags", "escape", "spaced-spec-key"],
)
def test_the_compact_record_scan_refuses_what_it_cannot_vouch_for(old: bytes, new: bytes) -> None:
    """In the first record or the last; the quick scan or the exact one reads it then."""
    installs = _installs()
    written = _compact(_document(installs))
    for data in (written.replace(old, new, 1), new.join(written.rsplit(old, 1))):
        assert data != written
        begin, last, end = _span_of_installs(data)
        with pytest.raises(SlicingError):
            list(compact_spans(data, begin, last, end))
        assert set(read_database(data, "index.json").nodes) == set(installs)


@pytest.mark.parametrize("dump", DUMPS.keys())
@pytest.mark.parametrize("change", CHANGES.keys())
def test_the_compact_scan_finds_the_binaries_or_refuses(change: str, dump: str) -> None:
    """`compact_binaries` reads what the quick scan reads, written compactly, and
    refuses the rest: `binary_hashes` then scans again (the test above)."""
    change_of, readable = CHANGES[change]
    installs = change_of(_installs())
    data = DUMPS[dump](_document(installs))
    begin, last, end = _span_of_installs(data)
    found = compact_binaries(data, begin, last, end)
    if readable and dump == "compact":
        assert found is not None
        assert {b.decode() for b in found} == _expected(installs)[1]
    else:
        assert found is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"in_buildcache":true', b'"in_buildcache":yes'),  # not JSON's true or false
        (b'"in_buildcache":false}', b'"in_buildcache":false,"in_buildcache":true}'),
        (b'"ref_count":1', b'"ref_count":"\\"'),  # a backslash: an escape may hide a key
        (b'"installs":{', b'"installs":{"x":1,'),  # the first record does not start them
    ],
    ids=["flag-not-boolean", "two-flags", "backslash", "not-first"],
)
def test_the_compact_scan_refuses_what_it_cannot_vouch_for(old: bytes, new: bytes) -> None:
    written = _compact(_document(_installs()))
    for data in (written.replace(old, new, 1), new.join(written.rsplit(old, 1))):  # first, last
        assert data != written
        begin, last, end = _span_of_installs(data)
        assert compact_binaries(data, begin, last, end) is None


def test_the_compact_scan_refuses_a_last_record_without_a_spec() -> None:
    """No binary either way, but not laid out as the scan vouches for."""
    installs = {**_installs(), "z" * 32: {"ref_count": 1}}
    data = _compact(_document(installs))
    begin, last, end = _span_of_installs(data)
    assert compact_binaries(data, begin, last, end) is None
    assert binary_hashes(data, "index.json") == _expected(installs)[1]


def test_the_compact_scan_does_not_read_a_flag_that_is_not_there() -> None:
    """The last record has no flag; the bytes where a missing flag's value would be read
    (from the file's start) spell `:true`: not taken for one."""
    installs = _installs()
    del installs[HASHES[-1]]["in_buildcache"]
    data = _compact({"aaaaaaaaaaa": True, **_document(installs)})
    assert data[14:19] == b":true"
    begin, last, end = _span_of_installs(data)
    assert compact_binaries(data, begin, last, end) is None
    assert binary_hashes(data, "index.json") == _expected(installs)[1]


def test_the_compact_scan_reads_a_mapped_index_as_its_bytes(tmp_path: Path) -> None:
    installs = _installs()
    path = tmp_path / "index.json"
    path.write_bytes(_compact(_document(installs)))
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        begin, last, end = _span_of_installs(data[:])
        found = compact_binaries(data, begin, last, end)
        assert found is not None and {b.decode() for b in found} == _expected(installs)[1]


def test_a_mapped_index_is_scanned_as_its_bytes(tmp_path: Path) -> None:
    installs = _installs()
    path = tmp_path / "index.json"
    path.write_bytes(_compact(_document(installs)))
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        assert binary_hashes(data, str(path)) == _expected(installs)[1]
        assert set(read_database(data, str(path)).nodes) == set(installs)


def test_a_broken_record_is_still_named_after_the_quick_scan_gives_up() -> None:
    data = _compact(_document(_installs())).replace(b'"ref_count":1', b'"ref_count":1,,', 1)
    with pytest.raises(ValueError, match=f"not valid JSON .* in record {HASHES[0]}"):
        read_database(data, "index.json")


def _nth(data: bytes, text: bytes, n: int) -> int:
    at = -1
    for _ in range(n):
        at = data.index(text, at + 1)
    return at


def test_keys_spelled_with_escapes_are_read_too() -> None:
    """A record whose keys are written `"\\u0073pec"`: the same keys to a JSON reader."""
    installs = _installs()
    data = _compact(_document(installs))
    escapes = ((b'"spec"', rb'"\u0073pec"'), (b'"in_buildcache"', rb'"in_build\u0063ache"'))
    for key, escaped in escapes:
        at = _nth(data, key, 3)
        data = data[:at] + escaped + data[at + len(key) :]
    assert orjson.loads(data) == _document(installs)
    begin, last, end = _span_of_installs(data)

    with pytest.raises(SlicingError):
        list(quick_spans(data, begin, last, end))
    assert set(read_database(data, "index.json").nodes) == set(installs)
    assert binary_hashes(data, "index.json") == _expected(installs)[1]
