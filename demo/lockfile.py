"""A Spack environment lockfile over a generated build cache, for `cachegql check`.

`write_lockfile` reads back the root index of a mirror `write_mirror` wrote and pins a few
of its binaries with their whole DAGs (lockfile version 6, as Spack 1.x writes it), then
one root more that the cache lacks: a copy of a pinned binary with one variant flipped
(or its version moved), under a hash of its own, as a user's environment asking for a
variant the cache was not built with. Its nearest binary is the copy's original.
"""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import json
import random
from pathlib import Path
from typing import Any

__all__ = ["LOCKFILE_NAME", "write_lockfile"]

LOCKFILE_NAME = "spack.lock"


def write_lockfile(mirror: Path, out: Path, *, roots: int = 4, seed: int = 1) -> tuple[int, int]:
    """Write `out/spack.lock`; return (concrete specs pinned, of them in the cache).

    The changed root is the first pinned root that has a boolean variant, so that what it
    lacks reads as a variant (`has +x, you asked ~x`).
    """
    nodes, cached = _root_index(mirror)
    incomplete = _incomplete(nodes)
    complete = [h for h in sorted(cached) if h not in incomplete]
    rng = random.Random(seed)
    chosen: list[str] = []
    names: set[str] = set()
    for digest in rng.sample(complete, len(complete)):
        if nodes[digest]["name"] not in names and nodes[digest].get("dependencies"):
            chosen.append(digest)
            names.add(nodes[digest]["name"])
        if len(chosen) == roots:
            break
    if not chosen:
        raise ValueError(f"{mirror}: no binary with its whole DAG in the cache to pin")
    pinned: dict[str, dict[str, Any]] = {}
    for digest in chosen:
        for member in _closure(digest, nodes) or ():
            pinned[member] = nodes[member]
    flippable = [d for d in chosen if any(isinstance(v, bool) for v in _parameters(nodes[d]))]
    original = (flippable or chosen)[0]
    changed = _changed(nodes[original])
    pinned[changed["hash"]] = changed
    lockfile = {
        "_meta": {"file-type": "spack-lockfile", "lockfile-version": 6, "specfile-version": 5},
        "spack": {"version": "1.0.0", "type": "release"},
        "roots": [
            {"hash": digest, "spec": pinned[digest]["name"]}
            for digest in (*chosen, changed["hash"])
        ],
        "concrete_specs": pinned,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / LOCKFILE_NAME).write_text(json.dumps(lockfile, indent=1) + "\n")
    return len(pinned), sum(1 for digest in pinned if digest in cached)


def _root_index(mirror: Path) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """The nodes of the mirror's root index by hash, and the hashes it has binaries of."""
    manifest = mirror / "v3" / "manifests" / "index" / "index.manifest.json"
    record = json.loads(manifest.read_text())["data"][0]
    checksum = record["checksum"]
    data = (mirror / "blobs" / "sha256" / checksum[:2] / checksum).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    installs = json.loads(data)["database"]["installs"]
    nodes = {digest: entry["spec"] for digest, entry in installs.items()}
    cached = {digest for digest, entry in installs.items() if entry.get("in_buildcache")}
    return nodes, cached


def _incomplete(nodes: dict[str, dict[str, Any]]) -> set[str]:
    """The nodes with a node below them that the index lacks (`_closure` is None): those
    with an edge out of the index, and their dependents, and theirs. One walk up from
    them, where a closure per binary took half an hour at 1M specs."""
    dependents: dict[str, list[str]] = {}
    found: set[str] = set()
    for digest, node in nodes.items():
        for edge in node.get("dependencies", ()):
            below = edge["hash"]
            if below not in nodes:
                found.add(digest)
            else:
                dependents.setdefault(below, []).append(digest)
    walk = list(found)
    for digest in walk:
        for above in dependents.get(digest, ()):
            if above not in found:
                found.add(above)
                walk.append(above)
    return found


def _closure(root: str, nodes: dict[str, dict[str, Any]]) -> list[str] | None:
    """`root` and every node below it, or None if the index lacks one of them."""
    seen = [root]
    found = {root}
    for digest in seen:
        for edge in nodes[digest].get("dependencies", ()):
            below = edge["hash"]
            if below not in nodes:
                return None
            if below not in found:
                found.add(below)
                seen.append(below)
    return seen


def _parameters(node: dict[str, Any]) -> list[object]:
    return list(node.get("parameters", {}).values())


def _changed(node: dict[str, Any]) -> dict[str, Any]:
    """`node` with one variant flipped (else its version moved), under a new hash."""
    changed = copy.deepcopy(node)
    parameters = changed.setdefault("parameters", {})
    flags = sorted(k for k, v in parameters.items() if isinstance(v, bool))
    if flags:
        parameters[flags[0]] = not parameters[flags[0]]
    else:
        changed["version"] = f"{changed['version']}.1"
    digest = hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).digest()
    changed["hash"] = base64.b32encode(digest).decode().lower()[:32]
    return changed
