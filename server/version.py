"""The installed version of cachegql, from the package metadata (pyproject.toml).

Read on first use, not on import: `importlib.metadata` takes some 20 ms to import, which
every `cachegql` command would pay for a string only `--version` and `/healthz` show.
"""

from __future__ import annotations

from functools import cache

__all__ = ["installed_version"]


@cache
def installed_version() -> str:
    """The version pip installed, or `0+unknown` in a source tree never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cachegql")
    except PackageNotFoundError:
        return "0+unknown"
