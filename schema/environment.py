"""`checkEnvironment`: how much of a Spack environment (a `spack.lock`, sent whole) a tag
holds, and the nearest binaries of each spec it lacks (what `cachegql check` prints)."""

from __future__ import annotations

import strawberry

from cachegql.index import check_environment, read_lockfile
from cachegql.schema.context import Context
from cachegql.schema.errors import UserInputError
from cachegql.schema.questions import NearestBinary
from cachegql.schema.types import spec_objects

__all__ = ["MAX_LOCKED_SPECS", "MAX_NEAREST_PER_SPEC", "EnvironmentCheck", "environment_check"]

MAX_LOCKED_SPECS = 5_000
"""Concrete specs a lockfile may pin here (the cost model prices that many)."""
MAX_NEAREST_PER_SPEC = 3


@strawberry.type
class EnvironmentRoot:
    spec: str = strawberry.field(description="As the environment's spack.yaml asks for it.")
    hash: str
    total: int = strawberry.field(description="Specs of its DAG a cache can hold.")
    cached: int


@strawberry.type
class EnvironmentSpec:
    hash: str
    name: str
    format: str = strawberry.field(description="The pinned spec in Spack syntax.")
    cached: bool
    external: bool = strawberry.field(description="Not built by Spack: no cache holds it.")
    nearest: list[NearestBinary] = strawberry.field(
        description="For a spec not cached: the binaries of its package nearest to it."
    )


@strawberry.type(description="The coverage of a Spack environment by one tag.")
class EnvironmentCheck:
    tag: str
    lockfile_version: int
    total: int = strawberry.field(description="Concrete specs a cache can hold.")
    cached: int
    externals: int
    roots: list[EnvironmentRoot]
    specs: list[EnvironmentSpec] = strawberry.field(
        description="Every concrete spec, roots' DAGs first, each once."
    )
    problems: list[str] = strawberry.field(
        description="Nodes of the lockfile that could not be read (named by key), left out."
    )


def environment_check(
    context: Context, lockfile: str, tag: str | None, nearest: int | None
) -> EnvironmentCheck:
    read = read_lockfile(lockfile.encode(), "the lockfile")
    if len(read.specs) > MAX_LOCKED_SPECS:
        raise UserInputError(
            f"the lockfile pins {len(read.specs):,} specs; at most {MAX_LOCKED_SPECS:,} are "
            "checked here (cachegql check has no limit)"
        )
    snapshot = context.store.snapshot(tag)
    count = max(0, min(MAX_NEAREST_PER_SPEC, 1 if nearest is None else nearest))
    coverage = check_environment(snapshot, read, count)
    near_rows = [n.row for s in coverage.specs for n in s.nearest]
    objects = iter(spec_objects(snapshot, near_rows))
    specs = [
        EnvironmentSpec(
            hash=s.hash,
            name=s.name,
            format=s.text,
            cached=s.cached,
            external=s.external,
            nearest=[
                NearestBinary(
                    spec=next(objects),
                    differences=[d.text for d in n.differences],
                    usable=n.usable,
                )
                for n in s.nearest
            ],
        )
        for s in coverage.specs
    ]
    return EnvironmentCheck(
        tag=coverage.tag,
        lockfile_version=read.version,
        total=coverage.total,
        cached=coverage.cached,
        externals=coverage.externals,
        roots=[
            EnvironmentRoot(spec=r.spec, hash=r.hash, total=r.total, cached=r.cached)
            for r in coverage.roots
        ],
        specs=specs,
        problems=[p.message for p in read.problems],
    )
