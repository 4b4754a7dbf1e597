"""Spack variants: parsing page text and matching constraints.

A variant on a page is `+mpi`, `~shared`, `build_system=cmake`, `cuda_arch=70,80`,
`amdgpu_target:=gfx90a` or `languages='c,c++'`. Each is reduced to *atoms*
`name=value`, one per value, so that a constraint holds when all its atoms are
among the spec's atoms (Spack's meaning for multi-valued variants).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Variant", "parse_variant"]

_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*"
_BOOL = re.compile(rf"^([+~\-])({_NAME})$")
_KEY_VALUE = re.compile(rf"^({_NAME})(:=|==|=)(.*)$")


@dataclass(frozen=True, slots=True)
class Variant:
    """A parsed variant: `cuda_arch=70,80` is name `cuda_arch`, value `70,80`."""

    name: str
    value: str
    raw: str

    @property
    def values(self) -> tuple[str, ...]:
        """The individual values of a multi-valued variant."""
        return tuple(v for v in self.value.split(",") if v) if self.value else ("",)

    @property
    def atoms(self) -> tuple[str, ...]:
        """`name=value` once per value: what constraints are matched against."""
        return tuple(f"{self.name}={v}" for v in self.values)


@lru_cache(maxsize=65536)
def parse_variant(raw: str) -> Variant:
    """Parse one variant as written on a page or in a filter; raise ValueError if malformed.

    Memoized: a cache of a million specs has a few thousand distinct variants.
    """
    text = raw.strip()
    if match := _BOOL.match(text):
        sign, name = match.groups()
        return Variant(name=name, value="true" if sign == "+" else "false", raw=raw)
    if match := _KEY_VALUE.match(text):
        name, _, value = match.groups()
        value = _unquote(value.strip(), raw)
        if not value.strip(",") or any(c.isspace() for c in value) or ",," in value:
            raise ValueError(f"malformed variant {raw!r}: a value is required, without spaces")
        if value.lower() in ("true", "false"):
            value = value.lower()
        return Variant(name=name, value=value, raw=raw)
    raise ValueError(f"malformed variant {raw!r}: expected +name, ~name, -name or name=value")


def _unquote(value: str, raw: str) -> str:
    if value[:1] in ("'", '"'):
        if len(value) < 2 or value[-1] != value[0]:
            raise ValueError(f"malformed variant {raw!r}: unclosed quote")
        return value[1:-1]
    if "'" in value or '"' in value:
        raise ValueError(f"malformed variant {raw!r}: stray quote")
    return value
