"""The records every part of the index shares: a spec as read from a source, and a problem."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from cachegql.index.spack.compilers import Compiler
from cachegql.index.spack.variants import Variant

__all__ = ["MAX_SIZE", "Problem", "SpecRecord"]

MAX_SIZE = (1 << 63) - 1
"""The largest byte count a file can have (`off_t`): sizes are kept as int64."""


class SpecRecord(NamedTuple):
    """One binary spec of a tag, validated and parsed: what ingest produces, what reads return.

    A named tuple, not a frozen dataclass: a page read makes one per spec, a build one per
    binary, and a frozen dataclass sets each of its 14 fields through `object.__setattr__`
    (2.4 against 0.8 µs a record).
    """

    hash: str
    package: str
    tag: str
    versions: tuple[str, ...]
    compiler: Compiler
    os: str
    platform: str
    target: str
    variants: tuple[Variant, ...]
    stacks: tuple[str, ...]
    size: int | None
    tarball: str | None
    namespace: str = ""
    """Spack's package repository (`builtin`); empty where the source records none (pages)."""
    flags: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Compiler flags by kind, as Spack records them: (("cflags", ("-O2", "-g")),)."""

    @property
    def version(self) -> str:
        return self.versions[0]


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with an input, named by file and explained in words."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
