"""Synthetic cache.spack.io pages for demos, benchmarks and tests (not the index itself).

The generator imports nothing of cachegql: it writes files that the index then reads,
like real pages.
"""

from cachegql.demo.generator import DemoConfig, write_pages

__all__ = ["DemoConfig", "write_pages"]
