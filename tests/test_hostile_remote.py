"""Remote sources are hostile: origin rules and bounded work, against a real server.

Every case of `bench/hostile_sources.py` (a listing naming local files, redirect chains,
loops, off the network and from https to http, gzip bombs, endless, trickling and
truncated bodies, a 100k-entry listing, JSON nested 100k deep, bytes that are not UTF-8)
is served on 127.0.0.1 (https with a CA made for the test) and read by the real CLI in a
process of its own, beside a good mirror: each must end in one problem line naming the
URL and the limit, quickly, in little memory, with the good mirror's specs published.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from cachegql.index import LIMITS, SourceLimits, over_limit
from cachegql.index.ingest import Location, Opener, OriginError, ReadError, shown
from cachegql.index.ingest.inflate import GZIP, Inflater, gunzip
from cachegql.index.ingest.listings import read_listing
from cachegql.index.ingest.spackdb import SourceFormatError
from cachegql.server.fetch import HttpReader
from cachegql.server.oci import OciReader
from tests.conftest import CLI, untraced_env

BENCH = Path(__file__).resolve().parents[1] / "bench" / "hostile_sources.py"
SECONDS = 15.0  # the slowest case (a truncated body, retried 3 times) takes about 4
PEAK_RSS_MB = 200.0  # a run on the good mirror alone peaks near 60 MB


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hostile_sources_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


BENCHMARK = _bench()
CASES = {case.name: case for case in BENCHMARK.CASES}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    work = tmp_path_factory.mktemp("hostile-sources")
    with BENCHMARK.serving(work, CLI) as server:
        yield server


def _run(server: Any, case: Any, *flags: str) -> Any:
    return BENCHMARK.run_case(
        CLI, case, server, server.work, flags=flags, timeout=60, env=untraced_env()
    )


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_source_is_one_problem_line_and_the_rest_loads(hostile: Any, name: str) -> None:
    case = CASES[name]
    result = _run(hostile, case, *case.test_flags)
    assert result.returncode == 0, result.stderr
    assert result.matched, f"no problem line matches {case.problem!r}:\n{result.stderr}"
    url = hostile.url(case.path, case.tls)
    assert any(line.startswith(f"problem: {url}: ") for line in result.problems), result.stderr
    assert not any(f"{url}: {url}" in line for line in result.problems)  # named once
    assert result.specs == BENCHMARK.GOOD_SPECS, result.stderr
    assert result.seconds < SECONDS
    assert result.peak_rss_mb < PEAK_RSS_MB, f"peak memory {result.peak_rss_mb:.0f} MB"
    assert "Traceback" not in result.stderr


def test_strict_fails_on_a_listing_naming_a_local_file(hostile: Any) -> None:
    result = _run(hostile, CASES["file-listing"], "--strict")
    assert result.returncode == 1
    assert "error (--strict): " in result.stderr
    assert "entry 'local' of tag 'develop' skipped" in result.stderr
    assert "nothing was published" in result.stderr


def test_the_local_mirror_a_remote_listing_names_is_never_read(hostile: Any) -> None:
    """Its 30 specs would double the count; and no file of it is even opened."""
    result = _run(hostile, CASES["file-listing"])
    assert result.specs == BENCHMARK.GOOD_SPECS
    local = hostile.work / "local" / "mirror"
    assert local.is_dir()
    assert str(local.resolve()) not in result.stderr.replace(local.resolve().as_uri(), "")


def test_redirects_within_the_limit_are_followed_and_named_with_verbose(hostile: Any) -> None:
    case = BENCHMARK.Case("three-redirects", "", "/redirect/3/good/mirror", "")
    result = _run(hostile, case, "--verbose")
    assert result.returncode == 0, result.stderr
    assert result.specs == BENCHMARK.GOOD_SPECS  # the same mirror, given twice
    hops = [line for line in result.stderr.splitlines() if line.startswith("redirect: ")]
    first = hostile.url("/redirect/3/good/mirror")
    assert hops[:3] == [
        f"redirect: {first} -> {hostile.url('/redirect/2/good/mirror')} (302)",
        f"redirect: {hostile.url('/redirect/2/good/mirror')} -> "
        f"{hostile.url('/redirect/1/good/mirror')} (302)",
        f"redirect: {hostile.url('/redirect/1/good/mirror')} -> {hostile.url('/good/mirror')} "
        "(302)",
    ]
    quiet = _run(hostile, case)
    assert not any(line.startswith("redirect: ") for line in quiet.stderr.splitlines())


def test_the_limits_are_flags_with_their_defaults_in_the_help() -> None:
    shown = subprocess.run([CLI, "index", "--help"], capture_output=True, text=True).stdout
    for limit in LIMITS:
        assert limit.flag in shown
    assert "(default 1 GiB)" in shown and "(default 10,000)" in shown


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--max-source-bytes", "lots", "is not a size"),
        ("--max-source-bytes", "0", "must be positive"),
        ("--max-redirects", "-1", "must be positive"),
        ("--source-time-limit", "soon", "is not a number"),
    ],
)
def test_a_bad_limit_is_refused_with_a_message(flag: str, value: str, message: str) -> None:
    run = subprocess.run(
        [CLI, "index", "x", "--out", "ix", flag, value], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert message in run.stderr and flag in run.stderr


# The reader and the rules, in process.


@pytest.fixture
def reader(hostile: Any) -> Iterator[HttpReader]:
    with HttpReader(None, timeout=5, retries=0) as http:
        yield http


def test_an_announced_size_over_the_limit_is_refused_before_the_body(
    hostile: Any, reader: HttpReader
) -> None:
    with pytest.raises(ReadError, match=r"announces a body of 8,589,934,592 bytes"):
        reader.read(hostile.url("/announce-huge/index.json"))
    assert reader.downloaded == 0


@pytest.mark.parametrize(
    ("encoding", "message"),
    [
        ("br", r"sent as 'br', which cachegql did not ask for"),
        ("gzip", r"the body is not valid compressed data"),
    ],
)
def test_a_body_in_an_encoding_not_asked_for_or_broken_is_refused(
    hostile: Any, reader: HttpReader, encoding: str, message: str
) -> None:
    with pytest.raises(ReadError, match=message):
        reader.read(hostile.url(f"/encoded/{encoding}"))


def test_reads_in_flight_are_bounded(hostile: Any) -> None:
    hostile.most_in_flight = 0
    with HttpReader(None, timeout=5, retries=0, limits=SourceLimits(max_fetches=2)) as http:
        threads = [
            threading.Thread(target=http.read, args=(hostile.url(f"/slow/{i}"),)) for i in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert hostile.most_in_flight == 2


LISTING = "http://example.org/caches/listing.json"


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("develop/mirror", "http://example.org/caches/develop/mirror"),
        ("/etc/build_cache/index.json", "http://example.org/etc/build_cache/index.json"),
        ("//mirror.example.org/spack", "http://mirror.example.org/spack"),
        ("https://other.example.org/m", "https://other.example.org/m"),
        ("HTTPS://other.example.org/m", "HTTPS://other.example.org/m"),
    ],
)
def test_a_remote_listing_may_name_network_sources(reference: str, expected: str) -> None:
    assert Location(LISTING).sibling(reference).text == expected


@pytest.mark.parametrize(
    ("reference", "what"),
    [
        ("file:///work/mirror", "a local file"),
        ("FILE:///work/mirror", "a local file"),
        ("file:/etc/passwd", "a local file"),
        ("ftp://example.org/m", "a ftp: location"),
        ("data:,{}", "a data: location"),
    ],
)
def test_a_remote_listing_cannot_name_local_files_or_other_schemes(
    reference: str, what: str
) -> None:
    with pytest.raises(OriginError, match=f"is {what}; a source read from the network"):
        Location(LISTING).sibling(reference)


def test_a_local_listing_may_name_paths_file_urls_and_network_urls(tmp_path: Path) -> None:
    listing = Location(str(tmp_path / "listing.json"))
    assert listing.sibling("m").text == str(tmp_path / "m")
    assert listing.sibling("file:///srv/m").text == "/srv/m"
    assert listing.sibling("file:/srv/m").text == "/srv/m"
    assert listing.sibling("https://example.org/m").is_url
    with pytest.raises(ReadError, match="unsupported scheme ftp:"):
        listing.sibling("ftp://example.org/m")


def test_a_refused_listing_entry_is_a_problem_naming_it() -> None:
    data = json.dumps(
        {"develop": [{"label": "root", "url": "m"}, {"label": "mine", "url": "file:///m"}]}
    ).encode()
    entries, problems = read_listing(data, Location(LISTING))
    assert [entry.label for entry in entries] == ["root"]
    assert [str(problem) for problem in problems] == [
        f"{LISTING}: entry 'mine' of tag 'develop' skipped: file:///m is a local file; a source "
        "read from the network may only name network sources (http, https, oci, oci+http, s3); "
        "not read"
    ]


def test_a_listing_over_the_entry_limit_is_refused_whole() -> None:
    data = json.dumps({"a": [{"label": "x", "url": "m"}] * 3}).encode()
    assert len(read_listing(data, Location(LISTING), max_entries=3)[0]) == 3
    with pytest.raises(SourceFormatError, match=r"names 3 stacks, over the limit of 2"):
        read_listing(data, Location(LISTING), max_entries=2)


def test_the_opener_carries_the_limits() -> None:
    assert Opener().limits == SourceLimits()
    assert Opener(limits=SourceLimits(max_redirects=1)).limits.max_redirects == 1


# Inflating within the limits.


def _gzip(data: bytes) -> bytes:
    deflate = zlib.compressobj(9, zlib.DEFLATED, GZIP)
    return deflate.compress(data) + deflate.flush()


def test_gunzip_reads_one_member_or_several() -> None:
    data = b'{"database": {}}' * 1000
    assert gunzip(_gzip(data), "blob", SourceLimits()) == data
    assert gunzip(_gzip(b"ab") + _gzip(b"cd"), "blob", SourceLimits()) == b"abcd"


def test_gunzip_refuses_a_bomb_after_a_few_pieces() -> None:
    bomb = _gzip(bytes(256 << 20))
    with pytest.raises(SourceFormatError, match="a compression bomb; not read"):
        gunzip(bomb, "blob", SourceLimits())


def test_gunzip_refuses_content_over_the_size_limit() -> None:
    data = _gzip(bytes(3 << 20))
    with pytest.raises(SourceFormatError, match=r"is larger than 2,097,152 bytes"):
        gunzip(data, "blob", SourceLimits(max_bytes=2 << 20))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x1f\x8b garbage", "not valid gzip content"),
        (_gzip(b"x" * 1000)[:20], "gzip content ends before its end marker"),
    ],
)
def test_gunzip_names_broken_content(data: bytes, message: str) -> None:
    with pytest.raises(SourceFormatError, match=f"blob: {message}"):
        gunzip(data, "blob", SourceLimits())


def test_the_inflater_gives_pieces_of_at_most_a_mib() -> None:
    inflater = Inflater()
    pieces = list(inflater.feed(_gzip(bytes(5 << 20))))
    assert max(map(len, pieces)) <= 1 << 20 and sum(map(len, pieces)) == 5 << 20
    assert inflater.ended


def test_over_limit_says_why() -> None:
    limits = SourceLimits(max_bytes=100 << 20, max_expansion=10)
    assert over_limit(1 << 20, None, limits) is None
    assert over_limit(20 << 20, None, limits) is None  # not compressed: no ratio
    assert over_limit(20 << 20, 1 << 20, limits) is not None
    assert over_limit(10 << 20, 1, limits) is None  # under 16 MiB: never a bomb
    assert "is larger than" in (over_limit(101 << 20, None, limits) or "")


def test_the_docs_list_every_limit_with_its_default() -> None:
    """docs/indexing/remote.md's table is the table of index/ingest/limits.py."""
    page = Path(__file__).resolve().parents[1] / "docs" / "indexing" / "remote.md"
    table = page.read_text().split("<!-- source-limits")[1].split("<!-- /source-limits -->")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `--")]
    defaults = SourceLimits()
    expected = []
    for limit in LIMITS:
        value = shown(getattr(defaults, limit.field))
        expected.append(f"| `{limit.flag}` | {value} | {limit.help} |")
    assert rows == expected


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="--max-fetches must be positive"):
        SourceLimits(max_fetches=0)


# The same hostile answers, read in process (the CLI runs above are measured untraced).


@pytest.mark.parametrize(
    ("path", "limits", "message"),
    [
        ("/loop/x", SourceLimits(), r"more than 5 redirects \(--max-redirects\)"),
        ("/to-file/x", SourceLimits(), "redirected to file:///etc/passwd: not a network"),
        ("/gzip-bomb/index.json", SourceLimits(), "a compression bomb; not read"),
        ("/endless/index.json", SourceLimits(max_bytes=4 << 20), "is larger than 4,194,304"),
        ("/trickle/index.json", SourceLimits(max_seconds=1), r"not read within 1 s"),
        ("/wrong-length/index.json", SourceLimits(), "the server broke off the answer"),
    ],
)
def test_the_reader_refuses_each_hostile_answer(
    hostile: Any, path: str, limits: SourceLimits, message: str
) -> None:
    with (
        HttpReader(None, timeout=5, retries=1, backoff=0.01, limits=limits) as http,
        pytest.raises(ReadError, match=message),
    ):
        http.read(hostile.url(path))


def test_the_reader_refuses_a_downgrade_and_names_each_redirect(
    hostile: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(hostile.work / "tls" / "ca.pem"))
    hops: list[str] = []
    with HttpReader(None, timeout=5, retries=0, on_redirect=hops.append) as http:
        assert http.read(
            hostile.url("/redirect/2/good/mirror/v3/manifests/index/index.manifest.json")
        )
        with pytest.raises(ReadError, match="from https to plain http"):
            http.read(hostile.url("/downgrade/good/mirror", tls=True))
    assert len(hops) == 2 and hops[0].endswith("(302)")


def test_a_deadline_already_past_is_refused_before_any_request(hostile: Any) -> None:
    with (
        HttpReader(None, timeout=5, retries=0) as http,
        pytest.raises(ReadError, match="not read within"),
    ):
        http.read(hostile.url("/good/mirror"), deadline=time.monotonic() - 1)
    assert http.downloaded == 0


def test_a_gzip_body_within_the_limits_is_inflated(hostile: Any, tmp_path: Path) -> None:
    data = b'{"database": {"version": "8", "installs": {}}}' * 100
    (hostile.work / "small.json.gz").write_bytes(_gzip(data))
    with HttpReader(None, timeout=5, retries=0) as http:
        assert http.read(hostile.url("/served-gzip/small.json.gz")) == data


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("loop:index.spack", r"more than 5 redirects \(--max-redirects\)"),
        ("tofile:index.spack", "redirected to file:///etc/passwd: not a network location"),
        ("bomb@sha256:" + "0" * 64, "a compression bomb; not read"),
    ],
)
def test_an_oci_registry_obeys_the_same_limits(hostile: Any, image: str, message: str) -> None:
    base = hostile.url("").removeprefix("http://")
    with OciReader(None, timeout=5, retries=0) as registry:
        with pytest.raises(ReadError, match=message):
            registry.read(f"oci+http://{base}/{image}")
        with pytest.raises(ReadError, match="its source not read within"):
            registry.read(f"oci+http://{base}/loop:index.spack", time.monotonic() - 1)
