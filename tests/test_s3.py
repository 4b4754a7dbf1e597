"""`cachegql index s3://...` against moto's S3 server on 127.0.0.1 (layouts v2 and v3, a
listing, ETag revalidation, credentials and unsigned reads, refusals), and the
differential test: one generated mirror read from a folder, over http, from an OCI
registry and from S3 answers the API byte for byte the same."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import orjson
import pytest

from cachegql.demo import MirrorConfig, MirrorSummary, write_mirror
from cachegql.index import (
    BuildError,
    NotFoundError,
    ReadError,
    SourceLimits,
    StrictModeError,
    build_index,
)
from cachegql.server.cli import main
from cachegql.server.oci import OciReader
from cachegql.server.push import push_oci, push_s3
from cachegql.server.remote import RemoteOptions, RemoteReader
from cachegql.server.s3 import S3Reader
from tests import mirror_builder as mb
from tests import oracle_queries as oq
from tests.conftest import serving
from tests.http_fixture import MirrorHTTPServer
from tests.remote_servers import MotoServer, Registry, free_port

SECRET = "moto-secret-key-never-printed"


@pytest.fixture(autouse=True)
def aws_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials from the environment (boto3's chain), nothing from the user's files."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("CACHEGQL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, MirrorSummary]:
    out = tmp_path_factory.mktemp("demo")
    config = MirrorConfig(specs=150, packages=30, stacks=2, seed=5, tag="develop")
    return out, write_mirror(config, out)


@pytest.fixture(scope="module")
def moto(
    tmp_path_factory: pytest.TempPathFactory, demo: tuple[Path, MirrorSummary]
) -> Iterator[MotoServer]:
    """moto with the demo uploaded to a private bucket `mirrors` and to a public-read
    bucket `public` (prefix `develop`)."""
    server = MotoServer(tmp_path_factory.mktemp("moto"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        client = boto3.session.Session().client("s3", endpoint_url=server.endpoint)
        client.create_bucket(Bucket="mirrors")
        client.create_bucket(Bucket="public", ACL="public-read")
        push_s3(demo[0], "s3://mirrors/develop", server.endpoint)
        push_s3(demo[0], "s3://public/develop", server.endpoint)
    yield server
    server.close()


def _flags(moto: MotoServer) -> list[str]:
    return ["--s3-endpoint-url", moto.endpoint, "-q"]


@pytest.mark.parametrize("layout", ["mirror", "stacks/root"])
def test_a_mirror_in_a_bucket_is_indexed(
    layout: str,
    moto: MotoServer,
    demo: tuple[Path, MirrorSummary],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"s3://mirrors/develop/{layout}"
    args = ["index", url, "--tag", "develop", "--out", str(tmp_path / "ix"), *_flags(moto)]
    assert main(args) == 0
    assert f", {demo[1].specs} specs," in capsys.readouterr().out


def test_a_listing_in_a_bucket_resolves_relative_urls(
    moto: MotoServer, demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    with S3Reader(None, endpoint_url=moto.endpoint) as reader:
        report = build_index(
            ["s3://mirrors/develop/cache_spack_io_index.json"], tmp_path / "ix", reader=reader
        )
    assert report.caches == len(demo[1].stacks)
    assert report.tags == {"develop": demo[1].specs}


def test_a_listing_of_index_blobs_in_a_bucket_is_read(
    moto: MotoServer, demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    """binaries.spack.io's listing since layout v3: each stack's index blob by its
    `s3://` URL (tests/test_listed_blobs.py reads such listings from folders and http)."""
    root = "s3://mirrors/develop"
    entries = [(label, f"{root}/{path}") for label, path in mb.v3_listing_entries(demo[0])]
    listing = mb.write_listing(tmp_path / "listing.json", {"develop": entries})
    client = boto3.session.Session().client("s3", endpoint_url=moto.endpoint)
    client.put_object(Bucket="mirrors", Key="v3-listing.json", Body=listing.read_bytes())
    with S3Reader(None, endpoint_url=moto.endpoint) as reader:
        report = build_index(["s3://mirrors/v3-listing.json"], tmp_path / "ix", reader=reader)
    assert report.caches == len(demo[1].stacks)
    assert report.tags == {"develop": demo[1].specs}
    with serving(report.folder) as gql:
        nodes = gql.data("{ specs(first: 5) { nodes { specFileUrl } } }")["specs"]["nodes"]
    assert all(n["specFileUrl"].startswith(f"{root}/mirror/v3/manifests/spec/") for n in nodes)


def test_an_unchanged_bucket_is_not_downloaded_again(moto: MotoServer, tmp_path: Path) -> None:
    source = ["s3://mirrors/develop/cache_spack_io_index.json"]
    with S3Reader(tmp_path / "c", endpoint_url=moto.endpoint) as first:
        build_index(source, tmp_path / "ix1", reader=first)
    assert first.downloaded > 1000
    with S3Reader(tmp_path / "c", endpoint_url=moto.endpoint) as second:
        build_index(source, tmp_path / "ix2", reader=second)
    assert second.downloaded == 0  # the listing answered 304, the indexes cached by checksum


def test_a_cached_object_is_sized_again_under_the_limits_of_the_run(
    moto: MotoServer, tmp_path: Path
) -> None:
    """An object answered 304 was kept under an earlier run's limits: under tighter ones
    it is refused as its download would be, and read again under wide ones."""
    url = "s3://mirrors/develop/cache_spack_io_index.json"
    with S3Reader(tmp_path / "c", endpoint_url=moto.endpoint) as first:
        body = first.read(url)
    tight = SourceLimits(max_bytes=len(body) - 1)
    with S3Reader(tmp_path / "c", endpoint_url=moto.endpoint, limits=tight) as again:
        # The cached copy's refusal: a download would say it "announces a body of" N bytes.
        with pytest.raises(ReadError, match=rf"{url}: the body is larger than {len(body) - 1:,}"):
            again.read(url)
        assert again.downloaded == 0
    with S3Reader(tmp_path / "c", endpoint_url=moto.endpoint) as wide:
        assert wide.read(url) == body and wide.downloaded == 0


def test_a_public_bucket_is_read_without_credentials_a_private_one_is_not(
    moto: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with S3Reader(None, endpoint_url=moto.endpoint) as reader:
        assert reader.who == "no credentials (unsigned requests)"
        public = build_index(
            ["s3://public/develop/mirror"], tmp_path / "ix", tag="t", reader=reader
        )
        assert public.specs > 0
        with pytest.raises(BuildError, match=r"access denied \(403\) with no credentials"):
            build_index(["s3://mirrors/develop/mirror"], tmp_path / "ix", tag="t", reader=reader)


def test_a_missing_bucket_or_key_is_a_clear_problem(
    moto: MotoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["index", "s3://no-such-bucket/x.json", "--tag", "t", "--out", str(tmp_path / "ix")]
    assert main([*args, *_flags(moto)]) == 1
    expected = "s3://no-such-bucket/x.json: no such bucket 'no-such-bucket' (NoSuchBucket)"
    assert expected in capsys.readouterr().err
    listing = tmp_path / "listing.json"
    listing.write_bytes(
        orjson.dumps(
            {
                "develop": [
                    {"label": "root", "url": "s3://mirrors/develop/mirror"},
                    {"label": "gone", "url": "s3://mirrors/gone/"},
                ]
            }
        )
    )
    with S3Reader(None, endpoint_url=moto.endpoint) as reader:
        report = build_index([listing], tmp_path / "ix", reader=reader)
        assert [p.path for p in report.problems if "no build cache" in p.message] == [
            "s3://mirrors/gone/"
        ]
        with pytest.raises(StrictModeError, match="s3://mirrors/gone/"):
            build_index([listing], tmp_path / "ix2", reader=reader, strict=True)


def test_refused_credentials_are_named_without_their_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that checks signatures (moto with authentication on) refuses unknown keys."""
    monkeypatch.setenv("INITIAL_NO_AUTH_ACTION_COUNT", "0")
    server = MotoServer(tmp_path / "private")
    try:
        args = ["index", "s3://private/mirror/index.json", "--tag", "t"]
        code = main([*args, "--out", str(tmp_path / "ix"), *_flags(server)])
        err = capsys.readouterr().err
    finally:
        server.close()
    assert code == 1
    assert "s3://private/mirror/index.json: access denied" in err
    assert "with credentials from boto3's chain (env)" in err
    assert SECRET not in err


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    running = Registry(tmp_path_factory.mktemp("registry"))
    yield running
    running.close()


_QUERY = """{
  stacks(tag: "develop") { name numSpecs numPackages }
  specs(tag: "develop", first: 1000) {
    totalCount
    edges { node { hash name version os platform target stacks format namespace sizeBytes
      compiler { name version } dependencies { name hash deptypes } } }
  }
}"""


def test_every_kind_of_source_gives_the_same_answers(
    moto: MotoServer, registry: Registry, demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    out, summary = demo
    with OciReader(None) as pusher:
        oci_listing = push_oci(
            pusher, out, registry.url("same"), [s for s, _ in summary.stacks], summary.tag
        )
    answers = {}
    options = RemoteOptions(tmp_path / "cache", s3_endpoint_url=moto.endpoint)
    with MirrorHTTPServer(out) as http, RemoteReader(options) as reader:
        sources = {
            "folder": str(out / "cache_spack_io_index.json"),
            "http": http.url_for("cache_spack_io_index.json"),
            "s3": "s3://mirrors/develop/cache_spack_io_index.json",
            "oci": str(oci_listing),
        }
        for kind, source in sources.items():
            build_index([source], tmp_path / kind, reader=reader)
            # The folder's answers are checked against the stock execution; the others
            # against the folder's, byte for byte.
            differential = kind == "folder"
            with serving(tmp_path / kind, max_first=1000, differential=differential) as client:
                answers[kind] = (
                    [orjson.dumps(client.data(_QUERY))]
                    + [
                        orjson.dumps(client(_CORPUS, spec=case.filter, package={}))
                        for case in oq.SPEC_FILTERS
                    ]
                    + [
                        orjson.dumps(client(_CORPUS, spec={}, package=case.filter))
                        for case in oq.PACKAGE_FILTERS
                    ]
                )
    assert len(orjson.loads(answers["folder"][0])["specs"]["edges"]) == summary.specs
    assert sum(b'"totalCount":0' not in answer for answer in answers["folder"]) > 50
    for kind in ("http", "s3", "oci"):
        for case, (mine, folders) in enumerate(zip(answers[kind], answers["folder"], strict=True)):
            assert mine == folders, (kind, case)


# The API tests' filter tables (tests/oracle_queries.py), each asked of every kind of source.
_CORPUS = """query($spec: SpecFilter, $package: PackageFilter) {
  specs(tag: "develop", filter: $spec, first: 50) {
    totalCount nodes { hash name stacks } facets { packages { value count } } }
  packages(tag: "develop", filter: $package, first: 20) {
    totalCount nodes { name numSpecs } } }"""


_URLS = """{ specs(tag: "develop", first: 1000) { edges { node {
  hash name version specFileUrl tarballUrl } } } }"""


def test_specs_know_where_spack_fetches_their_binaries(
    moto: MotoServer, registry: Registry, demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    out, summary = demo
    with OciReader(None) as pusher:
        push_oci(pusher, out, registry.url("urls"), [s for s, _ in summary.stacks], summary.tag)
    options = RemoteOptions(None, s3_endpoint_url=moto.endpoint)
    oci = registry.url("urls")
    with MirrorHTTPServer(out) as http, RemoteReader(options) as reader:
        sources = {
            "folder": (str(out / "mirror"), None),
            "s3-v3": ("s3://mirrors/develop/mirror", "s3://mirrors/develop/mirror"),
            # A password in the URL is used to read, never kept in the index nor shown.
            "http-v2": (
                http.url_for("stacks/root").replace("://", "://reader:hunter2@"),
                http.url_for("stacks/root/build_cache"),
            ),
            "oci": (oci, oci),
        }
        for kind, (source, base) in sources.items():
            build_index([source], tmp_path / kind, tag="develop", reader=reader)
            with serving(tmp_path / kind, max_first=1000) as client:
                nodes = [e["node"] for e in client.data(_URLS)["specs"]["edges"]]
            assert len(nodes) == summary.specs
            for node in nodes:
                spec_file, tarball = node["specFileUrl"], node["tarballUrl"]
                name, version, digest = node["name"], node["version"], node["hash"]
                if base is None:  # a local cache: no URL
                    assert spec_file is None and tarball is None
                elif kind == "oci":
                    assert spec_file == tarball == f"{oci}:{name}-{version}-{digest}.spack"
                elif kind == "s3-v3":  # the spec manifest Spack reads first; it is there
                    assert spec_file == (
                        f"{base}/v3/manifests/spec/{name}/{name}-{version}-{digest}"
                        ".spec.manifest.json"
                    )
                    assert tarball is None
                else:
                    assert spec_file.startswith(f"{base}/linux-")
                    assert spec_file.endswith(f"-{name}-{version}-{digest}.spec.json.sig")
                    assert tarball.startswith(f"{base}/linux-")
                    stem = spec_file[len(base) + 1 :].removesuffix(".spec.json.sig")
                    assert tarball.endswith(f"/{name}-{version}/{stem}.spack")
            for path in (tmp_path / kind).resolve().rglob("*"):
                assert path.is_dir() or b"hunter2" not in path.read_bytes(), path
            if kind == "s3-v3":
                manifest = orjson.loads(reader.read(nodes[0]["specFileUrl"]))
                assert manifest["data"]


def test_odd_locations_and_a_server_that_is_not_there_are_named(
    moto: MotoServer, tmp_path: Path
) -> None:
    with S3Reader(tmp_path / "c", endpoint_url=moto.endpoint) as reader:
        with pytest.raises(ReadError, match="not an S3 URL"):
            reader.read("s3:///key")
        with pytest.raises(NotFoundError, match="a prefix, not an object"):
            reader.read("s3://mirrors/develop/")
        with pytest.raises(ReadError, match=r"S3 error InvalidBucketName|no such bucket"):
            reader.read("s3://Not_A_Bucket/key")
        # A v3 mirror twice: the second read of its index blob is the cached copy.
        for _ in range(2):
            build_index(["s3://mirrors/develop/mirror"], tmp_path / "ix", tag="t", reader=reader)
        assert any((tmp_path / "c" / "blobs").iterdir())
    with (
        S3Reader(None, endpoint_url=f"http://127.0.0.1:{free_port()}", retries=0) as reader,
        pytest.raises(ReadError, match="cannot read"),
    ):
        reader.read("s3://mirrors/develop/cache_spack_io_index.json")


def test_demo_data_uploads_its_mirror_to_a_bucket(
    moto: MotoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["demo-data", "--mirror", "--specs", "40", "--packages", "20", "--stacks", "1"]
    url = "s3://mirrors/from-cli"
    flags = ["--push-to", url, "--s3-endpoint-url", moto.endpoint]
    assert main([*args, "--out", str(tmp_path / "demo"), *flags]) == 0
    assert f"files to {url}" in capsys.readouterr().out
    with S3Reader(None, endpoint_url=moto.endpoint) as reader:
        report = build_index([f"{url}/cache_spack_io_index.json"], tmp_path / "ix", reader=reader)
    assert report.tags == {"develop": 40}
    flags = ["--push-to", "s3://no-such-bucket/x", "--s3-endpoint-url", moto.endpoint]
    assert main([*args, "--out", str(tmp_path / "again"), *flags]) == 1
    assert "error: cannot push to s3://no-such-bucket/x" in capsys.readouterr().err


def test_an_object_over_the_size_limit_is_refused_before_it_is_read(
    moto: MotoServer, tmp_path: Path
) -> None:
    """S3 objects obey the source limits like http(s) bodies (docs/indexing/remote.md)."""
    client = boto3.session.Session().client("s3", endpoint_url=moto.endpoint)
    client.put_object(Bucket="mirrors", Key="big/index.json", Body=bytes(3 << 20))
    limits = SourceLimits(max_bytes=1 << 20)
    with S3Reader(None, endpoint_url=moto.endpoint, limits=limits) as reader:
        with pytest.raises(ReadError, match=r"announces a body of 3,145,728 bytes, larger"):
            reader.read("s3://mirrors/big/index.json")
        with pytest.raises(ReadError, match="its source not read within"):
            reader.read("s3://mirrors/develop/cache_spack_io_index.json", time.monotonic() - 1)
