"""Where a build cache keeps each binary's spec metadata and tarball, as Spack fetches them.

A build cache read from the network is remembered by where its binaries live (`base`)
and its layout; from that and a spec's own fields follow two URLs:

- `v2` (`base` is the `build_cache` folder): the signed spec file
  `<platform>-<os>-<target>-<compiler>-<compiler version>-<name>-<version>-<hash>.spec.json.sig`
  (Spack asks for it first, then the unsigned `.spec.json`) and the tarball
  `<platform>-<os>-<target>/<compiler>-<compiler version>/<name>-<version>/<same stem>.spack`.
- `v3` (`base` is the mirror root): the spec manifest
  `v3/manifests/spec/<name>/<name>-<version>-<hash>.spec.manifest.json`; the tarball is
  the blob that manifest names by checksum, not known without reading it (None).
- `oci` (`base` is the repository): the image `<repository>:<name>-<version>-<hash>.spack`
  holds both, the spec in its config and the tarball as its layer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from cachegql.index.records import SpecRecord

__all__ = ["LAYOUTS", "binary_urls", "public_base", "spec_binary_urls"]

LAYOUTS = ("v2", "v3", "oci")
_INVALID_TAG_CHARACTER = re.compile(r"[^\w.-]")


def public_base(url: str) -> str:
    """`url` without a `user:password@` part, nor an http(s) URL's query and fragment (a
    token, a signature): what an index may keep and the API show."""
    scheme, sep, rest = url.partition("://")
    if scheme.lower() in ("http", "https"):
        rest = rest.split("#", 1)[0].split("?", 1)[0]
    host, slash, path = rest.partition("/")
    return f"{scheme}{sep}{host.rpartition('@')[2]}{slash}{path}" if sep else url


def oci_tag(name: str, version: str, digest: str) -> str:
    """The tag Spack gives a binary's image: a valid OCI tag, at most 128 characters."""
    tag = _INVALID_TAG_CHARACTER.sub("_", f"{name}-{version}-{digest}.spack")
    return tag if len(tag) <= 128 else tag[:64] + tag[-64:]


def binary_urls(base: str, layout: str, spec: SpecRecord) -> tuple[str | None, str | None]:
    """(spec metadata URL, tarball URL) of `spec` in the cache at `base`; None when unknown."""
    base = base.rstrip("/")
    name, version = spec.package, spec.version
    if layout == "oci":
        image = f"{base}:{oci_tag(name, version, spec.hash)}"
        return image, image
    if layout == "v3":
        manifest = f"{name}-{version}-{spec.hash}.spec.manifest.json"
        return f"{base}/v3/manifests/spec/{name}/{manifest}", None
    if layout == "v2" and spec.platform and spec.os and spec.target:
        architecture = f"{spec.platform}-{spec.os}-{spec.target}"
        compiler = f"{spec.compiler.name}-{spec.compiler.version or ''}".rstrip("-")
        stem = f"{architecture}-{compiler}-{name}-{version}-{spec.hash}"
        folder = f"{architecture}/{compiler}/{name}-{version}"
        return f"{base}/{stem}.spec.json.sig", f"{base}/{folder}/{stem}.spack"
    return None, None


def spec_binary_urls(
    mirrors: Mapping[str, Any] | None, spec: SpecRecord
) -> tuple[str | None, str | None]:
    """The URLs of `spec` in the first of its stacks whose cache an index remembers
    (`mirrors`: an index manifest's `{tag: {stack: [base, layout]}}`); None for pages,
    local caches and indexes built before binaries had URLs."""
    where = mirrors.get(spec.tag) if isinstance(mirrors, Mapping) else None
    if not isinstance(where, Mapping):
        return None, None
    for label in spec.stacks:
        entry = where.get(label)
        if isinstance(entry, Sequence) and len(entry) == 2 and entry[1] in LAYOUTS:
            return binary_urls(str(entry[0]), str(entry[1]), spec)
    return None, None
