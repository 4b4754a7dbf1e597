"""What the build cache generator draws from: its stacks, base packages, compilers as
packages, microarchitectures, flags, and the shares and weights that shape the DAG."""

from __future__ import annotations

import math

from cachegql.demo.catalogue import _STACKS, _Stack

__all__ = [
    "STACK_NAMES",
    "_BASE_WEIGHTS",
    "_BINARY",
    "_BUILD_TOOLS",
    "_CANONICAL_SHARE",
    "_COMPILER_COMMANDS",
    "_COMPILER_PACKAGES",
    "_COMPILER_PACKAGES_BY_PACKAGE",
    "_CORE_DEP_SHARE",
    "_DB_MEDIA_TYPE",
    "_DEPS_SHAPE",
    "_DIRECT_DEPS",
    "_EXTERNAL_CANDIDATES",
    "_EXTERNAL_SHARE",
    "_FAMILY",
    "_FLAG_NAMES",
    "_FLAG_SETS",
    "_FLAG_SHARE",
    "_FLUSH_CHARS",
    "_INCLUDED_DEPS",
    "_LANGUAGES",
    "_LANGUAGE_OF",
    "_LANGUAGE_WEIGHTS",
    "_LARGEST_AT_LEAST",
    "_LARGE_PACKAGES",
    "_MAX_DEPS",
    "_MAX_DRAWN_SIZE",
    "_MEDIAN_SIZE",
    "_MICROARCHITECTURES",
    "_MIGRATED_SHARE",
    "_MIN_SIZE",
    "_NAMESPACES",
    "_NAMESPACE_WEIGHTS",
    "_NOT_PUSHED_PER_SPEC",
    "_OBJECT_TARGET_SHARE",
    "_OMITTED",
    "_OPTIONAL_DEP_SHARE",
    "_PHANTOM_SERIAL",
    "_PROVIDES",
    "_RUNTIME",
    "_SIZE_SIGMA",
    "_SPEC_MEDIA_TYPE",
    "_STACK_ORDER",
    "_TARBALL_MEDIA_TYPE",
    "_TOOLCHAIN_EDGES",
    "_WRAPPER",
]

_DB_MEDIA_TYPE = "application/vnd.spack.db.v8+json"
_SPEC_MEDIA_TYPE = "application/vnd.spack.spec.v5+json"
_TARBALL_MEDIA_TYPE = "application/vnd.spack.install.v2.tar+gzip"


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


_COMPILER_PACKAGES_BY_PACKAGE = {p: langs for p, langs in _COMPILER_PACKAGES.values()}
