"""Plain records produced by ingest: specs, compilers, variants and problems."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Compiler:
    """A compiler as a page writes it: `gcc@=11.4.0`, `gcc@11.4.0` or `none`."""

    name: str
    version: str | None
    raw: str

    @property
    def normalized(self) -> str:
        """`gcc@11.4.0`, or just the name when there is no version (`none`)."""
        return f"{self.name}@{self.version}" if self.version else self.name


def parse_compiler(raw: str) -> Compiler:
    """Split `gcc@=11.4.0` into name and version; `none` has no version."""
    name, sep, version = raw.strip().partition("@")
    version = version.lstrip("=")
    if not name or (sep and not version):
        raise ValueError(f"malformed compiler {raw!r}")
    return Compiler(name=name, version=version or None, raw=raw)


@dataclass(frozen=True, slots=True)
class SpecRecord:
    """One binary spec of a package page, validated."""

    hash: str
    package: str
    tag: str
    versions: tuple[str, ...]
    compiler: str
    os: str
    platform: str
    target: str
    variants: tuple[str, ...]
    stacks: tuple[str, ...]
    size: int | None
    tarball: str | None


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with an input, named by file and explained in words."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
