"""Writes package pages for tests: one good spec at a time, whole pages, or a large corpus.

Pages are built as text, the way cache.spack.io writes them, so that tests can also
write them broken in any one way.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
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


DERIVED_STACK = "moved"
"""The stack `derive_tag` moves some kept specs to: they stay, but a stack filter sees them
only in the derived tag."""


def derive_tag(root: Path, source: str, target: str) -> None:
    """Write root/_cache/<target>/ from the pages of <source>: a tag sharing most of its
    specs, the way a new snapshot does. Per package, by a digest of its name: one in ten
    is left out; two lose their specs whose hash ends in a-h; two gain three specs (copies
    of the first with new hashes); one moves its specs whose hash starts with a-f to the
    stack `DERIVED_STACK`; the rest are the same. One package is new."""
    for page in sorted((root / "_cache" / source).glob("*/specs.md")):
        fields = dict(re.findall(r"^(title|spec_details): (.*)$", page.read_text(), re.MULTILINE))
        name = json.loads(fields["title"])
        specs: list[dict[str, Any]] = json.loads(fields["spec_details"])
        kind = int(hashlib.sha1(name.encode()).hexdigest(), 16) % 10
        if kind == 0:
            continue
        if kind in (1, 2):
            specs = [s for s in specs if s["hash"][-1] not in "abcdefgh"]
        elif kind in (3, 4):
            specs += [dict(specs[0], hash=fake_hash(f"{target}/{name}/{i}")) for i in range(3)]
        elif kind == 5:
            specs = [
                dict(s, stacks=[DERIVED_STACK]) if s["hash"][0] in "abcdef" else s for s in specs
            ]
        text = page_text(specs, title=fields["title"], categories=f"[package, {target}]")
        write_page(root / "_cache" / target / name / "specs.md", text)
    new = [spec(f"{target}/new/{i}") for i in range(2)]
    text = page_text(new, title='"zz-derived-new"', categories=f"[package, {target}]")
    write_page(root / "_cache" / target / "zz-derived-new" / "specs.md", text)
