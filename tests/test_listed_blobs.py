"""Listings that name index blobs, as binaries.spack.io's generator of
`cache_spack_io_index.json` names them since layout v3
(`<mirror>/blobs/sha256/<checksum[:2]>/<checksum>`), or the index manifests that name the
blobs: the same answers as the listing of the same indexes as files, each blob checked
against its checksum, binaries found in the blob's mirror, parts taken when read again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cachegql.demo import MirrorConfig, MirrorSummary, write_mirror
from cachegql.index import BuildReport, StrictModeError, build_index
from cachegql.index.ingest import digest_memo
from cachegql.index.ingest.listed_indexes import index_blob, is_index_file
from cachegql.index.ingest.listings import mapped_url
from cachegql.index.ingest.locations import Location
from cachegql.server.cli import main
from cachegql.server.fetch import HttpReader
from tests import mirror_builder as mb
from tests.conftest import serving
from tests.http_fixture import MirrorHTTPServer

ANSWERS = (
    "{ stacks { name numSpecs numPackages } specs(first: 500) { totalCount nodes { hash name "
    "version stacks sizeBytes specFileUrl variants { name value } dependencies { hash deptypes } "
    "} } }"
)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cachegql index` keeps downloads in a cache of its own per test, not the user's."""
    monkeypatch.setenv("CACHEGQL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, MirrorSummary]:
    out = tmp_path / "demo"
    config = MirrorConfig(specs=150, packages=30, stacks=3, seed=7, tag="develop")
    return out, write_mirror(config, out)


def _write_listing(out: Path, name: str, manifests: bool = False) -> Path:
    """A listing of the demo's stacks naming their index blobs (or index manifests)."""
    return mb.write_listing(out / name, {"develop": mb.v3_listing_entries(out, manifests)})


def _answers(build: BuildReport) -> Any:
    with serving(build.folder) as client:
        return client.data(ANSWERS)


def _messages(build: BuildReport) -> list[str]:
    return [problem.message for problem in build.problems]


def test_a_listing_of_index_blobs_answers_as_one_of_index_files(
    demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    out, summary = demo
    files = build_index([out / "cache_spack_io_index.json"], tmp_path / "files")
    blobs = build_index([_write_listing(out, "blobs.json")], tmp_path / "blobs")
    manifests = build_index([_write_listing(out, "m.json", manifests=True)], tmp_path / "m")
    assert files.tags == blobs.tags == manifests.tags == {"develop": summary.specs}
    assert blobs.caches == manifests.caches == len(mb.v3_listing_entries(out))
    assert _messages(files) == _messages(blobs) == _messages(manifests)
    assert _answers(files) == _answers(blobs) == _answers(manifests)


def test_a_blob_that_is_not_what_its_name_says_is_a_problem(
    demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    out, _ = demo
    listing = _write_listing(out, "blobs.json")
    label, path = mb.v3_listing_entries(out)[1]
    blob = out / path
    blob.write_bytes(blob.read_bytes() + b" ")
    report = build_index([listing], tmp_path / "ix")
    assert report.caches == len(mb.v3_listing_entries(out)) - 1  # the rest still loads
    [problem] = [p for p in report.problems if p.path == str(blob)]
    assert problem.message.startswith(f"skipped (stack {label} of tag develop): checksum mismatch")
    with pytest.raises(StrictModeError, match="checksum mismatch"):
        build_index([listing], tmp_path / "strict", strict=True)


def test_blobs_read_again_are_taken_as_read_unless_damaged(
    demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    """One stack gone from the listing: the tag is made again, the other blobs taken from
    their parts; a blob damaged since its part was written is read, and refused, as a full
    build refuses it."""
    out, _ = demo
    listing = _write_listing(out, "blobs.json")
    first = build_index([listing], tmp_path / "ix")
    document = json.loads(listing.read_text())
    entries = document["develop"]
    entries.pop()
    listing.write_text(json.dumps(document))
    again = build_index([listing], tmp_path / "ix")
    assert again.reused == [] and again.parts_taken == len(entries)
    full = build_index([listing], tmp_path / "full", full=True)
    assert _answers(again) == _answers(full) != _answers(first)

    damaged = out / entries[1]["url"]
    damaged.write_bytes(damaged.read_bytes() + b" ")
    entries.pop()
    listing.write_text(json.dumps(document))
    last = build_index([listing], tmp_path / "ix")
    assert last.parts_taken == len(entries) - 1
    refused = build_index([listing], tmp_path / "full2", full=True)
    assert _messages(last) == _messages(refused)
    assert any("checksum mismatch" in message for message in _messages(last))
    assert _answers(last) == _answers(refused)


def test_an_unchanged_blob_is_known_by_its_status(
    demo: tuple[Path, MirrorSummary],
    tmp_path: Path,
    reads: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listed blob verified against its name is recorded by its status, as a listed
    index file is: a rebuild with nothing changed reads no blob (before: each hashed whole
    for the tag's fingerprint); one rewritten since, its size and time kept, is read and
    refused."""
    monkeypatch.setattr(digest_memo, "SETTLED_NS", 0)  # the files are seconds old
    out, _ = demo
    listing = _write_listing(out, "blobs.json")
    blobs = [str(out / path) for _, path in mb.v3_listing_entries(out)]
    build_index([listing], tmp_path / "ix")
    reads.clear()
    again = build_index([listing], tmp_path / "ix")
    assert again.reused == ["develop"]
    assert [r for r in reads if r in blobs] == []
    damaged = Path(blobs[1])
    before = damaged.stat()
    data = damaged.read_bytes()
    damaged.write_bytes(data[:-2] + (b"  " if data[-2:] != b"  " else b"\n\n"))
    os.utime(damaged, ns=(before.st_atime_ns, before.st_mtime_ns))
    reads.clear()
    last = build_index([listing], tmp_path / "ix")
    assert last.reused == [] and {r for r in reads if r in blobs} == {str(damaged)}
    [refused] = [p for p in last.problems if "checksum mismatch" in p.message]
    assert refused.path == str(damaged)


def test_a_blob_holding_another_blobs_bytes_is_not_taken_from_that_part(
    demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    """A blob's file holding the bytes of another listed blob, whose part there is: the
    part names those bytes, not what the blob's name says, so it is not taken; the blob
    is read and refused, as a full build refuses it."""
    out, _ = demo
    listing = _write_listing(out, "blobs.json")
    build_index([listing], tmp_path / "ix")
    entries = json.loads(listing.read_text())["develop"]
    (out / entries[1]["url"]).write_bytes((out / entries[2]["url"]).read_bytes())
    again = build_index([listing], tmp_path / "ix")
    full = build_index([listing], tmp_path / "full", full=True)
    assert again.parts_taken == len(entries) - 1
    assert _messages(again) == _messages(full)
    [refused] = [p for p in again.problems if "checksum mismatch" in p.message]
    assert refused.path == str(out / entries[1]["url"])
    assert _answers(again) == _answers(full)


def test_over_http_binaries_are_found_in_the_blobs_mirror(
    demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    out, summary = demo
    _write_listing(out, "blobs.json")
    with MirrorHTTPServer(out) as http, HttpReader(None) as reader:
        report = build_index([http.url_for("blobs.json")], tmp_path / "ix", reader=reader)
        mirror = http.url_for("mirror")
    assert report.tags == {"develop": summary.specs}
    urls = {node["specFileUrl"] for node in _answers(report)["specs"]["nodes"]}
    assert urls and all(u.startswith(f"{mirror}/v3/manifests/spec/") for u in urls)


@pytest.mark.parametrize(
    ("url", "index", "root"),
    [
        (
            "https://h/m/blobs/sha256/ab/" + "ab" * 32 + "?X-Amz-Signature=1%2F2",
            True,
            "https://h/m",
        ),
        ("https://h/m/build_cache/index.json?token=a/b#top", True, None),
        ("https://h/m/v3/manifests/index/index.manifest.json?t=1", True, None),
        ("https://h/m?token=index.json", False, None),
        ("/local/m/blobs/sha256/ab/" + "ab" * 32, True, "/local/m"),
    ],
)
def test_what_a_listed_url_names_is_read_from_its_path_not_its_query(
    url: str, index: bool, root: str | None
) -> None:
    location = Location(url)
    assert is_index_file(location) is index
    blob = index_blob(location)
    assert (blob and str(blob.root)) == root
    if location.is_url:  # a query is never carried to the locations found from it
        assert location.join("v3", "x").text == url.split("?")[0] + "/v3/x"


def test_listed_urls_with_a_query_are_read_as_the_indexes_they_name(
    demo: tuple[Path, MirrorSummary], tmp_path: Path
) -> None:
    """A listing of presigned blob URLs (`?X-Amz-Signature=...`) or of index files with a
    token (`?token=...`): each read as the index its path names, with its query (before:
    tried as a mirror root, `<url>?...sig/v3/manifests/...`), and no URL the index publishes
    carries the query."""
    out, summary = demo
    files = json.loads((out / "cache_spack_io_index.json").read_text())["develop"]
    signature = "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=0a%2F1b"
    with MirrorHTTPServer(out) as http, HttpReader(None) as reader:
        blobs = [(label, http.url_for(p) + signature) for label, p in mb.v3_listing_entries(out)]
        tokens = [(e["label"], http.url_for(e["url"]) + "?token=a/b") for e in files]
        plain = [(e["label"], http.url_for(e["url"])) for e in files]
        root = [("root", http.url_for("mirror") + "?token=c")]  # a v3 mirror root
        built = {}
        for name, entries in (("blobs", blobs), ("tokens", tokens), ("plain", plain), ("v3", root)):
            listing = mb.write_listing(tmp_path / f"{name}.json", {"develop": entries})
            built[name] = build_index([listing], tmp_path / name, reader=reader)
            assert built[name].tags == {"develop": summary.specs}
        queries = {e.query for e in http.requests("/", method="GET")}
    assert queries == {"", signature[1:], "token=a/b"}  # the root's token: not carried on
    assert _messages(built["tokens"]) == _messages(built["plain"])
    answers = {name: _answers(build) for name, build in built.items()}
    assert answers["tokens"] == answers["plain"]
    mirror = http.url_for("mirror/v3/manifests/spec/")
    for name in ("blobs", "tokens", "v3"):
        assert "?" not in json.dumps(answers[name])
        manifest = json.loads((tmp_path / name / "manifest.json").read_text())
        assert "?" not in json.dumps(manifest), name  # sources and mirrors kept
    for name in ("blobs", "v3"):
        assert all(n["specFileUrl"].startswith(mirror) for n in answers[name]["specs"]["nodes"])


def test_only_an_http_url_has_a_query_and_a_local_copy_has_none() -> None:
    """An `s3://` key's `?` and `#` are part of it; `--map-url` to a local folder drops an
    http(s) URL's query (a signature is for the network's copy), to another URL keeps it."""
    key = Location("s3://bucket/k#1/index.json")
    assert key.name == "index.json" and key.without_query == key.text
    assert key.join("x").text == "s3://bucket/k#1/index.json/x"
    signed = "https://h/m/build_cache/index.json?X-Amz-Signature=1"
    assert mapped_url(signed, (("https://h/", "/copy/"),)) == "/copy/m/build_cache/index.json"
    assert mapped_url(signed, (("https://h/", "http://mirror/"),)).endswith("?X-Amz-Signature=1")


def test_a_blob_or_manifest_given_alone_is_one_build_cache(
    demo: tuple[Path, MirrorSummary], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cachegql index` given a v3 index blob or manifest itself (a URL copied from a
    listing), with its tag: the same tag as its mirror's root gives."""
    out, summary = demo
    _, blob = mb.v3_listing_entries(out)[0]
    _, manifest = mb.v3_listing_entries(out, manifests=True)[0]
    with MirrorHTTPServer(out) as http:
        for source in (out / blob, out / manifest, http.url_for(blob), http.url_for(manifest)):
            args = ["index", str(source), "--tag", "develop", "--out", str(tmp_path / "ix"), "-q"]
            assert main(args) == 0, capsys.readouterr().err
            assert f", {summary.specs} specs," in capsys.readouterr().out
    with pytest.MonkeyPatch.context() as patch:  # paths from the mirror itself
        patch.chdir(out / "mirror")
        for source in (blob.removeprefix("mirror/"), manifest.removeprefix("mirror/")):
            args = ["index", source, "--tag", "develop", "--out", str(tmp_path / "ix"), "-q"]
            assert main(args) == 0, capsys.readouterr().err
            assert f", {summary.specs} specs," in capsys.readouterr().out
    damaged = out / blob
    damaged.write_bytes(damaged.read_bytes() + b" ")
    assert main(["index", str(damaged), "--tag", "develop", "--out", str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert "checksum mismatch: expected sha256 " in err and damaged.name[-12:] in err


def test_map_url_reads_binaries_spack_ios_listing_from_another_place(
    demo: tuple[Path, MirrorSummary], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """binaries.spack.io's listing as its generator writes it (`s3://spack-binaries/...`
    blob URLs), read over http as cache.spack.io reads it: `--map-url PREFIX=REPLACEMENT`."""
    out, summary = demo
    bucket = "s3://spack-binaries/develop/"
    entries = [(label, bucket + path) for label, path in mb.v3_listing_entries(out)]
    listing = mb.write_listing(tmp_path / "listing.json", {"develop": entries})
    with MirrorHTTPServer(out) as http:
        site = http.url + "/"
        mapping = [f"--map-url={bucket}={site}", "--map-url=s3://=http://127.0.0.1:9/"]
        args = ["index", str(listing), *mapping, "--out", str(tmp_path / "ix"), "-q"]
        assert main(args) == 0, capsys.readouterr().err
        assert f", {summary.specs} specs," in capsys.readouterr().out
        requested = {e.path for e in http.requests("/mirror/blobs/", method="GET")}
    assert len(requested) == len(entries)  # the first mapping that matches is taken
    with serving(tmp_path / "ix") as client:
        nodes = client.data("{ specs(first: 5) { nodes { specFileUrl } } }")["specs"]["nodes"]
    assert all(n["specFileUrl"].startswith(f"{site}mirror/v3/manifests/spec/") for n in nodes)
    with pytest.raises(SystemExit):
        main(["index", str(listing), "--map-url", "s3://spack-binaries/", "--out", "x"])
    assert "expected PREFIX=REPLACEMENT" in capsys.readouterr().err
