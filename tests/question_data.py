"""A small build cache whose binaries differ in exactly the ways users ask about: targets
of one family and of another, variants, versions, compilers and providers. Written as a
Spack index (DB 7: compilers as node fields, dependencies as lists), served from a v2
mirror, so the real ingest reads it. Nothing from `cachegql`."""

from __future__ import annotations

import base64
import hashlib
import json
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


def lockfile(version: int, nodes: list[dict[str, Any]], roots: list[tuple[str, str]]) -> bytes:
    """A lockfile of `version` pinning `nodes` (DB 7 nodes, as `node` makes them), in the
    shape Spack writes it: version 5 lists dependencies as `{name, hash, parameters:
    {deptypes, virtuals}}` (Spack 0.22); version 6 (Spack 1.0) also turns each compiler
    into an external build dependency providing `c` and `cxx`."""
    pinned: dict[str, dict[str, Any]] = {}
    compilers: dict[str, dict[str, Any]] = {}
    for original in nodes:
        body = {k: v for k, v in original.items() if k != "compiler"}
        edges = [
            {
                "name": d["name"],
                "hash": d["hash"],
                "parameters": {"deptypes": d["type"], "virtuals": []},
            }
            for d in original["dependencies"]
        ]
        if version >= 6:
            name, release = original["compiler"]["name"], original["compiler"]["version"]
            compiler = compilers.setdefault(
                f"{name}@{release}",
                {
                    "name": name,
                    "version": release,
                    "arch": original["arch"],
                    "namespace": "builtin",
                    "parameters": {"languages": ["c", "c++"]},
                    "external": {"path": "/usr", "module": None},
                    "hash": digest(f"compiler {name}@{release}"),
                },
            )
            edges.append(
                {
                    "name": name,
                    "hash": compiler["hash"],
                    "parameters": {"deptypes": ["build"], "virtuals": ["c", "cxx"]},
                }
            )
        else:
            body["compiler"] = original["compiler"]
        body["dependencies"] = edges
        pinned[body["hash"]] = body
    pinned.update({c["hash"]: c for c in compilers.values()})
    meta = {
        "file-type": "spack-lockfile",
        "lockfile-version": version,
        "specfile-version": version - 1,
    }
    document = {
        "_meta": meta,
        "spack": {"version": "1.0.0" if version >= 6 else "0.22.0"},
        "roots": [{"hash": h, "spec": s} for s, h in roots],
        "concrete_specs": pinned,
    }
    return json.dumps(document, indent=2).encode()


def environment(version: int) -> bytes:
    """An environment for a zen3 host: `hdf5 ~mpi` (not cached: the cache has it for zen2,
    and for zen3 with +mpi) on the cache's own zlib, and the cache's `openmpi`."""
    cache = cache_nodes()
    zlib = next(n for n in cache.values() if n["name"] == "zlib")
    openmpi = next(n for n in cache.values() if n["name"] == "openmpi")
    hdf5 = node(
        "hdf5",
        "1.14.3",
        target="zen3",
        parameters={"mpi": False, "shared": True},
        deps=(("zlib", zlib["hash"], ("build", "link")),),
    )
    roots = [("hdf5 ~mpi", hdf5["hash"]), ("openmpi", openmpi["hash"])]
    return lockfile(version, [hdf5, zlib, openmpi], roots)
