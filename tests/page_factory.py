"""Writes package pages for tests: one good spec at a time, whole pages, or a large corpus.

Pages are built as text, the way cache.spack.io writes them, so that tests can also
write them broken in any one way.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any


def fake_hash(seed: str) -> str:
    """A valid spec hash (32 lowercase base32 characters) derived from `seed`."""
    digest = hashlib.sha1(seed.encode()).digest()  # 20 bytes -> exactly 32 base32 characters
    return base64.b32encode(digest).decode().lower()


def spec(seed: str = "s", **fields: Any) -> dict[str, Any]:
    """One valid spec_details entry; `fields` override (a value of None drops the key)."""
    item: dict[str, Any] = {
        "compiler": "gcc@13.2.0",
        "hash": fake_hash(seed),
        "os": "ubuntu24.04",
        "platform": "linux",
        "size": "-",
        "stacks": ["e4s", "root"],
        "target": "x86_64_v3",
        "variants": ["+mpi", "build_system=cmake"],
        "versions": ["1.0.0"],
    }
    item.update(fields)
    return {k: v for k, v in item.items() if v is not None}


def page_text(
    specs: list[dict[str, Any]] | None = None,
    *,
    title: str | None = '"pkg"',
    categories: str | None = "[package, develop]",
    meta: str | None = None,
    spec_details: str | None = None,
) -> str:
    """A page's text; a front-matter value of None leaves that line out."""
    lines = ["---"]
    if title is not None:
        lines.append(f"title: {title}")
    lines.append("layout: cache")
    if categories is not None:
        lines.append(f"categories: {categories}")
    if meta is not None:
        lines.append(f"meta: {meta}")
    if spec_details is None and specs is not None:
        spec_details = json.dumps(specs)
    if spec_details is not None:
        lines.append(f"spec_details: {spec_details}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def write_page(path: Path, text: str | bytes) -> Path:
    """Write `text` at `path`, creating folders; return `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def write_corpus(root: Path, packages: int, specs_per_package: int, tag: str = "develop") -> int:
    """Write `packages` pages of `specs_per_package` specs in root/_cache/<tag>/; return specs."""
    for number in range(packages):
        name = f"pkg-{number:05d}"
        details = [
            spec(
                f"{tag}/{name}/{i}",
                compiler=f"gcc@{11 + i % 3}.{i % 5}.0",
                versions=[f"{1 + i % 7}.{i % 11}"],
                target=("x86_64_v3", "aarch64")[i % 2],
                variants=["+mpi" if i % 2 else "~mpi", f"cuda_arch={70 + i % 3 * 10}"],
                stacks=["root", f"stack-{i % 9}"],
            )
            for i in range(specs_per_package)
        ]
        text = page_text(details, title=f'"{name}"', categories=f"[package, {tag}]")
        write_page(root / "_cache" / tag / name / "specs.md", text)
    return packages * specs_per_package
