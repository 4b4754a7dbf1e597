"""Where cachegql keeps what it caches for the user: the default data's index, downloads,
the builds a replica pulls."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_folder"]


def cache_folder() -> Path:
    """`$CACHEGQL_CACHE_DIR/cachegql`, else `$XDG_CACHE_HOME/cachegql`, else
    `~/.cache/cachegql`."""
    base = os.environ.get("CACHEGQL_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME")
    return Path(base) / "cachegql" if base else Path.home() / ".cache" / "cachegql"
