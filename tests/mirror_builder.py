"""Build Spack build-cache mirrors for tests from an index file (layouts v2 and v3), check
them, and damage them for bad-input tests. Nothing from `cachegql`.

Shapes follow Spack's `url_buildcache.py` (layout v3) and `binary_distribution.py` (v2):

- v2: `<root>/build_cache/index.json`, `index.json.hash` (sha256 hex of the index bytes), spec
  files beside them.
- v3: `<root>/v3/manifests/index[/<view>]/index.manifest.json` ->
  `<root>/blobs/sha256/<checksum[:2]>/<checksum>` (the index, compression none); one
  `<root>/v3/manifests/spec/<name>/<name>-<version>-<hash>.spec.manifest.json` per binary with
  a tarball record and a gzipped spec-file blob; `<root>/v3/layout.json`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests import mirror_oracle as mo

DB_MEDIA_TYPE = "application/vnd.spack.db.v{}+json"
SPEC_MEDIA_TYPE = "application/vnd.spack.spec.v{}+json"
TARBALL_MEDIA_TYPE = "application/vnd.spack.install.v2.tar+gzip"
KEY_INDEX_MEDIA_TYPE = "application/vnd.spack.keyindex.v1+json"
#: The contentLength of a tarball record when `sizes` does not give one.
DEFAULT_TARBALL_SIZE = 1_048_576
#: The spec file format written by each DB version (`_meta.version`; 1 is the name-keyed list).
SPEC_FORMAT_FOR_DB = {5: 1, 6: 3, 7: 4, 8: 5, 9: 6}
_FAKE_SIGNATURE = (
    "-----BEGIN PGP SIGNATURE-----\n\n"
    "iQIzBAEBCgAdFiEEy6ssEDLG/1B4BJ7A+mHVDBLK034FAmgnhqIACgkQ+mHVDBLK\n"
    "036q+Q//XkOoRoZ5g3uyQTXTV3w6YCUezkvGv+WRV4oZfj0CElKf4KoW5bhdtWEM\n"
    "=Qmpp\n"
    "-----END PGP SIGNATURE-----\n"
)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def clearsign(text: str) -> str:
    """`text` as a PGP clearsigned message with a fake signature (readers do not verify)."""
    body = "\n".join("- " + line if line.startswith("-") else line for line in text.split("\n"))
    return (
        "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\n"
        + body.rstrip("\n")
        + "\n"
        + _FAKE_SIGNATURE
    )


def _bytes(index_json: Path | bytes) -> bytes:
    return index_json.read_bytes() if isinstance(index_json, Path) else index_json


def _dump(document: Any) -> bytes:
    """JSON as Spack writes manifests: no indent, a newline between items."""
    return json.dumps(document, indent=0, separators=(",", ":")).encode()


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _db_version(index: Mapping[str, Any]) -> int | None:
    try:
        return int(str(index["database"]["version"]))
    except (KeyError, TypeError, ValueError):
        return None


def make_index(
    nodes: Mapping[str, Mapping[str, Any]], version: str = "8", outside: Iterable[str] = ()
) -> bytes:
    """An index.json of `{hash: node}` (nodes as the DB version writes them); the hashes in
    `outside` are DAG nodes only (`in_buildcache: false`)."""
    not_cached = set(outside)
    installs = {
        h: {"spec": dict(n), "ref_count": 0, "in_buildcache": h not in not_cached}
        for h, n in nodes.items()
    }
    return json.dumps({"database": {"version": version, "installs": installs}}).encode()


# -- layout v2 --------------------------------------------------------------------------------


def write_v2_mirror(
    index_json: Path | bytes | None,
    root: Path,
    with_hash: bool = True,
    spec_files: Iterable[Path] = (),
) -> Path:
    """`root/build_cache/index.json` (+ `index.json.hash`), and copies of `spec_files` beside
    it; `index_json=None` makes a mirror of spec files without an index. Returns build_cache/."""
    build_cache = root / "build_cache"
    build_cache.mkdir(parents=True, exist_ok=True)
    if index_json is not None:
        data = _bytes(index_json)
        _write(build_cache / "index.json", data)
        if with_hash:
            _write(build_cache / "index.json.hash", sha256_hex(data).encode())
    for spec_file in spec_files:
        shutil.copyfile(spec_file, build_cache / spec_file.name)
    return build_cache


def spec_document(index_json: Path | bytes | Mapping[str, Any], hash_: str) -> dict[str, Any]:
    """The spec file of one binary of an index: its node first, then its DAG's nodes (those the
    index has), in the spec-file format of the index's DB version."""
    index: Mapping[str, Any] = (
        index_json if isinstance(index_json, Mapping) else json.loads(_bytes(index_json))
    )
    installs = index["database"]["installs"]
    dag = mo.load_index(index)
    hashes = [hash_, *(n.hash for n in dag.reachable(hash_) if n.hash in installs)]
    nodes = []
    for h in hashes:
        node = dict(installs[h]["spec"])
        name, body = mo.unwrap_node(node)
        if name is not None:  # name-keyed: the hash goes inside
            node = {name: {**body, "hash": body.get("hash", h)}}
        elif "hash" not in node:
            node["hash"] = node.pop("_hash", h)
        nodes.append(node)
    version = SPEC_FORMAT_FOR_DB.get(_db_version(index) or 8, 5)
    spec: Any = nodes if version == 1 else {"_meta": {"version": version}, "nodes": nodes}
    return {"spec": spec}


def spec_file_name(node: mo.Node, suffix: str = ".spec.json") -> str:
    """Spack's v2 name: `<platform>-<os>-<target>-<compiler>-<version>-<name>-<version>-<hash>`."""
    compiler = (
        f"{node.compiler[0]}-{node.compiler[1]}" if node.compiler and node.compiler[1] else "none"
    )
    arch = f"{node.platform}-{node.os}-{node.target}"
    return f"{arch}-{compiler}-{node.name}-{node.version}-{node.hash}{suffix}"


def write_v2_spec_files(
    index_json: Path | bytes, folder: Path, signed: bool = False, yaml_format: bool = False
) -> list[Path]:
    """One spec file per binary of the index (`.spec.json`, `.spec.json.sig` when signed, or
    `.spec.yaml`), for mirrors of spec files without an index."""
    index = json.loads(_bytes(index_json))
    dag = mo.load_index(index)
    paths = []
    for h in dag.binaries():
        document = spec_document(index, h)
        if yaml_format:
            text = yaml.safe_dump(document, sort_keys=False)
            suffix = ".spec.yaml"
        else:
            text = json.dumps(document, indent=0, separators=(",", ":"))
            suffix = ".spec.json.sig" if signed else ".spec.json"
            if signed:
                text = clearsign(text)
        paths.append(_write(folder / spec_file_name(dag.nodes[h], suffix), text.encode()))
    return paths


# -- layout v3 --------------------------------------------------------------------------------


def blob_path(root: Path, checksum: str, algorithm: str = "sha256") -> Path:
    return root / "blobs" / algorithm / checksum[:2] / checksum


def write_blob(root: Path, data: bytes) -> tuple[Path, str]:
    checksum = sha256_hex(data)
    return _write(blob_path(root, checksum), data), checksum


def record(
    data: bytes, media_type: str, compression: str, checksum: str | None = None
) -> dict[str, Any]:
    return {
        "contentLength": len(data),
        "mediaType": media_type,
        "compression": compression,
        "checksumAlgorithm": "sha256",
        "checksum": checksum or sha256_hex(data),
    }


def write_manifest(path: Path, data: Sequence[Mapping[str, Any]], signed: bool = False) -> Path:
    text = _dump({"version": 3, "data": list(data)}).decode()
    return _write(path, (clearsign(text) if signed else text).encode())


def read_manifest(path: Path) -> dict[str, Any]:
    """A manifest's JSON, clearsigned or not."""
    parsed: dict[str, Any] = json.loads(mo.clearsigned_payload(path.read_text()))
    return parsed


def index_manifest_path(root: Path, view: str | None = None) -> Path:
    folder = root / "v3" / "manifests" / "index"
    return (folder / view if view else folder) / "index.manifest.json"


def _decoy(version: int) -> bytes:
    """A valid but empty index of another DB version: a reader that picks it finds no specs."""
    return _dump({"database": {"version": str(version), "installs": {}}})


def write_index_manifest(
    root: Path,
    index_bytes: bytes,
    db_media_versions: Sequence[int] = (8,),
    signed: bool = False,
    view: str | None = None,
) -> tuple[Path, Path]:
    """An index manifest (and its blobs). With several DB media versions, the newest supported
    one (5-9; the newest listed if none is) points to `index_bytes`, the others to decoys
    (empty indexes). Returns (manifest, the blob of the real index)."""
    if not db_media_versions:
        raise ValueError("an index manifest needs at least one DB media version")
    supported = [v for v in db_media_versions if v in mo.SUPPORTED_DB_VERSIONS]
    real = max(supported or db_media_versions)
    records = []
    real_blob = None
    for version in db_media_versions:
        data = index_bytes if version == real else _decoy(version)
        path, checksum = write_blob(root, data)
        if version == real:
            real_blob = path
        records.append(record(data, DB_MEDIA_TYPE.format(version), "none", checksum))
    assert real_blob is not None
    return write_manifest(index_manifest_path(root, view), records, signed), real_blob


@dataclass
class V3Mirror:
    root: Path
    index_manifest: Path
    index_blob: Path
    #: view -> its index manifest
    view_manifests: dict[str, Path] = field(default_factory=dict)
    #: hash -> its spec manifest
    spec_manifests: dict[str, Path] = field(default_factory=dict)
    #: hash -> its spec blob (gzipped spec file)
    spec_blobs: dict[str, Path] = field(default_factory=dict)
    #: hash -> the contentLength of its tarball record
    tarball_sizes: dict[str, int] = field(default_factory=dict)


def spec_manifest_path(root: Path, name: str, version: str | None, hash_: str) -> Path:
    folder = root / "v3" / "manifests" / "spec" / name
    return folder / f"{name}-{version}-{hash_}.spec.manifest.json"


def view_index(index: Mapping[str, Any], binaries: Iterable[str]) -> bytes:
    """The index with `in_buildcache: true` exactly for `binaries` (which it must have)."""
    wanted = set(binaries)
    installs = index["database"]["installs"]
    unknown = wanted - {h for h, r in installs.items() if r.get("in_buildcache")}
    if unknown:
        raise ValueError(f"not binaries of the index: {sorted(unknown)}")
    document = {
        **index,
        "database": {
            **index["database"],
            "installs": {h: {**r, "in_buildcache": h in wanted} for h, r in installs.items()},
        },
    }
    return json.dumps(document, separators=(",", ":")).encode()


def write_v3_mirror(
    index_json: Path | bytes,
    root: Path,
    views: Mapping[str, Sequence[str]] | None = None,
    sizes: Mapping[str, int] | None = None,
    signed: bool = False,
    db_media_versions: Sequence[int] = (8,),
) -> V3Mirror:
    """A layout v3 mirror of an index: the index manifest and blob, a manifest and index blob
    per view (`views`: name -> the hashes of its binaries), a spec manifest per binary (a
    gzipped spec blob; a tarball record of `sizes[hash]` bytes, or DEFAULT_TARBALL_SIZE, whose
    blob is not written), and `v3/layout.json`. `signed` clearsigns every manifest."""
    data = _bytes(index_json)
    index = json.loads(data)
    manifest, blob = write_index_manifest(root, data, db_media_versions, signed)
    mirror = V3Mirror(root, manifest, blob)
    for view, hashes in (views or {}).items():
        view_bytes = view_index(index, hashes)
        mirror.view_manifests[view] = write_index_manifest(
            root, view_bytes, db_media_versions, signed, view
        )[0]
    dag = mo.load_index(index)
    spec_format = SPEC_FORMAT_FOR_DB.get(_db_version(index) or 8, 5)
    for h in dag.binaries():
        node = dag.nodes[h]
        size = (sizes or {}).get(h, DEFAULT_TARBALL_SIZE)
        tarball_checksum = sha256_hex(f"tarball of {h}".encode())
        document = spec_document(index, h)
        document["buildcache_layout_version"] = 2
        document["binary_cache_checksum"] = {"hash_algorithm": "sha256", "hash": tarball_checksum}
        spec_gz = gzip.compress(
            json.dumps(document, separators=(",", ":")).encode(), compresslevel=6, mtime=0
        )
        spec_blob, spec_checksum = write_blob(root, spec_gz)
        tarball = {
            "contentLength": size,
            "mediaType": TARBALL_MEDIA_TYPE,
            "compression": "gzip",
            "checksumAlgorithm": "sha256",
            "checksum": tarball_checksum,
        }
        spec_record = record(spec_gz, SPEC_MEDIA_TYPE.format(spec_format), "gzip", spec_checksum)
        path = spec_manifest_path(root, node.name, node.version, h)
        mirror.spec_manifests[h] = write_manifest(path, [tarball, spec_record], signed)
        mirror.spec_blobs[h] = spec_blob
        mirror.tarball_sizes[h] = size
    _write(root / "v3" / "layout.json", json.dumps({"signing": "gpg"}).encode())
    return mirror


def verify_v3_mirror(root: Path) -> list[str]:
    """Problems of a v3 mirror: every manifest parses and every blob it names (tarballs
    excepted) exists with its contentLength and checksum; [] when all is well."""
    problems: list[str] = []
    for manifest in sorted((root / "v3" / "manifests").rglob("*.manifest.json")):
        where = manifest.relative_to(root)
        try:
            document = read_manifest(manifest)
            entries = document["data"]
        except (ValueError, KeyError, TypeError) as e:
            problems.append(f"{where}: unreadable manifest ({e})")
            continue
        if document.get("version") != 3:
            problems.append(f"{where}: version {document.get('version')!r}")
        for entry in entries:
            if entry.get("mediaType") == TARBALL_MEDIA_TYPE:
                continue
            path = blob_path(root, entry["checksum"], entry["checksumAlgorithm"])
            if not path.is_file():
                problems.append(f"{where}: missing blob {entry['checksum']}")
                continue
            data = path.read_bytes()
            if len(data) != entry["contentLength"]:
                problems.append(f"{where}: blob {entry['checksum']} has {len(data)} bytes")
            if sha256_hex(data) != entry["checksum"]:
                problems.append(f"{where}: blob {entry['checksum']} fails its checksum")
    return problems


def write_listing(path: Path, refs: Mapping[str, Sequence[tuple[str, str]]]) -> Path:
    """cache.spack.io's listing: `{"<ref>": [{"label": ..., "url": ...}]}`."""
    document = {
        ref: [{"label": label, "url": url} for label, url in pairs] for ref, pairs in refs.items()
    }
    return _write(path, json.dumps(document, indent=2).encode())


def v3_listing_entries(
    demo: Path, manifests: bool = False, tag: str = "develop"
) -> list[tuple[str, str]]:
    """(label, path from `demo`) of the index blob of each stack of a `demo-data --mirror`
    folder, in its listing's order, as binaries.spack.io's listing names them since layout
    v3 (`mirror/blobs/sha256/<checksum[:2]>/<checksum>`); its index manifest's with
    `manifests`."""
    listed = json.loads((demo / "cache_spack_io_index.json").read_text())[tag]
    index = demo / "mirror" / "v3" / "manifests" / "index"
    entries = []
    for entry in listed:
        label = entry["label"]
        manifest = index / ("" if label == "root" else label) / "index.manifest.json"
        if manifests:
            entries.append((label, manifest.relative_to(demo).as_posix()))
            continue
        document, at = _find(manifest, "application/vnd.spack.db")
        checksum = document["data"][at]["checksum"]
        entries.append((label, f"mirror/blobs/sha256/{checksum[:2]}/{checksum}"))
    return entries


# -- damage -----------------------------------------------------------------------------------


def truncate_file(path: Path, keep: int | None = None) -> None:
    """Keep the first `keep` bytes (half the file by default)."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 if keep is None else keep])


def _find(manifest: Path, media_type_prefix: str) -> tuple[dict[str, Any], int]:
    document = read_manifest(manifest)
    for i, entry in enumerate(document["data"]):
        if str(entry["mediaType"]).startswith(media_type_prefix):
            return document, i
    raise ValueError(f"{manifest}: no record of type {media_type_prefix}*")


def corrupt_blob(
    root: Path, manifest: Path, media_type_prefix: str = "application/vnd.spack.db."
) -> Path:
    """Change one byte of the blob a manifest points to (same length): the checksum no longer
    verifies. Returns the blob."""
    document, i = _find(manifest, media_type_prefix)
    path = blob_path(root, document["data"][i]["checksum"])
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20
    path.write_bytes(bytes(data))
    return path


def corrupt_manifest_checksum(
    manifest: Path, media_type_prefix: str = "application/vnd.spack.db.", signed: bool = False
) -> str:
    """Replace the checksum a manifest records (it then names a blob that does not exist).
    Returns the new checksum."""
    document, i = _find(manifest, media_type_prefix)
    wrong = sha256_hex(b"not the blob")
    document["data"][i]["checksum"] = wrong
    write_manifest(manifest, document["data"], signed)
    return wrong


def corrupt_v2_hash(root: Path) -> None:
    """A wrong `build_cache/index.json.hash`."""
    _write(root / "build_cache" / "index.json.hash", sha256_hex(b"another index").encode())


def drop_db_media_types(manifest: Path, signed: bool = False) -> None:
    """Rewrite an index manifest so that no record has a DB media type."""
    document = read_manifest(manifest)
    data = [
        {**e, "mediaType": KEY_INDEX_MEDIA_TYPE}
        if str(e["mediaType"]).startswith("application/vnd.spack.db.")
        else e
        for e in document["data"]
    ]
    write_manifest(manifest, data, signed)


def with_db_version(index_json: Path | bytes, version: str) -> bytes:
    """The index with `database.version` replaced (e.g. "99", unknown to readers)."""
    document = json.loads(_bytes(index_json))
    document["database"]["version"] = version
    return json.dumps(document, separators=(",", ":")).encode()


def write_listed_tags(
    root: Path, tags: Sequence[str], *, specs: int, packages: int, stacks: int, first_seed: int
) -> Path:
    """Tags of the demo generator's build caches (a root and `stacks` stacks each, a seed
    apiece from `first_seed`) under `root`, and `root/listing.json` naming their index
    files, as cache.spack.io's listing does; returns `root`."""
    from cachegql.demo import MirrorConfig, write_mirror

    listing = {}
    for seed, tag in enumerate(tags, start=first_seed):
        config = MirrorConfig(specs=specs, packages=packages, stacks=stacks, seed=seed, tag=tag)
        summary = write_mirror(config, root / tag)
        entries = json.loads(summary.listing.read_text())[tag]
        listing[tag] = [{"label": e["label"], "url": f"{tag}/{e['url']}"} for e in entries]
    (root / "listing.json").write_text(json.dumps(listing))
    return root
