"""Target compatibility, from archspec's microarchitecture DAG (the library Spack vendors).

A binary built for target `t` runs on a host `h` when `t` is `h` or one of its ancestors
in that DAG (`x86_64_v3` and `zen` run on a `zen2`; `haswell`, `zen3` and `aarch64` do
not), exactly as Spack orders targets (`Microarchitecture.__lt__`). Spack's target ranges
follow that order too: `target=x86_64_v2:` is `x86_64_v2` and every descendant of it,
`target=:haswell` is `haswell` and its ancestors, `a:b` both, and a comma lists
alternatives. Names that archspec does not know are errors naming close matches; a
spec built for a target archspec does not know runs nowhere we can vouch for.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache
from typing import Any

import archspec.cpu

from cachegql.index.errors import CriteriaError, shorten

__all__ = [
    "Microarchitecture",
    "compatibility",
    "host_target",
    "microarchitectures",
    "runs_on",
    "target_names",
]


@dataclass(frozen=True, slots=True)
class Microarchitecture:
    """One target of archspec's DAG, as the API lists them."""

    name: str
    family: str
    vendor: str
    generation: int
    ancestors: tuple[str, ...]
    """Its ancestors, nearest first: binaries for these run on it too."""


def _target(name: str) -> Any:
    """archspec's microarchitecture called `name`; a CriteriaError naming close matches."""
    target = archspec.cpu.TARGETS.get(name)
    if target is None:
        close = difflib.get_close_matches(name, list(archspec.cpu.TARGETS), n=4, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise CriteriaError(f"unknown microarchitecture {shorten(name)}{hint}")
    return target


@cache
def runs_on(name: str) -> tuple[str, ...]:
    """The targets whose binaries run on a `name` host: itself and its ancestors, sorted."""
    target = _target(name)
    return tuple(sorted({target.name, *(a.name for a in target.ancestors)}))


@cache
def _range(low: str, high: str) -> tuple[str, ...]:
    """Every target `t` with `low <= t <= high` in the DAG (either side may be empty)."""
    lo = _target(low) if low else None
    hi = _target(high) if high else None
    return tuple(
        sorted(
            name
            for name, t in archspec.cpu.TARGETS.items()
            if (lo is None or t == lo or lo in t.ancestors)
            and (hi is None or t == hi or t in hi.ancestors)
        )
    )


def target_names(value: str) -> tuple[str, ...]:
    """The targets a Spack `target=` value allows: `zen2`, `x86_64_v2:`, `:haswell`,
    `x86_64_v2:zen3`, or a comma list of those. A single name is kept as it is (matched
    exactly, as before); a range's ends must be microarchitectures archspec knows."""
    names: set[str] = set()
    for part in value.split(","):
        part = part.strip()
        if not part or part == ":":
            raise CriteriaError(f"empty target range in {shorten(value)}")
        if ":" not in part:
            names.add(part)
            continue
        low, _, high = part.partition(":")
        names.update(_range(low.strip(), high.strip()))
    return tuple(sorted(names))


def host_target() -> str:
    """The microarchitecture of this machine, as archspec detects it."""
    return str(archspec.cpu.host().name)


@cache
def microarchitectures() -> tuple[Microarchitecture, ...]:
    """Every microarchitecture archspec knows, by family, then generic first, then name."""
    items = [
        Microarchitecture(
            name=t.name,
            family=t.family.name,
            vendor=t.vendor,
            generation=t.generation,
            ancestors=tuple(a.name for a in t.ancestors),
        )
        for t in archspec.cpu.TARGETS.values()
    ]
    return tuple(sorted(items, key=lambda m: (m.family, m.vendor != "generic", m.name)))


def compatibility(built: str, host: str) -> str | None:
    """None when a binary for `built` is one for `host` itself; else a phrase: whether it
    runs there ("built for x86_64_v3: runs on your zen3") or not."""
    if built == host:
        return None
    if host in archspec.cpu.TARGETS and built in runs_on(host):
        return f"built for {built}: runs on your {host}"
    return f"built for {built}: does not run on {host}"
