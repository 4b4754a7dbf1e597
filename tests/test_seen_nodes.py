"""A record read in one cache of a tag is not read again in the next: never a different answer.

`read_database(..., seen)` takes the node of a record read before when the bytes are the
same but for the `ref_count` and `in_buildcache` tail (index/ingest/seen_nodes.py). Each
case reads two index files in turn with one `SeenNodes` and compares what each gives (its
nodes, flags included, its problems, or its error) with reading each on its own, and
counts the records taken, so that the shortcut is both taken and harmless.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index.ingest.dag_nodes import SourceFormatError
from cachegql.index.ingest.seen_nodes import SeenNodes
from cachegql.index.ingest.spackdb import read_database

HASHES = [f"{letter * 31}{digit}" for letter, digit in zip("abcdef", "234567", strict=True)]


def _spec(i: int, digest: str, version: str = "1.0") -> dict[str, Any]:
    following = HASHES[i + 1 : i + 2]
    return {
        "name": f"pkg{i}",
        "version": version,
        "arch": {"platform": "linux", "platform_os": "ubuntu22.04", "target": "x86_64"},
        "namespace": "builtin",
        "parameters": {"shared": i % 2 == 0, "cflags": [], "ldflags": []},
        "dependencies": [
            {"name": f"dep{d[:1]}", "hash": d, "parameters": {"deptypes": ["link"]}}
            for d in following
        ],
        "hash": digest,
    }


Layout = Callable[[Any], bytes]
LAYOUTS: dict[str, Layout] = {
    "compact": orjson.dumps,
    "spaced": lambda value: json.dumps(value).encode(),
    "indented": lambda value: json.dumps(value, indent=2).encode(),
}


def _index(layout: Layout, change: Callable[[bytes, int], bytes] = lambda body, _: body) -> bytes:
    """An index of six records, the even ones binaries, each record's bytes given to
    `change` (with its position) before they are put in place."""
    bodies = {
        digest: {"spec": _spec(i, digest), "ref_count": i % 3, "in_buildcache": i % 2 == 0}
        for i, digest in enumerate(HASHES)
    }
    document = layout({"database": {"version": "8", "installs": "@"}})
    records = []
    for i, (digest, body) in enumerate(bodies.items()):
        records.append(b'"' + digest.encode() + b'": ' + change(layout(body), i))
    return document.replace(b'"@"', b"{" + b", ".join(records) + b"}")


def _flipped(body: bytes) -> bytes:
    return body.replace(b"true", b"@").replace(b"false", b"true").replace(b"@", b"false")


def _broken(body: bytes) -> bytes:
    return body.replace(b'"arch"', b'"a"')


def _tail(pattern: bytes, replacement: bytes) -> Callable[[bytes, int], bytes]:
    return lambda body, _: re.sub(pattern, replacement, body)


# How the second cache's records differ from the first's, and how many of its six
# records are taken from the first (the rest are read).
CHANGES: dict[str, tuple[Callable[[bytes, int], bytes], int]] = {
    "the same bytes": (lambda body, _: body, 6),
    "another ref_count": (_tail(rb'("ref_count":\s*)\d+', rb"\g<1>41"), 6),
    "every flag flipped": (
        lambda body, _: _flipped(body),
        0,  # `"shared": true` in the parameters flips too: another spec
    ),
    "binaries only": (_tail(rb'("in_buildcache":\s*)false', rb"\g<1>true"), 6),
    "no ref_count": (_tail(rb'"ref_count":\s*\d+,\s*', b""), 6),
    "a ref_count with a leading zero (not JSON)": (
        _tail(rb'("ref_count":\s*)(\d+)', rb"\g<1>0\g<2>"),
        0,
    ),
    "a negative ref_count": (_tail(rb'("ref_count":\s*)(\d+)', rb"\g<1>-\g<2>"), 0),
    "a form feed before the brace (not JSON)": (_tail(rb"(true|false)(\s*)\}$", rb"\1\f}"), 0),
    "a newline before the brace": (_tail(rb"(true|false)(\s*)\}$", rb"\1\n}"), 6),
    "the flag before the count": (
        _tail(
            rb'"ref_count":\s*(\d+),\s*"in_buildcache":\s*(true|false)',
            rb'"in_buildcache": \2, "ref_count": \1',
        ),
        0,
    ),
    "another version": (lambda body, _: body.replace(b'"1.0"', b'"2.0"'), 0),
    "one record broken": (
        lambda body, i: _broken(body) if i == 2 else body,
        5,
    ),
    "a second flag in the head": (
        _tail(rb',(\s*"ref_count")', rb', "in_buildcache": false,\1'),
        0,
    ),
    "an escape in the head": (lambda body, _: body.replace(b'"builtin"', b'"built\\u0069n"'), 0),
    "a member after the flag": (_tail(rb"(true|false)(\s*)\}$", rb'\1, "x": 1}'), 0),
}


def _read(documents: list[bytes], seen: SeenNodes | None) -> list[object]:
    results: list[object] = []
    for number, data in enumerate(documents):
        try:
            database = read_database(data, f"cache{number}", seen)
        except SourceFormatError as exc:
            results.append(f"error: {exc}")
            continue
        nodes = sorted((h, node, node.in_buildcache) for h, node in database.nodes.items())
        results.append((nodes, [str(p) for p in database.problems]))
    return results


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("change", CHANGES)
def test_a_record_read_before_is_what_reading_it_again_gives(layout: str, change: str) -> None:
    how, taken = CHANGES[change]
    first = _index(LAYOUTS[layout])
    documents = [first, _index(LAYOUTS[layout], how)]
    seen = SeenNodes()
    assert _read(documents, seen) == _read(documents, None)
    assert seen.taken == taken


def test_a_first_record_that_could_not_be_read_is_read_again() -> None:
    """A record that failed in the first cache is not remembered: the second cache's
    copy is read, and tells its own problem."""
    broken = _index(orjson.dumps, lambda body, i: _broken(body) if i == 1 else body)
    seen = SeenNodes()
    results = _read([broken, broken], seen)
    assert results == _read([broken, broken], None)
    assert seen.taken == 5
    assert [len(result[1]) for result in results if isinstance(result, tuple)] == [1, 1]


def test_a_tag_of_stacks_reads_each_node_once(tmp_path: Path) -> None:
    """The demo's tag: a root index of every binary and nine stacks repeating it. Read
    in the listing's order with one `SeenNodes`, each stack's records come from the root's."""
    summary = write_mirror(MirrorConfig(specs=600, packages=40, stacks=9, seed=3), tmp_path)
    listing = json.loads(summary.listing.read_text())
    indexes = [summary.listing.parent / entry["url"] for entry in next(iter(listing.values()))]
    documents = [path.read_bytes() for path in indexes]
    seen = SeenNodes()
    assert _read(documents, seen) == _read(documents, None)
    records = sum(len(orjson.loads(d)["database"]["installs"]) for d in documents)
    distinct = {h for d in documents for h in orjson.loads(d)["database"]["installs"]}
    assert seen.taken == records - len(distinct) > 0


def _record(digest: str, spec: dict[str, Any]) -> bytes:
    return orjson.dumps({"spec": spec, "ref_count": 0, "in_buildcache": True})


def _one_record(digest: str, record: bytes, key: bytes | None = None) -> bytes:
    key = digest.encode() if key is None else key
    return b'{"database":{"version":"8","installs":{"' + key + b'":' + record + b"}}}"


@pytest.mark.parametrize(
    "first",
    [
        pytest.param(_record(HASHES[0], {**_spec(0, HASHES[0]), "arch": None}), id="a problem"),
        pytest.param(_record(HASHES[0], _spec(0, HASHES[0]))[:-1] + b",}", id="not JSON"),
    ],
)
def test_a_record_that_failed_is_never_the_key_of_another(first: bytes) -> None:
    """A record that could not be read, then the same hash read well from a cache read as a
    whole document (its key spelled with an escape: no slices), then the failed record
    again: the third cache fails as the first did, not with the second's node."""
    good = _record(HASHES[0], _spec(0, HASHES[0]))
    escaped = b"\\u0061" + HASHES[0][1:].encode()
    documents = [
        _one_record(HASHES[0], first),
        _one_record(HASHES[0], good, escaped),
        _one_record(HASHES[0], first),
    ]
    seen = SeenNodes()
    results = _read(documents, seen)
    assert results == _read(documents, None)
    assert str(results[2]).replace("cache2", "cache0") == str(results[0]) != str(results[1])
    assert seen.taken == 0
