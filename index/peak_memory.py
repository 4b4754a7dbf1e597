"""A process's own peak memory, for the closing lines of builds and their helpers."""

from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["peak_rss_mb"]

_KB_PER_MB = 1024


def peak_rss_mb() -> int:
    """This process's own peak resident memory, in MiB: `VmHWM`, which starts again at
    exec, where `ru_maxrss` keeps the high-water mark of the process it was forked from
    (a benchmark or a test suite that holds 300 MB made every build it ran say 300 MB)."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmHWM:", 1)[1].split()[0]) // _KB_PER_MB
    except (OSError, IndexError, ValueError):  # not Linux: the portable measure
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // _KB_PER_MB
