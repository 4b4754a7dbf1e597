"""A process's own peak memory, for the closing lines of builds and their helpers."""

from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["peak_rss_mb", "private_mb"]

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


def private_mb() -> int:
    """This process's own memory now, in MiB: its pages no other process shares (a forked
    copy's, those it wrote to since the fork); 0 where the system does not say."""
    try:
        rollup = Path("/proc/self/smaps_rollup").read_text()
    except OSError:
        return 0
    kb = 0
    for line in rollup.splitlines():
        if line.startswith(("Private_Clean:", "Private_Dirty:")):
            kb += int(line.split()[1])
    return kb // _KB_PER_MB
