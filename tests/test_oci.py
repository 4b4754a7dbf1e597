"""`cachegql index oci://...` against real registries on 127.0.0.1 (tests/remote_servers.py):
anonymous, basic (htpasswd) and bearer-token authentication, revalidation by digest,
clear errors, and no secret in any output or in the index."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from cachegql.demo import MirrorConfig, MirrorSummary, write_mirror
from cachegql.index import BuildError, ReadError, SourceLimits, StrictModeError, build_index
from cachegql.server.cli import main
from cachegql.server.oci import OciReader
from cachegql.server.push import push_index_image, push_oci
from tests.http_fixture import MirrorHTTPServer
from tests.remote_servers import PASSWORD, USERNAME, Registry, TokenServer, free_port

SPECS = 120


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, MirrorSummary]:
    out = tmp_path_factory.mktemp("demo")
    config = MirrorConfig(specs=SPECS, packages=30, stacks=2, seed=3, tag="develop")
    return out, write_mirror(config, out)


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    running = Registry(tmp_path_factory.mktemp("registry"))
    yield running
    running.close()


@pytest.fixture(scope="module")
def pushed(registry: Registry, demo: tuple[Path, MirrorSummary]) -> Path:
    """The demo mirror's stacks in the anonymous registry; their listing."""
    out, summary = demo
    with OciReader(None) as reader:
        return push_oci(
            reader, out, registry.url("demo/cache"), [s for s, _ in summary.stacks], "develop"
        )


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CACHEGQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))


def _specs(printed: str) -> int:
    """The spec count of `cachegql index`'s summary line."""
    match = re.search(r", (\d+) specs,", printed)
    assert match, printed
    return int(match.group(1))


def test_a_repository_is_indexed_anonymously(
    registry: Registry,
    pushed: Path,
    demo: tuple[Path, MirrorSummary],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = registry.url("demo/cache")
    assert main(["index", root, "--tag", "develop", "--out", str(tmp_path / "ix"), "-q"]) == 0
    assert _specs(capsys.readouterr().out) == demo[1].specs


def test_a_listing_of_repositories_reads_every_stack(pushed: Path, tmp_path: Path) -> None:
    with OciReader(None) as reader:
        report = build_index([pushed], tmp_path / "ix", reader=reader)
    assert report.caches == 3
    assert report.tags["develop"] == SPECS


def test_an_unchanged_repository_is_not_downloaded_again(
    registry: Registry, pushed: Path, tmp_path: Path
) -> None:
    root = registry.url("demo/cache")
    with OciReader(tmp_path / "cache") as first:
        build_index([root], tmp_path / "ix1", tag="develop", reader=first)
    assert first.downloaded > 1000
    with OciReader(tmp_path / "cache") as second:
        build_index([root], tmp_path / "ix2", tag="develop", reader=second)
    assert second.downloaded == 0  # the manifest answered 304, the index blob cached by digest


def test_a_moved_tag_is_read_anew(registry: Registry, tmp_path: Path) -> None:
    root = registry.url("moving")
    index = orjson.dumps({"database": {"version": "8", "installs": {}}})
    with OciReader(None) as pusher, OciReader(tmp_path / "cache") as reader:
        push_index_image(pusher, root, index)
        first = reader.read(root + ":index.spack")
        push_index_image(pusher, root, index + b" ")  # the tag now names another manifest
        second = reader.read(root + ":index.spack")
        assert reader.read(root + ":index.spack") == second  # 304: the cached copy
    assert first != second


def test_cached_copies_are_sized_again_under_the_limits_of_the_run(
    registry: Registry, pushed: Path, tmp_path: Path
) -> None:
    """A manifest answered 304 and a blob found in the download cache by its digest were
    kept under the limits of an earlier run: each is refused, as a download of its size
    would be, under a run's tighter ones (docs/indexing/remote.md)."""
    root = registry.url("demo/cache")
    with OciReader(tmp_path / "cache") as first:
        manifest = first.read(root + ":index.spack")
        digest = orjson.loads(manifest)["layers"][0]["digest"]
        blob = first.read_verified(f"{root}@{digest}", digest[7:])
    tight = SourceLimits(max_bytes=min(len(manifest), len(blob)) - 1)
    with OciReader(tmp_path / "cache", limits=tight) as again:
        # The cached copies' refusals: a download would say it "announces a body of" N bytes.
        with pytest.raises(ReadError, match=r":index.spack: the body is larger than"):
            again.read(root + ":index.spack")
        with pytest.raises(ReadError, match=rf"@{digest}: the body is larger than"):
            again.read_verified(f"{root}@{digest}", digest[7:])
        assert again.downloaded == 0  # refused from the cache, not downloaded again
    with OciReader(tmp_path / "cache") as wide:
        assert wide.read(root + ":index.spack") == manifest
        assert wide.read_verified(f"{root}@{digest}", digest[7:]) == blob


def test_a_missing_tag_or_repository_is_a_clear_problem(
    registry: Registry, pushed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = registry.url("no/such/repo")
    code = main(["index", missing, "--tag", "develop", "--out", str(tmp_path / "ix"), "-q"])
    assert code == 1
    err = capsys.readouterr().err
    assert f"{missing}:index.spack" in err
    assert "HTTP 404 Not Found: manifest unknown (no tag index.spack)" in err
    # The rest still loads; --strict fails instead.
    good = registry.url("demo/cache")
    listing = tmp_path / "listing.json"
    listing.write_bytes(
        orjson.dumps({"develop": [{"label": "root", "url": good}, {"label": "x", "url": missing}]})
    )
    with OciReader(None) as reader:
        report = build_index([listing], tmp_path / "ix", reader=reader)
        assert report.tags == {"develop": SPECS}
        assert [p.path for p in report.problems if "manifest unknown" in p.message] == [missing]
        with pytest.raises(StrictModeError, match="no/such/repo"):
            build_index([listing], tmp_path / "ix2", reader=reader, strict=True)


def test_a_blob_that_is_not_what_its_digest_says_is_refused(
    registry: Registry, pushed: Path
) -> None:
    with OciReader(None) as reader:
        manifest = orjson.loads(reader.read(registry.url("demo/cache") + ":index.spack"))
        digest = manifest["layers"][0]["digest"]
        blob = registry.url("demo/cache") + "@" + digest
        with pytest.raises(ReadError, match=r"digest mismatch: expected sha256:0{64}"):
            reader.read_verified(blob, "0" * 64)


@pytest.fixture(scope="module")
def basic_registry(
    tmp_path_factory: pytest.TempPathFactory, demo: tuple[Path, MirrorSummary]
) -> Iterator[Registry]:
    running = Registry(tmp_path_factory.mktemp("basic"), auth="htpasswd")
    yield running
    running.close()


def _pushed_with_credentials(registry: Registry, index_json: bytes) -> str:
    root = registry.url("private/cache")
    os.environ["TEST_OCI_USER"], os.environ["TEST_OCI_PASS"] = USERNAME, PASSWORD
    with OciReader(
        None, username_variable="TEST_OCI_USER", password_variable="TEST_OCI_PASS"
    ) as reader:
        push_index_image(reader, root, index_json)
    return root


@pytest.mark.parametrize("kind", ["basic", "bearer"])
def test_credentials_from_variables_named_on_the_command_line(
    kind: str,
    basic_registry: Registry,
    demo: tuple[Path, MirrorSummary],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    token_server = TokenServer() if kind == "bearer" else None
    registry = (
        basic_registry
        if token_server is None
        else Registry(tmp_path / "bearer", auth=token_server.url)
    )
    try:
        index_json = (demo[0] / "stacks" / "root" / "build_cache" / "index.json").read_bytes()
        root = _pushed_with_credentials(registry, index_json)
        out = tmp_path / "ix"
        # Without a credential: refused, and the message says what to give.
        monkeypatch.delenv("TEST_OCI_USER")
        monkeypatch.delenv("TEST_OCI_PASS")
        assert main(["index", root, "--tag", "develop", "--out", str(out), "-q", "--strict"]) == 1
        err = capsys.readouterr().err
        assert root in err
        assert ("--oci-username-variable" in err) or ("refused anonymously" in err)
        # A wrong password: the message names the username and where it came from, never it.
        monkeypatch.setenv("U", USERNAME)
        monkeypatch.setenv("P", "wrong-" + PASSWORD)
        flags = ["--oci-username-variable", "U", "--oci-password-variable", "P"]
        assert main(["index", root, "--tag", "develop", "--out", str(out), "-q", *flags]) == 1
        err = capsys.readouterr().err
        assert "username 'alice' from environment variables U/P" in err
        assert "401" in err
        assert PASSWORD not in err
        # The right one: indexed, and the password is nowhere in the output or the index.
        monkeypatch.setenv("P", PASSWORD)
        assert main(["index", root, "--tag", "develop", "--out", str(out), "-q", *flags]) == 0
        printed = capsys.readouterr()
        assert PASSWORD not in printed.out + printed.err
        assert _specs(printed.out) == demo[1].specs
        for path in out.resolve().rglob("*"):
            if path.is_file():
                assert PASSWORD.encode() not in path.read_bytes(), path
        if token_server is not None:  # the registry's challenge sent us to the token service
            assert any(r["authorization"].startswith("Basic ") for r in token_server.requests)
    finally:
        if token_server is not None:
            registry.close()
            token_server.close()


def test_credentials_from_docker_config(
    basic_registry: Registry,
    demo: tuple[Path, MirrorSummary],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    index_json = (demo[0] / "stacks" / "root" / "build_cache" / "index.json").read_bytes()
    root = _pushed_with_credentials(basic_registry, index_json)
    docker = tmp_path / "docker"
    docker.mkdir()
    auth = base64.b64encode(f"{USERNAME}:{PASSWORD}".encode()).decode()
    (docker / "config.json").write_bytes(
        orjson.dumps({"auths": {basic_registry.host: {"auth": auth}}})
    )
    assert main(["index", root, "--tag", "develop", "--out", str(tmp_path / "ix"), "-q"]) == 0
    assert _specs(capsys.readouterr().out) == demo[1].specs


def test_a_credential_variable_that_is_not_set_is_named(
    basic_registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = basic_registry.url("private/cache")
    flags = ["--oci-username-variable", "NO_SUCH_U", "--oci-password-variable", "NO_SUCH_P"]
    assert main(["index", root, "--tag", "t", "--out", str(tmp_path / "ix"), "-q", *flags]) == 1
    assert "environment variable NO_SUCH_U, NO_SUCH_P is not set" in capsys.readouterr().err


# --- A registry's failures, served from a folder (tests/http_fixture.py): /v2/NAME/manifests/TAG
# and /v2/NAME/blobs/DIGEST are files, so that a manifest can be anything a test needs.


def _static_registry(root: Path, manifest: bytes, blobs: dict[str, bytes]) -> None:
    (root / "v2" / "repo" / "manifests").mkdir(parents=True)
    (root / "v2" / "repo" / "manifests" / "index.spack").write_bytes(manifest)
    (root / "v2" / "repo" / "blobs").mkdir()
    for digest, data in blobs.items():
        (root / "v2" / "repo" / "blobs" / digest).write_bytes(data)


def _index_manifest(blob: bytes, digest: str | None = None) -> bytes:
    digest = digest or "sha256:" + hashlib.sha256(blob).hexdigest()
    return orjson.dumps({"schemaVersion": 2, "layers": [{"digest": digest, "size": len(blob)}]})


def _blob_digest(blob: bytes) -> str:
    return "sha256:" + hashlib.sha256(blob).hexdigest()


_DATABASE = orjson.dumps({"database": {"version": "8", "installs": {}}})


@pytest.mark.parametrize(
    ("manifest", "blob", "message"),
    [
        (b"not json", b"", "not valid JSON"),
        (orjson.dumps({"layers": []}), b"", "not an image manifest with layers"),
        (
            _index_manifest(b"x", "md5:0011"),
            b"",
            "the index layer's digest 'md5:0011' is not sha256",
        ),
        (_index_manifest(b"[1]"), b"[1]", "oci+http://"),
    ],
    ids=["not-json", "no-layers", "not-sha256", "not-a-database"],
)
def test_a_broken_index_image_is_a_clear_problem(
    manifest: bytes, blob: bytes, message: str, tmp_path: Path
) -> None:
    _static_registry(tmp_path / "www", manifest, {_blob_digest(blob): blob} if blob else {})
    with MirrorHTTPServer(tmp_path / "www") as http, OciReader(None) as reader:
        root = f"oci+http://127.0.0.1:{http.port}/repo"
        with pytest.raises(BuildError, match=re.escape(message)):
            build_index([root], tmp_path / "ix", tag="t", reader=reader)


def test_a_gzipped_index_layer_is_read(tmp_path: Path) -> None:
    blob = gzip.compress(_DATABASE)
    _static_registry(tmp_path / "www", _index_manifest(blob), {_blob_digest(blob): blob})
    seen: list[tuple[int, int]] = []
    with MirrorHTTPServer(tmp_path / "www") as http:
        root = f"oci+http://127.0.0.1:{http.port}/repo"
        with OciReader(
            None, progress=lambda _: lambda done, total: seen.append((done, total))
        ) as r:
            data = r.read_verified(f"{root}@{_blob_digest(blob)}", _blob_digest(blob)[7:])
    assert data == blob
    assert seen and seen[-1][0] == len(blob)
    with MirrorHTTPServer(tmp_path / "www") as http, OciReader(None) as reader:
        root = f"oci+http://127.0.0.1:{http.port}/repo"
        with pytest.raises(BuildError, match="no specs found"):  # read: an empty database
            build_index([root], tmp_path / "ix", tag="t", reader=reader)


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        # 64 MiB of spaces in 64 KiB: past 16 MiB, over 200 times its size
        (gzip.compress(b" " * (64 << 20)), r"gzip content .*expan.*; not read"),
        (gzip.compress(_DATABASE)[:-12], "gzip content ends before its end marker"),
        (b"\x1f\x8b" + b"not deflate at all", "not valid gzip content"),
    ],
    ids=["bomb", "cut-short", "not-gzip"],
)
def test_a_gzipped_index_layer_is_inflated_within_the_limits(
    blob: bytes, message: str, tmp_path: Path
) -> None:
    """The layer's digest proves only that it is the layer the manifest names: a hostile
    registry names a bomb as easily as an index."""
    _static_registry(tmp_path / "www", _index_manifest(blob), {_blob_digest(blob): blob})
    with MirrorHTTPServer(tmp_path / "www") as http, OciReader(None) as reader:
        root = f"oci+http://127.0.0.1:{http.port}/repo"
        with pytest.raises(BuildError, match=message) as raised:
            build_index([root], tmp_path / "ix", tag="t", reader=reader)
    assert f"{root}@{_blob_digest(blob)}" in str(raised.value)


def test_transient_failures_are_retried_then_named(tmp_path: Path) -> None:
    blob = _DATABASE
    _static_registry(tmp_path / "www", _index_manifest(blob), {_blob_digest(blob): blob})
    with MirrorHTTPServer(tmp_path / "www") as http:
        manifest = f"oci+http://127.0.0.1:{http.port}/repo:index.spack"
        http.server_error("/v2/repo/manifests/", times=1)
        with OciReader(None, retries=2, backoff=0) as reader:
            assert orjson.loads(reader.read(manifest))["layers"]
        http.server_error("/v2/repo/manifests/")
        with (
            OciReader(None, retries=1, backoff=0) as reader,
            pytest.raises(ReadError, match=r"HTTP 500 Internal Server Error"),
        ):
            reader.read(manifest)
        http.clear_failures()
        http.stall("/v2/repo/manifests/", after_bytes=0, seconds=5)
        with (
            OciReader(None, timeout=0.3, retries=1, backoff=0) as reader,
            pytest.raises(ReadError, match=r"timed out \(ReadTimeout\) after 2 attempts"),
        ):
            reader.read(manifest)
    port = http.port  # closed now: nothing listens there
    with OciReader(None, retries=1, backoff=0) as reader:
        with pytest.raises(ReadError, match=r"cannot connect to http://127\.0\.0\.1"):
            reader.read(f"oci+http://127.0.0.1:{port}/repo:index.spack")
        with pytest.raises(ReadError, match="not an OCI reference"):
            reader.read("oci://registry-without-a-repository")


def test_demo_data_pushes_its_mirror_to_a_registry(
    registry: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = registry.url("demo/pushed")
    args = ["demo-data", "--mirror", "--specs", "60", "--packages", "20", "--stacks", "1"]
    assert main([*args, "--out", str(tmp_path / "demo"), "--push-to", url]) == 0
    assert f"pushed 2 index.spack images to {url}" in capsys.readouterr().out
    with OciReader(None) as reader:
        report = build_index([tmp_path / "demo" / "oci_index.json"], tmp_path / "ix", reader=reader)
    assert report.tags == {"develop": 60}
    assert main([*args, "--out", str(tmp_path / "again"), "--push-to", "ftp://x/y"]) == 1
    assert "expected oci://, oci+http:// or s3://" in capsys.readouterr().err
    unreachable = f"oci+http://127.0.0.1:{free_port()}/demo"
    assert main([*args, "--out", str(tmp_path / "third"), "--push-to", unreachable]) == 1
    assert "error: cannot push: " in capsys.readouterr().err
