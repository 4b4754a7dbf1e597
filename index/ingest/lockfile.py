"""Spack environment lockfiles (`spack.lock`), read into the concrete specs they pin.

A lockfile is JSON: `_meta` (with `lockfile-version`), `roots` (a list of `{hash, spec}`)
and `concrete_specs` (hash -> node). Its nodes are the nodes of Spack's spec files, so
they are read as one (`spackdb.read_spec_file`):

- versions 1 and 2 (Spack 0.12-0.16): nodes name-keyed (`{"zlib": {...}}`), dependencies a
  dict `name -> {hash, type}`;
- version 3 (Spack 0.17): keyed by build hash, each node with its DAG `hash`; dependencies
  name a `build_hash`;
- versions 4 and 5 (Spack 0.19-0.23): keyed by DAG hash, dependencies a list of
  `{name, hash, type}` or `{name, hash, parameters: {deptypes, virtuals}}`;
- version 6 (Spack 1.0): compilers are build dependencies providing `c`/`cxx`/`fortran`.

Externals (`external` on a node) are pinned but never built: a cache cannot hold them.
A lockfile that is not JSON, or lacks what every version has, is a `LockfileError` naming
the line or the key; a node that cannot be read is a problem naming its key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from cachegql.index.errors import CriteriaError, shorten
from cachegql.index.ingest.spackdb import Node, SourceFormatError, read_spec_file
from cachegql.index.records import Problem
from cachegql.index.spack.compilers import Compiler

__all__ = [
    "LOCKFILE_VERSIONS",
    "LockedSpec",
    "Lockfile",
    "LockfileError",
    "read_lock_node",
    "read_lockfile",
]

LOCKFILE_VERSIONS = range(1, 7)


class LockfileError(CriteriaError):
    """A lockfile that cannot be read at all, with where and why."""


@dataclass(frozen=True, slots=True)
class LockedSpec:
    """One concrete spec of a lockfile."""

    node: Node
    compiler: Compiler
    external: bool

    @property
    def hash(self) -> str:
        return self.node.hash


@dataclass
class Lockfile:
    source: str
    version: int
    roots: list[tuple[str, str]]
    """(spec as the user wrote it, hash of its concrete spec), in order."""
    specs: dict[str, LockedSpec] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def reachable(self, digest: str) -> list[str]:
        """The hashes of the DAG of `digest` (itself first), each once, all deptypes."""
        seen = {digest}
        order = [digest]
        for current in order:
            locked = self.specs.get(current)
            for edge in locked.node.edges if locked else ():
                if edge.hash not in seen:
                    seen.add(edge.hash)
                    order.append(edge.hash)
        return [h for h in order if h in self.specs]


def read_lockfile(data: bytes, source: str) -> Lockfile:
    """Read a lockfile; raise LockfileError when it is not one (naming the line or key)."""
    try:
        document = json.loads(data)
    except UnicodeDecodeError as exc:
        raise LockfileError(f"{source}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise LockfileError(
            f"{source}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(document, dict):
        raise LockfileError(f"{source}: a lockfile is a JSON object, not {_kind(document)}")
    version = _version(document, source)
    nodes = document.get("concrete_specs")
    if not isinstance(nodes, dict):
        raise LockfileError(f"{source}: 'concrete_specs' must be an object of hash -> spec")
    roots = list(_roots(document.get("roots"), source))
    if not nodes:
        raise LockfileError(
            f"{source}: 'concrete_specs' is empty: nothing in the environment is concretized "
            "(`spack concretize` writes them)"
        )
    keys, flat = list(nodes), [_flat(key, node, source) for key, node in nodes.items()]
    try:
        database = read_spec_file(orjson.dumps({"spec": {"nodes": flat}}), source)
    except SourceFormatError as exc:
        raise LockfileError(f"{source}: {exc}") from None
    except orjson.JSONEncodeError as exc:  # what `json` reads and orjson cannot write
        key = next((k for k, node in zip(keys, flat, strict=True) if not _writable(node)), "?")
        raise LockfileError(
            f"{source}: concrete_specs.{key}: a value no Spack lockfile holds ({exc})"
        ) from None
    lockfile = Lockfile(source=source, version=version, roots=[])
    # The spec file reader names a bad node by position: name it by its key.
    for problem in database.problems:
        position = problem.message.removeprefix("node #").split(" ", 1)[0]
        key = keys[int(position) - 1] if position.isdigit() else "?"
        reason = problem.message.split("skipped: ", 1)[-1]
        lockfile.problems.append(Problem(source, f"concrete_specs.{key}: {reason}"))
    aliases = {key: str(node.get("hash")) for key, node in zip(keys, flat, strict=True)}
    for key, raw in zip(keys, flat, strict=True):
        node = database.nodes.get(aliases[key])
        if node is not None:
            locked = LockedSpec(node, database.compiler_of(node), bool(raw.get("external")))
            lockfile.specs[node.hash] = locked
    for text, digest in roots:
        target = aliases.get(digest, digest)
        if target not in lockfile.specs:
            lockfile.problems.append(
                Problem(source, f"roots: {text!r} pins {digest}, which concrete_specs lacks")
            )
        lockfile.roots.append((text, target))
    return lockfile


def _writable(node: dict[str, Any]) -> bool:
    try:
        orjson.dumps(node)
    except orjson.JSONEncodeError:
        return False
    return True


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    return "a string" if isinstance(value, str) else type(value).__name__


def _version(document: dict[str, Any], source: str) -> int:
    meta = document.get("_meta")
    version = meta.get("lockfile-version") if isinstance(meta, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise LockfileError(f"{source}: '_meta.lockfile-version' is missing; is it a spack.lock?")
    if version not in LOCKFILE_VERSIONS:
        known = f"{LOCKFILE_VERSIONS[0]} to {LOCKFILE_VERSIONS[-1]}"
        raise LockfileError(
            f"{source}: '_meta.lockfile-version' {version} is not supported ({known} are)"
        )
    return version


def _roots(roots: object, source: str) -> Iterator[tuple[str, str]]:
    if not isinstance(roots, list):
        raise LockfileError(f"{source}: 'roots' must be a list of {{hash, spec}}")
    for position, root in enumerate(roots):
        digest = root.get("hash") if isinstance(root, dict) else None
        if not isinstance(digest, str):
            raise LockfileError(f"{source}: roots[{position}] has no 'hash'")
        text = root.get("spec")
        yield (text if isinstance(text, str) else digest), digest


def _flat(key: str, node: object, source: str) -> dict[str, Any]:
    """A node as the spec file reader takes it: flat, with its DAG `hash`, and its key
    (a build hash in version 3, which dependencies name) as an alias of that hash."""
    if not isinstance(node, dict):
        raise LockfileError(f"{source}: concrete_specs.{shorten(key)} is not an object")
    if "name" not in node and len(node) == 1:  # versions 1 and 2: {"zlib": {...}}
        ((name, body),) = node.items()
        if isinstance(body, dict):
            node = {**body, "name": name}
    flat = dict(node)
    flat.setdefault("hash", key)
    if flat["hash"] != key:
        flat["build_hash"] = key
    return flat


def read_lock_node(text: str) -> LockedSpec:
    """One node of a lockfile's `concrete_specs` (JSON), as pasted alone."""
    try:
        node = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LockfileError(
            f"the spec node is not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(node, dict):
        raise LockfileError("a spec node is a JSON object")
    digest = node.get("hash")
    key = digest if isinstance(digest, str) else "a" * 32  # hashless: a stand-in
    document = {"_meta": {"lockfile-version": 6}, "roots": [], "concrete_specs": {key: node}}
    try:
        lockfile = read_lockfile(json.dumps(document).encode(), "the spec node")
    except LockfileError as exc:  # named by the stand-in lockfile's key: say it plainly
        reason = str(exc).removeprefix("the spec node: ")
        reason = reason.removeprefix(f"concrete_specs.{key}: ")
        raise LockfileError(f"the spec node cannot be read: {reason}") from None
    if lockfile.problems or not lockfile.specs:
        reason = lockfile.problems[0].message.split(": ", 1)[-1] if lockfile.problems else ""
        raise LockfileError(f"the spec node cannot be read: {reason}")
    return next(iter(lockfile.specs.values()))
