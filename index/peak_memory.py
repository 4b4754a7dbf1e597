"""A process's own peak memory, for the closing lines of builds and their helpers."""

from __future__ import annotations

import resource
from pathlib import Path

__all__ = ["own_peak_mb", "peak_rss_mb"]

_KB_PER_MB = 1024


def peak_rss_mb() -> int:
    """This process's own peak resident memory, in MiB: `VmHWM`, which starts again at
    exec, where `ru_maxrss` keeps the high-water mark of the process it was forked from
    (a benchmark or a test suite that holds 300 MB made every build it ran say 300 MB)."""
    try:
        return _peak_resident_kb() // _KB_PER_MB
    except (OSError, IndexError, ValueError):  # not Linux: the portable measure
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // _KB_PER_MB


def own_peak_mb() -> int:
    """A forked copy's own peak memory so far, in MiB, about at most: its peak resident
    memory (`VmHWM`, from the build's resident memory at the fork) less the pages it
    shares now, with the build or any other process. A page of memory shared at the fork
    that is its alone now (written to by either side, or freed by the build) stays so,
    so what it shares now it shared at its peak; a library's page first mapped after the
    peak is the exception, a few MB. 0 where the system does not say."""
    try:
        peak_kb = _peak_resident_kb()
        shared_kb = 0
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            if line.startswith(("Shared_Clean:", "Shared_Dirty:")):
                shared_kb += int(line.split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return max(0, peak_kb - shared_kb) // _KB_PER_MB


def _peak_resident_kb() -> int:
    """`VmHWM` of this process, in KiB (Linux)."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:", 1)[1].split()[0])
