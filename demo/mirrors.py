"""A deterministic synthetic Spack build cache: a layout v3 mirror, v2 mirrors per stack, a listing.

What `write_mirror` writes imitates one tag of binaries.spack.io closely enough to exercise a
build-cache reader: Spack 1.x nodes (Database v8, spec files v5), compilers as build
dependencies whose edges carry the language virtuals, external compilers and packages, nodes
that are not pushed, nodes migrated from older formats (`annotations.compiler`), both forms of
`arch.target`, a few direct dependencies on widely shared nodes and many on rarely used ones, a
few dangling edges, and tarball sizes from kilobytes to gigabytes.

Same config, same bytes: one `random.Random` seeded from the config, and nothing depends on
set or hash-randomised order. A million specs fit in bounded memory: the DAG is kept in flat
arrays, and every index is streamed to disk while its checksum is computed.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
import os
import random
from array import array
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cachegql.demo.generator import (
    _SECOND_STACK_SHARE,
    _STACK_COUNT_WEIGHTS,
    _STACKS,
    _apportion,
    _build_system,
    _choices,
    _Compiler,
    _compiler_free,
    _cum,
    _distinct,
    _front_weights,
    _group,
    _package_names,
    _package_variants,
    _package_weights,
    _PackageVariant,
    _pick,
    _spec_hash,
    _Stack,
    _stack_affinity,
    _variant_name_count,
    _variant_pool,
    _variant_value,
    _VariantDef,
    _versions,
)

__all__ = ["SPEC_BLOB_LIMIT", "STACK_NAMES", "MirrorConfig", "MirrorSummary", "write_mirror"]

#: Below this many specs the gzipped spec files are written as blobs (by default).
SPEC_BLOB_LIMIT = 10_000

_DB_MEDIA_TYPE = "application/vnd.spack.db.v8+json"
_SPEC_MEDIA_TYPE = "application/vnd.spack.spec.v5+json"
_TARBALL_MEDIA_TYPE = "application/vnd.spack.install.v2.tar+gzip"


@dataclass(frozen=True)
class MirrorConfig:
    """What to generate.

    `specs`: binaries (records with `in_buildcache: true` in the root index), each with a
    spec manifest; `packages`: distinct package names to draw them from; `stacks`: how many
    CI stacks (views, v2 mirrors, listing labels) besides root, at most `len(STACK_NAMES)`;
    `dangling`: dependency edges whose hash is in no index; `spec_blobs`: write the gzipped
    spec files (None: below `SPEC_BLOB_LIMIT` specs).
    """

    specs: int = 5000
    packages: int = 200
    stacks: int = 10
    seed: int = 1
    tag: str = "develop"
    dangling: int = 5
    spec_blobs: bool | None = None

    @property
    def writes_spec_blobs(self) -> bool:
        """Whether the spec files are written as blobs."""
        return self.specs < SPEC_BLOB_LIMIT if self.spec_blobs is None else self.spec_blobs


@dataclass(frozen=True)
class MirrorSummary:
    """What was written: counts of the root index and where things are.

    `specs`: binaries; `nodes`: records of the root index (binaries, externals, nodes not
    pushed); `edges`: direct dependency edges of those records, `dangling` of them to a hash
    that no index holds; `packages`: distinct names of the binaries; `stacks`: (label,
    binaries) for root and then each stack, in listing order.
    """

    tag: str
    specs: int
    nodes: int
    edges: int
    dangling: int
    packages: int
    stacks: tuple[tuple[str, int], ...]
    spec_blobs: bool
    mirror: Path
    listing: Path


# Stacks are taken round-robin from the families of the page generator's stacks (each family
# heaviest first), so that a few stacks already mix platforms, targets and compilers.
def _stack_order() -> tuple[_Stack, ...]:
    groups: dict[str, list[_Stack]] = {}
    for stack in _STACKS:
        groups.setdefault(stack.group, []).append(stack)
    families = sorted(groups.values(), key=lambda g: -math.fsum(s.weight for s in g))
    queues = [sorted(g, key=lambda s: -s.weight) for g in families]
    order: list[_Stack] = []
    while any(queues):
        for queue in queues:
            if queue:
                order.append(queue.pop(0))
    return tuple(order)


_STACK_ORDER = _stack_order()
#: The stack labels, in the order `MirrorConfig.stacks` takes them.
STACK_NAMES: tuple[str, ...] = tuple(s.name for s in _STACK_ORDER)

# Low-level packages first: a package depends only on packages before it (so the DAG has no
# cycle), and these are the ones depended upon by very many specs (weights), the rest by few.
_BASE_WEIGHTS: dict[str, float] = {
    "zlib": 40, "zlib-ng": 14, "xz": 9, "bzip2": 8, "zstd": 8, "lz4": 3, "pkgconf": 35,
    "gmake": 12, "ninja": 7, "m4": 2, "libiconv": 5, "ncurses": 13, "readline": 5,
    "openssl": 16, "libxml2": 7, "cmake": 35, "autoconf": 3, "automake": 3, "libtool": 4,
    "sqlite": 3, "perl": 6, "python": 14, "py-setuptools": 10, "py-pip": 7, "py-wheel": 7,
    "py-packaging": 3, "py-cython": 3, "py-numpy": 6, "curl": 5, "gettext": 4, "hwloc": 4,
    "libfabric": 2, "ucx": 2, "openmpi": 6, "mpich": 4, "openblas": 6, "netlib-lapack": 2,
    "fftw": 3, "hdf5": 5, "cuda": 4, "boost": 4,
}  # fmt: skip
_BUILD_TOOLS = frozenset(
    {"cmake", "gmake", "ninja", "pkgconf", "autoconf", "automake", "libtool", "m4",
     "py-setuptools", "py-wheel", "py-pip", "py-cython"}
)  # fmt: skip
_PROVIDES: dict[str, tuple[str, ...]] = {
    "zlib": ("zlib-api",), "zlib-ng": ("zlib-api",), "pkgconf": ("pkgconfig",),
    "openmpi": ("mpi",), "mpich": ("mpi",), "intel-oneapi-mpi": ("mpi",),
    "openblas": ("blas", "lapack"), "netlib-lapack": ("blas", "lapack"),
    "intel-oneapi-mkl": ("blas", "lapack"), "fftw": ("fftw-api",), "libiconv": ("iconv",),
    "libjpeg-turbo": ("jpeg",), "intel-oneapi-tbb": ("tbb",),
}  # fmt: skip
# Packages that some stacks take from the system rather than build.
_EXTERNAL_CANDIDATES = frozenset(
    {"openssl", "perl", "python", "curl", "git", "cuda", "gmake", "ncurses", "hwloc",
     "libfabric", "binutils", "autoconf", "automake", "libtool", "m4", "rocm-core", "hip"}
)  # fmt: skip
_EXTERNAL_SHARE = 0.3
_WRAPPER, _RUNTIME = "compiler-wrapper", "gcc-runtime"

# The page generator's compiler names, as Spack 1.x compiler packages: (package, languages).
_COMPILER_PACKAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "gcc": ("gcc", ("c", "c++", "fortran")),
    "clang": ("llvm", ("c", "c++")),
    "apple-clang": ("apple-clang", ("c", "c++")),
    "oneapi": ("intel-oneapi-compilers", ("c", "c++", "fortran")),
    "intel-oneapi-compilers": ("intel-oneapi-compilers", ("c", "c++", "fortran")),
    "intel": ("intel-oneapi-compilers-classic", ("c", "c++", "fortran")),
    "nvhpc": ("nvhpc", ("c", "c++", "fortran")),
    "rocmcc": ("llvm-amdgpu", ("c", "c++", "fortran")),
    "cce": ("cce", ("c", "c++", "fortran")),
    "aocc": ("aocc", ("c", "c++", "fortran")),
    "msvc": ("msvc", ("c", "c++")),
}
_COMPILER_COMMANDS: dict[str, tuple[str, str, str]] = {
    "gcc": ("gcc", "g++", "gfortran"), "llvm": ("clang", "clang++", "flang"),
    "apple-clang": ("clang", "clang++", ""), "intel-oneapi-compilers": ("icx", "icpx", "ifx"),
    "intel-oneapi-compilers-classic": ("icc", "icpc", "ifort"),
    "nvhpc": ("nvc", "nvc++", "nvfortran"), "llvm-amdgpu": ("amdclang", "amdclang++", "amdflang"),
    "cce": ("craycc", "crayCC", "crayftn"), "aocc": ("clang", "clang++", "flang"),
    "msvc": ("cl.exe", "cl.exe", ""),
}  # fmt: skip
# Which languages a package compiles (the virtuals of its compiler edge), and how often.
_LANGUAGES = (("c", "cxx"), ("c",), ("c", "cxx", "fortran"), ("cxx",), ("c", "fortran"))
_LANGUAGE_WEIGHTS = (45.0, 25.0, 15.0, 10.0, 5.0)
_LANGUAGE_OF = {"c": "c", "cxx": "c++", "fortran": "fortran"}

# Targets as archspec describes them: vendor, parents, features (abridged), cpupart.
_MICROARCHITECTURES: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    "x86_64": ("generic", (), "", ""),
    "x86_64_v3": ("generic", ("x86_64_v2",), "avx avx2 bmi1 bmi2 cx16 f16c fma lahf_lm movbe "
                  "mmx popcnt sse sse2 sse4_1 sse4_2 ssse3 xsave", ""),
    "x86_64_v4": ("generic", ("x86_64_v3",), "avx avx2 avx512bw avx512cd avx512dq avx512f "
                  "avx512vl bmi1 bmi2 cx16 f16c fma lahf_lm movbe mmx popcnt sse sse2 sse4_1 "
                  "sse4_2 ssse3 xsave", ""),
    "zen4": ("AuthenticAMD", ("zen3", "x86_64_v4"), "abm aes avx avx2 avx512_bf16 "
             "avx512_bitalg avx512bw avx512cd avx512dq avx512f avx512ifma avx512vbmi "
             "avx512_vnni avx512vl bmi1 bmi2 clwb clzero cx16 f16c fma fsgsbase gfni mmx movbe "
             "pclmulqdq popcnt rdseed sha_ni sse sse2 sse4_1 sse4_2 sse4a ssse3 vaes "
             "vpclmulqdq xsavec xsaveopt", ""),
    "icelake": ("GenuineIntel", ("cascadelake",), "adx aes avx avx2 avx512_bitalg avx512bw "
                "avx512cd avx512dq avx512f avx512ifma avx512vbmi avx512_vbmi2 avx512_vnni "
                "avx512_vpopcntdq avx512vl bmi1 bmi2 clflushopt clwb f16c fma gfni mmx movbe "
                "pclmulqdq popcnt rdpid rdrand rdseed sha_ni sse sse2 sse4_1 sse4_2 ssse3 vaes "
                "vpclmulqdq xsavec xsaveopt", ""),
    "skylake_avx512": ("GenuineIntel", ("skylake", "x86_64_v4"), "adx aes avx avx2 avx512bw "
                       "avx512cd avx512dq avx512f avx512vl bmi1 bmi2 clflushopt clwb f16c fma "
                       "mmx movbe pclmulqdq popcnt rdrand rdseed sse sse2 sse4_1 sse4_2 ssse3 "
                       "xsavec xsaveopt", ""),
    "aarch64": ("generic", (), "", ""),
    "neoverse_n1": ("ARM", ("cortex_a72", "armv8.2a"), "aes asimd asimddp asimdhp asimdrdm "
                    "atomics cpuid crc32 dcpop evtstrm fp fphp lrcpc pmull sha1 sha2 ssbs",
                    "0xd0c"),
    "neoverse_v1": ("ARM", ("neoverse_n1", "armv8.4a"), "aes asimd asimddp asimdfhm asimdhp "
                    "asimdrdm atomics bf16 cpuid crc32 dcpodp dcpop dit evtstrm fcma flagm fp "
                    "fphp i8mm ilrcpc jscvt lrcpc paca pacg pmull rng sha1 sha2 sha3 sha512 sm3 "
                    "sm4 ssbs sve svebf16 svei8mm uscat", "0xd40"),
    "neoverse_v2": ("ARM", ("neoverse_n2",), "aes asimd asimddp asimdfhm asimdhp asimdrdm "
                    "atomics bf16 bti cpuid crc32 dcpodp dcpop dit evtstrm fcma flagm flagm2 fp "
                    "fphp frint i8mm ilrcpc jscvt lrcpc paca pacg pmull sb sha1 sha2 sha3 sha512 "
                    "sm3 sm4 ssbs sve sve2 svebf16 svei8mm uscat", "0xd4f"),
    "m1": ("Apple", ("armv8.4a",), "aes asimd asimddp asimdfhm asimdhp asimdrdm atomics cpuid "
           "crc32 dcpodp dcpop dit evtstrm fcma flagm flagm2 fp fphp frint ilrcpc jscvt lrcpc "
           "paca pacg pmull sb sha1 sha2 sha3 sha512 ssbs uscat", "0x022"),
    "ppc64le": ("generic", (), "", ""),
}  # fmt: skip
_FAMILY = {"aarch64": "aarch64", "neoverse_n1": "aarch64", "neoverse_v1": "aarch64",
           "neoverse_v2": "aarch64", "m1": "aarch64", "ppc64le": "ppc64le"}  # fmt: skip

# Tarball sizes in bytes of packages known to be large; the others are drawn (log-normal).
_LARGE_PACKAGES: dict[str, float] = {
    "cuda": 3.9e9, "py-torch": 2.7e9, "intel-oneapi-mkl": 2.4e9, "llvm": 1.8e9,
    "py-tensorflow": 1.4e9, "rocblas": 1.2e9, "cudnn": 1.1e9, "paraview": 7e8,
    "trilinos": 6e8, "cutensor": 5e8, "visit": 5e8, "gcc": 4.5e8, "root": 4.5e8,
    "py-jaxlib": 3.5e8, "nccl": 2.5e8,
}  # fmt: skip
_MEDIAN_SIZE, _SIZE_SIGMA = 3e6, 1.7
_MIN_SIZE, _MAX_DRAWN_SIZE, _LARGEST_AT_LEAST = 6e3, 1.5e9, 2.8e9

_FLAG_SETS: tuple[dict[str, list[str]], ...] = (
    {"cflags": ["-O2"]},
    {"cflags": ["-O2", "-g"], "cxxflags": ["-O2", "-g"]},
    {"cxxflags": ["-O3"]},
    {"fflags": ["-fallow-argument-mismatch"]},
    {"ldflags": ["-Wl,--as-needed"]},
)
_FLAG_NAMES = ("cflags", "cppflags", "cxxflags", "fflags", "ldflags", "ldlibs")
_FLAG_SHARE = 0.02
_OBJECT_TARGET_SHARE = 0.2
_MIGRATED_SHARE = 0.02
_NOT_PUSHED_PER_SPEC = 1 / 80
_NAMESPACES = ("builtin", "mysite", "builtin.mock")
_NAMESPACE_WEIGHTS = (94.0, 4.0, 2.0)
# Direct dependencies besides the compiler's: drawn per package (gamma), capped.
_DIRECT_DEPS, _DEPS_SHAPE, _MAX_DEPS = 10.0, 1.2, 30
# Expected edges besides the package's own: compiler, compiler-wrapper, often gcc-runtime.
_TOOLCHAIN_EDGES = 2.6
# A dependency is mostly the package's first node in the same context (as one concretized
# environment shares its zlib), else any of them: DAGs stay Spack-sized and share nodes.
_CANONICAL_SHARE = 0.8
_CORE_DEP_SHARE, _OPTIONAL_DEP_SHARE = 0.6, 0.75
_INCLUDED_DEPS = _CORE_DEP_SHARE + (1 - _CORE_DEP_SHARE) * _OPTIONAL_DEP_SHARE

_BINARY, _OMITTED = 1, 2
_PHANTOM_SERIAL = 1 << 39
_FLUSH_CHARS = 1 << 20


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


def _validate(config: MirrorConfig) -> None:
    if config.packages < 1:
        raise ValueError("packages must be at least 1")
    if not 1 <= config.stacks <= len(STACK_NAMES):
        raise ValueError(f"stacks must be between 1 and {len(STACK_NAMES)}")
    if config.dangling < 0:
        raise ValueError("dangling must not be negative")
    if not config.tag or config.tag != config.tag.strip():
        raise ValueError(f"tag {config.tag!r} is not a tag")


class _Builder:
    """Decides everything about the DAG, in the order of the one random stream."""

    def __init__(self, config: MirrorConfig) -> None:
        _validate(config)
        self.config = config
        self.rng = random.Random(f"cachegql-demo-mirror/{config.seed}")
        self.graph = _Graph()
        self.stacks = _STACK_ORDER[: config.stacks]
        self.contexts: list[_Context] = []
        self._context_ids: dict[tuple[int, str, str], int] = {}
        self.arch_ids: list[tuple[int, int]] = []
        for i, stack in enumerate(self.stacks):
            for os_name, target in stack.archs:
                self._context_ids[(i, os_name, target)] = len(self.contexts)
                self.contexts.append(_Context(i, stack.platform, os_name, target))
                self.arch_ids.append(self._arch_texts(stack.platform, os_name, target))
        self.v5 = self.graph.texts(_compact({"original_specfile_version": 5}))
        self.edge_build = self.graph.edge_kinds(_edge(("build",), ()))
        self.edge_link = self.graph.edge_kinds(_edge(("link",), ()))
        self._package_hashes: dict[tuple[int, int], str] = {}
        # (context, compiler of its stack) -> (compiler package, its node, wrapper, runtime)
        self.toolchains: dict[tuple[int, int], tuple[str, int, int, int]] = {}
        # (context, package) -> the external node used there for the package
        self.external_of: dict[tuple[int, int], int] = {}
        self.infrastructure = _infrastructure_count(self.stacks, self.contexts)
        self.not_pushed = round(config.specs * _NOT_PUSHED_PER_SPEC)

    def _arch_texts(self, platform: str, os_name: str, target: str) -> tuple[int, int]:
        """Text numbers of the arch with `target` as a plain string and as an object."""
        vendor, parents, features, cpupart = _MICROARCHITECTURES[target]
        plain = {"platform": platform, "platform_os": os_name, "target": target}
        detailed = {
            "name": target,
            "vendor": vendor,
            "features": sorted(features.split()),
            "generation": 0,
            "parents": list(parents),
            "cpupart": cpupart,
        }
        as_object = {**plain, "target": detailed}
        return self.graph.texts(_compact(plain)), self.graph.texts(_compact(as_object))

    def _arch(self, context: int) -> int:
        """The arch of a node built in `context`: the target mostly plain, sometimes detailed."""
        plain, detailed = self.arch_ids[context]
        return detailed if self.rng.random() < _OBJECT_TARGET_SHARE else plain

    def _family_arch(self, context: _Context) -> int:
        family = _FAMILY.get(context.target, "x86_64")
        plain = {"platform": context.platform, "platform_os": context.os, "target": family}
        return self.graph.texts(_compact(plain))

    def _params(self, variants: Sequence[tuple[str, object]], flags: int) -> int:
        flag_set = _FLAG_SETS[flags - 1] if flags else {}
        items: dict[str, object] = dict(sorted(variants))
        for name in _FLAG_NAMES:
            items[name] = flag_set.get(name, [])
        return self.graph.texts(_compact(items))

    # -- the packages --------------------------------------------------------------------

    def plan(self) -> list[_Package]:
        """The packages in dependency order, each with its spec count."""
        rng, config = self.rng, self.config
        names = _package_names(rng, config.packages)
        regular = [n for n in names if n not in (_WRAPPER, _RUNTIME)]
        base = [n for n in _BASE_WEIGHTS if n in regular]
        ordered = base + [n for n in regular if n not in _BASE_WEIGHTS]
        pool = _variant_pool(rng, _variant_name_count(config.specs) - 1)
        pool_cum = _cum([1.0 / (i + 8) ** 0.7 for i in range(len(pool))])
        counts = _apportion(self._regular_total(len(ordered)), _package_weights(rng, len(ordered)))
        free = [_compiler_free(rng, name) for name in ordered]
        draws = [rng.gammavariate(_DEPS_SHAPE, 1.0) for _ in ordered]
        fan_out = _fan_out(draws, counts, free)
        packages: list[_Package] = []
        for rank, name in enumerate(ordered):
            package = self._package(
                name, rank < len(base), packages, pool, pool_cum, fan_out[rank], free[rank]
            )
            package.count = counts[rank]
            packages.append(package)
        _ensure_a_huge_tarball(packages)
        return packages

    def _regular_total(self, npackages: int) -> int:
        """How many nodes the packages get: the binaries that the compiler runtimes and
        wrappers leave, and the nodes not pushed."""
        config = self.config
        budget = config.specs - self.infrastructure
        if budget < npackages:
            raise ValueError(
                f"specs must be at least {npackages + self.infrastructure} for this config "
                f"({npackages} packages, {self.infrastructure} compiler runtimes and wrappers)"
            )
        if config.dangling > budget:
            raise ValueError(f"dangling must be at most {budget} for this config")
        return budget + self.not_pushed

    def _package(
        self,
        name: str,
        base: bool,
        earlier: list[_Package],
        pool: list[_VariantDef],
        pool_cum: Sequence[float],
        fan_out: int,
        free: bool,
    ) -> _Package:
        rng = self.rng
        versions = _versions(rng, name)
        routes = self._routes(name, base)
        deps = self._package_deps(name, earlier, fan_out)
        variants = _package_variants(rng, pool, pool_cum, None)
        configs = _configs(rng, variants, len(deps))
        size = _LARGE_PACKAGES.get(name) or min(
            _MAX_DRAWN_SIZE, max(_MIN_SIZE, rng.lognormvariate(math.log(_MEDIAN_SIZE), _SIZE_SIGMA))
        )
        languages = () if free else _LANGUAGES[_pick(rng, _cum(_LANGUAGE_WEIGHTS))]
        return _Package(
            name=name,
            namespace=_NAMESPACES[_pick(rng, _cum(_NAMESPACE_WEIGHTS))],
            versions=versions,
            version_cum=_cum([(i + 1) ** 2 for i in range(len(versions))]),
            build_system=_build_system(rng, name),
            routes=routes,
            route_cum=_cum([rng.uniform(0.1, 1.0) for _ in routes]),
            configs=configs,
            config_cum=_front_weights(len(configs)),
            deps=deps,
            languages=languages,
            size=size,
        )

    def _routes(self, name: str, base: bool) -> tuple[_Route, ...]:
        """The stacks that build the package (all of them for low-level packages)."""
        rng = self.rng
        if base:
            stacks = list(self.stacks)
        else:
            group = _group(name)
            cum = _cum([s.weight * _stack_affinity(s, group) for s in self.stacks])
            k = 1 + _pick(rng, _cum(_STACK_COUNT_WEIGHTS))
            stacks = [self.stacks[i] for i in _distinct(rng, cum, k)]
        index = {s.name: i for i, s in enumerate(self.stacks)}
        routes = []
        for choice in _choices(rng, stacks):
            i = index[choice.stack.name]
            contexts = tuple(self._context_ids[(i, o, t)] for o, t in choice.stack.archs)
            partners = {
                c: tuple(
                    index[p]
                    for p in choice.partners
                    if (self.contexts[c].os, self.contexts[c].target) in self.stacks[index[p]].archs
                )
                for c in contexts
            }
            routes.append(_Route(i, contexts, choice.arch_cum, choice.compiler_cum, partners))
        return tuple(routes)

    def _package_deps(self, name: str, earlier: list[_Package], k: int) -> tuple[_Dep, ...]:
        """`k` direct dependencies on earlier packages, mostly on the widely used ones."""
        rng = self.rng
        python = name.startswith("py-")
        weights = []
        for rank, p in enumerate(earlier):
            weight = _BASE_WEIGHTS.get(p.name) or 3.0 / (rank + 1) ** 0.5
            if p.name.startswith("py-") or p.name == "python":
                weight *= 3.0 if python else 0.15
            if p.name in _COMPILER_PACKAGES_BY_PACKAGE:
                weight = 0.0  # a compiler is a dependency through the compiler's edge only
            weights.append(weight)
        k = min(k, sum(1 for w in weights if w))
        if not k:
            return ()
        chosen = sorted(_distinct(rng, _cum(weights), k), key=lambda i: earlier[i].name)
        kinds = self.graph.edge_kinds
        return tuple(
            _Dep(i, earlier[i].name, kinds(_edge(_deptypes(rng, name, earlier[i].name),
                                                 _PROVIDES.get(earlier[i].name, ()))))
            for i in chosen
        )  # fmt: skip

    # -- the nodes -----------------------------------------------------------------------

    def build(self) -> _Graph:
        packages = self.plan()
        self._infrastructure()
        self._externals(packages)
        self._regular(packages)
        return self.graph

    def _infrastructure(self) -> None:
        """Compilers (externals), compiler-wrapper and gcc-runtime for every context."""
        graph = self.graph
        compilers: dict[tuple[str, str, str, str, str], int] = {}
        wrappers: dict[tuple[str, str, str], int] = {}
        runtimes: dict[tuple[str, str, str, str], int] = {}
        for c, context in enumerate(self.contexts):
            stack = self.stacks[context.stack]
            bit = 1 << context.stack
            family = _FAMILY.get(context.target, "x86_64")
            where = (context.platform, context.os, context.target)
            wrapper = wrappers.get(where)
            if wrapper is None:
                wrapper = wrappers[where] = self._tool(c, _WRAPPER, "1.0", [], 1.4e4)
            graph.stacks[wrapper] |= bit
            for i, compiler in enumerate(stack.compilers):
                package, _ = _COMPILER_PACKAGES[compiler.name]
                key = (context.platform, context.os, family, package, compiler.version)
                node = compilers.get(key)
                if node is None:
                    node = compilers[key] = self._compiler(context, compiler)
                runtime = -1
                if package == "gcc":
                    rkey = (*where, compiler.version)
                    runtime = runtimes.get(rkey, -1)
                    if runtime < 0:
                        dep = [("gcc", node, self.edge_build)]
                        runtime = self._tool(c, _RUNTIME, compiler.version, dep, 4e6)
                        runtimes[rkey] = runtime
                    graph.stacks[runtime] |= bit
                self.toolchains[(c, i)] = (package, node, wrapper, runtime)

    def _tool(
        self, c: int, name: str, version: str, deps: list[tuple[str, int, int]], size: float
    ) -> int:
        """A compiler-wrapper or gcc-runtime node (a binary; its stacks are set by the caller)."""
        rng, texts = self.rng, self.graph.texts
        fields = (
            texts(_quote(version)),
            self._arch(c),
            texts(_quote("builtin")),
            self._params([("build_system", "generic")], 0),
            self.graph.no_text,
            self.v5,
        )
        return self.graph.add(
            rng, name, fields, _BINARY, 0, int(size * rng.uniform(0.8, 1.25)), deps
        )

    def _compiler(self, context: _Context, compiler: _Compiler) -> int:
        """An external compiler, as Spack 1.x records one found on the system."""
        texts = self.graph.texts
        package, languages = _COMPILER_PACKAGES[compiler.name]
        prefix = (
            "/usr" if package in ("gcc", "apple-clang") else f"/opt/{package}/{compiler.version}"
        )
        commands = _COMPILER_COMMANDS[package]
        paths = {
            key: f"{prefix}/bin/{command}"
            for key, command in zip(("c", "cxx", "fortran"), commands, strict=True)
            if command
        }
        external = {"path": prefix, "module": None, "extra_attributes": {"compilers": paths}}
        variants = [("build_system", "generic"), ("languages", list(languages))]
        fields = (
            texts(_quote(compiler.version)),
            self._family_arch(context),
            texts(_quote("builtin")),
            self._params(variants, 0),
            texts(f'"external":{_compact(external)},'),
            self.v5,
        )
        return self.graph.add(self.rng, package, fields, 0, 0, 0, [])

    def _externals(self, packages: list[_Package]) -> None:
        """Some stacks take some packages from the system: external nodes, not pushed."""
        rng, texts = self.rng, self.graph.texts
        external = texts(f'"external":{_compact({"path": "/usr", "module": None})},')
        for p, package in enumerate(packages):
            if package.name not in _EXTERNAL_CANDIDATES:
                continue
            build = ("build_system", package.build_system)
            for route in package.routes:
                if rng.random() >= _EXTERNAL_SHARE:
                    continue
                version = texts(_quote(rng.choice(package.versions)))
                for c in route.contexts:
                    fields = (
                        version,
                        self._family_arch(self.contexts[c]),
                        texts(_quote(package.namespace)),
                        self._params([build, *package.configs[0].variants], 0),
                        external,
                        self.v5,
                    )
                    node = self.graph.add(rng, package.name, fields, 0, 0, 0, [])
                    self.external_of[(c, p)] = node

    def _regular(self, packages: list[_Package]) -> None:
        """The packages' own nodes, package by package in dependency order."""
        rng, graph, config = self.rng, self.graph, self.config
        assert sum(1 for f in graph.flags if f & _BINARY) == self.infrastructure
        total, not_pushed = sum(p.count for p in packages), self.not_pushed
        picked = rng.sample(range(total), not_pushed + config.dangling)
        role = bytearray(total)
        for serial in picked[:not_pushed]:
            role[serial] = 1
        for serial in picked[not_pushed:]:
            role[serial] = 2
        pools = _Pools(self.contexts)
        texts = graph.texts
        serial = 0
        for p, package in enumerate(packages):
            version_texts = [texts(_quote(v)) for v in package.versions]
            namespace = texts(_quote(package.namespace))
            params: dict[tuple[int, int], int] = {}
            for _ in range(package.count):
                route = package.routes[_pick(rng, package.route_cum)]
                c = route.contexts[_pick(rng, route.arch_cum)]
                compiler = _pick(rng, route.compiler_cum)
                stacks = 1 << route.stack
                partners = route.partners[c]
                if partners and rng.random() < _SECOND_STACK_SHARE:
                    stacks |= 1 << partners[int(rng.random() * len(partners))]
                version = _pick(rng, package.version_cum)
                k = _pick(rng, package.config_cum)
                flags = 1 + int(rng.random() * len(_FLAG_SETS)) if rng.random() < _FLAG_SHARE else 0
                key = (k, flags)
                if key not in params:
                    build = ("build_system", package.build_system)
                    params[key] = self._params([build, *package.configs[k].variants], flags)
                deps = [
                    (package.deps[j].name, self._resolve(pools, package.deps[j].package, c),
                     package.deps[j].kind)
                    for j in package.configs[k].deps
                ]  # fmt: skip
                annotations = self.v5
                if package.languages:
                    stack = self.stacks[route.stack]
                    if rng.random() < _MIGRATED_SHARE:
                        annotations = self._migrated(stack.compilers[compiler])
                    else:
                        deps.extend(self._toolchain(package.languages, c, compiler))
                if role[serial] == 2:
                    fallback = packages[1 if p == 0 and len(packages) > 1 else 0].name
                    self._dangle(deps, len(package.configs[k].deps), fallback)
                binary = role[serial] != 1
                fields = (
                    version_texts[version],
                    self._arch(c),
                    namespace,
                    params[key],
                    graph.no_text,
                    annotations,
                )
                size = int(package.size * rng.uniform(0.8, 1.25)) if binary else 0
                node = graph.add(
                    rng, package.name, fields, _BINARY if binary else 0,
                    stacks if binary else 0, size, deps,
                )  # fmt: skip
                pools.add(p, c, node)
                serial += 1

    def _resolve(self, pools: _Pools, package: int, context: int) -> int:
        found = self.external_of.get((context, package))
        if found is not None:
            return found
        pool = pools.nearest(package, context)
        roll = self.rng.random()
        if roll < _CANONICAL_SHARE:
            return pool[0]
        return pool[int(len(pool) * (roll - _CANONICAL_SHARE) / (1 - _CANONICAL_SHARE))]

    def _toolchain(
        self, languages: tuple[str, ...], context: int, compiler: int
    ) -> list[tuple[str, int, int]]:
        """The compiler edge (with its language virtuals), compiler-wrapper, gcc-runtime."""
        package, node, wrapper, runtime = self.toolchains[(context, compiler)]
        supported = _COMPILER_PACKAGES_BY_PACKAGE[package]
        virtuals = tuple(v for v in languages if _LANGUAGE_OF[v] in supported) or ("c",)
        kinds = self.graph.edge_kinds
        out = [
            (package, node, kinds(_edge(("build",), virtuals))),
            (_WRAPPER, wrapper, self.edge_build),
        ]
        if runtime >= 0:
            out.append((_RUNTIME, runtime, self.edge_link))
        return out

    def _migrated(self, compiler: _Compiler) -> int:
        """Annotations of a node read from an older spec format: the compiler is kept there."""
        annotations = {
            "original_specfile_version": 4,
            "compiler": f"{compiler.name}@={compiler.version}",
        }
        return self.graph.texts(_compact(annotations))

    def _dangle(self, deps: list[tuple[str, int, int]], own: int, fallback: str) -> None:
        """Point an edge (the first of the package's own, else a new one) at a node that no
        index holds, as when a dependency was pruned from the cache."""
        if own:
            name, _, kind = deps[0]
            i = 0
        else:
            name, kind, i = fallback, self.graph.edge_kinds(_edge(("build", "link"), ())), len(deps)
            deps.append((name, 0, kind))
        texts = self.graph.texts
        fields = (texts(_quote("1.0")), self.arch_ids[0][0], texts(_quote("builtin")),
                  self._params([], 0), self.graph.no_text, self.v5)  # fmt: skip
        deps[i] = (name, self.graph.add(self.rng, name, fields, _OMITTED, 0, 0, []), kind)

    def package_hash(self, node: int) -> str:
        """Spack's hash of the package recipe: one per name and version."""
        graph = self.graph
        key = (graph.name[node], graph.version[node])
        found = self._package_hashes.get(key)
        if found is None:
            text = f"{graph.names.items[key[0]]}@{graph.texts.items[key[1]]}"
            digest = hashlib.sha256(text.encode()).digest()
            found = self._package_hashes[key] = base64.b32encode(digest).decode().lower()
        return found


_COMPILER_PACKAGES_BY_PACKAGE = {p: langs for p, langs in _COMPILER_PACKAGES.values()}


def _infrastructure_count(stacks: Sequence[_Stack], contexts: list[_Context]) -> int:
    """How many compiler-wrapper and gcc-runtime binaries the contexts need."""
    wrappers = {(c.platform, c.os, c.target) for c in contexts}
    runtimes = {
        (c.platform, c.os, c.target, compiler.version)
        for c in contexts
        for compiler in stacks[c.stack].compilers
        if _COMPILER_PACKAGES[compiler.name][0] == "gcc"
    }
    return len(wrappers) + len(runtimes)


def _fan_out(draws: list[float], counts: list[int], free: list[bool]) -> list[int]:
    """Direct dependencies per package (the i-th package has i before it to choose from),
    scaled so that specs have `_DIRECT_DEPS` direct dependencies on average, counting the
    compiler's edges; small configs, with few packages to depend on, may have fewer."""

    def fan_out(scale: float) -> list[int]:
        return [min(i, _MAX_DEPS, int(d * scale)) for i, d in enumerate(draws)]

    def mean(scale: float) -> float:
        total = math.fsum(
            n * (_INCLUDED_DEPS * k + (0 if f else _TOOLCHAIN_EDGES))
            for n, k, f in zip(counts, fan_out(scale), free, strict=True)
        )
        return total / sum(counts)

    low, high = 0.0, 4.0 * _DIRECT_DEPS
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if mean(middle) < _DIRECT_DEPS else (low, middle)
    return fan_out(high)


class _Pools:
    """The nodes of each package, by context, by (platform, os), by platform, and all."""

    def __init__(self, contexts: list[_Context]) -> None:
        self.os_of = _dense([(c.platform, c.os) for c in contexts])
        self.platform_of = _dense([c.platform for c in contexts])
        self.by: dict[tuple[int, int, int], array[int]] = {}

    def add(self, package: int, context: int, node: int) -> None:
        for key in (
            (package, 0, context),
            (package, 1, self.os_of[context]),
            (package, 2, self.platform_of[context]),
            (package, 3, 0),
        ):
            pool = self.by.get(key)
            if pool is None:
                pool = self.by[key] = array("I")
            pool.append(node)

    def nearest(self, package: int, context: int) -> array[int]:
        """The package's nodes closest to `context` (a dependency of a package comes first)."""
        by = self.by
        return (
            by.get((package, 0, context))
            or by.get((package, 1, self.os_of[context]))
            or by.get((package, 2, self.platform_of[context]))
            or by[(package, 3, 0)]
        )


def _dense(keys: Sequence[Hashable]) -> list[int]:
    """A number per key, equal for equal keys, in the order first seen."""
    numbers: dict[Hashable, int] = {}
    return [numbers.setdefault(key, len(numbers)) for key in keys]


def _edge(deptypes: tuple[str, ...], virtuals: tuple[str, ...]) -> str:
    return _compact({"deptypes": list(deptypes), "virtuals": sorted(virtuals)})


def _deptypes(rng: random.Random, name: str, dep: str) -> tuple[str, ...]:
    """How `name` depends on `dep`, as Spack packages typically declare it."""
    if dep in _BUILD_TOOLS:
        return ("build",)
    roll = rng.random()
    if name.startswith("py-") and (dep.startswith("py-") or dep == "python"):
        if dep == "python":
            return ("build", "link", "run")
        return (
            ("build", "run") if roll < 0.6 else ("run",) if roll < 0.9 else ("build", "link", "run")
        )
    if dep in ("python", "perl"):
        return ("build",) if roll < 0.6 else ("build", "run")
    if roll < 0.7:
        return ("build", "link")
    return ("build", "link", "run") if roll < 0.85 else ("link",) if roll < 0.95 else ("run",)


def _configs(
    rng: random.Random, variants: list[_PackageVariant], ndeps: int
) -> tuple[_Config, ...]:
    """A few variant configurations per package, each enabling most of its dependencies."""
    count = 1 + min(5, int(rng.expovariate(0.8)))
    core = math.ceil(ndeps * _CORE_DEP_SHARE)
    out: list[_Config] = []
    for _ in range(count):
        values = tuple(
            (pv.definition.name, _json_value(pv, _variant_value(rng, pv)))
            for pv in variants
            if rng.random() < 0.9
        )
        deps = tuple(j for j in range(ndeps) if j < core or rng.random() < _OPTIONAL_DEP_SHARE)
        config = _Config(values, deps)
        if config not in out:
            out.append(config)
    return tuple(out)


def _json_value(pv: _PackageVariant, value: tuple[str, ...]) -> object:
    """A variant value as Spack writes it in a spec: bool, string, sorted list, sha256s."""
    kind = pv.definition.kind
    if kind == "bool":
        return value[0] == "+"
    if kind == "single":
        return value[0]
    if kind == "patches":
        return [short + hashlib.sha256(short.encode()).hexdigest()[7:] for short in value]
    return sorted(value)


def _ensure_a_huge_tarball(packages: list[_Package]) -> None:
    """At least one package above 2 GiB (even 20% smaller), as cuda or py-torch are."""
    largest = max(packages, key=lambda p: p.size)
    largest.size = max(largest.size, _LARGEST_AT_LEAST)


# -- writing -------------------------------------------------------------------------------


class _Sink:
    """One index streamed to files (the same bytes to each), with its sha256 and length."""

    def __init__(self, *paths: Path) -> None:
        self.paths = paths
        self.files = [path.open("wb") for path in paths]
        self.sha = hashlib.sha256()
        self.length = 0
        self.parts: list[str] = ['{"database":{"version":"8","installs":{']
        self.chars = 0
        self.first = True
        self.binaries = 0

    def add(self, record: str) -> None:
        if self.first:
            self.first = False
        else:
            self.parts.append(",")
        self.parts.append(record)
        self.chars += len(record)
        if self.chars > _FLUSH_CHARS:
            self._flush()

    def _flush(self) -> None:
        data = "".join(self.parts).encode("utf-8")
        self.sha.update(data)
        for file in self.files:
            file.write(data)
        self.length += len(data)
        self.parts.clear()
        self.chars = 0

    def close(self) -> tuple[str, int]:
        """Finish the JSON; return (sha256 hex, length)."""
        self.parts.append("}}}")
        self._flush()
        for file in self.files:
            file.close()
        return self.sha.hexdigest(), self.length


def _blob_path(mirror: Path, checksum: str) -> Path:
    return mirror / "blobs" / "sha256" / checksum[:2] / checksum


def _record(length: int, media_type: str, compression: str, checksum: str) -> dict[str, object]:
    return {
        "contentLength": length,
        "mediaType": media_type,
        "compression": compression,
        "checksumAlgorithm": "sha256",
        "checksum": checksum,
    }


def _manifest_text(records: Sequence[dict[str, object]]) -> str:
    """A v3 manifest as Spack writes it: `indent=0`, compact separators."""
    return json.dumps({"version": 3, "data": list(records)}, indent=0, separators=(",", ":"))


_SPEC_MANIFEST = (
    '{{\n"version":3,\n"data":[\n{{\n"contentLength":{size},\n"mediaType":"'
    + _TARBALL_MEDIA_TYPE
    + '",\n"compression":"gzip",\n"checksumAlgorithm":"sha256",\n"checksum":"{tarball}"\n}},'
    + '\n{{\n"contentLength":{spec_length},\n"mediaType":"'
    + _SPEC_MEDIA_TYPE
    + '",\n"compression":"gzip",\n"checksumAlgorithm":"sha256",\n"checksum":"{spec}"\n}}\n]\n}}'
)


class _Writer:
    """Streams the indexes, then the spec manifests (and blobs), of a built DAG."""

    def __init__(self, builder: _Builder, out: Path) -> None:
        self.builder = builder
        self.graph = builder.graph
        self.config = builder.config
        self.out = out
        self.mirror = out / "mirror"
        self.labels = ["root", *(s.name for s in builder.stacks)]
        self.quoted = [_quote(n) for n in self.graph.names.items]
        self.texts: list[str] | None = [] if self.config.writes_spec_blobs else None
        self.blob_folders: set[str] = set()

    def node_text(self, node: int) -> str:
        g = self.graph
        texts = g.texts.items
        a, b = g.dep_start[node], g.dep_start[node + 1]
        deps = ""
        if a != b:
            hashes, quoted, kinds = g.hashes, self.quoted, g.edge_kinds.items
            names = g.name
            deps = (
                '"dependencies":['
                + ",".join(
                    f'{{"name":{quoted[names[d]]},"hash":"{hashes[32 * d : 32 * d + 32].decode()}",'
                    f'"parameters":{kinds[k]}}}'
                    for d, k in zip(g.dep_node[a:b], g.dep_kind[a:b], strict=True)
                )
                + "],"
            )
        return (
            f'{{"name":{self.quoted[g.name[node]]},"version":{texts[g.version[node]]},'
            f'"arch":{texts[g.arch[node]]},"namespace":{texts[g.namespace[node]]},'
            f'"parameters":{texts[g.params[node]]},{texts[g.external[node]]}'
            f'"package_hash":"{self.builder.package_hash(node)}",{deps}'
            f'"annotations":{texts[g.annotations[node]]},"hash":"{g.hash(node)}"}}'
        )

    def closure_masks(self) -> tuple[array[int], array[int]]:
        """Per node: the stacks whose view needs it (it or a dependent is theirs), and how
        many nodes depend on it directly (Spack's `ref_count`)."""
        g = self.graph
        views = array("Q", g.stacks)
        refs = array("I", bytes(4 * len(g)))
        start, dep_node = g.dep_start, g.dep_node
        for node in range(len(g) - 1, -1, -1):
            a, b = start[node], start[node + 1]
            if a == b:
                continue
            mask = views[node]
            for dep in dep_node[a:b]:
                refs[dep] += 1
                views[dep] |= mask
        return views, refs

    def indexes(self) -> list[tuple[str, int, int]]:
        """Write the root index and a view per stack, as blobs of the v3 mirror and as the
        indexes of the v2 mirrors; return (checksum, length, binaries) of each."""
        g = self.graph
        tmp = self.mirror / "blobs" / "sha256"
        tmp.mkdir(parents=True)
        sinks = []
        for label in self.labels:
            v2 = self.out / "stacks" / label / "build_cache"
            v2.mkdir(parents=True)
            sinks.append(_Sink(tmp / f".{label}.json.part", v2 / "index.json"))
        root, views = sinks[0], sinks[1:]
        masks, refs = self.closure_masks()
        flags, stacks = g.flags, g.stacks
        keep = self.texts
        for node in range(len(g)):
            if flags[node] & _OMITTED:
                if keep is not None:
                    keep.append("")
                continue
            text = self.node_text(node)
            if keep is not None:
                keep.append(text)
            head = f'"{g.hash(node)}":{{"spec":{text},"ref_count":{refs[node]},"in_buildcache":'
            binary = flags[node] & _BINARY
            root.add(head + ("true}" if binary else "false}"))
            root.binaries += binary
            mask, own = masks[node], stacks[node]
            while mask:
                low = mask & -mask
                mask ^= low
                sink = views[low.bit_length() - 1]
                if own & low:
                    sink.add(head + "true}")
                    sink.binaries += 1
                else:
                    sink.add(head + "false}")
        out = []
        for sink in sinks:
            checksum, length = sink.close()
            target = _blob_path(self.mirror, checksum)
            target.parent.mkdir(exist_ok=True)
            sink.paths[0].replace(target)
            out.append((checksum, length, sink.binaries))
        return out

    def index_manifests(self, indexes: list[tuple[str, int, int]]) -> None:
        folder = self.mirror / "v3" / "manifests" / "index"
        for label, (checksum, length, _) in zip(self.labels, indexes, strict=True):
            where = folder if label == "root" else folder / label
            where.mkdir(parents=True, exist_ok=True)
            text = _manifest_text([_record(length, _DB_MEDIA_TYPE, "none", checksum)])
            (where / "index.manifest.json").write_text(text, encoding="utf-8")
        (self.mirror / "v3" / "layout.json").write_text('{"signing": "gpg"}', encoding="utf-8")

    def spec_manifests(self) -> None:
        """A manifest per binary; the gzipped spec file as a blob when configured."""
        g, seed = self.graph, self.config.seed
        folder = self.mirror / "v3" / "manifests" / "spec"
        made: set[int] = set()
        texts = g.texts.items
        plain: dict[int, str] = {}
        for node in range(len(g)):
            if not g.flags[node] & _BINARY:
                continue
            name_id = g.name[node]
            name = g.names.items[name_id]
            if name_id not in made:
                (folder / name).mkdir(parents=True)
                made.add(name_id)
            spec_hash = g.hash(node)
            tarball = hashlib.sha256(f"{seed}/tarball/{spec_hash}".encode()).hexdigest()
            if self.texts is None:
                spec = hashlib.sha256(f"{seed}/spec/{spec_hash}".encode()).hexdigest()
                spec_length = 1200 + 700 * (g.dep_start[node + 1] - g.dep_start[node])
            else:
                spec, spec_length = self._spec_blob(node)
            version = plain.get(g.version[node])
            if version is None:
                version = plain[g.version[node]] = json.loads(texts[g.version[node]])
            text = _SPEC_MANIFEST.format(
                size=g.size[node], tarball=tarball, spec_length=spec_length, spec=spec
            )
            path = f"{folder}/{name}/{name}-{version}-{spec_hash}.spec.manifest.json"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, text.encode("utf-8"))
            finally:
                os.close(fd)

    def _spec_blob(self, node: int) -> tuple[str, int]:
        """Write the gzipped spec file of `node` (it and its DAG, breadth first)."""
        g, texts = self.graph, self.texts
        assert texts is not None
        order = [node]
        seen = {node}
        i = 0
        while i < len(order):
            x = order[i]
            i += 1
            for dep in g.dep_node[g.dep_start[x] : g.dep_start[x + 1]]:
                if dep not in seen and not g.flags[dep] & _OMITTED:
                    seen.add(dep)
                    order.append(dep)
        document = (
            '{"spec":{"_meta":{"version":5},"nodes":['
            + ",".join(texts[x] for x in order)
            + ']},"buildcache_layout_version":2}'
        )
        data = gzip.compress(document.encode("utf-8"), compresslevel=6, mtime=0)
        checksum = hashlib.sha256(data).hexdigest()
        path = _blob_path(self.mirror, checksum)
        if checksum[:2] not in self.blob_folders:
            path.parent.mkdir(exist_ok=True)
            self.blob_folders.add(checksum[:2])
        path.write_bytes(data)
        return checksum, len(data)

    def stack_hashes(self, indexes: list[tuple[str, int, int]]) -> None:
        """`index.json.hash` beside each v2 index: the sha256 hex of its bytes."""
        for label, (checksum, _, _) in zip(self.labels, indexes, strict=True):
            path = self.out / "stacks" / label / "build_cache" / "index.json.hash"
            path.write_text(checksum, encoding="utf-8")

    def listing(self) -> Path:
        """`cache_spack_io_index.json`: per tag, each label and its index, relative urls."""
        entries = [
            {"label": label, "url": f"stacks/{label}/build_cache/index.json"}
            for label in self.labels
        ]
        path = self.out / "cache_spack_io_index.json"
        path.write_text(json.dumps({self.config.tag: entries}), encoding="utf-8")
        return path


def write_mirror(config: MirrorConfig, out: Path) -> MirrorSummary:
    """Write one synthetic tag of a Spack build cache under `out` (which may exist, but
    without any of the three things written here).

    - `out/mirror/`: a layout v3 build cache: `v3/layout.json`; the root index
      `v3/manifests/index/index.manifest.json` and a view per stack
      `v3/manifests/index/<stack>/index.manifest.json`, each pointing to its index blob
      `blobs/sha256/<checksum[:2]>/<checksum>` (Database v8); a spec manifest per binary
      `v3/manifests/spec/<name>/<name>-<version>-<hash>.spec.manifest.json` with the tarball's
      size (the tarball blobs are not written, nor the spec blobs unless
      `config.writes_spec_blobs`).
    - `out/stacks/<label>/build_cache/index.json` and `index.json.hash`: a layout v2 mirror
      per stack and one for `root`, holding the same index bytes as the blobs.
    - `out/cache_spack_io_index.json`: `{tag: [{"label", "url"}, ...]}`, root first, each url
      relative to the listing (the index.json of that label's v2 mirror).
    """
    for name in ("mirror", "stacks", "cache_spack_io_index.json"):
        if (out / name).exists():
            raise FileExistsError(f"{out / name} exists: write a mirror into a new folder")
    builder = _Builder(config)
    graph = builder.build()
    writer = _Writer(builder, out)
    indexes = writer.indexes()
    writer.index_manifests(indexes)
    writer.spec_manifests()
    writer.stack_hashes(indexes)
    listing = writer.listing()
    flags = graph.flags
    written = [n for n in range(len(graph)) if not flags[n] & _OMITTED]
    return MirrorSummary(
        tag=config.tag,
        specs=indexes[0][2],
        nodes=len(written),
        edges=sum(graph.dep_start[n + 1] - graph.dep_start[n] for n in written),
        dangling=config.dangling,
        packages=len({graph.name[n] for n in written if flags[n] & _BINARY}),
        stacks=tuple(
            (label, binaries)
            for label, (_, _, binaries) in zip(writer.labels, indexes, strict=True)
        ),
        spec_blobs=config.writes_spec_blobs,
        mirror=writer.mirror,
        listing=listing,
    )
