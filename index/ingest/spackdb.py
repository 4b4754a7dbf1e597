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

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from sys import intern
from typing import Any

import orjson
import yaml

from cachegql.index.records import Problem, SpecRecord
from cachegql.index.spack.compilers import Compiler, parse_compiler
from cachegql.index.spack.hashes import is_hash
from cachegql.index.spack.variants import Variant, parse_variant

__all__ = [
    "FLAG_KINDS",
    "SUPPORTED_DB_VERSIONS",
    "Database",
    "Edge",
    "Node",
    "SourceFormatError",
    "binary_hashes",
    "read_database",
    "read_spec_file",
    "strip_clearsign",
]

SUPPORTED_DB_VERSIONS = (5, 6, 7, 8, 9)
LANGUAGES = ("c", "cxx", "fortran")
# The six compiler flag lists of `parameters`: flags, not variants.
FLAG_KINDS = ("cflags", "cppflags", "cxxflags", "fflags", "ldflags", "ldlibs")
_PATCH_DIGITS = 7  # Spack shows patch sha256s cut to this many characters
_SIGNED = b"-----BEGIN PGP SIGNED MESSAGE-----"
_SIGNATURE = b"\n-----BEGIN PGP SIGNATURE-----"


class SourceFormatError(ValueError):
    """A source that cannot be read at all; the message says why."""


@dataclass(frozen=True, slots=True)
class Edge:
    """A direct dependency: the node it points to, how it is used, what it provides."""

    name: str
    hash: str
    deptypes: tuple[str, ...]
    virtuals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Node:
    """A node of a DAG as a source records it; a binary of the cache if `in_buildcache`."""

    hash: str
    name: str
    version: str
    os: str
    platform: str
    target: str
    namespace: str
    variants: tuple[Variant, ...]
    flags: tuple[tuple[str, tuple[str, ...]], ...]
    edges: tuple[Edge, ...]
    compiler: Compiler | None
    """As the node itself records it (DB <= 7, or an annotation); None: from its edges."""
    in_buildcache: bool

    def record(
        self, tag: str, compiler: Compiler, stacks: tuple[str, ...], size: int | None
    ) -> SpecRecord:
        return SpecRecord(
            hash=self.hash,
            package=self.name,
            tag=tag,
            versions=(self.version,),
            compiler=compiler,
            os=self.os,
            platform=self.platform,
            target=self.target,
            variants=self.variants,
            stacks=stacks,
            size=size,
            tarball=None,
            namespace=self.namespace,
            flags=self.flags,
        )


@dataclass
class Database:
    """The nodes of one source, by hash, and what was wrong with the ones left out."""

    source: str
    version: int | None
    nodes: dict[str, Node] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def merge(self, other: Database) -> None:
        """Add `other`'s nodes; a node seen as a binary anywhere stays a binary."""
        for digest, node in other.nodes.items():
            known = self.nodes.get(digest)
            if known is None or (node.in_buildcache and not known.in_buildcache):
                self.nodes[digest] = node
        self.problems.extend(other.problems)

    def compiler_of(self, node: Node) -> Compiler:
        """The compiler `node` was built with, as Spack 1.x prints it (`c,cxx=gcc@10.2.1`)."""
        if node.compiler is not None and node.compiler.raw != "none":
            return node.compiler
        by_language = []
        for edge in node.edges:
            if not edge.virtuals:  # most edges provide nothing: no language to look for
                continue
            languages = [lang for lang in LANGUAGES if lang in edge.virtuals]
            if languages and "build" in edge.deptypes:
                dependency = self.nodes.get(edge.hash)
                version = dependency.version if dependency is not None else None
                by_language.append((LANGUAGES.index(languages[0]), languages, edge.name, version))
        if not by_language:
            return node.compiler or _NONE
        by_language.sort(key=lambda item: item[0])
        raw = " ".join(
            f"{','.join(langs)}={name}@{version}" if version else f"{','.join(langs)}={name}"
            for _, langs, name, version in by_language
        )
        _, _, name, version = by_language[0]
        return Compiler(name=name, version=version, raw=raw)


_NONE = Compiler(name="none", version=None, raw="none")


def read_database(data: bytes, source: str) -> Database:
    """Read an index file; raise SourceFormatError when it is not one at all.

    The records are read one at a time from slices of the bytes (see `_records`), so that
    a large index never exists as one document of Python objects (1.8 GB of JSON became
    some 15 GB of them).
    """
    try:
        return _read_records(*_records(data, source), source)
    except _SlicingError:
        return _read_records(*_whole_document(data, source, lazy=False), source)


def _read_records(version: int, records: Iterable[tuple[str, Any]], source: str) -> Database:
    result = Database(source=source, version=version)
    memo = _Memo()
    for digest, install in records:
        try:
            if not isinstance(install, dict) or not isinstance(install.get("spec"), dict):
                raise ValueError("expected {'spec': {...}, 'in_buildcache': ...}")
            node = _node(install["spec"], digest, bool(install.get("in_buildcache")), memo)
        except ValueError as exc:
            result.problems.append(Problem(source, f"record {digest} skipped: {exc}"))
            continue
        result.nodes[node.hash] = node
    return result


def binary_hashes(data: bytes, source: str) -> set[str]:
    """The hashes an index lists as binaries, without reading its nodes (a view's stack)."""
    try:
        return {digest for digest, record in _records(data, source, lazy=True)[1] if record}
    except _SlicingError:
        return {digest for digest, record in _whole_document(data, source, lazy=True)[1] if record}


class _SlicingError(Exception):
    """A record slice did not parse: the bytes are not laid out as expected."""


# Where an install record starts: `"<dag hash>": {`. Nothing else in an index is an
# object keyed by a DAG hash; a slice that does not parse sends us to the whole document.
_RECORD = re.compile(rb'"([a-z2-7]{32})"\s*:\s*\{')
_INSTALLS = re.compile(rb'"installs"\s*:\s*\{')
_VERSION = re.compile(rb'"version"\s*:\s*"?([^",}\s]*)"?')
_IN_BUILDCACHE = re.compile(rb'"in_buildcache"\s*:\s*(true|false)')


def _records(data: bytes, source: str, lazy: bool = False) -> tuple[int, Iterator[tuple[str, Any]]]:
    """The database version and its records, (hash, record), read slice by slice.

    With `lazy`, a record is only True or False (whether it is in the build cache), found
    without parsing the node. Falls back to parsing the whole document when the bytes are
    not laid out as an index usually is.
    """
    installs = _INSTALLS.search(data)
    starts = list(_RECORD.finditer(data, installs.end())) if installs else []
    if not starts:
        return _whole_document(data, source, lazy)
    last_end = _end_of_value(data, starts[-1].end() - 1)
    after = data[last_end:].lstrip()
    if last_end < 0 or not after.startswith(b"}"):
        return _whole_document(data, source, lazy)
    # The database's own version sits before its installs or after them.
    version = _VERSION.search(data[: installs.start()]) or _VERSION.search(after)  # type: ignore[union-attr]
    if version is None:
        return _whole_document(data, source, lazy)
    ends = [m.start() for m in starts[1:]] + [last_end]

    def records() -> Iterator[tuple[str, Any]]:
        for match, end in zip(starts, ends, strict=True):
            if lazy:  # searched in place: copying each record's bytes cost more
                flag = _IN_BUILDCACHE.search(data, match.end(), end)
                if flag is not None:
                    yield match.group(1).decode(), flag.group(1) == b"true"
                    continue
            piece = data[match.end() - 1 : end].rstrip().rstrip(b",")
            try:
                record = orjson.loads(piece)
            except orjson.JSONDecodeError as exc:
                raise SourceFormatError(
                    f"not valid JSON ({exc}) in record {match.group(1).decode()}"
                ) from None
            yield match.group(1).decode(), bool(record.get("in_buildcache")) if lazy else record

    return _db_version(version.group(1).decode()), records()


def _end_of_value(data: bytes, start: int) -> int:
    """Where the JSON object starting at `start` ends, or -1."""
    text = data[start:].decode("utf-8", "replace")
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return -1
    return start + len(text[:end].encode("utf-8", "replace"))


def _whole_document(data: bytes, source: str, lazy: bool) -> tuple[int, Iterator[tuple[str, Any]]]:
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
            (str(h), isinstance(r, dict) and bool(r.get("in_buildcache")))
            for h, r in installs.items()
        )
    return version, ((str(h), r) for h, r in installs.items())


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
    flat = [_flatten(item) for item in raw_nodes]
    # Spack 0.17-0.20 spec files may name a dependency by its full_hash or build_hash.
    aliases = {
        str(node[key]): str(_hash_of(node))
        for node in flat
        for key in ("full_hash", "build_hash")
        if isinstance(node.get(key), str)
    }
    result = Database(source=source, version=None)
    memo = _Memo(aliases, keyed=not is_yaml)
    for position, item in enumerate(flat):
        try:
            node = _node(item, _hash_of(item), position == 0, memo)
        except ValueError as exc:
            result.problems.append(Problem(source, f"node #{position + 1} skipped: {exc}"))
            continue
        result.nodes.setdefault(node.hash, node)
    return result


def strip_clearsign(data: bytes) -> bytes:
    """The signed text of a PGP clearsigned message (the signature is not checked)."""
    if not data.lstrip().startswith(_SIGNED):
        return data
    body = data.split(b"\n\n", 1)[1] if b"\n\n" in data else b""
    body = body.split(_SIGNATURE, 1)[0]
    # Clearsigning escapes lines starting with a dash as "- -...".
    return b"\n".join(line[2:] if line.startswith(b"- ") else line for line in body.split(b"\n"))


def _json(data: bytes, source: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SourceFormatError(f"not valid JSON ({exc})") from None


def _flatten(item: object) -> dict[str, Any]:
    """A node as a flat dict with `name`: DB 5 and YAML nodes are `{name: {...}}`."""
    if not isinstance(item, dict):
        raise SourceFormatError(f"a node must be an object, not {type(item).__name__}")
    if "name" in item or len(item) != 1:
        return item
    ((name, body),) = item.items()
    return {**body, "name": name} if isinstance(body, dict) else item


def _hash_of(node: Mapping[str, Any]) -> str:
    value = node.get("hash", node.get("_hash"))
    if not isinstance(value, str):
        raise SourceFormatError(f"node {node.get('name')!r} has no hash")
    return value


class _Memo:
    """What repeats across the nodes of one source, worked out once: their parameters
    (variants and flags) and their dependency edges, each keyed by its JSON text.

    A cache of 200k specs has 3,344 distinct parameter objects, and its 2.2M edges are
    120k distinct dependencies: reading each of those once, and sharing the objects,
    saves most of the time spent turning the JSON into nodes (and memory). Values that are not
    JSON have no key and are read each time: a YAML spec file's (`keyed=False`: its dates
    and NaNs would print as other values' text). Errors are never kept, so every bad
    value raises its own message as before. `aliases` (a spec file's full_hash and
    build_hash names of its nodes) belong to the source, as the memo does.
    """

    def __init__(self, aliases: Mapping[str, str] | None = None, keyed: bool = True) -> None:
        self.aliases: Mapping[str, str] = aliases or {}
        self.keyed = keyed
        self.parameters: dict[bytes, _Parameters] = {}
        self.edges: dict[bytes, Edge] = {}

    def read_parameters(self, parameters: Any) -> _Parameters:
        key = _key(parameters) if self.keyed else None
        if key is None:
            return _parameters(parameters)
        found = self.parameters.get(key)
        if found is None:
            found = self.parameters[_kept(key)] = _parameters(parameters)
        return found

    def read_edges(self, dependencies: object) -> tuple[Edge, ...]:
        if dependencies is None:
            return ()
        if isinstance(dependencies, dict):  # DB 5 and YAML: name -> {hash, type}
            items: list[Any] = [{**body, "name": name} for name, body in dependencies.items()]
        elif isinstance(dependencies, list):
            items = dependencies
        else:
            raise ValueError("'dependencies' must be a list or an object")
        aliases = self.aliases
        if not self.keyed:
            return tuple(_edge(item, aliases) for item in items)
        # `_key`, inlined: this loop runs for every edge.
        edges, dumps = self.edges, orjson.dumps
        result = []
        for item in items:
            try:
                key = dumps(item)
            except orjson.JSONEncodeError:
                result.append(_edge(item, aliases))
                continue
            edge = edges.get(key)
            if edge is None:
                edge = edges[_kept(key)] = _edge(item, aliases)
            result.append(edge)
        return tuple(result)


def _key(value: object) -> bytes | None:
    """The JSON text of a value parsed from JSON, as a memo key; None if it has none
    (an integer of more than 64 bits)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return None


def _kept(key: bytes) -> bytes:
    """A copy of a key to keep: orjson's own bytes hold a 4 KB buffer each, which 120k
    kept keys turned into 350 MB."""
    return bytes(memoryview(key))


def _node(raw: dict[str, Any], digest: str, in_buildcache: bool, memo: _Memo) -> Node:
    node = _flatten(raw)
    if not is_hash(digest):
        raise ValueError(f"hash {digest!r} is not 32 lowercase base32 characters")
    name = _text(node, "name")
    version = _text(node, "version")
    arch = node.get("arch")
    if not isinstance(arch, dict):
        raise ValueError("no 'arch' object")
    target = arch.get("target")
    target_name = target.get("name") if isinstance(target, dict) else target
    if not isinstance(target_name, str) or not target_name:
        raise ValueError("'arch.target' names no target")
    variants, flags = memo.read_parameters(node.get("parameters") or {})
    return Node(
        hash=intern(digest),
        name=intern(name),
        version=version,
        os=_text(arch, "platform_os"),
        platform=_text(arch, "platform"),
        target=target_name,
        namespace=str(node.get("namespace") or ""),
        variants=variants,
        flags=flags,
        edges=memo.read_edges(node.get("dependencies")),
        compiler=_recorded_compiler(node),
        in_buildcache=in_buildcache,
    )


def _text(node: Mapping[str, Any], key: str) -> str:
    value = node.get(key)
    if type(value) is str and value:  # nearly always: answered before the other checks
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise ValueError(f"'{key}' must be a non-empty string")
    return value


def _recorded_compiler(node: Mapping[str, Any]) -> Compiler | None:
    compiler = node.get("compiler")
    if isinstance(compiler, dict) and isinstance(compiler.get("name"), str):
        name, version = compiler["name"], compiler.get("version")
        version = str(version) if version is not None else None
        return Compiler(name, version, f"{name}@{version}" if version else name)
    annotated = (node.get("annotations") or {}).get("compiler")
    if isinstance(annotated, str) and annotated:
        try:
            return parse_compiler(annotated)
        except ValueError:
            return None
    return None


_Parameters = tuple[tuple[Variant, ...], tuple[tuple[str, tuple[str, ...]], ...]]


def _parameters(parameters: Mapping[str, Any]) -> _Parameters:
    """Variants in Spack's string forms (booleans first, then by name) and the flags."""
    if not isinstance(parameters, Mapping):
        raise ValueError("'parameters' must be an object")
    booleans, others = [], []
    for name in sorted(parameters):
        value = parameters[name]
        if name in FLAG_KINDS:
            continue
        if isinstance(value, bool):
            booleans.append(f"+{name}" if value else f"~{name}")
        elif isinstance(value, list | tuple):
            values = [str(v)[:_PATCH_DIGITS] if name == "patches" else str(v) for v in value]
            if values:
                others.append(f"{name}={','.join(sorted(values))}")
        elif value is not None:
            others.append(f"{name}={value}")
    variants = []
    for text in booleans + others:
        try:
            variants.append(parse_variant(text))
        except ValueError as exc:
            raise ValueError(f"variant {text!r} cannot be read: {exc}") from None
    flags = tuple(
        (kind, tuple(str(f) for f in parameters[kind]))
        for kind in FLAG_KINDS
        if isinstance(parameters.get(kind), list) and parameters[kind]
    )
    return tuple(variants), flags


def _edge(item: Any, aliases: Mapping[str, str]) -> Edge:
    """One dependency: `{name, hash, type}` or `{name, hash, parameters: {deptypes, virtuals}}`."""
    try:
        name = item["name"]
        digest = item.get("hash") or item.get("full_hash") or item.get("build_hash")
        parameters = item.get("parameters")
    except (TypeError, KeyError, AttributeError):
        raise ValueError("a dependency must be an object with a 'name'") from None
    if not isinstance(name, str) or not isinstance(digest, str):
        raise ValueError(f"dependency {name!r} has no hash")
    if parameters:
        deptypes, virtuals = parameters.get("deptypes") or (), parameters.get("virtuals") or ()
    else:
        deptypes, virtuals = item.get("type") or (), ()
    deptypes = (deptypes,) if isinstance(deptypes, str) else tuple(deptypes)
    virtuals = tuple(virtuals)
    # Millions of edges point at a few hundred thousand nodes and have a few kinds:
    # share their strings and tuples.
    return Edge(
        intern(name),
        intern(aliases.get(digest, digest)),
        _SHARED.setdefault(deptypes, deptypes),
        _SHARED.setdefault(virtuals, virtuals),
    )


_SHARED: dict[tuple[str, ...], tuple[str, ...]] = {}
