"""A layout v3 mirror's index manifests: the blob of the database each names.

`v3/manifests/index/index.manifest.json` names the mirror's index, and
`v3/manifests/index/<view>/index.manifest.json` each view's: by media type (the newest
database version Spack can read is taken) and by checksum, which is the blob's name
(`blobs/sha256/<checksum[:2]>/<checksum>`) and is verified when the blob is read.
"""

from __future__ import annotations

import re
from typing import Any

from cachegql.index.ingest.listings import json_document
from cachegql.index.ingest.locations import Location, Opener
from cachegql.index.ingest.spackdb import (
    SUPPORTED_DB_VERSIONS,
    SourceFormatError,
    strip_clearsign,
)

__all__ = ["index_manifest_blob"]

_DB_MEDIA_TYPE = re.compile(r"^application/vnd\.spack\.db\.v(\d+)\+json$")


def index_manifest_blob(manifest: Location, root: Location, opener: Opener) -> tuple[Location, str]:
    """The blob of the newest supported database a manifest lists, and its checksum."""
    document = json_document(strip_clearsign(opener.read(manifest)), str(manifest))
    records = document.get("data") if isinstance(document, dict) else None
    if not isinstance(records, list):
        raise SourceFormatError(f"{manifest}: not a build-cache manifest: no 'data' list")
    found: list[tuple[int, dict[str, Any]]] = []
    media_types = []
    for record in records:
        media_type = record.get("mediaType") if isinstance(record, dict) else None
        media_types.append(str(media_type))
        match = _DB_MEDIA_TYPE.match(str(media_type))
        if match and int(match.group(1)) in SUPPORTED_DB_VERSIONS:
            found.append((int(match.group(1)), record))
    if not found:
        supported = ", ".join(f"application/vnd.spack.db.v{v}+json" for v in SUPPORTED_DB_VERSIONS)
        raise SourceFormatError(
            f"{manifest}: the manifest lists no database Spack can read "
            f"(media types: {', '.join(media_types) or 'none'}; supported: {supported})"
        )
    _, record = max(found, key=lambda item: item[0])
    algorithm, checksum = record.get("checksumAlgorithm"), record.get("checksum")
    if algorithm != "sha256" or not isinstance(checksum, str) or len(checksum) < 3:
        raise SourceFormatError(
            f"{manifest}: blob checksum {algorithm}:{checksum} is not a sha256 checksum"
        )
    return root.join("blobs", algorithm, checksum[:2], checksum), checksum
