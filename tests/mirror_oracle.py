"""An independent reading of Spack build caches, for expected values: json and yaml, nothing
from `cachegql`.

Tests compare what the index answers about a build cache with what this module computes
straight from the files: an index (`index.json`, DB versions 5-9) or spec files
(`*.spec.json`, clearsigned `*.spec.json.sig`, `*.spec.yaml`, gzipped spec blobs).

- `load_index(...)` and `load_spec_files(...)` read the sources into a `Dag`: every node of the
  build cache's DAGs, binaries (`in_buildcache: true`, or roots of spec files) and the rest.
- `Dag.expected(hash, stacks, size)` is what the API must answer for one binary
  (`ExpectedSpec`); `Dag.expected_all(...)` for all of them.
- `Dag.depends_on(hash, predicate)` and `Dag.matching(root, deps)` answer dependency queries
  (`hdf5 ^mpich@4.1 +fortran`) by a plain graph walk; `Constraint` spells a Spack-like
  constraint on one node.
- `listing_stacks([(label, dag), ...])` gives the stacks of a listing (cache.spack.io's
  `cache_spack_io_index.json`): the labels of every index that lists a hash as a binary.
"""

from __future__ import annotations

import gzip
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

#: The six compiler flag lists of `parameters`; they are flags, never variants.
FLAG_NAMES = ("cflags", "cppflags", "cxxflags", "fflags", "ldflags", "ldlibs")
#: The language virtuals that make a build dependency a compiler (Spack 1.0+), in print order.
LANGUAGES = ("c", "cxx", "fortran")
#: The DB versions a reader must support.
SUPPORTED_DB_VERSIONS = frozenset(range(5, 10))

_ALIASES = {"full_hash": ("full_hash", "_full_hash"), "build_hash": ("build_hash", "_build_hash")}
_SIGNED_HEADER = "-----BEGIN PGP SIGNED MESSAGE-----"
_SIGNATURE = "-----BEGIN PGP SIGNATURE-----"
_VARIANT = re.compile(r"^([A-Za-z0-9_.\-]+)(?::=|==|=)(.*)$")


# -- the DAG ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edge:
    """A dependency edge, in the order its node lists it; `hash` is the DAG hash."""

    name: str
    hash: str
    deptypes: tuple[str, ...] = ()
    virtuals: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Node:
    """One node of a build cache: a binary, a dependency outside the cache, or (`dangling`) a
    hash that some edge names and no record has (it has only its name and hash)."""

    hash: str
    name: str
    version: str | None = None
    namespace: str | None = None
    platform: str | None = None
    os: str | None = None
    target: str | None = None
    #: The node's own `compiler` object (spec files v1-v4, DB 5-7): (name, version).
    compiler: tuple[str, str | None] | None = None
    #: `annotations.compiler` (a node migrated from an older format): "gcc@=10.2.1".
    annotated_compiler: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    edges: tuple[Edge, ...] = ()
    in_buildcache: bool = False
    external: bool = False
    dangling: bool = False


@dataclass(frozen=True)
class ExpectedCompiler:
    name: str
    version: str | None
    normalized: str
    raw: str


NO_COMPILER = ExpectedCompiler("none", None, "none", "none")


@dataclass(frozen=True)
class ExpectedDependency:
    name: str
    hash: str
    deptypes: list[str]
    virtuals: list[str]
    #: The version of the node with that hash; None when no record has that hash.
    version: str | None
    #: Whether that hash is a binary (in the build cache) of the same source.
    is_binary: bool


@dataclass(frozen=True)
class ExpectedSpec:
    """What the API must answer for one binary spec."""

    hash: str
    name: str
    version: str | None
    namespace: str | None
    os: str | None
    platform: str | None
    target: str | None
    compiler: ExpectedCompiler
    #: Spack's string forms: booleans first (`+x`, `~x`) sorted by name, then the rest by name.
    variants: list[str]
    #: The non-empty flag lists.
    flags: dict[str, list[str]]
    dependencies: list[ExpectedDependency]
    #: Sorted.
    stacks: list[str]
    size: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


NodePredicate = Callable[[Node], bool]


@dataclass(frozen=True)
class Constraint:
    """A Spack-like constraint on one node (`mpich@=4.1 %gcc +fortran os=ubuntu24.04`): every
    given part must hold.

    - `version`: exact (`4.1` and `=4.1` both mean exactly 4.1, not 4.1.x).
    - `compiler`: Spack's `%gcc`: some compiler of the node has that name (the `compiler` object
      of older formats, a language build dependency from DB 8, or `annotations.compiler`);
      `compiler_version` (exact) must then hold for that same compiler.
    - `variants`: `+x`, `~x`/`-x`, `k=v` (`:=` and `==` too, quotes allowed), `k=a,b` (all of
      them among the node's values); `patches=abc1234` matches a patch by its 7-char prefix.
    """

    name: str | None = None
    version: str | None = None
    compiler: str | None = None
    compiler_version: str | None = None
    variants: tuple[str, ...] = ()
    os: str | None = None
    target: str | None = None
    platform: str | None = None
    namespace: str | None = None

    def holds(self, dag: Dag, node: Node) -> bool:
        if self.name is not None and node.name != self.name:
            return False
        if self.version is not None and node.version != self.version.removeprefix("="):
            return False
        for wanted, have in (
            (self.os, node.os),
            (self.target, node.target),
            (self.platform, node.platform),
            (self.namespace, node.namespace),
        ):
            if wanted is not None and have != wanted:
                return False
        if self.compiler is not None or self.compiler_version is not None:
            version = self.compiler_version.removeprefix("=") if self.compiler_version else None
            if not any(
                (self.compiler is None or c.name == self.compiler)
                and (version is None or c.version == version)
                for c in dag.compilers(node.hash)
            ):
                return False
        return all(variant_holds(node.parameters, v) for v in self.variants)


class Dag:
    """The nodes of one source (an index, or a set of spec files), keyed by DAG hash."""

    def __init__(self, nodes: Mapping[str, Node], db_version: str | None = None) -> None:
        self.nodes: dict[str, Node] = dict(nodes)
        #: `database.version` as written (a string; None for spec files).
        self.db_version = db_version

    def __repr__(self) -> str:
        return f"Dag({len(self.nodes)} nodes, {len(self.binaries())} binaries)"

    # -- binaries and nodes

    def binaries(self) -> list[str]:
        """Hashes of the binaries, in the API's default order (package name, then hash)."""
        return sorted(
            (h for h, n in self.nodes.items() if n.in_buildcache),
            key=lambda h: (self.nodes[h].name, h),
        )

    def node(self, hash_: str, name: str = "") -> Node:
        """The node with that hash, or a dangling node with only `name` and the hash."""
        found = self.nodes.get(hash_)
        return found if found is not None else Node(hash=hash_, name=name, dangling=True)

    def is_binary(self, hash_: str) -> bool:
        found = self.nodes.get(hash_)
        return found is not None and found.in_buildcache

    # -- expected API fields

    def compilers(self, hash_: str) -> list[ExpectedCompiler]:
        """Each compiler of a node: its `compiler` object; else one per language build
        dependency (raw `c,cxx=gcc@10.2.1`), ordered by first language; else
        `annotations.compiler`; else none (an empty list)."""
        node = self.node(hash_)
        if node.compiler is not None:
            name, version = node.compiler
            raw = f"{name}@{version}" if version is not None else name
            return [_compiler(name, version, raw)]
        found: list[tuple[int, ExpectedCompiler]] = []
        for edge in node.edges:
            languages = [lang for lang in LANGUAGES if lang in edge.virtuals]
            if not languages or "build" not in edge.deptypes:
                continue
            version = self.node(edge.hash).version
            spelled = f"{edge.name}@{version}" if version is not None else edge.name
            found.append(
                (
                    LANGUAGES.index(languages[0]),
                    ExpectedCompiler(
                        edge.name, version, spelled, f"{','.join(languages)}={spelled}"
                    ),
                )
            )
        if found:
            return [c for _, c in sorted(found, key=lambda item: item[0])]
        if node.annotated_compiler:
            name, _, version = node.annotated_compiler.partition("@")
            return [_compiler(name, version or None, node.annotated_compiler)]
        return []

    def compiler(self, hash_: str) -> ExpectedCompiler:
        """The spec's compiler: the first of `compilers`, with raw naming all of them."""
        found = self.compilers(hash_)
        if not found:
            return NO_COMPILER
        first = found[0]
        return ExpectedCompiler(
            first.name, first.version, first.normalized, " ".join(c.raw for c in found)
        )

    def variants(self, hash_: str) -> list[str]:
        return variant_strings(self.node(hash_).parameters)

    def flags(self, hash_: str) -> dict[str, list[str]]:
        parameters = self.node(hash_).parameters
        flags: dict[str, list[str]] = {}
        for name in FLAG_NAMES:
            value = parameters.get(name)
            if isinstance(value, str):
                value = value.split()
            if value:
                flags[name] = [str(v) for v in value]
        return flags

    def dependencies(self, hash_: str) -> list[ExpectedDependency]:
        return [
            ExpectedDependency(
                name=e.name,
                hash=e.hash,
                deptypes=list(e.deptypes),
                virtuals=list(e.virtuals),
                version=self.node(e.hash).version,
                is_binary=self.is_binary(e.hash),
            )
            for e in self.node(hash_).edges
        ]

    def expected(
        self, hash_: str, stacks: Iterable[str] = (), size: int | None = None
    ) -> ExpectedSpec:
        node = self.nodes[hash_]
        return ExpectedSpec(
            hash=hash_,
            name=node.name,
            version=node.version,
            namespace=node.namespace,
            os=node.os,
            platform=node.platform,
            target=node.target,
            compiler=self.compiler(hash_),
            variants=self.variants(hash_),
            flags=self.flags(hash_),
            dependencies=self.dependencies(hash_),
            stacks=sorted(set(stacks)),
            size=size,
        )

    def expected_all(
        self,
        stacks: Mapping[str, Iterable[str]] | Iterable[str] = (),
        sizes: Mapping[str, int] | None = None,
    ) -> dict[str, ExpectedSpec]:
        """Every binary: `stacks` is the same for all (a list) or per hash (a mapping)."""
        sizes = sizes or {}
        out: dict[str, ExpectedSpec] = {}
        for h in self.binaries():
            labels = stacks.get(h, ()) if isinstance(stacks, Mapping) else stacks
            out[h] = self.expected(h, labels, sizes.get(h))
        return out

    # -- the DAG walk

    def reachable(self, hash_: str) -> list[Node]:
        """Every node reachable from `hash_` through edges (any depth, any deptype), in
        breadth-first order, the start itself excluded; unknown hashes as dangling nodes."""
        seen = {hash_}
        out: list[Node] = []
        queue = deque(self.node(hash_).edges)
        while queue:
            edge = queue.popleft()
            if edge.hash in seen:
                continue
            seen.add(edge.hash)
            node = self.node(edge.hash, edge.name)
            out.append(node)
            queue.extend(node.edges)
        return out

    def depends_on(self, hash_: str, predicate: Constraint | NodePredicate) -> bool:
        """True when some node reachable from the spec satisfies the predicate."""
        test = self._predicate(predicate)
        return any(test(n) for n in self.reachable(hash_))

    def satisfies(self, hash_: str, predicate: Constraint | NodePredicate) -> bool:
        return self._predicate(predicate)(self.node(hash_))

    def matching(
        self,
        root: Constraint | NodePredicate | None = None,
        deps: Sequence[Constraint | NodePredicate] = (),
    ) -> list[str]:
        """Binaries whose node satisfies `root` and, for each of `deps` (each a `^...`: all its
        parts bind to one node), reach some node that satisfies it; default order."""
        return [
            h
            for h in self.binaries()
            if (root is None or self.satisfies(h, root))
            and all(self.depends_on(h, d) for d in deps)
        ]

    def _predicate(self, predicate: Constraint | NodePredicate) -> NodePredicate:
        if isinstance(predicate, Constraint):
            constraint = predicate
            return lambda node: constraint.holds(self, node)
        return predicate


def _compiler(name: str, version: str | None, raw: str) -> ExpectedCompiler:
    version = version.removeprefix("=") if version else None
    return ExpectedCompiler(name, version, f"{name}@{version}" if version else name, raw)


# -- variants ---------------------------------------------------------------------------------


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def variant_strings(parameters: Mapping[str, Any]) -> list[str]:
    """Spack's string forms of the variants in `parameters` (flag lists left out)."""
    flags: list[str] = []
    others: list[str] = []
    for name in sorted(parameters):
        if name in FLAG_NAMES:
            continue
        value = parameters[name]
        if isinstance(value, bool):
            flags.append(f"{'+' if value else '~'}{name}")
        elif isinstance(value, list | tuple):
            if not value:
                continue
            values = sorted(_scalar(v) for v in value)
            if name == "patches":
                values = [v[:7] for v in values]
            others.append(f"{name}={','.join(values)}")
        elif value is not None:
            text = _scalar(value)
            others.append(f"{name}={text[:7] if name == 'patches' else text}")
    return flags + others


def variant_holds(parameters: Mapping[str, Any], variant: str) -> bool:
    """Whether one variant constraint (`+x`, `~x`, `-x`, `k=v`, `k:=a,b`, `k='a,b'`) holds."""
    if variant[:1] and variant[0] in "+~-":  # ++x, ~~x (propagated) bind the node too
        return parameters.get(variant.lstrip("+~-")) is (variant[0] == "+")
    match = _VARIANT.match(variant)
    if match is None:
        raise ValueError(f"not a variant: {variant!r}")
    name, text = match.groups()
    if name not in parameters or name in FLAG_NAMES:
        return False
    wanted = [w for w in text.strip("'\"").split(",") if w]
    value = parameters[name]
    have = {_scalar(v) for v in value} if isinstance(value, list | tuple) else {_scalar(value)}
    if name == "patches":
        have |= {h[:7] for h in have}
    return bool(wanted) and all(w in have for w in wanted)


# -- reading nodes ----------------------------------------------------------------------------


@dataclass
class _RawNode:
    node: Node
    #: Edges as written: (name, key of the hash: hash / full_hash / build_hash, value, ...).
    refs: list[tuple[str, str, str, tuple[str, ...], tuple[str, ...]]]
    aliases: dict[str, str]


def unwrap_node(raw: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any]]:
    """DB 5 and spec file v1 nodes are name-keyed: {"zlib": {...}}."""
    if "name" not in raw and len(raw) == 1:
        (name, body), *_ = raw.items()
        if isinstance(body, Mapping):
            return str(name), body
    return None, raw


def _str(value: Any) -> str | None:
    return None if value is None else _scalar(value)


def _deptypes(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def _edge_ref(name: str, body: Any) -> tuple[str, str, str, tuple[str, ...], tuple[str, ...]]:
    if isinstance(body, str):  # the oldest v1 form: name -> hash
        return (name, "hash", body, (), ())
    for key in ("hash", "full_hash", "build_hash"):
        if key in body:
            value = str(body[key])
            break
    else:
        raise ValueError(f"dependency {name!r} names no hash: {body!r}")
    parameters = body.get("parameters") or {}
    deptypes = _deptypes(parameters.get("deptypes", body.get("type", body.get("deptypes"))))
    virtuals = tuple(str(v) for v in parameters.get("virtuals") or body.get("virtuals") or ())
    return (name, key, value, deptypes, virtuals)


def _read_node(
    raw: Mapping[str, Any], key_hash: str | None = None, in_buildcache: bool = False
) -> _RawNode:
    keyed_name, body = unwrap_node(raw)
    name = keyed_name if keyed_name is not None else str(body["name"])
    hash_ = key_hash or body.get("hash") or body.get("_hash")
    if not hash_:
        raise ValueError(f"node {name!r} has no hash")
    arch = body.get("arch") or {}
    platform: str | None
    os_: str | None
    target: str | None
    if isinstance(arch, str):  # very old: "linux-rhel7-x86_64"
        parts: list[str | None] = [*arch.split("-", 2), None, None]
        platform, os_, target = parts[0], parts[1], parts[2]
    else:
        platform, os_ = _str(arch.get("platform")), _str(arch.get("platform_os"))
        raw_target = arch.get("target")
        target = _str(raw_target.get("name") if isinstance(raw_target, Mapping) else raw_target)
    compiler = body.get("compiler")
    compiler_pair = None
    if isinstance(compiler, Mapping) and compiler.get("name"):
        compiler_pair = (str(compiler["name"]), _str(compiler.get("version")))
    annotations = body.get("annotations") or {}
    deps = body.get("dependencies") or ()
    if isinstance(deps, Mapping):  # DB 5, spec file v1: name -> {hash, type}
        refs = [_edge_ref(str(n), d) for n, d in deps.items()]
    else:
        refs = [_edge_ref(str(d["name"]), d) for d in deps]
    aliases = {kind: str(body[k]) for kind, keys in _ALIASES.items() for k in keys if body.get(k)}
    node = Node(
        hash=str(hash_),
        name=name,
        version=_str(body.get("version")),
        namespace=_str(body.get("namespace")),
        platform=platform,
        os=os_,
        target=target,
        compiler=compiler_pair,
        annotated_compiler=_str(annotations.get("compiler")),
        parameters=dict(body.get("parameters") or {}),
        in_buildcache=in_buildcache,
        external=bool(body.get("external")),
    )
    return _RawNode(node, refs, aliases)


def _link(raws: Iterable[_RawNode]) -> dict[str, Node]:
    """Resolve edges that name a node by `full_hash` or `build_hash` to its DAG hash (within
    the same source); the first node of a hash wins, `in_buildcache` if any says so."""
    raws = list(raws)
    by_alias: dict[tuple[str, str], str] = {}
    for raw in raws:
        for kind, value in raw.aliases.items():
            by_alias.setdefault((kind, value), raw.node.hash)
    nodes: dict[str, Node] = {}
    for raw in raws:
        edges = tuple(
            Edge(name, value if key == "hash" else by_alias.get((key, value), value), dts, vs)
            for name, key, value, dts, vs in raw.refs
        )
        node = Node(**{**_fields(raw.node), "edges": edges})
        first = nodes.get(node.hash)
        if first is None:
            nodes[node.hash] = node
        elif node.in_buildcache and not first.in_buildcache:
            nodes[node.hash] = Node(**{**_fields(first), "in_buildcache": True})
    return nodes


def _fields(node: Node) -> dict[str, Any]:
    return {f: getattr(node, f) for f in node.__dataclass_fields__}


# -- sources ----------------------------------------------------------------------------------


def load_index(source: Path | bytes | str | Mapping[str, Any]) -> Dag:
    """An index.json (a path, its bytes or text, or the parsed object), DB version 5-9."""
    document = _document(source)
    database = document["database"]
    installs: Mapping[str, Any] = database.get("installs") or {}
    raws = [
        _read_node(record["spec"], key_hash=h, in_buildcache=bool(record.get("in_buildcache")))
        for h, record in installs.items()
    ]
    version = database.get("version")
    return Dag(_link(raws), None if version is None else str(version))


def _document(source: Path | bytes | str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    data = source.read_bytes() if isinstance(source, Path) else source
    if isinstance(data, bytes) and data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    parsed: Mapping[str, Any] = orjson.loads(data)
    return parsed


@dataclass(frozen=True)
class SpecFile:
    """One spec file: the root node is the binary, the others its DAG."""

    #: `_meta.version`; 1 for the name-keyed list of Spack <= 0.16.
    format_version: int
    root: str
    #: The file's nodes, the root the only binary.
    dag: Dag


SPEC_FILE_SUFFIXES = (".spec.json", ".spec.json.sig", ".spec.yaml")


class _TextLoader(yaml.CSafeLoader):
    """YAML without implicit numbers or dates: `version: 1.10` stays "1.10" (Spack wrote
    versions as strings; a float would lose the trailing zero)."""


_TextLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag.rsplit(":", 1)[-1] not in ("int", "float", "timestamp")
    ]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


def clearsigned_payload(text: str) -> str:
    """The message of a PGP clearsigned text (dash-escaping undone); other text unchanged."""
    start = text.find(_SIGNED_HEADER)
    if start < 0:
        return text
    header_end = text.find("\n\n", start)
    end = text.find("\n" + _SIGNATURE, header_end)
    if header_end < 0 or end < 0:
        raise ValueError("malformed clearsigned message")
    lines = text[header_end + 2 : end].split("\n")
    return "\n".join(line[2:] if line.startswith("- ") else line for line in lines)


def parse_spec_text(data: bytes | str, yaml_format: bool = False) -> SpecFile:
    """A spec file's content: JSON (maybe gzipped or clearsigned) or, with `yaml_format`, YAML."""
    if isinstance(data, bytes):
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        data = data.decode("utf-8")
    text = clearsigned_payload(data)
    document = yaml.load(text, Loader=_TextLoader) if yaml_format else orjson.loads(text)
    return parse_spec_document(document)


def parse_spec_document(document: Mapping[str, Any]) -> SpecFile:
    spec = document["spec"]
    if isinstance(spec, list):  # v1: a list of name-keyed nodes
        version, nodes = 1, spec
    else:
        version, nodes = int(spec.get("_meta", {}).get("version", 0)), spec["nodes"]
    if not nodes:
        raise ValueError("spec file with no nodes")
    raws = [_read_node(n) for n in nodes]
    raws[0] = _RawNode(
        Node(**{**_fields(raws[0].node), "in_buildcache": True}), raws[0].refs, raws[0].aliases
    )
    return SpecFile(version, raws[0].node.hash, Dag(_link(raws)))


def read_spec_file(path: Path) -> SpecFile:
    return parse_spec_text(path.read_bytes(), yaml_format=path.name.endswith((".yaml", ".yml")))


def spec_files_in(folder: Path) -> list[Path]:
    """The spec files under a folder, any depth, sorted."""
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and p.name.endswith(SPEC_FILE_SUFFIXES)
    )


def load_spec_files(sources: Iterable[Path | SpecFile]) -> Dag:
    """A mirror of spec files without an index, as `spack buildcache update-index` reads it:
    every node of every file; the roots are the binaries. Folders are searched."""
    files: list[SpecFile] = []
    for source in sources:
        if isinstance(source, SpecFile):
            files.append(source)
        elif source.is_dir():
            files.extend(read_spec_file(p) for p in spec_files_in(source))
        else:
            files.append(read_spec_file(source))
    return merge(f.dag for f in files)


def merge(dags: Iterable[Dag]) -> Dag:
    """The union of several sources: first node of a hash wins, a binary if any says so."""
    nodes: dict[str, Node] = {}
    versions: set[str] = set()
    for dag in dags:
        if dag.db_version is not None:
            versions.add(dag.db_version)
        for h, node in dag.nodes.items():
            first = nodes.get(h)
            if first is None:
                nodes[h] = node
            elif node.in_buildcache and not first.in_buildcache:
                nodes[h] = Node(**{**_fields(first), "in_buildcache": True})
    return Dag(nodes, versions.pop() if len(versions) == 1 else None)


def listing_stacks(indexes: Iterable[tuple[str, Dag]]) -> dict[str, list[str]]:
    """{hash: sorted labels}: a spec's stacks are the labels of every index listing it as a
    binary (`in_buildcache: true`)."""
    stacks: dict[str, set[str]] = {}
    for label, dag in indexes:
        for h in dag.binaries():
            stacks.setdefault(h, set()).add(label)
    return {h: sorted(labels) for h, labels in sorted(stacks.items())}


def expected_listing(
    indexes: Sequence[tuple[str, Dag]], sizes: Mapping[str, int] | None = None
) -> dict[str, ExpectedSpec]:
    """Every binary of a listing, with its stacks, read from the union of the indexes."""
    return merge(dag for _, dag in indexes).expected_all(listing_stacks(indexes), sizes)
