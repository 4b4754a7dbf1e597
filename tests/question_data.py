"""A small build cache whose binaries differ in exactly the ways users ask about: targets
of one family and of another, variants, versions, compilers and providers. Written as a
Spack index (DB 7: compilers as node fields, dependencies as lists), served from a v2
mirror, so the real ingest reads it. Nothing from `cachegql`."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

from tests import mirror_builder as mb

OS = "ubuntu22.04"
TARGETS = ("x86_64", "x86_64_v2", "x86_64_v3", "haswell", "zen", "zen2", "zen3", "aarch64")
"""The targets of the `hdf5` binaries, one each."""


def digest(key: str) -> str:
    return base64.b32encode(hashlib.sha256(key.encode()).digest()).decode().lower()[:32]


def node(
    name: str,
    version: str,
    *,
    target: str = "x86_64_v3",
    parameters: dict[str, Any] | None = None,
    compiler: tuple[str, str] = ("gcc", "13.2.0"),
    deps: tuple[tuple[str, str, tuple[str, ...]], ...] = (),
    key: str | None = None,
) -> dict[str, Any]:
    """A DB 7 node; its hash is derived from `key` (default: everything that defines it)."""
    parameters = {"cflags": [], "ldflags": [], **(parameters or {})}
    body = {
        "name": name,
        "version": version,
        "arch": {
            "platform": "linux",
            "platform_os": OS,
            "target": target,
        },
        "compiler": {"name": compiler[0], "version": compiler[1]},
        "namespace": "builtin",
        "parameters": parameters,
        "dependencies": [{"name": n, "hash": h, "type": list(t)} for n, h, t in deps],
    }
    body["hash"] = digest(key or repr(sorted(body.items(), key=lambda kv: kv[0])))
    return body


def cache_nodes() -> dict[str, dict[str, Any]]:
    """The binaries of the test cache, by hash."""
    zlib = node("zlib", "1.3.1", parameters={"shared": True})
    mpich = node("mpich", "4.2.1", deps=((zlib["name"], zlib["hash"], ("build", "link")),))
    openmpi = node("openmpi", "5.0.3")
    nodes = [zlib, mpich, openmpi]
    link = ("build", "link")
    for target in TARGETS:
        nodes.append(
            node(
                "hdf5",
                "1.14.3",
                target=target,
                parameters={"mpi": True, "shared": True},
                deps=(("zlib", zlib["hash"], link), ("mpich", mpich["hash"], link)),
            )
        )
    nodes.append(  # differs from the zen2 hdf5 a lockfile asks for by ~mpi only
        node(
            "hdf5",
            "1.14.3",
            target="zen2",
            parameters={"mpi": False, "shared": True},
            deps=(("zlib", zlib["hash"], link),),
        )
    )
    nodes.append(  # another version, another compiler, another provider
        node(
            "hdf5",
            "1.12.2",
            target="zen2",
            parameters={"mpi": True, "shared": True},
            compiler=("clang", "17.0.6"),
            deps=(("zlib", zlib["hash"], link), ("openmpi", openmpi["hash"], link)),
        )
    )
    return {n["hash"]: n for n in nodes}


def write_cache(root: Path) -> Path:
    """The v2 mirror of `cache_nodes()` under `root`; returns its build_cache folder."""
    return mb.write_v2_mirror(mb.make_index(cache_nodes(), version="7"), root)
