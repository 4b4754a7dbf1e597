"""Synthetic data for demos, benchmarks and tests (not the index itself).

cache.spack.io package pages (`write_pages`) and a Spack build cache with its stacks and
listing (`write_mirror`), and a `spack.lock` over such a cache (`write_lockfile`). The
generators import nothing of cachegql: they write files that
the index then reads, like real ones.
"""

from cachegql.demo.generator import DemoConfig, write_pages
from cachegql.demo.lockfile import LOCKFILE_NAME, write_lockfile
from cachegql.demo.mirrors import (
    SPEC_BLOB_LIMIT,
    STACK_NAMES,
    MirrorConfig,
    MirrorSummary,
    write_mirror,
)

__all__ = [
    "LOCKFILE_NAME",
    "SPEC_BLOB_LIMIT",
    "STACK_NAMES",
    "DemoConfig",
    "MirrorConfig",
    "MirrorSummary",
    "write_lockfile",
    "write_mirror",
    "write_pages",
]
