"""One node's JSON read into a `Node`: its fields checked, its parameters and edges shared.

Every format of `spackdb.py` ends here: a flat dict (or DB 5's `{name: {...}}`) with a hash,
`arch`, `parameters` (variants and the six compiler flag lists) and `dependencies`. A bad
value raises ValueError, which the caller reports as that node's problem.

An index record of the usual shape is read straight from its bytes (`read_record`): msgspec
decodes only the fields a node keeps, and a parameters or dependency object is looked up
by its text, parsed only the first time it is met. What it gives is what `read_node` gives
for the parsed record; a record of any other shape is left to `read_node`.
"""

from __future__ import annotations

from collections.abc import Mapping
from sys import intern
from typing import Any

import msgspec
import orjson

from cachegql.index.ingest.dag_nodes import Edge, Node, SourceFormatError, compiler_edges
from cachegql.index.ingest.node_values import (
    FLAG_KINDS,
    Parameters,
    edge_of,
    json_kind,
    parameters_of,
)
from cachegql.index.spack.compilers import Compiler, parse_compiler
from cachegql.index.spack.hashes import is_hash

__all__ = ["FLAG_KINDS", "NodeMemo", "flatten_node", "node_hash", "read_node", "read_record"]


def flatten_node(item: object) -> dict[str, Any]:
    """A node as a flat dict with `name`: DB 5 and YAML nodes are `{name: {...}}`."""
    if not isinstance(item, dict):
        raise SourceFormatError(f"a node must be an object, not {type(item).__name__}")
    if "name" in item or len(item) != 1:
        return item
    ((name, body),) = item.items()
    return {**body, "name": name} if isinstance(body, dict) else item


def node_hash(node: Mapping[str, Any]) -> str:
    value = node.get("hash", node.get("_hash"))
    if not isinstance(value, str):
        raise SourceFormatError(f"node {node.get('name')!r} has no hash")
    return value


class NodeMemo:
    """What repeats across the nodes of one source, worked out once: their parameters
    (variants and flags) and their dependency edges, each keyed by its JSON text (an
    edge by its object's, but for the braces).

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
        self.parameters: dict[bytes, Parameters] = {}
        self.edges: dict[bytes, Edge] = {}
        self.compilers: dict[tuple[bytes, bytes], Compiler | None] = {}
        self.compiler_edges: dict[tuple[int, ...], tuple[Edge, ...]] = {}

    def read_parameters(self, parameters: Any) -> Parameters:
        key = _key(parameters) if self.keyed else None
        if key is None:
            return parameters_of(parameters)
        found = self.parameters.get(key)
        if found is None:
            found = self.parameters[_kept(key)] = parameters_of(parameters)
        return found

    def read_edges(self, dependencies: object) -> tuple[Edge, ...]:
        if dependencies is None:
            return ()
        if isinstance(dependencies, dict):  # DB 5 and YAML: name -> {hash, type}
            for key, body in dependencies.items():
                if not isinstance(body, dict):
                    raise ValueError(f"dependency {key!r} must be an object, not {json_kind(body)}")
            items: list[Any] = [{**body, "name": name} for name, body in dependencies.items()]
        elif isinstance(dependencies, list):
            items = dependencies
        else:
            raise ValueError("'dependencies' must be a list or an object")
        aliases = self.aliases
        if not self.keyed:
            return tuple(edge_of(item, aliases) for item in items)
        # `_key`, inlined: this loop runs for every edge.
        edges, dumps = self.edges, orjson.dumps
        result = []
        for item in items:
            try:
                key = dumps(item)[1:-1] if type(item) is dict else None
            except orjson.JSONEncodeError:
                key = None
            if key is None:  # no key: read each time (an error, or a value not JSON)
                result.append(edge_of(item, aliases))
                continue
            edge = edges.get(key)
            if edge is None:
                edge = edges[key] = edge_of(item, aliases)
            result.append(edge)
        return tuple(result)

    def read_raw_parameters(self, text: bytes) -> Parameters:
        """`read_parameters` of the value whose JSON text this is: the text is its key."""
        found = self.parameters.get(text)
        if found is None:
            found = self.parameters[text] = parameters_of(orjson.loads(text) or {})
        return found

    def read_raw_edges(self, text: bytes) -> tuple[Edge, ...]:
        """`read_edges` of the value whose JSON text this is: each dependency's text is
        its key (the same key its parsed object's JSON text is, as Spack writes it).

        A list of compact objects, as Spack writes it, is cut at each `},{`: each piece
        is a dependency's text, but for its braces, and its key as it is. A piece new to
        the memo is parsed as an object (with its braces); where one is not, the cut fell
        inside a value (a string, a nested list of objects), and the list is read whole.
        Cut so, a list reads as read whole: its text is `[`, the objects' texts with `,`
        between, and `]`, so it is a list of those objects (the 2M edges of 200k specs,
        the least of five runs: 1.78 -> 1.57 s from an empty memo, 1.14 -> 0.92 s from a
        full one).
        """
        if text == b"null" or text == b"[]":
            return ()
        if text[:2] == b"[{" and text[-2:] == b"}]":
            edges = self._cut_edges(text)
            if edges is not None:
                return edges
        try:
            items = _RAW_ITEMS.decode(text)
        except msgspec.ValidationError:  # not a list: DB 5's object, or a bad value
            return self.read_edges(orjson.loads(text))
        memo, aliases = self.edges, self.aliases
        result = []
        for item in items:
            dependency = bytes(item)
            if dependency[:1] != b"{":  # not an object: an error, never kept
                result.append(edge_of(orjson.loads(dependency), aliases))
                continue
            key = dependency[1:-1]
            edge = memo.get(key)
            if edge is None:
                edge = memo[key] = edge_of(orjson.loads(dependency), aliases)
            result.append(edge)
        return tuple(result)

    def _cut_edges(self, text: bytes) -> tuple[Edge, ...] | None:
        """The edges of a list of objects `[{...},{...}]`, cut at each `},{` (see
        `read_raw_edges`); None if a piece does not parse as an object."""
        memo, aliases = self.edges, self.aliases
        result = []
        for key in text[2:-2].split(b"},{"):
            edge = memo.get(key)
            if edge is None:
                try:
                    item = orjson.loads(b"{%b}" % key)
                except orjson.JSONDecodeError:
                    return None
                edge = memo[key] = edge_of(item, aliases)
            result.append(edge)
        return tuple(result)

    def read_raw_compiler(self, compiler: bytes, annotations: bytes) -> Compiler | None:
        """The compiler a node records in these two JSON texts (`_recorded_compiler`)."""
        key = (compiler, annotations)
        if key not in self.compilers:
            node = {"compiler": orjson.loads(compiler), "annotations": orjson.loads(annotations)}
            self.compilers[key] = _recorded_compiler(node)
        return self.compilers[key]


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


def read_node(raw: dict[str, Any], digest: str, in_buildcache: bool, memo: NodeMemo) -> Node:
    node = flatten_node(raw)
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
    edges = memo.read_edges(node.get("dependencies"))
    return Node(
        hash=intern(digest),
        name=intern(name),
        # Shared: a million nodes have a few thousand of each (a string each: 300 MB).
        version=intern(version),
        os=intern(_text(arch, "platform_os")),
        platform=intern(_text(arch, "platform")),
        target=intern(target_name),
        namespace=intern(str(node.get("namespace") or "")),
        variants=variants,
        flags=flags,
        edges=edges,
        compiler=_recorded_compiler(node),
        in_buildcache=in_buildcache,
        compiler_edges=compiler_edges(edges, memo.compiler_edges if memo.keyed else {}),
    )


class _Target(msgspec.Struct):
    """A microarchitecture (DB 6 and 7): only its name is read."""

    name: str


class _Arch(msgspec.Struct):
    platform: str
    platform_os: str
    target: str | _Target


_NULL = msgspec.Raw(b"null")


class _Spec(msgspec.Struct):
    """The fields of a node that `read_node` reads, as one index record holds them; the
    others are skipped unread (msgspec checks their syntax, not their UTF-8 nor their
    numbers' range: see `read_record`)."""

    name: str
    version: str
    arch: _Arch
    namespace: str | None = None
    parameters: msgspec.Raw = _NULL
    dependencies: msgspec.Raw = _NULL
    compiler: msgspec.Raw = _NULL
    annotations: msgspec.Raw = _NULL


class _Record(msgspec.Struct):
    spec: _Spec
    in_buildcache: bool = False


_RECORD = msgspec.json.Decoder(_Record)
_RAW_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])


def read_record(text: bytes, digest: str, memo: NodeMemo) -> Node | None:
    """The node of an index record (`{"spec": {...}, "in_buildcache": ...}`) read from its
    JSON text, as `read_node` reads the parsed record; None when it is not of the usual
    shape (a node's field missing or of another type, a DB 5 node, text that is not ASCII,
    any value `read_node` would refuse), for the caller to parse it and call `read_node`,
    which then says what is wrong. 1.3 to 1.5 times as fast (`bench/record_reading.py`).

    ASCII only: msgspec does not check the UTF-8 of the values it skips, which orjson
    refuses in any value. A number beyond a double's range (valid JSON) in a field no node
    keeps is skipped here, where orjson refuses the record; every field a node keeps is
    typed or parsed by orjson.
    """
    if not memo.keyed or not text.isascii() or not is_hash(digest):
        return None
    try:
        record = _RECORD.decode(text)
        spec = record.spec
        arch = spec.arch
        target_name = arch.target if isinstance(arch.target, str) else arch.target.name
        if not (spec.name and spec.version and arch.platform and arch.platform_os and target_name):
            return None
        variants, flags = memo.read_raw_parameters(bytes(spec.parameters))
        edges = memo.read_raw_edges(bytes(spec.dependencies))
        compiler = None
        if spec.compiler != _NULL or spec.annotations != _NULL:
            compiler = memo.read_raw_compiler(bytes(spec.compiler), bytes(spec.annotations))
    except (msgspec.DecodeError, orjson.JSONDecodeError, ValueError, RecursionError):
        return None
    return Node(
        hash=intern(digest),
        name=intern(spec.name),
        version=intern(spec.version),
        os=intern(arch.platform_os),
        platform=intern(arch.platform),
        target=intern(target_name),
        namespace=intern(spec.namespace or ""),
        variants=variants,
        flags=flags,
        edges=edges,
        compiler=compiler,
        in_buildcache=bool(record.in_buildcache),
        compiler_edges=compiler_edges(edges, memo.compiler_edges),
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
    annotations = node.get("annotations")
    annotated = annotations.get("compiler") if isinstance(annotations, dict) else None
    if isinstance(annotated, str) and annotated:
        try:
            return parse_compiler(annotated)
        except ValueError:
            return None
    return None
