"""The search index over Spack build caches: ingest sources, build and publish an index,
answer queries over it. Nothing here knows about GraphQL or HTTP.

This module is the index's front door: `schema/` and `server/` import from here and
nowhere deeper. Inside, by concern:

- `spack/`: Spack's vocabulary (versions, variants, compilers, hashes, spec syntax);
- `ingest/`: finding and reading sources into `SpecRecord`s;
- `disk/`: an index build on disk, written (`write`, `publish`) and read (`store`);
- `query/`: criteria, the planner, full-text search, facets, stacks and tag diffs;
- `fields.py`: the table of spec fields every part derives its lists from;
- `budget.py`: the time budget long loops check (`deadline`, `check`);
- `build.py`: `cachegql index` from sources to a published build.
"""

from cachegql.index.binary_urls import spec_binary_urls
from cachegql.index.budget import OverBudgetError, deadline, renewed, run_with_deadline
from cachegql.index.build import BuildError, BuildReport, build_index
from cachegql.index.coverage import (
    Coverage,
    RootCoverage,
    SpecCoverage,
    check_environment,
    wanted_from_lock,
)
from cachegql.index.disk.columns import Rows
from cachegql.index.disk.layout import FORMAT_VERSION
from cachegql.index.disk.memory import release_freed, releases_freed
from cachegql.index.disk.publish import PublishError, received
from cachegql.index.disk.snapshot import DependencyData, PackageData, Snapshot
from cachegql.index.disk.spec_columns import SpecColumns, row_reader
from cachegql.index.disk.store import IndexLoadError, IndexStore, UnknownTagError
from cachegql.index.disk.verify import IndexChangedError
from cachegql.index.errors import CriteriaError, shorten
from cachegql.index.fields import BUCKET_FIELDS, FACETS, SPEC_FIELDS, SpecField
from cachegql.index.ingest import (
    DEFAULT_STACK,
    GZIP_OR_ZLIB,
    LIMITS,
    NETWORK_SCHEMES,
    OCI_INDEX_TAG,
    Inflater,
    Limit,
    NotFoundError,
    OriginError,
    Reader,
    ReadError,
    SourceError,
    SourceLimits,
    StrictModeError,
    over_limit,
    shown,
)
from cachegql.index.ingest.lockfile import (
    LockedSpec,
    Lockfile,
    LockfileError,
    read_lock_node,
    read_lockfile,
)
from cachegql.index.query.answers import (
    MAX_CANDIDATES,
    AmbiguousHashError,
    Scope,
    StackSummary,
    find_packages,
    find_spec,
    find_specs,
    stack,
    stacks,
)
from cachegql.index.query.bounds import SizeBounds, size_bounds
from cachegql.index.query.criteria import (
    PackageCriteria,
    SpecCriteria,
    StringMatch,
    parse_variant_constraint,
)
from cachegql.index.query.diff import PackageChange, TagDiff, tag_diff
from cachegql.index.query.estimate import UNBOUNDED_READS, package_reads, spec_reads
from cachegql.index.query.facets import Bucket, Facets
from cachegql.index.query.hashes import full_hash, missing_hashes
from cachegql.index.query.nearest import Difference, Near, Wanted, nearest, wanted_from_query
from cachegql.index.query.search import WordsMatched
from cachegql.index.records import Problem, SpecRecord
from cachegql.index.spack import (
    SHORT_HASH_LENGTH,
    Compiler,
    SpecQueryError,
    Variant,
    format_spec,
    normalize_prefix,
    parse_spec_query,
)
from cachegql.index.spack.targets import (
    Microarchitecture,
    compatibility,
    host_target,
    microarchitectures,
    runs_on,
    target_names,
)

__all__ = [
    "BUCKET_FIELDS",
    "DEFAULT_STACK",
    "FACETS",
    "FORMAT_VERSION",
    "GZIP_OR_ZLIB",
    "LIMITS",
    "MAX_CANDIDATES",
    "NETWORK_SCHEMES",
    "OCI_INDEX_TAG",
    "SHORT_HASH_LENGTH",
    "SPEC_FIELDS",
    "UNBOUNDED_READS",
    "AmbiguousHashError",
    "Bucket",
    "BuildError",
    "BuildReport",
    "Compiler",
    "Coverage",
    "CriteriaError",
    "DependencyData",
    "Difference",
    "Facets",
    "IndexChangedError",
    "IndexLoadError",
    "IndexStore",
    "Inflater",
    "Limit",
    "LockedSpec",
    "Lockfile",
    "LockfileError",
    "Microarchitecture",
    "Near",
    "NotFoundError",
    "OriginError",
    "OverBudgetError",
    "PackageChange",
    "PackageCriteria",
    "PackageData",
    "Problem",
    "PublishError",
    "ReadError",
    "Reader",
    "RootCoverage",
    "Rows",
    "Scope",
    "SizeBounds",
    "Snapshot",
    "SourceError",
    "SourceLimits",
    "SpecColumns",
    "SpecCoverage",
    "SpecCriteria",
    "SpecField",
    "SpecQueryError",
    "SpecRecord",
    "StackSummary",
    "StrictModeError",
    "StringMatch",
    "TagDiff",
    "UnknownTagError",
    "Variant",
    "Wanted",
    "WordsMatched",
    "build_index",
    "check_environment",
    "compatibility",
    "deadline",
    "find_packages",
    "find_spec",
    "find_specs",
    "format_spec",
    "full_hash",
    "host_target",
    "microarchitectures",
    "missing_hashes",
    "nearest",
    "normalize_prefix",
    "over_limit",
    "package_reads",
    "parse_spec_query",
    "parse_variant_constraint",
    "read_lock_node",
    "read_lockfile",
    "received",
    "release_freed",
    "releases_freed",
    "renewed",
    "row_reader",
    "run_with_deadline",
    "runs_on",
    "shorten",
    "shown",
    "size_bounds",
    "spec_binary_urls",
    "spec_reads",
    "stack",
    "stacks",
    "tag_diff",
    "target_names",
    "wanted_from_lock",
    "wanted_from_query",
]
