"""One-line Spack-style spec strings, like `spack buildcache list -l` shows them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from cachegql.index.spack.compilers import Compiler
from cachegql.index.spack.hashes import SHORT_HASH_LENGTH
from cachegql.index.spack.variants import Variant

__all__ = ["FormattableSpec", "format_spec"]


class FormattableSpec(Protocol):
    """What a spec needs to be printed (a `SpecRecord` has all of it)."""

    @property
    def hash(self) -> str: ...
    @property
    def package(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def compiler(self) -> Compiler: ...
    @property
    def os(self) -> str: ...
    @property
    def platform(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def variants(self) -> Sequence[Variant]: ...
    @property
    def flags(self) -> Sequence[tuple[str, Sequence[str]]]: ...


def format_spec(spec: FormattableSpec, *, with_hash: bool = True) -> str:
    """`name@version flags variants arch=platform-os-target %compiler /hash7`.

    Pasted into a `query:`, it matches this spec (the hash prefix keeps it to this one).
    """
    parts = [f"{spec.package}@{spec.version}"]
    parts.extend(f'{kind}="{" ".join(values)}"' for kind, values in spec.flags)
    parts.extend(v.raw for v in spec.variants)
    parts.append(f"arch={spec.platform}-{spec.os}-{spec.target}")
    parts.append(f"%{spec.compiler.normalized}")
    if with_hash:
        parts.append(f"/{spec.hash[:SHORT_HASH_LENGTH]}")
    return " ".join(parts)
