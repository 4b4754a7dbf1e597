"""The DAG of a synthetic build cache in flat arrays, and the package records it is
planned from."""

from __future__ import annotations

import json
import random
from array import array
from dataclasses import dataclass

from cachegql.demo.draws import _spec_hash
from cachegql.demo.mirror_catalogue import _OMITTED, _PHANTOM_SERIAL

__all__ = ["_Config", "_Context", "_Dep", "_Graph", "_Package", "_Route", "_compact", "_quote"]


def _quote(text: str) -> str:
    return json.dumps(text)


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


class _Interner:
    """Distinct strings and their numbers, in the order first seen."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._ids: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        found = self._ids.get(text)
        if found is None:
            found = self._ids[text] = len(self.items)
            self.items.append(text)
        return found


@dataclass(frozen=True)
class _Dep:
    """A dependency of a package on another: its package index and edge parameters."""

    package: int
    name: str
    kind: int


@dataclass(frozen=True)
class _Config:
    """A variant configuration of a package and the dependencies it enables."""

    variants: tuple[tuple[str, object], ...]
    deps: tuple[int, ...]


@dataclass(frozen=True)
class _Route:
    """Where a package's specs are built on one stack: arch contexts and compilers, and per
    context the other stacks of the package that build that arch too (and may list a spec)."""

    stack: int
    contexts: tuple[int, ...]
    arch_cum: tuple[float, ...]
    compiler_cum: tuple[float, ...]
    partners: dict[int, tuple[int, ...]]


@dataclass
class _Package:
    """Everything stable about a package: the look of all its nodes."""

    name: str
    namespace: str
    versions: tuple[str, ...]
    version_cum: tuple[float, ...]
    build_system: str
    routes: tuple[_Route, ...]
    route_cum: tuple[float, ...]
    configs: tuple[_Config, ...]
    config_cum: tuple[float, ...]
    deps: tuple[_Dep, ...]
    languages: tuple[str, ...]
    size: float
    count: int = 0


@dataclass(frozen=True)
class _Context:
    """A stack and one (os, target) of it: where a node is built."""

    stack: int
    platform: str
    os: str
    target: str


class _Graph:
    """The DAG in flat arrays: node `n` is described by item `n` of each array.

    Text fragments (quoted names, versions, arch, parameters, ...) are interned; a node holds
    their numbers. Dependencies of node `n` are `dep_node[dep_start[n]:dep_start[n + 1]]`,
    always of smaller numbers, so the numbering is a topological order.
    """

    def __init__(self) -> None:
        self.names = _Interner()
        self.texts = _Interner()
        self.edge_kinds = _Interner()
        self.name = array("I")
        self.version = array("I")
        self.arch = array("I")
        self.namespace = array("I")
        self.params = array("I")
        self.external = array("I")
        self.annotations = array("I")
        self.flags = array("B")
        self.stacks = array("Q")
        self.size = array("Q")
        self.hashes = bytearray()
        self.dep_start = array("I", [0])
        self.dep_node = array("I")
        self.dep_kind = array("I")
        self.no_text = self.texts("")

    def __len__(self) -> int:
        return len(self.name)

    def add(
        self,
        rng: random.Random,
        name: str,
        fields: tuple[int, int, int, int, int, int],
        flags: int,
        stacks: int,
        size: int,
        deps: list[tuple[str, int, int]],
    ) -> int:
        """A new node; `fields`: text numbers of version, arch, namespace, params, external,
        annotations; `deps`: (name, node, edge kind), sorted here by name as Spack does."""
        node = len(self.name)
        self.name.append(self.names(name))
        version, arch, namespace, params, external, annotations = fields
        self.version.append(version)
        self.arch.append(arch)
        self.namespace.append(namespace)
        self.params.append(params)
        self.external.append(external)
        self.annotations.append(annotations)
        self.flags.append(flags)
        self.stacks.append(stacks)
        self.size.append(size)
        serial = _PHANTOM_SERIAL + node if flags & _OMITTED else node + 1
        self.hashes += _spec_hash(rng, serial).encode("ascii")
        if deps:
            deps.sort()
            for _, dep, kind in deps:
                self.dep_node.append(dep)
                self.dep_kind.append(kind)
        self.dep_start.append(len(self.dep_node))
        return node

    def hash(self, node: int) -> str:
        return self.hashes[32 * node : 32 * node + 32].decode("ascii")
