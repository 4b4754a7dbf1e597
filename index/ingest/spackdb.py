"""Spack's build-cache databases (`index.json`) and spec files, read into DAG nodes.

An index is `{"database": {"version": "N", "installs": {<dag hash>: {"spec": <node>,
"ref_count": n, "in_buildcache": bool}}}}`, versions 5 to 9. A node is name-keyed in
DB 5 (`{"zlib": {...}}`), a flat dict with `name` later; its hash is `hash` (`_hash` in
some DB 6 files); its target is a string or a microarchitecture object; dependencies
are a dict `name -> {hash, type}` (DB 5) or a list of `{name, hash, type}` or
`{name, hash, parameters: {deptypes, virtuals}}`. The compiler is a `compiler` object
up to DB 7; from DB 8 (Spack 1.0) it is a build dependency whose edge provides the
`c`/`cxx`/`fortran` virtuals, or `annotations.compiler` on a node migrated from an older
format. A spec file (`*.spec.json`, clearsigned `*.spec.json.sig`, `*.spec.yaml`) holds
one binary and its DAG: `{"spec": {"_meta": ..., "nodes": [root, ...]}}`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import orjson

from cachegql.index.ingest.dag_nodes import Database, Edge, Node, SourceFormatError
from cachegql.index.ingest.files import Blob, release
from cachegql.index.ingest.listings import json_error
from cachegql.index.ingest.locations import PendingCheck
from cachegql.index.ingest.node_reader import (
    FLAG_KINDS,
    NodeMemo,
    flatten_node,
    node_hash,
    read_node,
    read_record,
)
from cachegql.index.ingest.record_spans import (
    EscapeError,
    SlicingError,
    compact_binaries,
    compact_spans,
    end_of_value,
    exact_spans,
    last_record,
    quick_spans,
)
from cachegql.index.ingest.seen_nodes import SeenNodes
from cachegql.index.records import Problem

__all__ = [
    "FLAG_KINDS",
    "SUPPORTED_DB_VERSIONS",
    "UTF8_BOM",
    "Database",
    "Edge",
    "Node",
    "PartEntry",
    "SourceFormatError",
    "binary_hashes",
    "read_database",
    "read_spec_file",
    "strip_clearsign",
]

SUPPORTED_DB_VERSIONS = (5, 6, 7, 8, 9)
_SIGNED = b"-----BEGIN PGP SIGNED MESSAGE-----"
UTF8_BOM = b"\xef\xbb\xbf"
_SIGNATURE = b"\n-----BEGIN PGP SIGNATURE-----"


def read_database(
    data: Blob,
    source: str,
    seen: SeenNodes | None = None,
    check: PendingCheck | None = None,
    part: list[PartEntry] | None = None,
) -> Database:
    """Read an index file; raise SourceFormatError when it is not one at all.

    The records are read one at a time from slices of the bytes (see `_records`), so that
    a large index never exists as one document of Python objects (1.8 GB of JSON became
    some 15 GB of them). With `seen` (the nodes other caches of the same tag gave), a
    record already read there is not read again.

    The records are found by the compact scan, else the quick one, else the exact one
    (most indexes are compact, as Spack writes them; a scan that raises SlicingError was
    not for them, and an escape that refuses the compact scan refuses the quick one too).

    With `check` (the bytes are being verified, `Opener.verifying`), a mismatch stops the
    read as soon as it is known, and the bytes are read again another way (another scan,
    the whole document) only once they are verified: a damaged blob is refused in seconds,
    not parsed whole first, or read as one document.

    With `part`, each node is added to it as read (`PartEntry`), for an index read again
    to be taken from it instead (index/ingest/cache_parts.py).
    """
    mark = seen.mark() if seen is not None else (0, 0)

    def forget_the_failed_scan() -> None:
        # The nodes a scan kept before it failed would come back to the next scan as
        # another cache's (and its part would say so).
        if seen is not None:
            seen.rewind(mark)
        if part is not None:
            part.clear()

    for scan in ("compact", "quick"):
        try:
            records = _records(data, source, scan, seen, check)
            return _read_records(*records, source, seen, part, scan)
        except EscapeError:
            forget_the_failed_scan()
            break
        except SlicingError:
            forget_the_failed_scan()
            if check is not None:
                check.wait()
    if check is not None:
        check.wait()
    records = _records(data, source, "exact", seen, check)
    return _read_records(*records, source, seen, part, "exact")


def _read_records(
    version: int,
    records: Iterable[_Record],
    source: str,
    seen: SeenNodes | None,
    part: list[PartEntry] | None,
    scan: Scan,
) -> Database:
    result = Database(source=source, version=version)
    memo = NodeMemo()
    for digest, install, key in records:
        if isinstance(install, Node):  # the same record, read in another cache of the tag
            result.nodes[digest] = install
            if part is not None:
                part.append((digest, key, install, True))
            continue
        node = None
        if isinstance(install, bytes):  # a record's text: read as it is, else parsed
            node = read_record(install, digest, memo)
            if node is None:
                install = _parsed(install, digest, scan)
        try:
            if node is None:
                node = _node_of(install, digest, memo)
        except ValueError as exc:
            result.problems.append(Problem(source, f"record {digest} skipped: {exc}"))
            continue
        if seen is not None and key:
            seen.keep(key, node)
        result.nodes[node.hash] = node
        if part is not None:
            part.append((node.hash, key, node, False))
    return result


def _node_of(record: Any, digest: str, memo: NodeMemo) -> Node:
    """The node of a parsed index record; ValueError if it has none."""
    if not isinstance(record, dict) or not isinstance(record.get("spec"), dict):
        raise ValueError("expected {'spec': {...}, 'in_buildcache': ...}")
    return read_node(record["spec"], digest, bool(record.get("in_buildcache")), memo)


def binary_hashes(data: Blob, source: str) -> set[str]:
    """The hashes an index lists as binaries, without reading its nodes (a view's stack)."""
    try:
        return {digest for digest, record, _ in _records(data, source, lazy=True)[1] if record}
    except SlicingError:  # not laid out as the quick scan needs: find every record key
        records = _records(data, source, lazy=True, scan="exact")[1]
        return {digest for digest, record, _ in records if record}


_INSTALLS = re.compile(rb'"installs"\s*:\s*\{')
_VERSION = re.compile(rb'"version"\s*:\s*"?([^",}\s]*)"?')
_RELEASE_SPAN = 64 << 20  # bytes of a mapped index read before its pages are dropped
# How the records of an index are found (index/ingest/record_spans.py).
Scan = Literal["compact", "quick", "exact"]
# A record: its hash, what it holds (its text, the parsed record of a whole document, its
# flag when read lazily, or the node `seen` took for it), and its key for `seen` (empty:
# none).
_Record = tuple[str, Any, bytes]
PartEntry = tuple[str, bytes, Node, bool]
"""A node as read from an index: its key in the database, its record's key for `seen`
(empty: none), the node, and whether `seen` gave it (a record another cache gave alike)."""


def _records(
    data: Blob,
    source: str,
    scan: Scan = "quick",
    seen: SeenNodes | None = None,
    check: PendingCheck | None = None,
    lazy: bool = False,
) -> tuple[int, Iterator[_Record]]:
    """The database version and its records (`_Record`), read slice by slice: each
    record's text, for `_read_records` to read (`_parsed` raises as a scan must).

    With `seen`, a record that another cache of the tag gave with the same bytes (see
    index/ingest/seen_nodes.py) is not parsed: its node is given instead of the record;
    any other is given with its key, to keep its node under once it is read.

    With `lazy`, a record is only True or False (whether it is in the build cache), found
    without parsing the node; compact records give only the binaries (`compact_binaries`).
    The records are found by `compact_spans` or `quick_spans` (which raise `SlicingError`
    when they are not laid out as they need), or by `exact_spans`.
    Falls back to parsing the whole document when the bytes are not laid out as an index
    usually is. The records are found as they are read, and a mapped file's pages are
    dropped behind them (`release`): a 1M-spec index is 1.8 GB. With `check`, it is
    polled as pages are dropped, and waited for before the whole document is parsed.
    """
    installs = _INSTALLS.search(data)
    last = last_record(data, installs.end(), _RELEASE_SPAN // 64) if installs else None
    if installs is None or last is None:
        return _whole_document(data, source, lazy, check)
    last_end = end_of_value(data, last.end() - 1)
    after = data[last_end:].lstrip()
    if last_end < 0 or not after.startswith(b"}"):
        return _whole_document(data, source, lazy, check)
    # The database's own version sits before its installs or after them.
    version = _VERSION.search(data[: installs.start()]) or _VERSION.search(after)
    if version is None:
        return _whole_document(data, source, lazy, check)
    _check_frame(data, installs.end(), last_end)
    exact = scan == "exact"
    binaries = None if exact or not lazy else compact_binaries(data, installs.end(), last, last_end)
    if binaries is not None:  # only the binaries: what a lazy read is for
        return _db_version(version.group(1).decode()), ((b.decode(), True, b"") for b in binaries)
    if exact:
        spans = exact_spans(data, installs.end(), last_end, lazy)
    elif scan == "compact":
        spans = compact_spans(data, installs.end(), last, last_end)
    else:
        spans = quick_spans(data, installs.end(), last, last_end)

    def records() -> Iterator[_Record]:
        released = 0
        for match, end, flag in spans:
            if match.start() - released > _RELEASE_SPAN:
                released = match.start()
                release(data, released)
                if check is not None:
                    check.poll()
            digest = match.group(1).decode()
            if lazy and flag is not None:  # found in the same scan, nothing copied
                yield digest, flag.group(0).endswith(b"true"), b""
                continue
            piece = data[match.end() - 1 : end].rstrip().rstrip(b",")
            key = b""
            if seen is not None:
                node, key = seen.take(digest, piece)
                if node is not None:
                    yield digest, node, key
                    continue
            if lazy:
                yield digest, bool(_parsed(piece, digest, scan).get("in_buildcache")), key
            else:
                yield digest, piece, key

    return _db_version(version.group(1).decode()), records()


def _parsed(piece: bytes, digest: str, scan: Scan) -> Any:
    """A record's text parsed. Not JSON: SlicingError for a record a scan other than the
    exact one found (one it missed may be inside: scan again), else SourceFormatError."""
    try:
        return orjson.loads(piece)
    except orjson.JSONDecodeError as exc:
        if scan != "exact":
            raise SlicingError(str(exc)) from None
        raise SourceFormatError(f"not valid JSON ({exc}) in record {digest}") from None


def _check_frame(data: Blob, begin: int, end: int) -> None:
    """SourceFormatError unless the bytes around the records (`data` but `begin:end`) are
    JSON, as a whole parse would find: nothing after the document, no character JSON
    does not allow between its keys. A few bytes, parsed with `{}` for the records."""
    try:
        orjson.loads(data[:begin] + data[end:])
    except orjson.JSONDecodeError as exc:
        at = exc.pos if exc.pos < begin else exc.pos + end - begin
        raise SourceFormatError(f"not valid JSON ({exc.msg} at character {at})") from None


def _whole_document(
    data: Blob, source: str, lazy: bool, check: PendingCheck | None = None
) -> tuple[int, Iterator[_Record]]:
    if check is not None:  # never bytes not yet verified as one document (many GB of objects)
        check.wait()
    document = _json(data, source)
    database = document.get("database") if isinstance(document, dict) else None
    if not isinstance(database, dict):
        raise SourceFormatError("not a Spack build-cache index: no 'database' object")
    version = _db_version(database.get("version"))
    installs = database.get("installs")
    if not isinstance(installs, dict):
        raise SourceFormatError("the database has no 'installs' object")
    if lazy:
        return version, (
            (str(h), isinstance(r, dict) and bool(r.get("in_buildcache")), b"")
            for h, r in installs.items()
        )
    return version, ((str(h), r, b"") for h, r in installs.items())


def _db_version(value: object) -> int:
    supported = ", ".join(map(str, SUPPORTED_DB_VERSIONS))
    try:
        version = int(str(value))
    except ValueError:
        raise SourceFormatError(
            f"database version {value!r} is not a number; supported versions: {supported}"
        ) from None
    if version not in SUPPORTED_DB_VERSIONS:
        raise SourceFormatError(
            f"database version {version} is not supported; supported versions: {supported}"
        )
    return version


def read_spec_file(data: bytes, source: str) -> Database:
    """A spec file (JSON, clearsigned JSON or legacy YAML): its root is the binary."""
    is_yaml = source.endswith((".yaml", ".yml"))
    if is_yaml:
        import yaml  # here: only old mirrors' spec files are YAML (10 ms of every build's start)

        try:
            document = yaml.load(data, Loader=yaml.CSafeLoader)
        except yaml.YAMLError as exc:
            raise SourceFormatError(f"not valid YAML: {exc}") from None
    else:
        document = _json(strip_clearsign(data), source)
    spec = document.get("spec") if isinstance(document, dict) else None
    raw_nodes = spec.get("nodes") if isinstance(spec, dict) else spec
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise SourceFormatError("not a Spack spec file: no 'spec' with nodes")
    flat = [flatten_node(item) for item in raw_nodes]
    # Spack 0.17-0.20 spec files may name a dependency by its full_hash or build_hash.
    aliases = {
        str(node[key]): str(node_hash(node))
        for node in flat
        for key in ("full_hash", "build_hash")
        if isinstance(node.get(key), str)
    }
    result = Database(source=source, version=None)
    memo = NodeMemo(aliases, keyed=not is_yaml)
    for position, item in enumerate(flat):
        try:
            node = read_node(item, node_hash(item), position == 0, memo)
        except ValueError as exc:
            result.problems.append(Problem(source, f"node #{position + 1} skipped: {exc}"))
            continue
        result.nodes.setdefault(node.hash, node)
    return result


def strip_clearsign(data: bytes) -> bytes:
    """The signed text of a PGP clearsigned message (the signature is not checked), and
    without the UTF-8 byte order mark an editor may have saved it with (RFC 8259 lets a
    JSON reader ignore one)."""
    data = data.removeprefix(UTF8_BOM)
    if not data.lstrip().startswith(_SIGNED):
        return data
    body = data.split(b"\n\n", 1)[1] if b"\n\n" in data else b""
    body = body.split(_SIGNATURE, 1)[0]
    # Clearsigning escapes lines starting with a dash as "- -...".
    return b"\n".join(line[2:] if line.startswith(b"- ") else line for line in body.split(b"\n"))


def _json(data: Blob, source: str) -> Any:
    try:
        return orjson.loads(data if isinstance(data, bytes) else memoryview(data))
    except orjson.JSONDecodeError as exc:
        raise SourceFormatError(json_error(exc)) from None
