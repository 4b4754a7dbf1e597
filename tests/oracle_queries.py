"""Expected answers of the query API, computed in plain Python from `tests.oracle` specs.

Nothing here imports `index`, `schema` or `server`: a filter's meaning is written out by hand
as a predicate next to the filter JSON that the API receives (SPEC_FILTERS, PACKAGE_FILTERS),
and facets, stack aggregates and hash-prefix matches are counted straight from the specs.
Specs are the dicts of `oracle.read_specs` (page fields plus `name` and `tag`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tests import oracle

Spec = dict[str, Any]
SpecPredicate = Callable[[Spec], bool]
PackagePredicate = Callable[[str, list[Spec]], bool]
HASH_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz234567")


# --- spec fields as the API exposes them ----------------------------------------------------


def version(spec: Spec) -> str:
    return str(spec["versions"][0])


def compiler(spec: Spec) -> str:
    """The normalized compiler: gcc@=11.4.0 -> gcc@11.4.0; none stays none."""
    return oracle.compiler_normalized(spec["compiler"])


def compiler_name(spec: Spec) -> str:
    return compiler(spec).split("@", 1)[0]


def has_variants(spec: Spec, *constraints: str) -> bool:
    """Spack's meaning: every value of every constraint is among the spec's values."""
    atoms = oracle.spec_atoms(spec)
    return all(oracle.variant_atoms(c) <= atoms for c in constraints)


def any_stack(spec: Spec, test: Callable[[str], bool]) -> bool:
    return any(test(stack) for stack in spec["stacks"])


# --- result sets -------------------------------------------------------------------------------


def ordered(specs: Iterable[Spec]) -> list[str]:
    """Hashes in the API's default order (package name, then hash)."""
    return oracle.default_order(specs)


def by_package(specs: Iterable[Spec]) -> dict[str, list[Spec]]:
    packages: dict[str, list[Spec]] = {}
    for spec in specs:
        packages.setdefault(spec["name"], []).append(spec)
    return dict(sorted(packages.items()))


def hash_matches(specs: Iterable[Spec], prefix: str) -> list[str]:
    """Full hashes starting with a prefix as a user types it (any case, leading '/')."""
    wanted = prefix.removeprefix("/").lower()
    return sorted(s["hash"] for s in specs if s["hash"].startswith(wanted))


def shortest_unique_prefix(hashes: list[str], full: str, start: int = 7) -> str:
    """The shortest prefix of `full` (at least `start` long) that no other hash shares."""
    for length in range(start, len(full) + 1):
        prefix = full[:length]
        if sum(h.startswith(prefix) for h in hashes) == 1:
            return prefix
    return full


def ambiguous_prefixes(hashes: Iterable[str]) -> dict[str, int]:
    """Every prefix of length 1..4 shared by 2 or more hashes, with its count."""
    tally: dict[str, int] = {}
    for full in hashes:
        for length in range(1, 5):
            tally[full[:length]] = tally.get(full[:length], 0) + 1
    return {p: n for p, n in tally.items() if n > 1}


def unused_prefix(hashes: Iterable[str], length: int = 6) -> str:
    """A valid base32 prefix that starts no hash."""
    taken = {h[:length] for h in hashes}
    for char in "zyxwvutsrq765432":
        candidate = char * length
        if candidate not in taken:
            return candidate
    raise AssertionError("no unused prefix")


# --- facets and aggregates ---------------------------------------------------------------------

FACETS: dict[str, Callable[[Spec], list[str]]] = {
    "compilers": lambda s: [compiler(s)],
    "oss": lambda s: [s["os"]],
    "platforms": lambda s: [s["platform"]],
    "targets": lambda s: [s["target"]],
    "stacks": lambda s: sorted(set(s["stacks"])),
    "versions": lambda s: [version(s)],
    "packages": lambda s: [s["name"]],
}


def facets(specs: Iterable[Spec]) -> dict[str, list[dict[str, Any]]]:
    """SpecFacets over a whole result: buckets by count descending, then value."""
    specs = list(specs)
    return {
        name: oracle.counts(v for s in specs for v in values(s)) for name, values in FACETS.items()
    }


def stack_names(specs: Iterable[Spec]) -> list[str]:
    return sorted({st for s in specs for st in s["stacks"]})


def stack_summary(specs: Iterable[Spec], stack: str) -> dict[str, Any]:
    """Stack fields: numSpecs (specs listing it), numPackages, and spec-count buckets."""
    mine = [s for s in specs if stack in s["stacks"]]
    return {
        "name": stack,
        "numSpecs": len(mine),
        "numPackages": len({s["name"] for s in mine}),
        "compilers": oracle.counts(compiler(s) for s in mine),
        "oss": oracle.counts(s["os"] for s in mine),
        "platforms": oracle.counts(s["platform"] for s in mine),
        "targets": oracle.counts(s["target"] for s in mine),
    }


def num_specs_by_stack(specs: list[Spec]) -> list[dict[str, Any]]:
    return [
        {"stack": st, "count": sum(st in s["stacks"] for s in specs)} for st in stack_names(specs)
    ]


# --- filter tables -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecCase:
    """A SpecFilter as JSON and, written independently, what it means for one spec."""

    id: str
    filter: dict[str, Any]
    holds: SpecPredicate
    corpus: bool = False  # also meaningful on the real corpus


@dataclass(frozen=True)
class PackageCase:
    """A PackageFilter as JSON and what it means for a package (its name and its specs)."""

    id: str
    filter: dict[str, Any]
    holds: PackagePredicate
    corpus: bool = False


def _spec(id: str, filter: dict[str, Any], holds: SpecPredicate, corpus: bool = False) -> SpecCase:
    return SpecCase(id, filter, holds, corpus)


def _pkg(
    id: str, filter: dict[str, Any], holds: PackagePredicate, corpus: bool = False
) -> PackageCase:
    return PackageCase(id, filter, holds, corpus)


SPEC_FILTERS: list[SpecCase] = [
    _spec("everything", {}, lambda s: True, corpus=True),
    # package: every StringFilter operator, alone and combined
    _spec("package-eq", {"package": {"eq": "hdf5"}}, lambda s: s["name"] == "hdf5"),
    _spec(
        "package-in",
        {"package": {"in": ["zlib", "cudnn", "no-such-package"]}},
        lambda s: s["name"] in ("zlib", "cudnn"),
        corpus=True,
    ),
    _spec("package-in-empty", {"package": {"in": []}}, lambda s: False),
    _spec(
        "package-prefix",
        {"package": {"prefix": "py-"}},
        lambda s: s["name"].startswith("py-"),
        corpus=True,
    ),
    _spec(
        "package-contains",
        {"package": {"contains": "dn"}},
        lambda s: "dn" in s["name"],
        corpus=True,
    ),
    _spec("package-ne", {"package": {"ne": "hdf5"}}, lambda s: s["name"] != "hdf5", corpus=True),
    _spec("package-no-operator", {"package": {}}, lambda s: True),
    _spec(
        "package-empty-strings",
        {"package": {"prefix": "", "contains": "", "ne": ""}},
        lambda s: True,
        corpus=True,
    ),
    _spec(
        "package-prefix-ne",
        {"package": {"prefix": "c", "ne": "cudnn"}},
        lambda s: s["name"].startswith("c") and s["name"] != "cudnn",
        corpus=True,
    ),
    _spec(
        "package-in-ne",
        {"package": {"in": ["hdf5", "zlib", "cudnn"], "ne": "zlib"}},
        lambda s: s["name"] in ("hdf5", "cudnn"),
        corpus=True,
    ),
    _spec(
        "package-all-operators",
        {
            "package": {
                "eq": "py-torch-scatter",
                "in": ["py-torch-scatter", "zlib"],
                "prefix": "py-",
                "contains": "torch",
                "ne": "zlib",
            }
        },
        lambda s: s["name"] == "py-torch-scatter",
        corpus=True,
    ),
    _spec(
        "package-eq-and-other-eq",
        {"package": {"eq": "hdf5", "prefix": "z"}},
        lambda s: False,
    ),
    _spec("package-case-sensitive", {"package": {"eq": "HDF5"}}, lambda s: False),
    # version, compiler, compilerName, os, platform, target
    _spec("version-eq", {"version": {"eq": "1.14.5"}}, lambda s: version(s) == "1.14.5"),
    _spec(
        "version-prefix",
        {"version": {"prefix": "8.9"}},
        lambda s: version(s).startswith("8.9"),
        corpus=True,
    ),
    _spec(
        "version-contains",
        {"version": {"contains": ".29-"}},
        lambda s: ".29-" in version(s),
    ),
    _spec(
        "compiler-eq-normalized",
        {"compiler": {"eq": "gcc@11.4.0"}},
        lambda s: compiler(s) == "gcc@11.4.0",
        corpus=True,
    ),
    _spec(
        "compiler-eq-raw-form-is-not-the-normalized-value",
        {"compiler": {"eq": "gcc@=11.4.0"}},
        lambda s: False,
        corpus=True,
    ),
    _spec(
        "compiler-prefix",
        {"compiler": {"prefix": "gcc@1"}},
        lambda s: compiler(s).startswith("gcc@1"),
        corpus=True,
    ),
    _spec(
        "compiler-in",
        {"compiler": {"in": ["apple-clang@15.0.0", "none"]}},
        lambda s: compiler(s) in ("apple-clang@15.0.0", "none"),
        corpus=True,
    ),
    _spec(
        "compiler-contains-ne",
        {"compiler": {"contains": "clang", "ne": "apple-clang@16.0.0"}},
        lambda s: "clang" in compiler(s) and compiler(s) != "apple-clang@16.0.0",
        corpus=True,
    ),
    _spec(
        "compiler-name-eq",
        {"compilerName": {"eq": "apple-clang"}},
        lambda s: compiler_name(s) == "apple-clang",
        corpus=True,
    ),
    _spec(
        "compiler-name-none",
        {"compilerName": {"eq": "none"}},
        lambda s: compiler_name(s) == "none",
        corpus=True,
    ),
    _spec(
        "compiler-name-ne",
        {"compilerName": {"ne": "gcc"}},
        lambda s: compiler_name(s) != "gcc",
        corpus=True,
    ),
    _spec("os-eq", {"os": {"eq": "ubuntu22.04"}}, lambda s: s["os"] == "ubuntu22.04", corpus=True),
    _spec(
        "os-prefix-ne",
        {"os": {"prefix": "ubuntu", "ne": "ubuntu24.04"}},
        lambda s: s["os"].startswith("ubuntu") and s["os"] != "ubuntu24.04",
        corpus=True,
    ),
    _spec(
        "platform-eq",
        {"platform": {"eq": "darwin"}},
        lambda s: s["platform"] == "darwin",
        corpus=True,
    ),
    _spec(
        "platform-in",
        {"platform": {"in": ["darwin", "windows"]}},
        lambda s: s["platform"] in ("darwin", "windows"),
        corpus=True,
    ),
    _spec(
        "target-eq",
        {"target": {"eq": "aarch64"}},
        lambda s: s["target"] == "aarch64",
        corpus=True,
    ),
    _spec(
        "target-prefix",
        {"target": {"prefix": "x86_64"}},
        lambda s: s["target"].startswith("x86_64"),
        corpus=True,
    ),
    _spec(
        "target-contains",
        {"target": {"contains": "_v"}},
        lambda s: "_v" in s["target"],
        corpus=True,
    ),
    # stack: holds when any one of the spec's stacks satisfies the whole StringFilter
    _spec("stack-eq", {"stack": {"eq": "e4s"}}, lambda s: "e4s" in s["stacks"], corpus=True),
    _spec(
        "stack-prefix",
        {"stack": {"prefix": "ml-"}},
        lambda s: any_stack(s, lambda st: st.startswith("ml-")),
        corpus=True,
    ),
    _spec(
        "stack-contains",
        {"stack": {"contains": "cuda"}},
        lambda s: any_stack(s, lambda st: "cuda" in st),
        corpus=True,
    ),
    _spec(
        "stack-in",
        {"stack": {"in": ["hep", "tutorial"]}},
        lambda s: any_stack(s, lambda st: st in ("hep", "tutorial")),
        corpus=True,
    ),
    _spec(
        "stack-ne-any-other-stack",
        {"stack": {"ne": "root"}},
        lambda s: any_stack(s, lambda st: st != "root"),
        corpus=True,
    ),
    _spec(
        "stack-prefix-contains-same-stack",
        {"stack": {"prefix": "e4s", "contains": "cuda"}},
        lambda s: any_stack(s, lambda st: st.startswith("e4s") and "cuda" in st),
        corpus=True,
    ),
    _spec(
        "stack-prefix-contains",
        {"stack": {"prefix": "ml-linux", "contains": "cpu"}},
        lambda s: any_stack(s, lambda st: st.startswith("ml-linux") and "cpu" in st),
        corpus=True,
    ),
    # variants with Spack's meaning
    _spec("variant-plus", {"variants": ["+mpi"]}, lambda s: has_variants(s, "+mpi"), corpus=True),
    _spec(
        "variant-tilde",
        {"variants": ["~shared"]},
        lambda s: has_variants(s, "~shared"),
        corpus=True,
    ),
    _spec("variant-minus", {"variants": ["-mpi"]}, lambda s: "mpi=false" in oracle.spec_atoms(s)),
    _spec(
        "variant-two-constraints",
        {"variants": ["+mpi", "~shared"]},
        lambda s: {"mpi=true", "shared=false"} <= oracle.spec_atoms(s),
        corpus=True,
    ),
    _spec(
        "variant-key-value",
        {"variants": ["build_system=cmake"]},
        lambda s: "build_system=cmake" in s["variants"],
        corpus=True,
    ),
    _spec(
        "variant-single-of-multi-valued",
        {"variants": ["cuda_arch=80"]},
        lambda s: any(
            v.startswith("cuda_arch=") and "80" in v.split("=", 1)[1].split(",")
            for v in s["variants"]
        ),
    ),
    _spec(
        "variant-multi-valued-needs-both",
        {"variants": ["cuda_arch=70,80"]},
        lambda s: {"cuda_arch=70", "cuda_arch=80"} <= oracle.spec_atoms(s),
    ),
    _spec(
        "variant-multi-valued-one-missing",
        {"variants": ["cuda_arch=80,90"]},
        lambda s: {"cuda_arch=80", "cuda_arch=90"} <= oracle.spec_atoms(s),
    ),
    _spec(
        "variant-colon-equals-on-page",
        {"variants": ["amdgpu_target=gfx90a"]},
        lambda s: (
            "amdgpu_target:=gfx90a" in s["variants"] or "amdgpu_target=gfx90a" in s["variants"]
        ),
    ),
    _spec(
        "variant-colon-equals-in-filter",
        {"variants": ["amdgpu_target:=gfx90a"]},
        lambda s: (
            "amdgpu_target:=gfx90a" in s["variants"] or "amdgpu_target=gfx90a" in s["variants"]
        ),
    ),
    _spec(
        "variant-double-equals",
        {"variants": ["build_system==cmake"]},
        lambda s: "build_system=cmake" in s["variants"],
        corpus=True,
    ),
    _spec(
        "variant-value-of-libs",
        {"variants": ["libs=static"]},
        lambda s: "libs=static" in oracle.spec_atoms(s),
        corpus=True,
    ),
    _spec(
        "variant-quoted-values",
        {"variants": ["languages='c,fortran'"]},
        lambda s: {"languages=c", "languages=fortran"} <= oracle.spec_atoms(s),
        corpus=True,
    ),
    _spec(
        "variant-patches",
        {"variants": ["patches=f42732a"]},
        lambda s: "patches=f42732a" in oracle.spec_atoms(s),
    ),
    _spec("variant-unknown", {"variants": ["+no_such_variant"]}, lambda s: False, corpus=True),
    _spec("variant-empty-list", {"variants": []}, lambda s: True),
    # hash prefixes
    _spec(
        "hash-prefix",
        {"hashPrefix": "22xi"},
        lambda s: s["hash"].startswith("22xi"),
        corpus=True,
    ),
    _spec(
        "hash-prefix-upper-slash",
        {"hashPrefix": "/22XI"},
        lambda s: s["hash"].startswith("22xi"),
        corpus=True,
    ),
    _spec(
        "hash-prefix-one-char",
        {"hashPrefix": "2"},
        lambda s: s["hash"].startswith("2"),
        corpus=True,
    ),
    _spec(
        "hash-prefix-full",
        {"hashPrefix": "qm4i2hz4uep3enthjxjqi5ogz7kok3zv"},
        lambda s: s["hash"] == "qm4i2hz4uep3enthjxjqi5ogz7kok3zv",
    ),
    _spec(
        "hash-prefix-and-package",
        {"hashPrefix": "2", "package": {"eq": "hdf5"}},
        lambda s: s["hash"].startswith("2") and s["name"] == "hdf5",
        corpus=True,
    ),
    # several fields at once
    _spec(
        "fields-combined",
        {
            "package": {"eq": "hdf5"},
            "platform": {"eq": "linux"},
            "compiler": {"prefix": "gcc@13"},
            "variants": ["+mpi"],
        },
        lambda s: (
            s["name"] == "hdf5"
            and s["platform"] == "linux"
            and compiler(s).startswith("gcc@13")
            and has_variants(s, "+mpi")
        ),
    ),
    _spec(
        "fields-combined-target-stack",
        {"target": {"eq": "x86_64_v3"}, "stack": {"eq": "ml-linux-x86_64-cuda"}, "os": {}},
        lambda s: s["target"] == "x86_64_v3" and "ml-linux-x86_64-cuda" in s["stacks"],
        corpus=True,
    ),
    # and / or / not
    _spec("and-empty-is-everything", {"and": []}, lambda s: True, corpus=True),
    _spec("or-empty-is-nothing", {"or": []}, lambda s: False, corpus=True),
    _spec("not-empty-filter-is-nothing", {"not": {}}, lambda s: False, corpus=True),
    _spec("or-with-empty-filter-is-everything", {"or": [{}]}, lambda s: True),
    _spec(
        "or-empty-with-field",
        {"package": {"eq": "hdf5"}, "or": []},
        lambda s: False,
    ),
    _spec(
        "not",
        {"not": {"platform": {"eq": "linux"}}},
        lambda s: s["platform"] != "linux",
        corpus=True,
    ),
    _spec(
        "not-of-not",
        {"not": {"not": {"package": {"eq": "hdf5"}}}},
        lambda s: s["name"] == "hdf5",
        corpus=True,
    ),
    _spec(
        "not-variant-includes-specs-without-it",
        {"not": {"variants": ["+mpi"]}},
        lambda s: not has_variants(s, "+mpi"),
        corpus=True,
    ),
    _spec(
        "and",
        {"and": [{"stack": {"prefix": "ml-"}}, {"not": {"platform": {"eq": "darwin"}}}]},
        lambda s: any(st.startswith("ml-") for st in s["stacks"]) and s["platform"] != "darwin",
        corpus=True,
    ),
    _spec(
        "or",
        {"or": [{"package": {"eq": "zlib"}}, {"platform": {"eq": "darwin"}}]},
        lambda s: s["name"] == "zlib" or s["platform"] == "darwin",
        corpus=True,
    ),
    _spec(
        "or-inside-field-filter",
        {"package": {"eq": "hdf5"}, "or": [{"variants": ["+cuda"]}, {"variants": ["+rocm"]}]},
        lambda s: s["name"] == "hdf5" and (has_variants(s, "+cuda") or has_variants(s, "+rocm")),
    ),
    _spec(
        "nested-and-or-not",
        {
            "or": [
                {"and": [{"compilerName": {"eq": "gcc"}}, {"not": {"target": {"eq": "aarch64"}}}]},
                {"and": [{"compilerName": {"eq": "none"}}, {"os": {"eq": "ubuntu22.04"}}]},
            ],
            "not": {"or": [{"package": {"eq": "zlib"}}, {"variants": ["~shared"]}]},
        },
        lambda s: (
            (
                (compiler_name(s) == "gcc" and s["target"] != "aarch64")
                or (compiler_name(s) == "none" and s["os"] == "ubuntu22.04")
            )
            and not (s["name"] == "zlib" or has_variants(s, "~shared"))
        ),
        corpus=True,
    ),
    _spec(
        "and-nested-empty-or",
        {"and": [{"platform": {"eq": "linux"}}, {"or": []}]},
        lambda s: False,
    ),
    _spec(
        "not-of-empty-or-is-everything",
        {"not": {"or": []}},
        lambda s: True,
        corpus=True,
    ),
    _spec(
        "not-of-empty-and-is-nothing",
        {"not": {"and": []}},
        lambda s: False,
    ),
]

PACKAGE_FILTERS: list[PackageCase] = [
    _pkg("everything", {}, lambda n, specs: True, corpus=True),
    _pkg("name-eq", {"name": {"eq": "hdf5"}}, lambda n, specs: n == "hdf5", corpus=True),
    _pkg(
        "name-in",
        {"name": {"in": ["zlib", "cudnn", "nope"]}},
        lambda n, specs: n in ("zlib", "cudnn"),
        corpus=True,
    ),
    _pkg("name-prefix", {"name": {"prefix": "py-"}}, lambda n, specs: n.startswith("py-"), True),
    _pkg("name-contains", {"name": {"contains": "d"}}, lambda n, specs: "d" in n, corpus=True),
    _pkg("name-ne", {"name": {"ne": "zlib"}}, lambda n, specs: n != "zlib", corpus=True),
    _pkg(
        "name-prefix-ne",
        {"name": {"prefix": "c", "ne": "cudnn"}},
        lambda n, specs: n.startswith("c") and n != "cudnn",
        corpus=True,
    ),
    _pkg(
        "stack-eq",
        {"stack": {"eq": "hep"}},
        lambda n, specs: any("hep" in s["stacks"] for s in specs),
        corpus=True,
    ),
    _pkg(
        "stack-prefix",
        {"stack": {"prefix": "developer-tools"}},
        lambda n, specs: any(st.startswith("developer-tools") for s in specs for st in s["stacks"]),
        corpus=True,
    ),
    _pkg(
        "stack-prefix-contains",
        {"stack": {"prefix": "e4s", "contains": "rocm"}},
        lambda n, specs: any(
            st.startswith("e4s") and "rocm" in st for s in specs for st in s["stacks"]
        ),
        corpus=True,
    ),
    _pkg(
        "has-spec-platform",
        {"hasSpec": {"platform": {"eq": "darwin"}}},
        lambda n, specs: any(s["platform"] == "darwin" for s in specs),
        corpus=True,
    ),
    _pkg(
        "has-spec-variant",
        {"hasSpec": {"variants": ["+cuda"]}},
        lambda n, specs: any(has_variants(s, "+cuda") for s in specs),
        corpus=True,
    ),
    _pkg(
        "has-spec-multi-valued-variant",
        {"hasSpec": {"variants": ["cuda_arch=80"]}},
        lambda n, specs: any("cuda_arch=80" in oracle.spec_atoms(s) for s in specs),
    ),
    _pkg(
        "has-spec-normalized-compiler",
        {"hasSpec": {"compiler": {"eq": "gcc@11.4.0"}}},
        lambda n, specs: any(compiler(s) == "gcc@11.4.0" for s in specs),
        corpus=True,
    ),
    _pkg(
        "has-spec-empty-filter",
        {"hasSpec": {}},
        lambda n, specs: True,
        corpus=True,
    ),
    _pkg(
        "has-spec-empty-or",
        {"hasSpec": {"or": []}},
        lambda n, specs: False,
    ),
    _pkg(
        "has-spec-not",
        {"hasSpec": {"not": {"platform": {"eq": "linux"}}}},
        lambda n, specs: any(s["platform"] != "linux" for s in specs),
        corpus=True,
    ),
    _pkg(
        "not-has-spec",
        {"not": {"hasSpec": {"variants": ["+mpi"]}}},
        lambda n, specs: not any(has_variants(s, "+mpi") for s in specs),
        corpus=True,
    ),
    _pkg(
        "has-spec-same-spec-must-match-all",
        {"hasSpec": {"and": [{"platform": {"eq": "darwin"}}, {"variants": ["+mpi"]}]}},
        lambda n, specs: any(s["platform"] == "darwin" and has_variants(s, "+mpi") for s in specs),
        corpus=True,
    ),
    _pkg(
        "two-has-specs-may-match-different-specs",
        {
            "and": [
                {"hasSpec": {"platform": {"eq": "darwin"}}},
                {"hasSpec": {"variants": ["+mpi"]}},
            ]
        },
        lambda n, specs: (
            any(s["platform"] == "darwin" for s in specs)
            and any(has_variants(s, "+mpi") for s in specs)
        ),
        corpus=True,
    ),
    _pkg(
        "has-spec-nested",
        {
            "name": {"prefix": "py-"},
            "hasSpec": {
                "or": [{"target": {"eq": "m1"}}, {"stack": {"eq": "ml-linux-x86_64-cuda"}}]
            },
        },
        lambda n, specs: (
            n.startswith("py-")
            and any(s["target"] == "m1" or "ml-linux-x86_64-cuda" in s["stacks"] for s in specs)
        ),
        corpus=True,
    ),
    _pkg("and-empty", {"and": []}, lambda n, specs: True, corpus=True),
    _pkg("or-empty", {"or": []}, lambda n, specs: False, corpus=True),
    _pkg("not-empty", {"not": {}}, lambda n, specs: False),
    _pkg(
        "or",
        {"or": [{"name": {"eq": "zlib"}}, {"stack": {"eq": "hep"}}]},
        lambda n, specs: n == "zlib" or any("hep" in s["stacks"] for s in specs),
        corpus=True,
    ),
    _pkg(
        "not-of-not",
        {"not": {"not": {"name": {"eq": "hdf5"}}}},
        lambda n, specs: n == "hdf5",
        corpus=True,
    ),
    _pkg(
        "not-stack",
        {"not": {"stack": {"prefix": "ml-"}}},
        lambda n, specs: not any(st.startswith("ml-") for s in specs for st in s["stacks"]),
        corpus=True,
    ),
    _pkg(
        "and-or-not",
        {
            "and": [
                {"or": [{"name": {"prefix": "c"}}, {"name": {"prefix": "z"}}]},
                {"not": {"hasSpec": {"platform": {"eq": "darwin"}}}},
            ]
        },
        lambda n, specs: n[0] in "cz" and not any(s["platform"] == "darwin" for s in specs),
        corpus=True,
    ),
]


def spec_case(case_id: str) -> SpecCase:
    return next(c for c in SPEC_FILTERS if c.id == case_id)


def combined(cases: list[SpecCase]) -> list[SpecCase]:
    """Pairs of cases under and / or / not, each with the predicate composed the same way."""
    out: list[SpecCase] = []
    for a in cases:
        for b in cases:
            fa, fb, pa, pb = a.filter, b.filter, a.holds, b.holds
            out += [
                SpecCase(f"{a.id}|or|{b.id}", {"or": [fa, fb]}, _or(pa, pb)),
                SpecCase(
                    f"{a.id}|and-not|{b.id}",
                    {**fa, "not": fb} if "not" not in fa else {"and": [fa, {"not": fb}]},
                    _and_not(pa, pb),
                ),
                SpecCase(f"not({a.id}|or|{b.id})", {"not": {"or": [fa, fb]}}, _nor(pa, pb)),
                SpecCase(f"{a.id}|and|{b.id}", {"and": [fa, fb]}, _and(pa, pb)),
            ]
    return out


def _or(a: SpecPredicate, b: SpecPredicate) -> SpecPredicate:
    return lambda s: a(s) or b(s)


def _and(a: SpecPredicate, b: SpecPredicate) -> SpecPredicate:
    return lambda s: a(s) and b(s)


def _and_not(a: SpecPredicate, b: SpecPredicate) -> SpecPredicate:
    return lambda s: a(s) and not b(s)


def _nor(a: SpecPredicate, b: SpecPredicate) -> SpecPredicate:
    return lambda s: not (a(s) or b(s))


ATOMIC_IDS = [
    "everything",
    "or-empty-is-nothing",
    "package-eq",
    "package-prefix",
    "version-prefix",
    "compiler-eq-normalized",
    "compiler-name-none",
    "os-eq",
    "platform-eq",
    "target-eq",
    "stack-eq",
    "stack-prefix",
    "variant-plus",
    "variant-tilde",
    "variant-single-of-multi-valued",
    "hash-prefix-one-char",
]
# A smaller set for checks that repeat each filter in every stack and package.
SCOPE_ATOMIC_IDS = [
    "everything",
    "or-empty-is-nothing",
    "package-prefix",
    "compiler-eq-normalized",
    "platform-eq",
    "stack-prefix",
    "variant-tilde",
    "hash-prefix-one-char",
]
