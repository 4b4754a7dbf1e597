"""The binaries nearest to a spec the cache lacks, each with exactly how it differs.

A wanted spec (`Wanted`: from a Spack spec string, or a concrete spec of a lockfile) is
compared with every binary of its package in a tag, constraint by constraint: version,
variants, compiler, target, os, platform and its key dependencies (link and run). Each
constraint that does not hold is a `Difference` in words ("has +mpi, you asked ~mpi",
"built for x86_64_v3: runs on your zen3"). A difference is *blocking* when the binary
cannot serve at all: built for a target that does not run on the one asked for, or for
another os or platform. Binaries are ranked with the usable ones first, then by how few
constraints differ, then by hash (a stable order).
"""

from __future__ import annotations

from dataclasses import dataclass

from cachegql.index.budget import check
from cachegql.index.disk.snapshot import DependencyData, Snapshot
from cachegql.index.errors import CriteriaError
from cachegql.index.records import SpecRecord
from cachegql.index.spack.specsyntax import SpecQuery
from cachegql.index.spack.targets import compatibility, runs_on, target_names
from cachegql.index.spack.variants import Variant
from cachegql.index.spack.versions import VersionRange, parse_constraint

__all__ = [
    "KEY_DEPTYPES",
    "MAX_COMPARED",
    "Candidates",
    "Difference",
    "Near",
    "Wanted",
    "nearest",
    "wanted_from_query",
]

KEY_DEPTYPES = frozenset({"link", "run"})
"""The dependencies that make a binary what it is at run time; build-only ones do not."""
MAX_COMPARED = 20_000
"""Binaries of one package compared at most (the rows beyond are left out)."""
DEPENDENCY_BATCH = 32
"""Binaries whose dependencies are read at once, best ranked first."""


@dataclass(frozen=True, slots=True)
class Wanted:
    """A spec to find the nearest binaries of; None (or empty) where it says nothing."""

    name: str
    version: str | None = None
    """As asked: `1.14.3` (exact, from a lockfile) or a Spack constraint (`1.14:`)."""
    versions: tuple[VersionRange, ...] | None = None
    compiler_name: str | None = None
    compiler: str | None = None
    """As asked, for messages (`gcc@13.2.0`)."""
    compiler_versions: tuple[VersionRange, ...] | None = None
    variants: tuple[Variant, ...] = ()
    os: str | None = None
    platform: str | None = None
    target: str | None = None
    """A microarchitecture, or a Spack range or list (`x86_64_v2:`)."""
    dependencies: tuple[tuple[str, str | None], ...] = ()
    """Key dependencies, by name, with the hash asked for (None: any build of it)."""
    exact: bool = False
    """A concrete spec: variants and dependencies must be these and no others."""


@dataclass(frozen=True, slots=True)
class Difference:
    kind: str
    """version, variant, compiler, target, os, platform or dependency."""
    text: str
    blocking: bool = False


@dataclass(frozen=True, slots=True)
class Near:
    """A binary of the package, and how it differs from the spec wanted."""

    row: int
    spec: SpecRecord
    differences: tuple[Difference, ...]

    @property
    def usable(self) -> bool:
        """Nothing blocks it: it runs where the spec was asked for."""
        return not any(d.blocking for d in self.differences)


def wanted_from_query(query: SpecQuery) -> Wanted:
    """The wanted spec of a parsed Spack spec string (its `^name` are its dependencies)."""
    if query.name is None:
        raise CriteriaError("nearest needs a package name (e.g. 'hdf5@1.14 +mpi')")
    compiler = query.compiler
    return Wanted(
        name=query.name,
        version=query.versions.text if query.versions else None,
        versions=query.versions.ranges if query.versions else None,
        compiler_name=compiler.name if compiler else None,
        compiler=(
            None
            if compiler is None
            else compiler.name + (f"@{compiler.versions.text}" if compiler.versions else "")
        ),
        compiler_versions=compiler.versions.ranges if compiler and compiler.versions else None,
        variants=query.variants,
        os=query.os,
        platform=query.platform,
        target=query.target,
        dependencies=tuple((d.name, None) for d in query.dependencies if d.name),
    )


def exact_versions(version: str) -> tuple[VersionRange, ...]:
    """The constraint of exactly `version`."""
    return tuple(parse_constraint("=" + version))


Candidates = dict[str, list[tuple[int, SpecRecord]]]
"""The binaries of each package read so far, for the misses of one environment."""


def nearest(
    snapshot: Snapshot, wanted: Wanted, first: int, read: Candidates | None = None
) -> list[Near]:
    """The `first` binaries of `wanted.name` in `snapshot` nearest to `wanted`.

    Dependencies only add differences, and never blocking ones: binaries are ranked by
    their other differences first (shared by the many binaries of one configuration, so
    computed once per configuration), and dependencies are read in batches, best first,
    only until no binary left can rank among the `first` (a popular package has
    thousands of binaries; a miss reads the dependencies of a few dozen). `read` keeps
    each package's binaries for the next miss of the same package.
    """
    package_id = snapshot.package_id(wanted.name)
    if package_id is None or first <= 0:
        return []
    binaries = None if read is None else read.get(wanted.name)
    if binaries is None:
        start, stop = snapshot.package_range(package_id)
        rows = list(range(start, min(stop, start + MAX_COMPARED)))
        # Compared, never shown: the tarball names are not read.
        binaries = list(zip(rows, snapshot.specs(rows, tarballs=False), strict=True))
        if read is not None:
            read[wanted.name] = binaries
    by_configuration: dict[tuple[object, ...], tuple[Difference, ...]] = {}
    ranked = []
    for row, spec in binaries:
        check()
        key = (spec.version, spec.variants, spec.compiler, spec.target, spec.os, spec.platform)
        found = by_configuration.get(key)
        if found is None:
            found = by_configuration[key] = tuple(differences(wanted, spec, None))
        ranked.append(Near(row, spec, found))
    ranked.sort(key=_rank)
    if not (wanted.dependencies or wanted.exact) or not snapshot.has_dependencies:
        return ranked[:first]
    kept: list[Near] = []
    for batch_start in range(0, len(ranked), DEPENDENCY_BATCH):
        if len(kept) >= first and _rank(kept[first - 1]) < _rank(ranked[batch_start]):
            break  # the rest rank below: their differences can only grow
        batch = ranked[batch_start : batch_start + DEPENDENCY_BATCH]
        # Read in row order, as the DAG's readers expect rows.
        rows = sorted(n.row for n in batch)
        edges = dict(zip(rows, snapshot.dependencies(rows), strict=True))
        for near in batch:
            dependencies = edges[near.row]
            more = [] if dependencies is None else _dependency_differences(wanted, dependencies)
            kept.append(Near(near.row, near.spec, near.differences + tuple(more)))
        kept.sort(key=_rank)
    return kept[:first]


def _rank(near: Near) -> tuple[bool, int, str]:
    """Usable first, then fewest differences, then by hash (a stable order)."""
    return (not near.usable, len(near.differences), near.spec.hash)


def differences(
    wanted: Wanted, spec: SpecRecord, dependencies: list[DependencyData] | None
) -> list[Difference]:
    """Each constraint of `wanted` that `spec` does not meet, in words."""
    found: list[Difference] = []
    if wanted.versions is not None and not any(r.contains(spec.version) for r in wanted.versions):
        found.append(Difference("version", f"version {spec.version}, you asked {wanted.version}"))
    found.extend(_variant_differences(wanted, spec.variants))
    if not _compiler_holds(wanted, spec):
        found.append(
            Difference(
                "compiler",
                f"built with {spec.compiler.normalized}, you asked {wanted.compiler}",
            )
        )
    target = _target_difference(wanted.target, spec.target)
    if target is not None:
        found.append(target)
    places = (("os", spec.os, wanted.os), ("platform", spec.platform, wanted.platform))
    for kind, have, asked in places:
        if asked is not None and have != asked:
            found.append(Difference(kind, f"built for {kind} {have}, you asked {asked}", True))
    if dependencies is not None:
        found.extend(_dependency_differences(wanted, dependencies))
    return found


def _compiler_holds(wanted: Wanted, spec: SpecRecord) -> bool:
    if wanted.compiler_name is None:
        return True
    if spec.compiler.name != wanted.compiler_name:
        return False
    if wanted.compiler_versions is None:
        return True
    version = spec.compiler.version
    return version is not None and any(r.contains(version) for r in wanted.compiler_versions)


def _shown(variant: Variant) -> str:
    if variant.value == "true":
        return f"+{variant.name}"
    if variant.value == "false":
        return f"~{variant.name}"
    return f"{variant.name}={variant.value}"


def _variant_differences(wanted: Wanted, have: tuple[Variant, ...]) -> list[Difference]:
    by_name = {v.name: v for v in have}
    found = []
    for asked in wanted.variants:
        present = by_name.get(asked.name)
        if present is None:
            text = f"has no variant {asked.name}, you asked {_shown(asked)}"
            found.append(Difference("variant", text))
            continue
        holds = (
            set(asked.atoms) == set(present.atoms)
            if wanted.exact
            else set(asked.atoms) <= set(present.atoms)
        )
        if not holds:
            found.append(Difference("variant", f"has {_shown(present)}, you asked {_shown(asked)}"))
    if wanted.exact:
        asked_names = {v.name for v in wanted.variants}
        found.extend(
            Difference("variant", f"has {_shown(v)}, which yours does not set")
            for v in have
            if v.name not in asked_names and v.name != "patches"
        )
    return found


def _target_difference(asked: str | None, built: str) -> Difference | None:
    """None when `built` is a target asked for; else whether it runs there, in words."""
    if asked is None or built in target_names(asked):
        return None
    single = ":" not in asked and "," not in asked
    if single:
        try:
            compatible = built in runs_on(asked)
        except CriteriaError:
            compatible = False  # a target archspec does not know: only itself matches
        text = compatibility(built, asked)
        return Difference("target", text or f"built for {built}", blocking=not compatible)
    return Difference("target", f"built for {built}, not in target={asked}", blocking=True)


def _dependency_differences(wanted: Wanted, dependencies: list[DependencyData]) -> list[Difference]:
    key = {d.name: d for d in dependencies if KEY_DEPTYPES.intersection(d.deptypes)}
    found = []
    for name, digest in wanted.dependencies:
        present = key.get(name)
        if present is None:
            found.append(Difference("dependency", f"does not depend on {name}, yours does"))
        elif digest is not None and present.hash != digest:
            version = f"@{present.version}" if present.version else ""
            found.append(
                Difference(
                    "dependency",
                    f"built against {name}{version} /{present.hash[:7]}, yours is /{digest[:7]}",
                )
            )
    if wanted.exact:
        asked = {name for name, _ in wanted.dependencies}
        found.extend(
            Difference("dependency", f"depends on {name}, yours does not")
            for name in sorted(key)
            if name not in asked
        )
    return found
