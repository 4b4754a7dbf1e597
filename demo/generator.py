"""Deterministic synthetic cache.spack.io package pages, for demos and benchmarks.

The output imitates the real site closely enough to exercise every code path of the
ingest: both page styles (2024: fixed key order, `gcc@=11.4.0`, tarball URLs; 2025:
sorted keys, `gcc@11.4.0`, `none` for binary-only packages), every variant form,
a skewed number of specs per package, and `meta` that is the exact summary of
`spec_details`. Same config, same bytes: only `random.Random` seeded from the config
is used, and nothing depends on set or hash-randomised iteration order.
"""

from __future__ import annotations

import base64
import json
import math
import random
from bisect import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Literal

__all__ = ["DemoConfig", "write_pages"]


@dataclass(frozen=True)
class DemoConfig:
    """How much to generate: distinct packages, total specs over all pages, tags, seed."""

    packages: int = 200
    specs: int = 5000
    tags: tuple[str, ...] = ("develop", "v0.23.0")
    seed: int = 1


_REAL_PACKAGES: tuple[str, ...] = (
    "zlib", "cmake", "gcc-runtime", "compiler-wrapper", "openssl", "ncurses", "pkgconf",
    "hdf5", "openmpi", "mpich", "cuda", "cudnn", "py-numpy", "py-torch", "py-torch-scatter",
    "openblas", "xz", "zstd", "bzip2", "lz4", "zlib-ng", "libxml2", "libiconv", "readline",
    "sqlite", "python", "perl", "curl", "gettext", "ninja", "gmake", "autoconf", "automake",
    "libtool", "m4", "boost", "eigen", "fftw", "netlib-lapack", "hwloc", "libfabric", "ucx",
    "py-scipy", "py-pandas", "py-matplotlib", "py-h5py", "py-mpi4py", "py-setuptools",
    "py-pip", "py-wheel", "py-cython", "py-pybind11", "py-packaging", "py-pyyaml",
    "py-ruamel.yaml", "py-typing-extensions", "py-requests", "py-urllib3", "py-certifi",
    "py-six", "py-zope.interface", "py-jaraco.functools", "py-backports.tarfile",
    "py-torch-sparse", "py-torch-geometric", "py-torch-cluster", "py-tensorflow", "py-jax",
    "py-jaxlib", "py-scikit-learn", "py-black", "py-particle", "py-vector", "py-awkward",
    "py-uproot", "nccl", "cutensor", "intel-oneapi-mkl", "intel-oneapi-mpi",
    "intel-oneapi-tbb", "gcc", "llvm", "binutils", "petsc", "trilinos", "hypre",
    "superlu-dist", "mumps", "metis", "parmetis", "scotch", "kokkos", "kokkos-kernels",
    "raja", "umpire", "chai", "camp", "mfem", "sundials", "slepc", "adios2", "netcdf-c",
    "netcdf-fortran", "parallel-netcdf", "papi", "tau", "hpctoolkit", "caliper", "paraview",
    "visit", "vtk-m", "ascent", "conduit", "magma", "hip", "hipblas", "rocblas", "rocm-core",
    "amrex", "warpx", "lammps", "gromacs", "nwchem", "quantum-espresso", "cp2k", "dealii",
    "strumpack", "ginkgo", "heffte", "legion", "upcxx", "root", "geant4", "pythia8",
    "hepmc3", "lhapdf", "fastjet", "delphes", "evtgen", "photos", "tauola", "cernlib",
    "alpgen", "ampt", "whizard", "openloops", "lcio", "collier", "form", "pythia6", "qd",
    "aida", "samtools", "bwa", "gatk", "bowtie2", "emacs", "neovim", "htop", "ripgrep",
    "direnv", "ccache", "git", "tree-sitter", "uncrustify", "lmod", "lua-luafilesystem",
    "lua-luaposix", "perl-xml-parser", "perl-dbi", "perl-json", "perl-test-needs",
    "r-rcpp", "r-ggplot2", "r-data-table", "r-matrix", "ruby-rake", "openjpeg", "libpng",
    "libjpeg-turbo", "libtiff", "protobuf", "abseil-cpp", "googletest", "nlohmann-json",
    "fmt", "spdlog", "yaml-cpp", "e4s-cl", "adept-utils",
)  # fmt: skip

_BINARY_ONLY = frozenset(
    {"cuda", "cudnn", "cutensor", "intel-oneapi-mkl", "intel-oneapi-mpi", "intel-oneapi-tbb"}
)
_COMPILER_FREE = frozenset({"compiler-wrapper", "py-particle", "py-vector", "direnv", "aida"})
_HEP = frozenset(
    {"root", "geant4", "pythia8", "hepmc3", "lhapdf", "fastjet", "delphes", "evtgen",
     "photos", "tauola", "cernlib", "alpgen", "ampt", "whizard", "openloops", "lcio",
     "collier", "form", "pythia6", "qd", "aida", "py-particle", "py-vector", "py-awkward",
     "py-uproot"}
)  # fmt: skip
_DEV_TOOLS = frozenset(
    {"emacs", "neovim", "htop", "ripgrep", "direnv", "ccache", "git", "tree-sitter",
     "uncrustify", "lmod", "gmake", "ninja", "cmake"}
)  # fmt: skip

_KNOWN_VERSIONS: dict[str, tuple[str, ...]] = {
    "zlib": ("1.2.13", "1.3.1"),
    "cmake": ("3.27.9", "3.30.5", "3.31.6"),
    "hdf5": ("1.14.3", "1.14.5", "1.14.6"),
    "openmpi": ("4.1.6", "5.0.5", "5.0.6"),
    "cuda": ("11.8.0", "12.4.1", "12.6.1", "12.8.0"),
    "cudnn": ("8.9.5.30-12", "8.9.7.29-12", "9.2.0.82-12", "9.8.0.87-12"),
    "py-torch-scatter": ("2.1.2",),
    "py-torch": ("2.3.1", "2.4.1", "2.5.1"),
    "py-numpy": ("1.26.4", "2.1.3", "2.2.4"),
    "openblas": ("0.3.27", "0.3.29"),
    "lz4": ("1.9.4", "1.10.0"),
    "gcc": ("11.4.0", "12.3.0", "13.2.0", "14.2.0"),
    "intel-oneapi-mkl": ("2024.0.0", "2024.2.1"),
    "lhapdf": ("6.5.4", "6.5.5"),
    "openloops": ("2.1.2",),
    "delphes": ("3.5.0", "develop"),
    "emacs": ("29.1", "29.4"),
    "lmod": ("8.7.18", "8.7.37"),
}

_BUILD_SYSTEM_BY_PREFIX = {
    "py-": "python_pip", "r-": "r", "perl-": "perl", "lua-": "lua", "ruby-": "ruby",
}  # fmt: skip
_BUILD_SYSTEMS = ("cmake", "autotools", "makefile", "generic", "meson", "cargo", "go")
_BUILD_SYSTEM_WEIGHTS = (45.0, 30.0, 10.0, 6.0, 5.0, 2.0, 2.0)

_PREFIXES = ("py-", "", "r-", "perl-", "ruby-", "lua-")
_PREFIX_WEIGHTS = (36.0, 35.0, 17.0, 8.0, 2.0, 2.0)
_NAME_WORDS: tuple[str, ...] = (
    "mpi", "hdf", "xml", "json", "yaml", "toml", "parser", "tools", "data", "graph", "sparse",
    "solver", "io", "net", "core", "util", "utils", "fast", "stream", "grid", "mesh",
    "quantum", "bio", "seq", "align", "viz", "plot", "http", "cloud", "async", "cache",
    "config", "crypto", "hash", "image", "audio", "video", "text", "regex", "time", "date",
    "math", "linalg", "blas", "fft", "random", "stats", "model", "learn", "neural", "tensor",
    "torch", "vision", "geo", "map", "spatial", "cluster", "sched", "queue", "task", "flow",
    "pipe", "shell", "term", "color", "log", "trace", "profile", "bench", "test", "mock",
    "lint", "format", "doc", "sphinx", "theme", "web", "server", "client", "socket", "rpc",
    "proto", "codec", "compress", "zip", "tar", "archive", "db", "sql", "query", "index",
    "search", "store", "file", "path", "glob", "watch", "event", "signal", "thread", "pool",
    "lock", "atomic", "memory", "alloc", "buffer", "array", "matrix", "vector", "frame",
    "table", "record", "schema", "types", "check", "valid", "auth", "oauth", "token",
    "jwt", "ssl", "tls", "dns", "ftp", "smtp", "mail", "chem", "phys", "astro", "climate",
    "ocean", "atmos", "fluid", "cfd", "fem", "dft", "md", "genome", "rna", "protein", "cell",
    "lab", "kit", "lite", "plus", "ng", "extra", "contrib", "compat", "wrapper", "bindings",
    "ext", "api", "sdk", "cli", "gui", "qt", "gtk", "wx", "tk", "opengl", "vulkan", "cuda",
    "rocm", "sycl", "omp", "simd", "arrow", "parquet", "zarr", "netcdf", "grib", "fits",
)  # fmt: skip
_DOTTED_PARTS = ("zope", "jaraco", "backports", "ruamel", "sphinxcontrib", "azure", "google")
_NAME_LENGTH_WEIGHTS = (40.0, 45.0, 15.0)


@dataclass(frozen=True)
class _Compiler:
    """A compiler as `name@version`, or `none` for specs built without one."""

    name: str
    version: str

    def text(self, legacy: bool) -> str:
        """The page form: `gcc@=11.4.0` on 2024 pages, `gcc@11.4.0` on 2025 ones."""
        return f"{self.name}@={self.version}" if legacy else f"{self.name}@{self.version}"


def _c(spec: str) -> _Compiler:
    """`gcc@11.4.0` as a _Compiler."""
    name, _, version = spec.partition("@")
    return _Compiler(name, version)


_NONE = "none"


@dataclass(frozen=True)
class _Stack:
    """A CI stack and the platform, (os, target) pairs and compilers it builds with."""

    name: str
    platform: str
    archs: tuple[tuple[str, str], ...]
    compilers: tuple[_Compiler, ...]
    weight: float
    group: str


def _stack(
    name: str, platform: str, archs: str, compilers: str, weight: float, group: str = "hpc"
) -> _Stack:
    """A stack from compact text: archs as `os/target` words, compilers as `name@version`."""
    pairs = tuple((a.split("/")[0], a.split("/")[1]) for a in archs.split())
    return _Stack(name, platform, pairs, tuple(_c(c) for c in compilers.split()), weight, group)


_STACKS: tuple[_Stack, ...] = (
    _stack("e4s", "linux", "ubuntu22.04/x86_64_v3", "gcc@11.4.0 nvhpc@24.7", 10.0),
    _stack("e4s-neoverse-v2", "linux", "ubuntu22.04/neoverse_v2", "gcc@11.4.0", 5.0),
    _stack("e4s-neoverse_v1", "linux", "ubuntu22.04/neoverse_v1", "gcc@11.4.0", 3.0),
    _stack("e4s-oneapi", "linux", "ubuntu22.04/x86_64_v3",
           "oneapi@2024.2.1 intel-oneapi-compilers@2024.2.1 oneapi@2024.2.0", 4.0),
    _stack("e4s-rocm-external", "linux", "ubuntu22.04/x86_64_v3",
           "gcc@11.4.0 rocmcc@6.1.2", 2.5),
    _stack("e4s-cray-rhel", "linux", "rhel8/x86_64_v3 rhel8/zen4",
           "cce@18.0.0 cce@15.0.1 aocc@4.2.0", 2.0),
    _stack("e4s-cray-sles", "linux", "sle_hpc15/x86_64_v4", "gcc@10.3.0 cce@18.0.0", 0.7),
    _stack("e4s-power", "linux", "ubuntu20.04/ppc64le", "gcc@9.4.0", 1.5),
    _stack("hep", "linux", "ubuntu22.04/x86_64_v3 ubuntu24.04/x86_64_v3",
           "gcc@11.4.0 gcc@13.2.0", 4.0, "hep"),
    _stack("ml-linux-x86_64-cuda", "linux", "ubuntu24.04/x86_64_v3 ubuntu22.04/x86_64_v3",
           "gcc@13.2.0 gcc@11.4.0", 5.0, "ml"),
    _stack("ml-linux-x86_64-cpu", "linux", "ubuntu24.04/x86_64_v3 ubuntu22.04/x86_64_v3",
           "gcc@13.2.0 gcc@11.4.0", 4.0, "ml"),
    _stack("ml-linux-x86_64-rocm", "linux", "ubuntu24.04/x86_64_v3", "gcc@13.2.0", 2.0, "ml"),
    _stack("ml-linux-aarch64-cuda", "linux", "ubuntu24.04/aarch64 ubuntu24.04/neoverse_v2",
           "gcc@13.2.0", 3.0, "ml"),
    _stack("ml-linux-aarch64-cpu", "linux", "ubuntu24.04/aarch64", "gcc@13.2.0", 2.5, "ml"),
    _stack("ml-darwin-aarch64-mps", "darwin",
           "sequoia/aarch64 ventura/aarch64 sequoia/m1",
           "apple-clang@16.0.0 apple-clang@15.0.0", 2.0, "ml"),
    _stack("developer-tools-darwin", "darwin", "sequoia/aarch64 sequoia/m1",
           "apple-clang@16.0.0", 1.5, "dev"),
    _stack("developer-tools-x86_64_v3-linux-gnu", "linux", "centos7/x86_64_v3",
           "gcc@10.5.0 clang@18.1.8", 1.5, "dev"),
    _stack("developer-tools-aarch64-linux-gnu", "linux", "rhel8/aarch64",
           "gcc@13.3.0", 1.5, "dev"),
    _stack("developer-tools-manylinux2014", "linux", "centos7/x86_64_v3",
           "gcc@10.2.1", 1.5, "dev"),
    _stack("developer-tools", "linux", "ubuntu18.04/x86_64_v3", "gcc@7.5.0", 1.0, "dev"),
    _stack("aws-pcluster-neoverse_v1", "linux", "amzn2/neoverse_v1 amzn2/neoverse_n1",
           "gcc@12.4.0 gcc@12.3.0", 2.0),
    _stack("aws-pcluster-x86_64_v4", "linux", "amzn2/x86_64_v4 amzn2/x86_64_v3",
           "intel-oneapi-compilers@2024.1.0 gcc@12.3.0 intel@2021.10.0 nvhpc@23.11", 2.0),
    _stack("aws-pcluster-icelake", "linux", "amzn2/icelake amzn2/skylake_avx512",
           "gcc@7.3.1 gcc@12.3.0", 1.0),
    _stack("aws-isc", "linux", "amzn2/x86_64_v3", "gcc@7.3.1", 1.0),
    _stack("aws-isc-aarch64", "linux", "amzn2/neoverse_n1 amzn2/aarch64", "gcc@7.3.1", 1.0),
    _stack("radiuss", "linux", "ubuntu22.04/x86_64_v3 ubuntu18.04/x86_64_v3",
           "gcc@11.4.0 clang@16.0.6 gcc@7.5.0", 2.0),
    _stack("radiuss-aws", "linux", "amzn2/x86_64_v3", "gcc@7.3.1 clang@14.0.0", 1.0),
    _stack("radiuss-aws-aarch64", "linux", "amzn2/aarch64 amzn2/neoverse_n1",
           "gcc@7.3.1", 1.0),
    _stack("tutorial", "linux", "ubuntu22.04/x86_64_v3",
           "gcc@11.4.0 gcc@12.3.0 clang@14.0.0", 2.0),
    _stack("build_systems", "linux", "ubuntu22.04/x86_64_v3 ubuntu18.04/x86_64_v3",
           "gcc@11.4.0 gcc@7.5.0", 1.5),
    _stack("data-vis-sdk", "linux", "ubuntu22.04/x86_64_v3 ubuntu20.04/x86_64_v3",
           "gcc@11.4.0 gcc@11.1.0", 1.5),
    _stack("gpu-tests", "linux", "ubuntu20.04/x86_64_v3", "gcc@11.1.0 gcc@14.2.0", 0.7),
    _stack("bootstrap-x86_64-linux-gnu", "linux", "ubuntu24.04/x86_64_v3",
           "gcc@13.2.0", 0.5, "dev"),
    _stack("bootstrap-aarch64-darwin", "darwin", "sequoia/aarch64",
           "apple-clang@16.0.0", 0.3, "dev"),
    _stack("windows-vis", "windows", "windows10.0.20348/x86_64 windows10.0.17763/x86_64",
           "msvc@19.39.33523 msvc@19.40.33811", 0.15),
)  # fmt: skip
_GPU_STACKS = frozenset(
    {"e4s", "e4s-neoverse-v2", "hep", "ml-linux-x86_64-cuda", "ml-linux-aarch64-cuda",
     "aws-pcluster-x86_64_v4", "gpu-tests"}
)  # fmt: skip
_STACK_COUNT_WEIGHTS = (30.0, 28.0, 18.0, 12.0, 7.0, 5.0)

_VariantKind = Literal["bool", "single", "multi", "patches"]


@dataclass(frozen=True)
class _VariantDef:
    """A variant name, its kind, its possible values and how often `:=` is written."""

    name: str
    kind: _VariantKind
    values: tuple[str, ...] = ()
    propagate: float = 0.0


def _v(name: str, values: str = "", propagate: float = 0.0) -> _VariantDef:
    """A variant definition; no values: boolean; values starting with `*`: multi-valued."""
    if name == "patches":
        return _VariantDef(name, "patches", (), propagate)
    if not values:
        return _VariantDef(name, "bool")
    kind: _VariantKind = "multi" if values.startswith("*") else "single"
    return _VariantDef(name, kind, tuple(values.lstrip("*").split()), propagate)


_REAL_VARIANTS: tuple[_VariantDef, ...] = (
    _v("shared"), _v("mpi"), _v("pic"), _v("openmp"), _v("cuda"),
    _v("build_type", "Release RelWithDebInfo Debug MinSizeRel"), _v("ipo"),
    _v("generator", "make ninja"), _v("fortran"), _v("python"), _v("rocm"),
    _v("cuda_arch", "*70 80 90 75 86"), _v("amdgpu_target", "*gfx90a gfx942 gfx908 gfx1100", 0.5),
    _v("libs", "*shared static", 0.4), _v("patches", propagate=0.6),
    _v("languages", "*c c++ fortran jit", 0.3), _v("cxxstd", "17 14 11 20"), _v("debug"),
    _v("hl"), _v("szip"), _v("threadsafe"), _v("tools"), _v("examples"), _v("doc"),
    _v("threads", "none openmp pthreads"), _v("zlib"), _v("ncurses"), _v("ownlibs"),
    _v("strip"), _v("ilp64"), _v("static"), _v("X"), _v("int64"), _v("complex"),
    _v("double"), _v("blas"), _v("lapack"), _v("hdf5"), _v("netcdf"), _v("fftw"),
    _v("petsc"), _v("superlu-dist"), _v("metis"), _v("hypre"), _v("suite-sparse"),
    _v("api", "default v110 v18 v16"), _v("gui", "none gtk qt"), _v("precision", "*double single"),
    _v("symbol_suffix", "none 64_"), _v("hepmc", "3 2"), _v("recipe", "sft"),
    _v("fabrics", "*ofi ucx psm2 verbs"), _v("schedulers", "*slurm pbs lsf"),
    _v("native"), _v("bootstrap"), _v("optimize"), _v("profiled"), _v("graphite"),
    _v("binutils"), _v("nvptx"), _v("piclibs"), _v("subfiling"), _v("map"), _v("java"),
    _v("jar"), _v("latex"), _v("redis"), _v("tls"), _v("unicode"), _v("locking"),
    _v("threaded"), _v("scalar"), _v("bignuma"), _v("dynamic_dispatch"),
    _v("consistent_fpcsr"), _v("auto_swap"), _v("treesitter"), _v("rootdict"),
    _v("allow-unsupported-compilers"), _v("no_luajit"), _v("json"), _v("yaml"), _v("ssl"),
    _v("curl"), _v("opengl"), _v("osmesa"), _v("egl"), _v("catalyst"), _v("adios2"),
    _v("toolkit", "gtk qt none"), _v("num_jobs", "1 4 8"), _v("nmxhep", "4000 10000"),
    _v("processes", "*eett eevvjj ppllj tbw"), _v("targets", "*x86 aarch64 nvptx amdgpu"),
    _v("backend", "serial openmp cuda hip sycl"), _v("lto"), _v("jit"), _v("simd"),
    _v("avx2"), _v("gold"), _v("ld"), _v("plugins"), _v("nls"), _v("libunwind"),
)  # fmt: skip
_VARIANT_WORDS: tuple[str, ...] = (
    "gpu", "aware", "offload", "direct", "fast", "math", "vec", "trace", "profile", "log",
    "mem", "pool", "async", "io", "cache", "check", "bounds", "asserts", "stats", "timers",
    "device", "host", "unified", "managed", "pinned", "shm", "rdma", "ib", "nvlink", "xpmem",
    "cma", "knem", "ucc", "nccl", "rccl", "cublas", "cusparse", "cufft", "rocfft", "hipfft",
    "mkl", "scalapack", "elpa", "arpack", "mumps", "pastix", "strumpack", "tpetra", "amesos",
    "ifpack", "muelu", "zoltan", "stk", "seacas", "exodus", "cgns", "silo", "vtk", "visit",
    "sensei", "ascent", "conduit", "babelflow", "png", "jpeg", "tiff", "freetype", "fontconfig",
    "cairo", "pango", "glib", "dbus", "wayland", "x11", "sdl", "ffmpeg", "openexr", "zfp",
    "sz", "lz4", "blosc", "brotli", "snappy", "quadmath", "mpfr", "gmp", "ntl", "flint",
    "eigen", "armadillo", "gsl", "boost", "tbb", "kokkos", "raja", "umpire", "chai", "camp",
)  # fmt: skip
_VARIANT_PATTERNS = ("{a}", "{a}_{b}", "with_{a}", "enable_{a}", "use_{a}", "{a}_support")
_EXTRA_VARIANT_WEIGHTS = (30.0, 10.0, 12.0, 9.0, 9.0, 7.0, 6.0, 6.0, 5.0, 6.0)
_VERSION_COUNT_WEIGHTS = (45.0, 22.0, 13.0, 10.0, 6.0, 4.0)
_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-,")

_SIZE_SHARE = 0.05
_LOGNORMAL_SIGMA = 2.2
_MAX_PACKAGE_SHARE = 0.03
_LEGACY_SHARE_IN_NEW_TAGS = 0.25
_SECOND_STACK_SHARE = 0.15
_MASK40 = (1 << 40) - 1


def _pick(rng: random.Random, cum: Sequence[float]) -> int:
    """Index drawn with cumulative weights `cum` (cheaper than `Random.choices`)."""
    return bisect(cum, rng.random() * cum[-1])


def _cum(weights: Sequence[float]) -> tuple[float, ...]:
    """Cumulative weights, for `_pick`."""
    return tuple(accumulate(weights))


def _front_weights(n: int) -> tuple[float, ...]:
    """Cumulative weights favouring the first items of a list of `n`."""
    return _cum([1.0 / (i + 1) for i in range(n)])


def _distinct(rng: random.Random, cum: Sequence[float], k: int) -> list[int]:
    """`k` distinct indices drawn with cumulative weights, in draw order."""
    chosen: list[int] = []
    while len(chosen) < min(k, len(cum)):
        i = _pick(rng, cum)
        if i not in chosen:
            chosen.append(i)
    return chosen


def _apportion(total: int, weights: Sequence[float]) -> list[int]:
    """Split `total` into one integer >= 1 per weight, proportionally, summing exactly."""
    n = len(weights)
    rest = total - n
    scale = rest / math.fsum(weights)
    quotas = [w * scale for w in weights]
    counts = [1 + int(q) for q in quotas]
    left = total - sum(counts)
    by_fraction = sorted(range(n), key=lambda i: (int(quotas[i]) - quotas[i], i))
    for i in by_fraction[:left]:
        counts[i] += 1
    return counts


def _scramble40(n: int) -> int:
    """A bijection on 40-bit integers, so distinct serials give distinct, random-looking ends."""
    n = (n * 0x9E3779B97F) & _MASK40
    n ^= n >> 21
    n = (n * 0xBF58476D1D) & _MASK40
    return n ^ (n >> 19)


def _spec_hash(rng: random.Random, serial: int) -> str:
    """32 base32 characters: 120 random bits, then 40 bits unique to `serial`."""
    value = (rng.getrandbits(120) << 40) | _scramble40(serial)
    return base64.b32encode(value.to_bytes(20, "big")).decode("ascii").lower()


def _package_names(rng: random.Random, count: int) -> list[str]:
    """Real Spack names first, then generated ones; all distinct."""
    names = list(_REAL_PACKAGES[:count])
    taken = set(names)
    prefix_cum = _cum(_PREFIX_WEIGHTS)
    length_cum = _cum(_NAME_LENGTH_WEIGHTS)
    while len(names) < count:
        name = _generated_name(rng, prefix_cum, length_cum)
        if name not in taken:
            taken.add(name)
            names.append(name)
    return names


def _generated_name(
    rng: random.Random, prefix_cum: Sequence[float], length_cum: Sequence[float]
) -> str:
    """A name like py-foo-bar, libfoo, r-foo_bar2 or py-zope.foo."""
    prefix = _PREFIXES[_pick(rng, prefix_cum)]
    parts = [rng.choice(_NAME_WORDS) for _ in range(1 + _pick(rng, length_cum))]
    roll = rng.random()
    if prefix == "py-" and roll < 0.05:
        parts[0] = f"{rng.choice(_DOTTED_PARTS)}.{parts[0]}"
    elif roll < 0.08:
        parts[-1] = f"{parts[-1]}_{rng.choice(_NAME_WORDS)}"
    elif not prefix and roll < 0.3:
        parts[0] = "lib" + parts[0]
    if rng.random() < 0.1:
        parts[-1] += str(rng.randint(2, 5))
    return prefix + "-".join(parts)


def _variant_pool(rng: random.Random, count: int) -> list[_VariantDef]:
    """`count` variant definitions besides build_system: real ones first, then generated."""
    pool = list(_REAL_VARIANTS[:count])
    taken = {d.name for d in pool} | {"build_system"}
    while len(pool) < count:
        pattern = rng.choice(_VARIANT_PATTERNS)
        name = pattern.format(a=rng.choice(_VARIANT_WORDS), b=rng.choice(_VARIANT_WORDS))
        if name in taken:
            continue
        taken.add(name)
        pool.append(_generated_variant(rng, name))
    return pool


def _generated_variant(rng: random.Random, name: str) -> _VariantDef:
    """Mostly boolean, like real variants; the rest take made-up values."""
    roll = rng.random()
    if roll < 0.7:
        return _VariantDef(name, "bool")
    values = tuple(rng.sample(("auto", "none", "on", "off", "v1", "v2", "all", "min"), 4))
    kind: _VariantKind = "single" if roll < 0.9 else "multi"
    return _VariantDef(name, kind, values, 0.2 if kind == "multi" else 0.0)


def _variant_name_count(specs: int) -> int:
    """How many distinct variant names (build_system included) a generation of `specs` uses."""
    return min(700, max(60, 40 + specs // 1400))


@dataclass(frozen=True)
class _Choice:
    """How one package's spec is built on one stack: arch options and compilers."""

    stack: _Stack
    arch_cum: tuple[float, ...]
    compiler_cum: tuple[float, ...]
    partners: tuple[str, ...]


@dataclass(frozen=True)
class _Package:
    """Everything stable about a package across tags: the look of all its specs."""

    name: str
    versions: tuple[str, ...]
    version_cum: tuple[float, ...]
    choices: tuple[_Choice, ...]
    choice_cum: tuple[float, ...]
    configs: tuple[tuple[str, ...], ...]
    config_cum: tuple[float, ...]
    compiler_free: bool
    legacy: bool


def _group(name: str) -> str:
    """Which family of stacks a package mostly lives in."""
    if name in _BINARY_ONLY or name in {"nccl", "magma"}:
        return "gpu"
    if name in _HEP:
        return "hep"
    if name in _DEV_TOOLS:
        return "dev"
    return "ml" if name.startswith("py-") else "hpc"


def _stack_affinity(stack: _Stack, group: str) -> float:
    """How much likelier a stack is for a package of `group`."""
    if group == "gpu":
        return 8.0 if stack.name in _GPU_STACKS else 0.05
    return 8.0 if stack.group == group else 1.0


def _package_stacks(rng: random.Random, name: str) -> list[_Stack]:
    """The stacks that build the package, skewed toward its family."""
    group = _group(name)
    cum = _cum([s.weight * _stack_affinity(s, group) for s in _STACKS])
    k = 1 + _pick(rng, _cum(_STACK_COUNT_WEIGHTS))
    return [_STACKS[i] for i in _distinct(rng, cum, k)]


def _choices(rng: random.Random, stacks: list[_Stack]) -> tuple[_Choice, ...]:
    """Per stack: where specs land, and which other stacks of the package may share them."""
    out = []
    for stack in stacks:
        oss = {os for os, _ in stack.archs}
        partners = tuple(
            s.name
            for s in stacks
            if s is not stack and s.platform == stack.platform and oss & {o for o, _ in s.archs}
        )
        out.append(
            _Choice(
                stack,
                _front_weights(len(stack.archs)),
                _cum([rng.uniform(0.2, 1.0) / (i + 1) for i in range(len(stack.compilers))]),
                partners,
            )
        )
    return tuple(out)


def _versions(rng: random.Random, name: str) -> tuple[str, ...]:
    """1-6 versions in one of the version schemes seen on real pages."""
    if name in _KNOWN_VERSIONS:
        return _KNOWN_VERSIONS[name]
    n = 1 + _pick(rng, _cum(_VERSION_COUNT_WEIGHTS))
    scheme = _pick(rng, _cum((55.0, 15.0, 6.0, 3.0, 10.0, 3.0, 3.0, 2.0)))
    out: list[str] = []
    for part in _version_parts(rng, n):
        version = _format_version(scheme, part)
        if version not in out:
            out.append(version)
    if rng.random() < 0.08 and not name.startswith("py-"):
        out.append(rng.choice(("develop", "master", "main")))
    return tuple(out)


def _version_parts(rng: random.Random, n: int) -> list[tuple[int, int, int]]:
    """`n` increasing (major, minor, patch) triples."""
    major = rng.choice((0, 0, 1, 1, 2, 3, 4, 5, 6, 8, 12))
    minor, patch = rng.randint(0, 30), rng.randint(0, 12)
    parts = []
    for _ in range(n):
        parts.append((major, minor, patch))
        if rng.random() < 0.6:
            patch += rng.randint(1, 3)
        else:
            minor, patch = minor + rng.randint(1, 2), 0
    return parts


def _format_version(scheme: int, part: tuple[int, int, int]) -> str:
    """A version triple in scheme `scheme`: 1.14.3, 36.1, 8.9.7.29-12, 2023.08.14.0-free, ..."""
    major, minor, patch = part
    formats = (
        f"{major}.{minor}.{patch}",
        f"{major * 10 + minor}.{patch}",
        f"{major}.{minor}.{patch}.0",
        f"{major + 8}.{minor % 10}.{patch}.{minor + 20}-12",
        f"{2020 + major % 5}.{minor % 12 + 1}.{patch}",
        f"{2020 + major % 5}.{minor % 12 + 1:02d}.{patch + 1:02d}.0-free",
        f"{major:02d}.{minor:02d}.{patch:02d}",
        f"{2020 + major % 5}{minor % 12 + 1:02d}{patch % 28 + 1:02d}",
    )
    return formats[scheme]


def _build_system(rng: random.Random, name: str) -> str:
    """The build_system value, following the name prefix as Spack packages do."""
    if name in _BINARY_ONLY or (name in _COMPILER_FREE and not name.startswith("py-")):
        return "generic"
    for prefix, system in _BUILD_SYSTEM_BY_PREFIX.items():
        if name.startswith(prefix):
            return system
    return _BUILD_SYSTEMS[_pick(rng, _cum(_BUILD_SYSTEM_WEIGHTS))]


def _compiler_free(rng: random.Random, name: str) -> bool:
    """Spack 1.0 records no compiler for binary-only and pure-language packages."""
    if name in _BINARY_ONLY or name in _COMPILER_FREE:
        return True
    share = {"py-": 0.35, "perl-": 0.4, "r-": 0.15, "ruby-": 0.5, "lua-": 0.3}
    for prefix, p in share.items():
        if name.startswith(prefix):
            return rng.random() < p
    return False


@dataclass(frozen=True)
class _PackageVariant:
    """A variant as one package uses it: separator, default value and value choices."""

    definition: _VariantDef
    sep: str
    default: tuple[str, ...]
    options: tuple[str, ...]


def _package_variants(
    rng: random.Random, pool: list[_VariantDef], cum: Sequence[float], forced: int | None
) -> list[_PackageVariant]:
    """The variants a package has; `forced` (a pool index) comes first when given."""
    indices = [] if forced is None else [forced]
    k = min(max(_pick(rng, _cum(_EXTRA_VARIANT_WEIGHTS)), len(indices)), len(pool))
    while len(indices) < k:
        i = _pick(rng, cum)
        if i not in indices:
            indices.append(i)
    return [_package_variant(rng, pool[i]) for i in indices]


def _package_variant(rng: random.Random, definition: _VariantDef) -> _PackageVariant:
    sep = ":=" if rng.random() < definition.propagate else "="
    if definition.kind == "bool":
        default = ("+",) if rng.random() < 0.5 else ("~",)
        return _PackageVariant(definition, sep, default, ("+", "~"))
    if definition.kind == "patches":
        options = tuple(f"{rng.getrandbits(28):07x}" for _ in range(rng.randint(1, 3)))
        return _PackageVariant(definition, sep, options[:1], options)
    options = definition.values
    if definition.kind == "single":
        return _PackageVariant(definition, sep, (options[0],), options)
    size = rng.randint(1, min(3, len(options)))
    return _PackageVariant(definition, sep, options[:size], options)


def _variant_value(rng: random.Random, pv: _PackageVariant) -> tuple[str, ...]:
    """Mostly the package default; sometimes another value, as real spec sets vary."""
    if rng.random() < 0.75:
        return pv.default
    kind = pv.definition.kind
    if kind in ("bool", "single"):
        return (rng.choice(pv.options),)
    picked = set(rng.sample(pv.options, rng.randint(1, len(pv.options))))
    return tuple(o for o in pv.options if o in picked)


def _render_variant(pv: _PackageVariant, value: tuple[str, ...]) -> str:
    """Page text of a variant; quoted when a value needs it, as `languages='c,c++'`."""
    name = pv.definition.name
    if pv.definition.kind == "bool":
        return value[0] + name
    text = ",".join(value)
    if not set(text) <= _IDENT_CHARS:
        text = f"'{text}'"
    return f"{name}{pv.sep}{text}"


def _configs(
    rng: random.Random, build_system: str, variants: list[_PackageVariant], forced: bool
) -> tuple[tuple[str, ...], ...]:
    """A few variant lists per package: its specs share them, as real spec sets do."""
    count = 1 + min(5, int(rng.expovariate(0.8)))
    out: list[tuple[str, ...]] = []
    for _ in range(count):
        items = [(f"build_system={build_system}", "build_system")]
        for i, pv in enumerate(variants):
            if (forced and i == 0) or rng.random() < 0.9:
                items.append((_render_variant(pv, _variant_value(rng, pv)), pv.definition.name))
        config = tuple(text for text, _ in sorted(items, key=lambda item: item[1]))
        if config not in out:
            out.append(config)
    return tuple(out)


def _make_package(
    rng: random.Random,
    name: str,
    pool: list[_VariantDef],
    pool_cum: Sequence[float],
    forced: int | None,
) -> _Package:
    versions = _versions(rng, name)
    choices = _choices(rng, _package_stacks(rng, name))
    variants = _package_variants(rng, pool, pool_cum, forced)
    configs = _configs(rng, _build_system(rng, name), variants, forced is not None)
    return _Package(
        name=name,
        versions=versions,
        version_cum=_cum([(i + 1) ** 2 for i in range(len(versions))]),
        choices=choices,
        choice_cum=_cum([rng.uniform(0.1, 1.0) for _ in choices]),
        configs=configs,
        config_cum=_front_weights(len(configs)),
        compiler_free=_compiler_free(rng, name),
        legacy=rng.random() < _LEGACY_SHARE_IN_NEW_TAGS,
    )


@dataclass(frozen=True)
class _Plan:
    """Packages in page order, and each one's spec count per tag (0: no page)."""

    packages: tuple[_Package, ...]
    counts: tuple[tuple[int, ...], ...]


def _validate(config: DemoConfig) -> None:
    """Raise ValueError for a config that cannot be generated."""
    if config.packages < 1:
        raise ValueError("packages must be at least 1")
    if config.specs < config.packages:
        raise ValueError("specs must be at least packages (every package needs a spec)")
    if not config.tags or len(set(config.tags)) != len(config.tags):
        raise ValueError("tags must be a non-empty tuple of distinct tags")
    for tag in config.tags:
        if not tag or tag in (".", "..") or "/" in tag or "\\" in tag or tag != tag.strip():
            raise ValueError(f"tag {tag!r} cannot be a folder name")


def _plan(config: DemoConfig) -> _Plan:
    """Everything decided before the first spec: packages, their looks, spec counts."""
    _validate(config)
    rng = random.Random(f"cachegql-demo/{config.seed}")
    names = _package_names(rng, config.packages)
    pool = _variant_pool(rng, _variant_name_count(config.specs) - 1)
    pool_cum = _cum([1.0 / (i + 8) ** 0.7 for i in range(len(pool))])
    forced = {p: i for i, p in enumerate(rng.sample(range(len(names)), len(names))[: len(pool)])}
    packages = [
        _make_package(rng, name, pool, pool_cum, forced.get(j)) for j, name in enumerate(names)
    ]
    totals = _apportion(config.specs, _package_weights(rng, len(names)))
    counts = [_split_over_tags(rng, total, len(config.tags)) for total in totals]
    order = sorted(range(len(names)), key=lambda j: names[j])
    return _Plan(tuple(packages[j] for j in order), tuple(counts[j] for j in order))


def _package_weights(rng: random.Random, n: int) -> list[float]:
    """Heavy-tailed weights, largest mostly on the commonest real packages."""
    draws = sorted((rng.lognormvariate(0.0, _LOGNORMAL_SIGMA) for _ in range(n)), reverse=True)
    cap = _MAX_PACKAGE_SHARE * math.fsum(draws)
    rank = sorted(range(n), key=lambda j: (j + 5) * rng.uniform(0.2, 3.0))
    weights = [0.0] * n
    for draw, j in zip(draws, rank, strict=True):
        weights[j] = cap * -math.expm1(-draw / cap) if n >= 50 else draw
    return weights


def _split_over_tags(rng: random.Random, total: int, ntags: int) -> tuple[int, ...]:
    """Present in most tags, the first one the fullest; each present tag gets >= 1 spec."""
    present = [i for i in range(ntags) if rng.random() < (0.97 if i == 0 else 0.88)] or [0]
    present = present[:total]
    tag_weights = [2.0 if i == 0 else 1.0 / (1.0 + 0.15 * i) for i in present]
    counts = [0] * ntags
    for i, n in zip(present, _apportion(total, tag_weights), strict=True):
        counts[i] = n
    return tuple(counts)


_SpecValue = str | int | list[str]


@dataclass(frozen=True)
class _Spec:
    """One generated spec, before it is laid out in a page style."""

    hash: str
    compiler: _Compiler | None
    version: str
    os: str
    platform: str
    target: str
    variants: tuple[str, ...]
    stacks: tuple[str, ...]
    size: str | int


def _make_spec(rng: random.Random, package: _Package, serial: int, legacy: bool) -> _Spec:
    choice = package.choices[_pick(rng, package.choice_cum)]
    stack = choice.stack
    os, target = stack.archs[_pick(rng, choice.arch_cum)]
    compiler = stack.compilers[_pick(rng, choice.compiler_cum)]
    stacks = [stack.name]
    if choice.partners and rng.random() < _SECOND_STACK_SHARE:
        stacks.append(rng.choice(choice.partners))
    stacks.insert(0 if rng.random() < 0.7 else len(stacks), "root")
    return _Spec(
        hash=_spec_hash(rng, serial),
        compiler=None if package.compiler_free and not legacy else compiler,
        version=package.versions[_pick(rng, package.version_cum)],
        os=os,
        platform=stack.platform,
        target=target,
        variants=package.configs[_pick(rng, package.config_cum)],
        stacks=tuple(stacks),
        size=rng.randint(20_000, 400_000_000) if rng.random() < _SIZE_SHARE else "-",
    )


def _compiler_text(spec: _Spec, legacy: bool) -> str:
    """The compiler as the page style writes it."""
    return _NONE if spec.compiler is None else spec.compiler.text(legacy)


def _legacy_detail(spec: _Spec, tag: str, name: str) -> dict[str, _SpecValue]:
    """2024 layout: fixed key order, unsorted stacks, a tarball URL."""
    assert spec.compiler is not None
    arch = f"{spec.platform}-{spec.os}-{spec.target}"
    comp = f"{spec.compiler.name}-{spec.compiler.version}"
    pkg = f"{name}-{spec.version}"
    return {
        "hash": spec.hash,
        "compiler": spec.compiler.text(legacy=True),
        "versions": [spec.version],
        "os": spec.os,
        "platform": spec.platform,
        "target": spec.target,
        "variants": list(spec.variants),
        "stacks": list(spec.stacks),
        "size": spec.size,
        "tarball": f"https://binaries.spack.io/{tag}/build_cache/{arch}/{comp}/{pkg}/"
        f"{arch}-{comp}-{pkg}-{spec.hash}.spack",
    }


def _current_detail(spec: _Spec) -> dict[str, _SpecValue]:
    """2025 layout: keys and stacks sorted, no tarball."""
    return {
        "compiler": _compiler_text(spec, legacy=False),
        "hash": spec.hash,
        "os": spec.os,
        "platform": spec.platform,
        "size": spec.size,
        "stacks": sorted(spec.stacks),
        "target": spec.target,
        "variants": list(spec.variants),
        "versions": [spec.version],
    }


def _meta(specs: Sequence[_Spec], legacy: bool) -> dict[str, object]:
    """The summary the site writes next to spec_details, in the style's key order."""
    by_stack: dict[str, int] = {}
    for spec in specs:
        for stack in spec.stacks:
            by_stack[stack] = by_stack.get(stack, 0) + 1
    fields: dict[str, object] = {
        "versions": sorted({s.version for s in specs}),
        "compilers": sorted({_compiler_text(s, legacy) for s in specs}),
        "oss": sorted({s.os for s in specs}),
        "platforms": sorted({s.platform for s in specs}),
        "targets": sorted({s.target for s in specs}),
        "stacks": sorted(by_stack),
        "num_specs": len(specs),
        "num_specs_by_stack": by_stack if legacy else dict(sorted(by_stack.items())),
    }
    return fields if legacy else dict(sorted(fields.items()))


def _render_page(tag: str, name: str, specs: list[_Spec], legacy: bool) -> str:
    """The page text; like real pages it ends with `---` and no newline."""
    if legacy:
        details = [_legacy_detail(s, tag, name) for s in specs]
    else:
        specs.sort(key=lambda s: s.hash)
        details = [_current_detail(s) for s in specs]
    return (
        f'---\ntitle: "{name}"\nlayout: cache\ncategories: [package, {tag}]\n'
        f"meta: {json.dumps(_meta(specs, legacy))}\n"
        f"spec_details: {json.dumps(details)}\n---"
    )


def _pages(config: DemoConfig) -> Iterator[tuple[str, str, str, int]]:
    """(tag, package, page text, spec count), tag by tag, packages in name order."""
    plan = _plan(config)
    last = len(config.tags) - 1
    serial = 0
    for t, tag in enumerate(config.tags):
        for package, counts in zip(plan.packages, plan.counts, strict=True):
            n = counts[t]
            if n == 0:
                continue
            legacy = (t == last and last > 0) or package.legacy
            rng = random.Random(f"cachegql-demo/{config.seed}/{tag}/{package.name}")
            specs = [_make_spec(rng, package, serial + i, legacy) for i in range(n)]
            serial += n
            yield tag, package.name, _render_page(tag, package.name, specs, legacy), n


def write_pages(config: DemoConfig, out_dir: Path) -> tuple[int, int]:
    """Write `out_dir/_cache/<tag>/<package>/specs.md` for every page; return (pages, specs)."""
    pages = specs = 0
    for tag, name, text, n in _pages(config):
        folder = out_dir / "_cache" / tag / name
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "specs.md").open("w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        pages += 1
        specs += n
    return pages, specs
