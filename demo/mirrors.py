"""A deterministic synthetic Spack build cache: a layout v3 mirror, v2 mirrors per stack, a listing.

What `write_mirror` writes imitates one tag of binaries.spack.io closely enough to exercise a
build-cache reader: Spack 1.x nodes (Database v8, spec files v5), compilers as build
dependencies whose edges carry the language virtuals, external compilers and packages, nodes
that are not pushed, nodes migrated from older formats (`annotations.compiler`), both forms of
`arch.target`, a few direct dependencies on widely shared nodes and many on rarely used ones, a
few dangling edges, and tarball sizes from kilobytes to gigabytes.

Same config, same bytes: one `random.Random` seeded from the config, and nothing depends on
set or hash-randomised order. A million specs fit in bounded memory: the DAG is kept in flat
arrays, and every index is streamed to disk while its checksum is computed.

The parts, in the order `write_mirror` runs them: `mirror_config` (what is asked),
`mirror_catalogue` (what is drawn from), `mirror_plan` (the packages), `mirror_builder`
(the nodes, into `mirror_graph`'s arrays), `mirror_writer` (the files).
"""

from __future__ import annotations

from pathlib import Path

# `_Builder` and `_BINARY` re-exported: tests/test_demo_mirrors.py reads them from here.
from cachegql.demo.mirror_builder import _Builder as _Builder
from cachegql.demo.mirror_catalogue import _BINARY as _BINARY
from cachegql.demo.mirror_catalogue import _OMITTED, STACK_NAMES
from cachegql.demo.mirror_config import SPEC_BLOB_LIMIT, MirrorConfig, MirrorSummary
from cachegql.demo.mirror_writer import _Writer

__all__ = ["SPEC_BLOB_LIMIT", "STACK_NAMES", "MirrorConfig", "MirrorSummary", "write_mirror"]


def write_mirror(config: MirrorConfig, out: Path) -> MirrorSummary:
    """Write one synthetic tag of a Spack build cache under `out` (which may exist, but
    without any of the three things written here).

    - `out/mirror/`: a layout v3 build cache: `v3/layout.json`; the root index
      `v3/manifests/index/index.manifest.json` and a view per stack
      `v3/manifests/index/<stack>/index.manifest.json`, each pointing to its index blob
      `blobs/sha256/<checksum[:2]>/<checksum>` (Database v8); a spec manifest per binary
      `v3/manifests/spec/<name>/<name>-<version>-<hash>.spec.manifest.json` with the tarball's
      size (the tarball blobs are not written, nor the spec blobs unless
      `config.writes_spec_blobs`).
    - `out/stacks/<label>/build_cache/index.json` and `index.json.hash`: a layout v2 mirror
      per stack and one for `root`, holding the same index bytes as the blobs.
    - `out/cache_spack_io_index.json`: `{tag: [{"label", "url"}, ...]}`, root first, each url
      relative to the listing (the index.json of that label's v2 mirror).
    """
    for name in ("mirror", "stacks", "cache_spack_io_index.json"):
        if (out / name).exists():
            raise FileExistsError(f"{out / name} exists: write a mirror into a new folder")
    builder = _Builder(config)
    graph = builder.build()
    writer = _Writer(builder, out)
    indexes = writer.indexes()
    writer.index_manifests(indexes)
    writer.spec_manifests()
    writer.stack_hashes(indexes)
    listing = writer.listing()
    flags = graph.flags
    written = [n for n in range(len(graph)) if not flags[n] & _OMITTED]
    return MirrorSummary(
        tag=config.tag,
        specs=indexes[0][2],
        nodes=len(written),
        edges=sum(graph.dep_start[n + 1] - graph.dep_start[n] for n in written),
        dangling=config.dangling,
        packages=len({graph.name[n] for n in written if flags[n] & _BINARY}),
        stacks=tuple(
            (label, binaries)
            for label, (_, _, binaries) in zip(writer.labels, indexes, strict=True)
        ),
        spec_blobs=config.writes_spec_blobs,
        mirror=writer.mirror,
        listing=listing,
    )
