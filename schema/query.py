"""The root Query type: every entry point of the API contract."""

from __future__ import annotations

from weakref import WeakKeyDictionary

import strawberry
from strawberry.types import Info

from cachegql.index import Snapshot, find_spec
from cachegql.index import stack as stack_summary
from cachegql.index import stacks as stack_summaries
from cachegql.schema.context import Context
from cachegql.schema.diff import FromArg, TagDiffConnection, tag_diff_connection
from cachegql.schema.environment import EnvironmentCheck, environment_check
from cachegql.schema.inputs import PackageFilterArg, SpecFilterArg
from cachegql.schema.pagination import DEFAULT_FIRST
from cachegql.schema.questions import (
    DEFAULT_NEAREST,
    Microarchitecture,
    NearestBinary,
    microarchitecture_objects,
    nearest_binaries,
)
from cachegql.schema.types import (
    Package,
    PackageConnection,
    Spec,
    SpecConnection,
    Stack,
    Tag,
    package_connection,
    package_object,
    spec_connection,
    spec_object,
    stack_object,
)

_STACKS: WeakKeyDictionary[Snapshot, list[Stack]] = WeakKeyDictionary()


def stack_objects(snapshot: Snapshot) -> list[Stack]:
    """Every stack of a snapshot, built once (a snapshot never changes, and an index
    that is no longer served takes its entry with it)."""
    stacks = _STACKS.get(snapshot)
    if stacks is None:
        stacks = _STACKS[snapshot] = [stack_object(s) for s in stack_summaries(snapshot)]
    return stacks


@strawberry.type
class Query:
    @strawberry.field(
        description="Every snapshot (tag) of the build cache that is indexed, "
        "e.g. develop, develop-2025-03-30, v0.22.0."
    )
    def tags(self, info: Info[Context, None]) -> list[Tag]:
        store = info.context.store
        return [
            Tag(
                name=name,
                num_packages=store.snapshots[name].num_packages,
                num_specs=store.snapshots[name].num_specs,
                is_default=name == store.default_tag,
            )
            for name in store.tags
        ]

    @strawberry.field(
        description="One package by exact name; null when the tag has no such package."
    )
    def package(
        self, info: Info[Context, None], name: str, tag: str | None = None
    ) -> Package | None:
        snapshot = info.context.store.snapshot(tag)
        package_id = snapshot.package_id(name)
        return (
            None
            if package_id is None
            else package_object(info.context, snapshot.package(package_id))
        )

    @strawberry.field(
        description="Packages, optionally full-text searched (ranked by relevance) and filtered; "
        "default order: name ascending."
    )
    def packages(
        self,
        info: Info[Context, None],
        tag: str | None = None,
        search: str | None = None,
        filter: PackageFilterArg = None,
        first: int | None = DEFAULT_FIRST,
        after: str | None = None,
    ) -> PackageConnection:
        return package_connection(info.context, tag, None, filter, search, first, after)

    @strawberry.field(
        description="One spec by full hash or by an unambiguous hash prefix (Spack's /abc123); "
        "null when none matches.\nAn ambiguous prefix is an error with extensions.code "
        "AMBIGUOUS_HASH_PREFIX and extensions.candidates."
    )
    def spec(self, info: Info[Context, None], hash: str, tag: str | None = None) -> Spec | None:
        snapshot = info.context.store.snapshot(tag)
        row = find_spec(snapshot, hash)
        return None if row is None else spec_object(snapshot, row)

    @strawberry.field(
        description="Specs matching all given constraints: filter (structured), query (Spack spec "
        "syntax, e.g. 'hdf5@1.14: +mpi %gcc@13 target=x86_64_v3'), search (full text). "
        "Default order: package name, then hash."
    )
    def specs(
        self,
        info: Info[Context, None],
        tag: str | None = None,
        filter: SpecFilterArg = None,
        query: str | None = None,
        search: str | None = None,
        first: int | None = DEFAULT_FIRST,
        after: str | None = None,
    ) -> SpecConnection:
        return spec_connection(info.context, tag, None, filter, query, search, first, after)

    @strawberry.field(description="Per-stack aggregates of a tag, ordered by name.")
    def stacks(self, info: Info[Context, None], tag: str | None = None) -> list[Stack]:
        return stack_objects(info.context.store.snapshot(tag))

    @strawberry.field
    def stack(self, info: Info[Context, None], name: str, tag: str | None = None) -> Stack | None:
        summary = stack_summary(info.context.store.snapshot(tag), name)
        return None if summary is None else stack_object(summary)

    @strawberry.field(
        description="Specs added and removed between two tags, per package, by hash, with "
        "totals. A spec is its full hash; `filter` applies on each side in that side's tag "
        "(a spec counts where it matches). Packages with no spec added or removed are left "
        "out; packages are ordered by name."
    )
    def tag_diff(
        self,
        info: Info[Context, None],
        from_: FromArg,
        to: str,
        filter: SpecFilterArg = None,
        first: int | None = DEFAULT_FIRST,
        after: str | None = None,
    ) -> TagDiffConnection:
        return tag_diff_connection(info.context, from_, to, filter, first, after)

    @strawberry.field(
        description="The microarchitectures archspec knows (the names `SpecFilter.runsOn` "
        "takes), by family, generic ones first; `family` keeps one (x86_64, aarch64, ...)."
    )
    def microarchitectures(self, family: str | None = None) -> list[Microarchitecture]:
        return microarchitecture_objects(family)

    @strawberry.field(
        description="The binaries of a spec's package nearest to it, each with how it differs "
        "(version, variants, compiler, target, os, platform, key dependencies): usable ones "
        "first, then by how few constraints differ. `spec` is Spack syntax "
        "('hdf5@1.14 ~mpi target=zen3') or a node of a spack.lock's concrete_specs (JSON)."
    )
    def nearest(
        self,
        info: Info[Context, None],
        spec: str,
        first: int | None = DEFAULT_NEAREST,
        tag: str | None = None,
    ) -> list[NearestBinary]:
        return nearest_binaries(info.context, spec, first, tag)

    @strawberry.field(
        description="How much of a Spack environment the tag holds: `lockfile` is a whole "
        "spack.lock (versions 1 to 6); each concrete spec is looked up by full hash, and "
        "each one missing gets its `nearest` binaries (0 to 3, default 1). What "
        "`cachegql check` prints."
    )
    def check_environment(
        self,
        info: Info[Context, None],
        lockfile: str,
        tag: str | None = None,
        nearest: int | None = 1,
    ) -> EnvironmentCheck:
        return environment_check(info.context, lockfile, tag, nearest)
