"""What a source's DAG is made of: nodes, their edges, the database of one source.

A `Node` is one node as a build-cache index or spec file records it (see `spackdb.py` for the
formats, `node_reader.py` for reading one); a `Database` is one source's nodes by hash, and
works out a node's compiler the way Spack 1.x prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from cachegql.index.records import Problem, SpecRecord
from cachegql.index.spack.compilers import Compiler
from cachegql.index.spack.variants import Variant

__all__ = ["LANGUAGES", "Database", "Edge", "Node", "SourceFormatError", "compiler_edges"]

LANGUAGES = ("c", "cxx", "fortran")


class SourceFormatError(ValueError):
    """A source that cannot be read at all; the message says why."""


@dataclass(frozen=True, slots=True)
class Edge:
    """A direct dependency: the node it points to, how it is used, what it provides."""

    name: str
    hash: str
    deptypes: tuple[str, ...]
    virtuals: tuple[str, ...]
    languages: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """The `LANGUAGES` it provides to the build (in their order): its node's compiler."""
    kind: int = field(init=False, repr=False, compare=False)
    """The kind an `EdgeArrays` gave this object, valid while `numbered_by` is that
    arrays' token (-1 and None until then): a tag's 10M edges find their kinds on the
    objects their nodes point to, without a lookup each (see edge_arrays.py)."""
    numbered_by: object = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        languages: tuple[str, ...] = ()
        if self.virtuals and "build" in self.deptypes:
            # Once per set of virtuals (a few dozen in a tag), not per edge object.
            found = _LANGUAGES_OF.get(self.virtuals)
            if found is None:
                found = tuple(lang for lang in LANGUAGES if lang in self.virtuals)
                found = _LANGUAGES_OF[self.virtuals] = _LANGUAGE_SETS.setdefault(found, found)
            languages = found
        setter = object.__setattr__
        setter(self, "languages", languages)
        setter(self, "kind", -1)
        setter(self, "numbered_by", None)

    def number(self, kind: int, token: object) -> None:
        """Mark this object as of `kind` for the `EdgeArrays` whose token is `token`.
        Equal edges of two sources are two objects, each a kind; an object is numbered
        by one arrays at a time (a tag's, as it is finished)."""
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "numbered_by", token)


_LANGUAGE_SETS: dict[tuple[str, ...], tuple[str, ...]] = {}
_LANGUAGES_OF: dict[tuple[str, ...], tuple[str, ...]] = {}  # by virtuals, for build edges


class Node(NamedTuple):
    """A node of a DAG as a source records it; a binary of the cache if `in_buildcache`.

    A named tuple, not a frozen dataclass: a million are made, and a frozen dataclass
    sets each of its fields through `object.__setattr__` (2.1 against 0.7 µs a node).
    """

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
    compiler_edges: tuple[Edge, ...] | None = None
    """Those of `edges` that provide languages (`Edge.languages`), which name the node's
    compiler where it records none, set as the node is read (`compiler_edges`). None:
    not set (`Database.compiler_of` then looks at every edge)."""

    def flagged(self, in_buildcache: bool) -> Node:
        """This node with the flag `in_buildcache` (a stack's record of a node the root
        read: some 40,000 a tag of 50,000 binaries when its stacks are taken from parts;
        `_replace` goes through a dict of the fields, 2.5 times as slow)."""
        return Node._make((*self[:_FLAG], in_buildcache, *self[_FLAG + 1 :]))

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


_FLAG = Node._fields.index("in_buildcache")


def compiler_edges(
    edges: tuple[Edge, ...], shared: dict[tuple[int, ...], tuple[Edge, ...]]
) -> tuple[Edge, ...]:
    """Those of `edges` that provide languages (a node's `compiler_edges`), as the one
    tuple of them in `shared`, keyed by their ids (it keeps the objects alive). Worked out
    as a node is read, its edges at hand: `Database.compiler_of` looked at every edge of
    every binary in the tag's walk by hash, nodes and edges far apart in memory by then
    (3 s of a 1M build)."""
    providing = tuple([edge for edge in edges if edge.languages])
    if not providing:
        return ()
    return shared.setdefault(tuple(map(id, providing)), providing)


@dataclass
class Database:
    """The nodes of one source, by hash, and what was wrong with the ones left out."""

    source: str
    version: int | None
    nodes: dict[str, Node] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    _compilers: dict[str, Compiler] = field(default_factory=dict, repr=False, compare=False)
    # Each set of edges that provide languages (by the edges' ids), with its compiler.
    _by_edges: dict[tuple[int, ...], tuple[tuple[Edge, ...], Compiler]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def merge(self, other: Database) -> None:
        """Add `other`'s nodes; a node seen as a binary anywhere stays a binary."""
        self._by_edges.clear()  # a compiler's version is its node's: they may change
        if not self.nodes:  # a tag's first source, often its only one: nothing to keep
            self.nodes.update(other.nodes)
        else:
            for digest, node in other.nodes.items():
                known = self.nodes.get(digest)
                if known is None or (node.in_buildcache and not known.in_buildcache):
                    self.nodes[digest] = node
        self.problems.extend(other.problems)

    def compiler_of(self, node: Node) -> Compiler:
        """The compiler `node` was built with, as Spack 1.x prints it (`c,cxx=gcc@10.2.1`)."""
        if node.compiler is not None and node.compiler.raw != "none":
            return node.compiler
        # The nodes of one index file share their edge objects (node_reader.py): a
        # million nodes name a few hundred sets of compilers, each worked out once. A
        # set's edges are kept with it, so that their ids stay theirs (the memo is this
        # object's alone: a copy's edges would be other objects).
        providing = node.compiler_edges
        if providing is None:  # a node made elsewhere: its edges looked at here
            providing = compiler_edges(node.edges, {})
        if not providing:
            return node.compiler or _NONE
        key = tuple(map(id, providing))
        found = self._by_edges.get(key)
        if found is None:
            found = self._by_edges[key] = (providing, self._from_edges(providing))
        return found[1]

    def _from_edges(self, edges: tuple[Edge, ...]) -> Compiler:
        """The compiler that these edges name, each providing languages."""
        by_language = []
        for edge in edges:
            dependency = self.nodes.get(edge.hash)
            version = dependency.version if dependency is not None else None
            languages = edge.languages
            by_language.append((LANGUAGES.index(languages[0]), languages, edge.name, version))
        by_language.sort(key=lambda item: item[0])
        raw = " ".join(
            f"{','.join(langs)}={name}@{version}" if version else f"{','.join(langs)}={name}"
            for _, langs, name, version in by_language
        )
        # One object per compiler: a million nodes have a few dozen.
        compiler = self._compilers.get(raw)
        if compiler is None:
            _, _, name, version = by_language[0]
            compiler = self._compilers[raw] = Compiler(name=name, version=version, raw=raw)
        return compiler


_NONE = Compiler(name="none", version=None, raw="none")
