"""Writing a built DAG: the indexes (streamed, checksummed), the manifests, the spec
blobs, the per-stack mirrors and the listing."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from array import array
from collections.abc import Sequence
from pathlib import Path

from cachegql.demo.mirror_builder import _Builder
from cachegql.demo.mirror_catalogue import (
    _BINARY,
    _DB_MEDIA_TYPE,
    _FLUSH_CHARS,
    _OMITTED,
    _SPEC_MEDIA_TYPE,
    _TARBALL_MEDIA_TYPE,
)
from cachegql.demo.mirror_graph import _quote

__all__ = ["_Writer"]


class _Sink:
    """One index streamed to files (the same bytes to each), with its sha256 and length."""

    def __init__(self, *paths: Path) -> None:
        self.paths = paths
        self.files = [path.open("wb") for path in paths]
        self.sha = hashlib.sha256()
        self.length = 0
        self.parts: list[str] = ['{"database":{"version":"8","installs":{']
        self.chars = 0
        self.first = True
        self.binaries = 0

    def add(self, record: str) -> None:
        if self.first:
            self.first = False
        else:
            self.parts.append(",")
        self.parts.append(record)
        self.chars += len(record)
        if self.chars > _FLUSH_CHARS:
            self._flush()

    def _flush(self) -> None:
        data = "".join(self.parts).encode("utf-8")
        self.sha.update(data)
        for file in self.files:
            file.write(data)
        self.length += len(data)
        self.parts.clear()
        self.chars = 0

    def close(self) -> tuple[str, int]:
        """Finish the JSON; return (sha256 hex, length)."""
        self.parts.append("}}}")
        self._flush()
        for file in self.files:
            file.close()
        return self.sha.hexdigest(), self.length


def _blob_path(mirror: Path, checksum: str) -> Path:
    return mirror / "blobs" / "sha256" / checksum[:2] / checksum


def _record(length: int, media_type: str, compression: str, checksum: str) -> dict[str, object]:
    return {
        "contentLength": length,
        "mediaType": media_type,
        "compression": compression,
        "checksumAlgorithm": "sha256",
        "checksum": checksum,
    }


def _manifest_text(records: Sequence[dict[str, object]]) -> str:
    """A v3 manifest as Spack writes it: `indent=0`, compact separators."""
    return json.dumps({"version": 3, "data": list(records)}, indent=0, separators=(",", ":"))


_SPEC_MANIFEST = (
    '{{\n"version":3,\n"data":[\n{{\n"contentLength":{size},\n"mediaType":"'
    + _TARBALL_MEDIA_TYPE
    + '",\n"compression":"gzip",\n"checksumAlgorithm":"sha256",\n"checksum":"{tarball}"\n}},'
    + '\n{{\n"contentLength":{spec_length},\n"mediaType":"'
    + _SPEC_MEDIA_TYPE
    + '",\n"compression":"gzip",\n"checksumAlgorithm":"sha256",\n"checksum":"{spec}"\n}}\n]\n}}'
)


class _Writer:
    """Streams the indexes, then the spec manifests (and blobs), of a built DAG."""

    def __init__(self, builder: _Builder, out: Path) -> None:
        self.builder = builder
        self.graph = builder.graph
        self.config = builder.config
        self.out = out
        self.mirror = out / "mirror"
        self.labels = ["root", *(s.name for s in builder.stacks)]
        self.quoted = [_quote(n) for n in self.graph.names.items]
        self.texts: list[str] | None = [] if self.config.writes_spec_blobs else None
        self.blob_folders: set[str] = set()

    def node_text(self, node: int) -> str:
        g = self.graph
        texts = g.texts.items
        a, b = g.dep_start[node], g.dep_start[node + 1]
        deps = ""
        if a != b:
            hashes, quoted, kinds = g.hashes, self.quoted, g.edge_kinds.items
            names = g.name
            deps = (
                '"dependencies":['
                + ",".join(
                    f'{{"name":{quoted[names[d]]},"hash":"{hashes[32 * d : 32 * d + 32].decode()}",'
                    f'"parameters":{kinds[k]}}}'
                    for d, k in zip(g.dep_node[a:b], g.dep_kind[a:b], strict=True)
                )
                + "],"
            )
        return (
            f'{{"name":{self.quoted[g.name[node]]},"version":{texts[g.version[node]]},'
            f'"arch":{texts[g.arch[node]]},"namespace":{texts[g.namespace[node]]},'
            f'"parameters":{texts[g.params[node]]},{texts[g.external[node]]}'
            f'"package_hash":"{self.builder.package_hash(node)}",{deps}'
            f'"annotations":{texts[g.annotations[node]]},"hash":"{g.hash(node)}"}}'
        )

    def closure_masks(self) -> tuple[array[int], array[int]]:
        """Per node: the stacks whose view needs it (it or a dependent is theirs), and how
        many nodes depend on it directly (Spack's `ref_count`)."""
        g = self.graph
        views = array("Q", g.stacks)
        refs = array("I", bytes(4 * len(g)))
        start, dep_node = g.dep_start, g.dep_node
        for node in range(len(g) - 1, -1, -1):
            a, b = start[node], start[node + 1]
            if a == b:
                continue
            mask = views[node]
            for dep in dep_node[a:b]:
                refs[dep] += 1
                views[dep] |= mask
        return views, refs

    def indexes(self) -> list[tuple[str, int, int]]:
        """Write the root index and a view per stack, as blobs of the v3 mirror and as the
        indexes of the v2 mirrors; return (checksum, length, binaries) of each."""
        g = self.graph
        tmp = self.mirror / "blobs" / "sha256"
        tmp.mkdir(parents=True)
        sinks = []
        for label in self.labels:
            v2 = self.out / "stacks" / label / "build_cache"
            v2.mkdir(parents=True)
            sinks.append(_Sink(tmp / f".{label}.json.part", v2 / "index.json"))
        root, views = sinks[0], sinks[1:]
        masks, refs = self.closure_masks()
        flags, stacks = g.flags, g.stacks
        keep = self.texts
        for node in range(len(g)):
            if flags[node] & _OMITTED:
                if keep is not None:
                    keep.append("")
                continue
            text = self.node_text(node)
            if keep is not None:
                keep.append(text)
            head = f'"{g.hash(node)}":{{"spec":{text},"ref_count":{refs[node]},"in_buildcache":'
            binary = flags[node] & _BINARY
            root.add(head + ("true}" if binary else "false}"))
            root.binaries += binary
            mask, own = masks[node], stacks[node]
            while mask:
                low = mask & -mask
                mask ^= low
                sink = views[low.bit_length() - 1]
                if own & low:
                    sink.add(head + "true}")
                    sink.binaries += 1
                else:
                    sink.add(head + "false}")
        out = []
        for sink in sinks:
            checksum, length = sink.close()
            target = _blob_path(self.mirror, checksum)
            target.parent.mkdir(exist_ok=True)
            sink.paths[0].replace(target)
            out.append((checksum, length, sink.binaries))
        return out

    def index_manifests(self, indexes: list[tuple[str, int, int]]) -> None:
        folder = self.mirror / "v3" / "manifests" / "index"
        for label, (checksum, length, _) in zip(self.labels, indexes, strict=True):
            where = folder if label == "root" else folder / label
            where.mkdir(parents=True, exist_ok=True)
            text = _manifest_text([_record(length, _DB_MEDIA_TYPE, "none", checksum)])
            (where / "index.manifest.json").write_text(text, encoding="utf-8")
        (self.mirror / "v3" / "layout.json").write_text('{"signing": "gpg"}', encoding="utf-8")

    def spec_manifests(self) -> None:
        """A manifest per binary; the gzipped spec file as a blob when configured."""
        g, seed = self.graph, self.config.seed
        folder = self.mirror / "v3" / "manifests" / "spec"
        made: set[int] = set()
        texts = g.texts.items
        plain: dict[int, str] = {}
        for node in range(len(g)):
            if not g.flags[node] & _BINARY:
                continue
            name_id = g.name[node]
            name = g.names.items[name_id]
            if name_id not in made:
                (folder / name).mkdir(parents=True)
                made.add(name_id)
            spec_hash = g.hash(node)
            tarball = hashlib.sha256(f"{seed}/tarball/{spec_hash}".encode()).hexdigest()
            if self.texts is None:
                spec = hashlib.sha256(f"{seed}/spec/{spec_hash}".encode()).hexdigest()
                spec_length = 1200 + 700 * (g.dep_start[node + 1] - g.dep_start[node])
            else:
                spec, spec_length = self._spec_blob(node)
            version = plain.get(g.version[node])
            if version is None:
                version = plain[g.version[node]] = json.loads(texts[g.version[node]])
            text = _SPEC_MANIFEST.format(
                size=g.size[node], tarball=tarball, spec_length=spec_length, spec=spec
            )
            path = f"{folder}/{name}/{name}-{version}-{spec_hash}.spec.manifest.json"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, text.encode("utf-8"))
            finally:
                os.close(fd)

    def _spec_blob(self, node: int) -> tuple[str, int]:
        """Write the gzipped spec file of `node` (it and its DAG, breadth first)."""
        g, texts = self.graph, self.texts
        assert texts is not None
        order = [node]
        seen = {node}
        i = 0
        while i < len(order):
            x = order[i]
            i += 1
            for dep in g.dep_node[g.dep_start[x] : g.dep_start[x + 1]]:
                if dep not in seen and not g.flags[dep] & _OMITTED:
                    seen.add(dep)
                    order.append(dep)
        document = (
            '{"spec":{"_meta":{"version":5},"nodes":['
            + ",".join(texts[x] for x in order)
            + ']},"buildcache_layout_version":2}'
        )
        data = gzip.compress(document.encode("utf-8"), compresslevel=6, mtime=0)
        checksum = hashlib.sha256(data).hexdigest()
        path = _blob_path(self.mirror, checksum)
        if checksum[:2] not in self.blob_folders:
            path.parent.mkdir(exist_ok=True)
            self.blob_folders.add(checksum[:2])
        path.write_bytes(data)
        return checksum, len(data)

    def stack_hashes(self, indexes: list[tuple[str, int, int]]) -> None:
        """`index.json.hash` beside each v2 index: the sha256 hex of its bytes."""
        for label, (checksum, _, _) in zip(self.labels, indexes, strict=True):
            path = self.out / "stacks" / label / "build_cache" / "index.json.hash"
            path.write_text(checksum, encoding="utf-8")

    def listing(self) -> Path:
        """`cache_spack_io_index.json`: per tag, each label and its index, relative urls."""
        entries = [
            {"label": label, "url": f"stacks/{label}/build_cache/index.json"}
            for label in self.labels
        ]
        path = self.out / "cache_spack_io_index.json"
        path.write_text(json.dumps({self.config.tag: entries}), encoding="utf-8")
        return path
