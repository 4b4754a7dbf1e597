"""One-line Spack-style spec strings, like `spack buildcache list -l` shows them."""

from __future__ import annotations

from index.snapshot import SpecData

SHORT_HASH = 7


def format_spec(spec: SpecData, *, with_hash: bool = True) -> str:
    """`name@version variants arch=platform-os-target %compiler /hash7`.

    Pasted into a `query:`, it matches this spec (the hash prefix keeps it to this one).
    """
    parts = [f"{spec.name}@{spec.versions[0]}"]
    parts.extend(v.raw for v in spec.variants)
    parts.append(f"arch={spec.platform}-{spec.os}-{spec.target}")
    parts.append(f"%{spec.compiler.normalized}")
    if with_hash:
        parts.append(f"/{spec.hash[:SHORT_HASH]}")
    return " ".join(parts)
