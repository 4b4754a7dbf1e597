"""Build caches in OCI registries, laid out as Spack pushes them (`spack buildcache push`
to an `oci://` mirror, Spack 0.21+).

A mirror is a repository, `oci://HOST[:PORT]/NAME` (`oci+http://` without TLS). Its index
is the image tagged `index.spack`: a manifest whose first layer is the build-cache index
(`index.json`), named by its sha256 digest; each binary is the image tagged
`<name>-<version>-<hash>.spack` (index/binary_urls.py), whose config blob holds
the spec and whose layer is the tarball. The reader sees two kinds of location:
`REPO:TAG` (a manifest) and `REPO@sha256:HEX` (a blob); how they are fetched (the
registry API, its authentication) is the reader's business, not the index's.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from cachegql.index.ingest.buildcache import CacheData, binaries
from cachegql.index.ingest.inflate import read_blob
from cachegql.index.ingest.listings import json_error
from cachegql.index.ingest.locations import Location, Opener
from cachegql.index.ingest.seen_nodes import SeenNodes
from cachegql.index.ingest.spackdb import SourceFormatError, read_database

__all__ = ["INDEX_TAG", "blob", "image", "read_oci"]

INDEX_TAG = "index.spack"


def image(root: Location, tag: str) -> Location:
    """The image of `root`'s repository tagged `tag`."""
    return Location(f"{root.text.rstrip('/')}:{tag}")


def blob(root: Location, digest: str) -> Location:
    """The blob of `root`'s repository with this digest (`sha256:HEX`)."""
    return Location(f"{root.text.rstrip('/')}@{digest}")


def read_oci(
    root: Location, opener: Opener, label: str, seen: SeenNodes | None = None
) -> CacheData:
    """The build cache of an OCI repository: the index of its `index.spack` image."""
    manifest = image(root, INDEX_TAG)
    digest = _index_digest(_json(opener.read(manifest), str(manifest)), str(manifest))
    data = read_blob(blob(root, digest), digest.removeprefix("sha256:"), opener)
    try:
        database = read_database(data, str(manifest), seen)
    except SourceFormatError as exc:
        raise SourceFormatError(f"{manifest}: {exc}") from None
    return CacheData(
        str(root), database, {label: binaries(database)}, base=root.text.rstrip("/"), layout="oci"
    )


def _index_digest(manifest: Any, where: str) -> str:
    """The digest of the index layer, as Spack takes it: the first layer's."""
    layers = manifest.get("layers") if isinstance(manifest, dict) else None
    if not isinstance(layers, list) or not layers or not isinstance(layers[0], dict):
        raise SourceFormatError(f"{where}: not an image manifest with layers")
    digest = layers[0].get("digest")
    if not isinstance(digest, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise SourceFormatError(f"{where}: the index layer's digest {digest!r} is not sha256")
    return digest


def _json(data: bytes, where: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SourceFormatError(f"{where}: {json_error(exc)}") from None
