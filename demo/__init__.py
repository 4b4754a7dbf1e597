"""Synthetic data for demos, benchmarks and tests (not the index itself).

cache.spack.io package pages (`write_pages`) and a Spack build cache with its stacks and
listing (`write_mirror`). The generators import nothing of cachegql: they write files that
the index then reads, like real ones.
"""

from cachegql.demo.generator import DemoConfig, write_pages
from cachegql.demo.mirrors import (
    SPEC_BLOB_LIMIT,
    STACK_NAMES,
    MirrorConfig,
    MirrorSummary,
    write_mirror,
)

__all__ = [
    "SPEC_BLOB_LIMIT",
    "STACK_NAMES",
    "DemoConfig",
    "MirrorConfig",
    "MirrorSummary",
    "write_mirror",
    "write_pages",
]
