"""Compilers as Spack writes them: `gcc@=11.4.0` (older pages), `gcc@11.4.0`, or `none`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Compiler", "parse_compiler"]


@dataclass(frozen=True, slots=True)
class Compiler:
    """A compiler: its name, its version (None for `none`), and the text it was read from."""

    name: str
    version: str | None
    raw: str

    @property
    def normalized(self) -> str:
        """`gcc@11.4.0`, or just the name when there is no version (`none`)."""
        return f"{self.name}@{self.version}" if self.version else self.name


@lru_cache(maxsize=4096)
def parse_compiler(raw: str) -> Compiler:
    """Split `gcc@=11.4.0` into name and version; `none` has no version (memoized)."""
    name, sep, version = raw.strip().partition("@")
    version = version.lstrip("=")
    if not name or (sep and not version):
        raise ValueError(f"malformed compiler {raw!r}")
    return Compiler(name=name, version=version or None, raw=raw)
