"""What the page generator draws from: real package names, compilers, CI stacks,
variants, and the weights and shares that shape the data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "_BINARY_ONLY",
    "_BUILD_SYSTEMS",
    "_BUILD_SYSTEM_BY_PREFIX",
    "_BUILD_SYSTEM_WEIGHTS",
    "_COMPILER_FREE",
    "_DEV_TOOLS",
    "_DOTTED_PARTS",
    "_EXTRA_VARIANT_WEIGHTS",
    "_GPU_STACKS",
    "_HEP",
    "_IDENT_CHARS",
    "_KNOWN_VERSIONS",
    "_LEGACY_SHARE_IN_NEW_TAGS",
    "_LOGNORMAL_SIGMA",
    "_MAX_PACKAGE_SHARE",
    "_NAME_LENGTH_WEIGHTS",
    "_NAME_WORDS",
    "_NONE",
    "_PREFIXES",
    "_PREFIX_WEIGHTS",
    "_REAL_PACKAGES",
    "_REAL_VARIANTS",
    "_SECOND_STACK_SHARE",
    "_SIZE_SHARE",
    "_STACKS",
    "_STACK_COUNT_WEIGHTS",
    "_VARIANT_PATTERNS",
    "_VARIANT_WORDS",
    "_VERSION_COUNT_WEIGHTS",
    "_Compiler",
    "_Stack",
    "_VariantDef",
    "_VariantKind",
]

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
