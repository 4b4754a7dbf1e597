"""The installed version of cachegql, from the package metadata (pyproject.toml)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["VERSION"]

try:
    VERSION = version("cachegql")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0+unknown"
