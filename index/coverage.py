"""How much of a Spack environment a tag holds, and the nearest binaries of the rest.

`check_environment` looks up every concrete spec of a lockfile by its full hash; for
each one the tag lacks, it ranks the binaries of the same package by how few
constraints differ (`query.nearest`), taking the lockfile's own node as the spec wanted:
its version, variants, compiler, target, os and platform exactly, and its link and run
dependencies by hash. Externals are counted apart: no cache holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cachegql.index.budget import check
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.ingest.lockfile import LockedSpec, Lockfile
from cachegql.index.query.hashes import hash_rows
from cachegql.index.query.nearest import (
    KEY_DEPTYPES,
    Candidates,
    Near,
    Wanted,
    exact_versions,
    nearest,
)
from cachegql.index.spack.specformat import format_spec

__all__ = ["Coverage", "RootCoverage", "SpecCoverage", "check_environment", "wanted_from_lock"]


@dataclass(frozen=True, slots=True)
class SpecCoverage:
    """One concrete spec of the environment: cached or not, and if not, what is near."""

    hash: str
    name: str
    text: str
    """The spec in Spack syntax (`format`)."""
    cached: bool
    external: bool
    nearest: tuple[Near, ...] = ()


@dataclass(frozen=True, slots=True)
class RootCoverage:
    spec: str
    hash: str
    total: int
    """Its DAG's specs that a cache could hold (externals left out)."""
    cached: int


@dataclass
class Coverage:
    tag: str
    specs: list[SpecCoverage] = field(default_factory=list)
    roots: list[RootCoverage] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(1 for s in self.specs if not s.external)

    @property
    def cached(self) -> int:
        return sum(1 for s in self.specs if s.cached)

    @property
    def externals(self) -> int:
        return sum(1 for s in self.specs if s.external)


def wanted_from_lock(locked: LockedSpec) -> Wanted:
    """A lockfile's concrete spec as the spec wanted: every constraint exact."""
    node, compiler = locked.node, locked.compiler
    has_compiler = compiler.name != "none"
    return Wanted(
        name=node.name,
        version=node.version,
        versions=exact_versions(node.version),
        compiler_name=compiler.name if has_compiler else None,
        compiler=compiler.normalized if has_compiler else None,
        compiler_versions=(
            exact_versions(compiler.version) if has_compiler and compiler.version else None
        ),
        variants=node.variants,
        os=node.os,
        platform=node.platform,
        target=node.target,
        dependencies=tuple(
            (e.name, e.hash) for e in node.edges if KEY_DEPTYPES.intersection(e.deptypes)
        ),
        exact=True,
    )


def check_environment(snapshot: Snapshot, lockfile: Lockfile, first: int = 3) -> Coverage:
    """The coverage of `lockfile` by `snapshot`: each spec (roots' DAGs in order, each
    once), with the `first` nearest binaries of each one missing."""
    order: list[str] = []
    seen: set[str] = set()
    for _, root in lockfile.roots:
        for digest in lockfile.reachable(root):
            if digest not in seen:
                seen.add(digest)
                order.append(digest)
    order.extend(h for h in lockfile.specs if h not in seen)  # pinned, reached from no root
    held = {snapshot.hash_of(int(r)) for r in hash_rows(snapshot, order)}
    coverage = Coverage(tag=snapshot.tag)
    read: Candidates = {}
    for digest in order:
        check()
        locked = lockfile.specs[digest]
        record = locked.node.record(snapshot.tag, locked.compiler, (), None)
        cached = digest in held and not locked.external
        near = (
            ()
            if cached or locked.external
            else tuple(nearest(snapshot, wanted_from_lock(locked), first, read))
        )
        coverage.specs.append(
            SpecCoverage(
                hash=digest,
                name=locked.node.name,
                text=format_spec(record),
                cached=cached,
                external=locked.external,
                nearest=near,
            )
        )
    by_hash = {s.hash: s for s in coverage.specs}
    for text, root in lockfile.roots:
        dag = [by_hash[h] for h in lockfile.reachable(root)]
        coverage.roots.append(
            RootCoverage(
                spec=text,
                hash=root,
                total=sum(1 for s in dag if not s.external),
                cached=sum(1 for s in dag if s.cached),
            )
        )
    return coverage
