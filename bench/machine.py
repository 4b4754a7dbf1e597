"""What machine a benchmark ran on, for the head of its report (standard library only)."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = int(Path("/proc/meminfo").read_text().split()[1]) // 1024 // 1024
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory,
        "python": platform.python_version(),
        "system": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
