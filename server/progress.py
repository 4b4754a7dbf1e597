"""A one-line progress bar for terminals; silent when stderr is not a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30
REFRESH_SECONDS = 0.1


class ProgressBar:
    def __init__(self, label: str, stream: TextIO | None = None, unit: str = "") -> None:
        self.label = label
        self.unit = unit
        # `sys.stderr` as it is now, not as it was when this module was imported (a
        # stream replaced since, and closed: a test's capture, a daemon's redirection).
        self.stream = sys.stderr if stream is None else stream
        self.enabled = self.stream.isatty()
        self._shown_at = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.enabled or (done < total and now - self._shown_at < REFRESH_SECONDS):
            return
        self._shown_at = now
        filled = WIDTH * done // max(total, 1)
        bar = "#" * filled + "-" * (WIDTH - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total}{self.unit}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def download_bar(name: str) -> ProgressBar:
    """A progress bar for one download, in bytes (shown on a terminal only)."""
    return ProgressBar(f"downloading {name}", unit="B")
