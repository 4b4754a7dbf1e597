"""Publishing a build cache written on disk to an OCI registry or an S3 bucket, as Spack
lays one out there (`cachegql demo-data --mirror --push-to URL`, and the tests).

- OCI: each stack's index becomes the `index.spack` image of a repository, as
  `spack buildcache update-index` pushes it (an empty config, the index as the only
  layer): the root stack at URL itself, the others at URL/<stack>. A listing of those
  repositories is written beside the mirror on disk (`oci_index.json`).
- S3: every file of the output folder is uploaded below the prefix, so that the v3 mirror,
  the v2 stacks and the listing (relative URLs) read from the bucket as from the folder.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import orjson

from cachegql.index import OCI_INDEX_TAG as INDEX_TAG
from cachegql.server.oci import ImageRef, OciReader

__all__ = ["push_index_image", "push_oci", "push_s3"]

_MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
_CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
_LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"  # what Spack names the index too


def push_index_image(reader: OciReader, repository: str, index_json: bytes) -> str:
    """Push `index_json` as the `index.spack` image of `repository`; its manifest digest."""
    ref = ImageRef.parse(repository)
    config = b"{}"
    for data in (config, index_json):
        _push_blob(reader, ref, data)
    manifest = orjson.dumps(
        {
            "schemaVersion": 2,
            "mediaType": _MANIFEST_TYPE,
            "config": {"mediaType": _CONFIG_TYPE, "digest": _digest(config), "size": 2},
            "layers": [
                {"mediaType": _LAYER_TYPE, "digest": _digest(index_json), "size": len(index_json)}
            ],
        }
    )
    reader.send(
        ref,
        "PUT",
        ref.api("manifests", INDEX_TAG),
        headers={"content-type": _MANIFEST_TYPE},
        content=manifest,
    )
    return _digest(manifest)


def push_oci(reader: OciReader, out: Path, url: str, stacks: Sequence[str], tag: str) -> Path:
    """Push the v2 stacks of a demo mirror in `out`; the listing of the repositories."""
    url = url.rstrip("/")
    entries = []
    for label in stacks:
        repository = url if label == stacks[0] else f"{url}/{label}"
        index_json = (out / "stacks" / label / "build_cache" / "index.json").read_bytes()
        push_index_image(reader, repository, index_json)
        entries.append({"label": label, "url": repository})
    listing = out / "oci_index.json"
    listing.write_bytes(orjson.dumps({tag: entries}))
    return listing


def push_s3(out: Path, url: str, endpoint_url: str | None = None) -> int:
    """Upload every file below `out` to the prefix `url`; how many were uploaded."""
    import boto3

    from cachegql.server.s3 import split_s3_url

    bucket, prefix = split_s3_url(url)
    client = boto3.session.Session().client("s3", endpoint_url=endpoint_url)
    count = 0
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        key = "/".join(
            part for part in (prefix.strip("/"), path.relative_to(out).as_posix()) if part
        )
        client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
        count += 1
    return count


def _push_blob(reader: OciReader, ref: ImageRef, data: bytes) -> None:
    """A monolithic upload (POST, then PUT with the digest), as Spack pushes blobs."""
    started = reader.send(
        ref, "POST", f"{ref.base}/v2/{ref.name}/blobs/uploads/", headers={}, content=b""
    )
    location = started.headers["location"]
    if location.startswith("/"):
        location = ref.base + location
    separator = "&" if "?" in location else "?"
    reader.send(
        ref,
        "PUT",
        f"{location}{separator}digest={_digest(data)}",
        headers={"content-type": "application/octet-stream"},
        content=data,
    )


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()
