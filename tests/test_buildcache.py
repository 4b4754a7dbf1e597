"""Build caches as sources: recognition, stacks, bad input, and fetching over HTTP.

Small indexes are written here, node by node, so that each case says exactly what it
is about; the mirrors are built with `tests.mirror_builder` and served over HTTP by a
real server on 127.0.0.1 (`tests.http_fixture`).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index import BuildError, IndexStore, StrictModeError, build_index
from cachegql.index.ingest import SourceError
from cachegql.index.ingest.locations import Opener
from cachegql.index.ingest.recognise import HEAD_ONLY_FROM, plan_sources
from cachegql.index.ingest.spackdb import read_database
from cachegql.index.spack.hashes import is_hash
from cachegql.schema import Context, build_schema
from cachegql.server.fetch import HttpReader
from tests import mirror_builder as mb
from tests.conftest import PAGES, serving
from tests.http_fixture import MirrorHTTPServer

ARCH = {"platform": "linux", "platform_os": "ubuntu24.04", "target": "x86_64_v3"}


def digest(name: str) -> str:
    """A stable 32-character base32 hash for a test node."""
    return base64.b32encode(hashlib.sha256(name.encode()).digest()).decode().lower()[:32]


def node(
    key: str,
    *,
    name: str | None = None,
    version: str = "1.0",
    deps: tuple[str, ...] = (),
    binary: bool = True,
    compiler: str | None = "gcc",
    **parameters: Any,
) -> tuple[str, dict[str, Any]]:
    """An index record (DB 8 form): `deps` are keys of other nodes; a compiler edge."""
    edges = [
        {
            "name": d.split("@")[0],
            "hash": digest(d),
            "parameters": {"deptypes": ["build", "link"], "virtuals": []},
        }
        for d in deps
    ]
    if compiler:
        edges.append(
            {
                "name": compiler,
                "hash": digest(compiler),
                "parameters": {"deptypes": ["build"], "virtuals": ["c", "cxx"]},
            }
        )
    spec = {
        "name": name or key.split("@")[0],
        "version": version,
        "arch": ARCH,
        "namespace": "builtin",
        "parameters": {"build_system": "generic", "cflags": [], **parameters},
        "dependencies": edges,
        "hash": digest(key),
    }
    return digest(key), {"spec": spec, "ref_count": 0, "in_buildcache": binary}


def index(*records: tuple[str, dict[str, Any]], version: str = "8") -> bytes:
    return json.dumps({"database": {"version": version, "installs": dict(records)}}).encode()


GCC = node("gcc", version="13.2.0", binary=False, compiler=None)
ZLIB = node("zlib", version="1.3.1")
HDF5 = node("hdf5", version="1.14.5", deps=("zlib",), mpi=True)
SMALL = index(GCC, ZLIB, HDF5)


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# Recognising sources, tags and stacks


def test_a_lone_index_needs_a_tag(tmp_path: Path) -> None:
    source = write(tmp_path / "index.json", SMALL)
    with pytest.raises(SourceError, match="--tag TAG"):
        build_index([source], tmp_path / "ix")


def test_a_large_index_is_told_by_its_head_and_read_a_record_at_a_time(tmp_path: Path) -> None:
    """From `HEAD_ONLY_FROM` bytes, an index given alone (a file or a URL) is told by its
    `{"database":` head, not parsed whole to tell what it is (ten times its size in
    memory), and read by the ingest a record at a time: the same answers as the small one.
    A large file that only starts like an index is still a problem naming it."""
    padded = SMALL + b" " * HEAD_ONLY_FROM  # the same index, large
    large, small = write(tmp_path / "large.json", padded), write(tmp_path / "small.json", SMALL)
    with MirrorHTTPServer(tmp_path) as http, HttpReader(None) as reader:
        url = http.url_for("large.json")
        sources: list[str | Path] = [large, url, small]
        plan = plan_sources(sources, opener=Opener(reader), tag="t")
        assert [(r.kind, r.data is None) for r in plan.caches] == [
            ("index", True),  # read by the ingest
            ("index", False),  # its body, downloaded once
            ("index", False),  # parsed whole to tell it: small
        ]
        built = [
            build_index([source], tmp_path / f"ix{n}", tag="t", reader=reader)
            for n, source in enumerate(sources)
        ]
    answers = []
    for report in built:
        with serving(report.folder) as gql:
            answers.append(gql.data("{ specs { nodes { hash name dependencies { name } } } }"))
    assert answers[0] == answers[1] == answers[2] and answers[0]["specs"]["nodes"]
    damaged = {
        "a record": SMALL.replace(b"}}", b"}", 1) + b" " * HEAD_ONLY_FROM,
        "after the document": padded + b"garbage",
        "between its keys": SMALL.replace(b"{", b"{\x0c", 1) + b" " * HEAD_ONLY_FROM,
    }
    for n, (where, data) in enumerate(damaged.items()):
        broken = write(tmp_path / f"broken{n}.json", data)
        report = build_index([broken, small], tmp_path / f"ixb{n}", tag="t")
        [problem] = [p for p in report.problems if p.path == str(broken)]
        assert problem.message.startswith("skipped: not valid JSON ("), where
        assert report.specs == 2  # the rest still loads
        with pytest.raises(StrictModeError, match="not valid JSON"):
            build_index([broken, small], tmp_path / f"strict{n}", tag="t", strict=True)


def _answers_of_each(
    sources: list[str | Path], tmp_path: Path, reader: HttpReader
) -> list[dict[str, Any]]:
    """Each source built alone (two specs, no problem), and what it then answers."""
    answers = []
    for n, source in enumerate(sources):
        report = build_index([source], tmp_path / f"ix{n}", tag="develop", reader=reader)
        assert report.specs == 2 and not report.problems, (source, report.problems)
        with serving(report.folder) as gql:
            answers.append(gql.data("{ specs { nodes { hash name stacks } } }"))
    return answers


def test_json_sources_saved_with_a_byte_order_mark_read_as_without(tmp_path: Path) -> None:
    """A listing, an index (small, or large and then parsed whole) or a spec file that an
    editor saved with a UTF-8 byte order mark: read as the same JSON without it, a file or
    a URL (a local file was tried as a page: "no front matter")."""
    bom = b"\xef\xbb\xbf"
    write(tmp_path / "root" / "index.json", SMALL)
    listing = write(
        tmp_path / "listing.json",
        bom + json.dumps({"develop": [{"label": "root", "url": "root/index.json"}]}).encode(),
    )
    small = write(tmp_path / "small.json", bom + SMALL)
    large = write(tmp_path / "large.json", bom + SMALL + b" " * HEAD_ONLY_FROM)
    with MirrorHTTPServer(tmp_path) as http, HttpReader(None) as reader:
        sources: list[str | Path] = [small, http.url_for("small.json"), large, listing]
        sources.append(http.url_for("listing.json"))
        answers = _answers_of_each(sources, tmp_path, reader)
    assert all(answer == answers[0] for answer in answers), answers
    zlib = json.loads(SMALL)["database"]["installs"][digest("zlib")]["spec"]
    spec = {"spec": {"_meta": {"version": 5}, "nodes": [zlib]}}
    text = json.dumps(spec)
    signed = f"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n{text}\n"
    signed += "-----BEGIN PGP SIGNATURE-----\nAAAA\n-----END PGP SIGNATURE-----\n"
    for n, (name, body) in enumerate(
        [("zlib.json", text), ("zlib.spec.json", text), ("zlib.spec.json.sig", signed)]
    ):
        spec_file = write(tmp_path / "specs" / name, bom + body.encode())
        report = build_index([spec_file], tmp_path / f"ix-spec{n}", tag="develop")
        assert report.specs == 1, (name, report.problems)
        assert all(p.path != str(spec_file) for p in report.problems), name


def test_gzipped_json_sources_read_as_their_content(tmp_path: Path) -> None:
    """An index (small, or large and then read a record at a time), a listing or a spec
    file compressed with gzip and given alone, a file or a URL: read as the same source
    uncompressed (a local one was tried as a page: "not UTF-8"). Broken gzip, gzip over
    the limits or holding no JSON: a problem naming the source and what is wrong."""
    write(tmp_path / "root" / "index.json", SMALL)
    listing = json.dumps({"develop": [{"label": "root", "url": "root/index.json"}]})
    # A v3 index blob, gzipped as Spack may: named by the checksum of its stored bytes.
    stored = gzip.compress(SMALL)
    checksum = hashlib.sha256(stored).hexdigest()
    blob = write(tmp_path / "m" / "blobs" / "sha256" / checksum[:2] / checksum, stored)
    sources: list[str | Path] = [
        write(tmp_path / "small.json.gz", gzip.compress(SMALL)),
        write(tmp_path / "large.gz", gzip.compress(SMALL + b" " * HEAD_ONLY_FROM)),
        write(tmp_path / "listing.json.gz", gzip.compress(listing.encode())),
        blob,
    ]
    zlib = json.loads(SMALL)["database"]["installs"][digest("zlib")]["spec"]
    spec = json.dumps({"spec": {"_meta": {"version": 5}, "nodes": [zlib]}})
    spec_file = write(tmp_path / "zlib.spec.gz", gzip.compress(spec.encode()))
    # A v3 spec blob (Spack gzips them), given alone: a spec file, not an index.
    spec_stored = gzip.compress(spec.encode())
    spec_sum = hashlib.sha256(spec_stored).hexdigest()
    spec_blob = write(tmp_path / "m" / "blobs" / "sha256" / spec_sum[:2] / spec_sum, spec_stored)
    with MirrorHTTPServer(tmp_path) as http, HttpReader(None) as reader:
        sources += [http.url_for("small.json.gz"), http.url_for("large.gz")]
        sources.append(http.url_for(blob.relative_to(tmp_path).as_posix()))
        answers = _answers_of_each(sources, tmp_path, reader)
        for source in (spec_file, http.url_for("zlib.spec.gz"), spec_blob):
            report = build_index([source], tmp_path / "ix-spec", tag="develop", reader=reader)
            assert report.specs == 1, (source, report.problems)
            assert all(str(source) not in p.path for p in report.problems), report.problems
    assert len(answers) == 7 and all(answer == answers[0] for answer in answers), answers
    # A local index is read, and inflated, by the ingest: known by its file's digest after.
    [planned] = plan_sources([sources[1]], opener=Opener(), tag="develop").caches
    assert planned.kind == "index" and planned.data is None
    again = build_index([sources[1]], tmp_path / "ix1", tag="develop")
    assert again.reused == ["develop"], again.summary()
    # A v2 mirror's index.json is never gzipped by Spack: refused alike, with a .hash or not.
    mirror = tmp_path / "v2" / "build_cache"
    write(mirror / "index.json", whole := gzip.compress(SMALL))
    for hashed in (False, True):
        if hashed:
            write(mirror / "index.json.hash", hashlib.sha256(whole).hexdigest())
        with pytest.raises(BuildError, match="not valid JSON"):
            build_index([mirror.parent], tmp_path / "ix-v2", tag="develop")

    listed = gzip.compress(listing.encode())
    bad = {
        "listing-cut.gz": (listed[: len(listed) - 9], "gzip content ends before its end marker"),
        "damaged.gz": (whole[:10] + b"\xff" * 20 + whole[30:], "not valid gzip content"),
        "bomb.gz": (gzip.compress(b"{" + b" " * 80_000_000), "decompresses to over 200 times"),
        "text.gz": (gzip.compress(b"hello"), "compressed with gzip, but holds no JSON"),
        "index-cut.json.gz": (whole[: len(whole) // 2], "gzip content ends before its end"),
    }
    for name, (data, why) in bad.items():
        path = write(tmp_path / "bad" / name, data)
        with pytest.raises(BuildError) as refused:
            build_index([path], tmp_path / "ix-bad", tag="develop")
        message = str(refused.value)
        assert f"{path}: " in message and why in message, message
        assert "UTF-8" not in message and "Traceback" not in message, message


def test_pages_and_a_mirror_in_one_build(tmp_path: Path) -> None:
    """A page folder and a v3 mirror, recognised by content, each in its tag."""
    mb.write_v3_mirror(SMALL, tmp_path / "mirror")
    report = build_index([PAGES, tmp_path / "mirror"], tmp_path / "ix", tag="mirror-tag")
    assert report.tags["mirror-tag"] == 2 and report.caches == 1 and report.pages == 6
    with serving(tmp_path / "ix") as gql:
        data = gql.data(
            '{ a: specs(tag: "mirror-tag") { nodes { name namespace '
            'dependencies { name } } } b: specs(tag: "develop", first: 1) '
            "{ nodes { namespace dependencies { name } } } }"
        )
        assert [n["name"] for n in data["a"]["nodes"]] == ["hdf5", "zlib"]
        assert data["a"]["nodes"][0]["dependencies"] == [{"name": "zlib"}, {"name": "gcc"}]
        # A page records neither a namespace nor dependencies: null, not empty.
        assert data["b"]["nodes"] == [{"namespace": None, "dependencies": None}]


def test_a_listing_gives_each_spec_the_labels_of_every_index_listing_it(tmp_path: Path) -> None:
    """As cache.spack.io computes stacks: root lists both, e4s only hdf5, ml only zlib."""
    write(tmp_path / "root" / "index.json", SMALL)
    write(tmp_path / "e4s.json", index(GCC, ZLIB, HDF5))
    ml = json.loads(SMALL)
    ml["database"]["installs"][digest("hdf5")]["in_buildcache"] = False
    write(tmp_path / "ml.json", json.dumps(ml))
    e4s = json.loads(SMALL)
    e4s["database"]["installs"][digest("zlib")]["in_buildcache"] = False
    write(tmp_path / "e4s.json", json.dumps(e4s))
    listing = mb.write_listing(
        tmp_path / "cache_spack_io_index.json",
        {"develop": [("root", "root/index.json"), ("e4s", "e4s.json"), ("ml", "ml.json")]},
    )
    build_index([listing], tmp_path / "ix", strict=True)
    with serving(tmp_path / "ix") as gql:
        nodes = gql.data("{ specs { nodes { name stacks } } stacks { name numSpecs } }")
        assert nodes["specs"]["nodes"] == [
            {"name": "hdf5", "stacks": ["e4s", "root"]},
            {"name": "zlib", "stacks": ["ml", "root"]},
        ]
        assert nodes["stacks"] == [
            {"name": "e4s", "numSpecs": 1},
            {"name": "ml", "numSpecs": 1},
            {"name": "root", "numSpecs": 2},
        ]


# Bad input: named with its source and reason, the rest still loading; --strict: fatal


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (SMALL[: len(SMALL) // 2], "not valid JSON"),
        (
            b'{"database": {"version": "4", "installs": {}}}',
            "database version 4 is not supported; supported versions: 5, 6, 7, 8, 9",
        ),
        (b'{"database": {"version": "eight", "installs": {}}}', "is not a number"),
        (b'{"database": {"version": "8"}}', "no 'installs'"),
    ],
    ids=["truncated", "unknown-version", "version-not-a-number", "no-installs"],
)
def test_a_bad_index_is_named_and_the_rest_loads(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    write(tmp_path / "good.json", SMALL)
    bad = write(tmp_path / "bad.json", content)
    listing = mb.write_listing(
        tmp_path / "listing.json", {"develop": [("root", "good.json"), ("e4s", "bad.json")]}
    )
    report = build_index([listing], tmp_path / "ix")
    assert report.specs == 2
    [problem] = report.problems
    assert problem.path == str(bad) and reason in problem.message
    with pytest.raises(StrictModeError, match=reason):
        build_index([listing], tmp_path / "strict", strict=True)
    assert not (tmp_path / "strict").exists()  # nothing published


def _hostile(change: Any) -> bytes:
    """SMALL with hdf5's record changed by `change(spec)`."""
    key, record = HDF5
    record = json.loads(json.dumps(record))
    change(record["spec"])
    return index(GCC, ZLIB, (key, record))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            lambda s: s.update(dependencies={"zlib": 1}),
            "dependency 'zlib' must be an object, not int",
        ),
        (
            lambda s: s["dependencies"][0].update(hash="\u00e9"),
            "dependency 'zlib': hash '\u00e9' is not a Spack hash",
        ),
        (
            lambda s: s["dependencies"][0].update(parameters=1),
            "dependency 'zlib': 'parameters' must be an object",
        ),
        (
            lambda s: s["dependencies"][0]["parameters"].update(deptypes=1),
            "dependency 'zlib': 'deptypes' must be a string or a list of strings",
        ),
        (
            lambda s: s["dependencies"][0]["parameters"].update(deptypes=[{}]),
            "'deptypes' must be a string or a list of strings",
        ),
        (
            lambda s: s["dependencies"][1]["parameters"].update(virtuals=[{}]),
            "dependency 'gcc': 'virtuals' must be a string or a list of strings",
        ),
    ],
    ids=[
        "dependency-not-object",
        "hash-not-ascii",
        "parameters-not-object",
        "deptypes-int",
        "deptypes-dicts",
        "virtuals-dicts",
    ],
)
def test_a_hostile_record_is_skipped_by_name_and_the_rest_loads(
    change: Any, reason: str, tmp_path: Path
) -> None:
    """Found by mutating every value of real records (no record of Spack's own is so)."""
    source = write(tmp_path / "index.json", _hostile(change))
    report = build_index([source], tmp_path / "ix", tag="develop")
    assert report.specs == 1  # zlib; hdf5 skipped
    [problem] = report.problems
    assert problem.path == str(source)
    assert problem.message.startswith(f"record {HDF5[0]} skipped: ")
    assert reason in problem.message
    with pytest.raises(StrictModeError, match=re.escape(reason)):
        build_index([source], tmp_path / "strict", tag="develop", strict=True)


def looped_index() -> bytes:
    """An index whose `libx` and `liby` depend on each other (`liby` on zlib too), and
    `app` on `libx`."""
    return index(
        GCC,
        ZLIB,
        node("libx", deps=("liby",)),
        node("liby", deps=("libx", "zlib")),
        node("app", deps=("libx",)),
    )


def test_a_tag_whose_dependencies_form_a_cycle_is_left_out_naming_them(tmp_path: Path) -> None:
    """Found by making a dependency depend back on its dependent: no Spack DAG does, and
    the build ended in a traceback. The tag is left out, naming the nodes of the cycle
    (not those depending on it), and the other tags are built."""
    source = write(tmp_path / "index.json", looped_index())
    # Its name sorts before the pages' tags: the folder it was begun in is used again.
    report = build_index([PAGES, source], tmp_path / "ix", tag="a-looped")
    assert "a-looped" not in report.tags and report.tags["develop"] > 0
    [problem] = [p for p in report.problems if "cycle" in p.message]
    assert problem.path == "tag a-looped"
    assert problem.message.startswith("left out: its dependencies form a cycle, through 2 nodes (")
    named = re.findall(r"(\w+)/([a-z2-7]{7})", problem.message)
    assert sorted(named) == [("libx", digest("libx")[:7]), ("liby", digest("liby")[:7])]
    with serving(tmp_path / "ix") as gql:
        assert gql.data('{ specs(tag: "develop", first: 1) { totalCount } }')
    with pytest.raises(StrictModeError, match="cycle"):
        build_index([source], tmp_path / "strict", tag="a-looped", strict=True)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Where each value of a JSON document sits (the document itself first)."""
    yield prefix
    if isinstance(value, dict | list):
        for key, inner in value.items() if isinstance(value, dict) else enumerate(value):
            yield from _paths(inner, (*prefix, key))


_ODD_VALUES: tuple[Any, ...] = (
    None,
    0,
    2**70,
    1.5,
    True,
    "",
    "x",
    "\u00e9",
    "a" * 40,
    [],
    [1],
    [None],
    [{}],
    {},
    {"a": 1},
)


def test_no_value_of_a_record_makes_reading_an_index_fail() -> None:
    """Every value of a record replaced by each odd value: the index is read, the record
    kept or skipped with a problem naming it; never an exception (a traceback)."""
    key, record = HDF5
    for path in _paths(record):
        for odd in _ODD_VALUES:
            changed: Any = json.loads(json.dumps(record))
            if path:
                inner = changed
                for step in path[:-1]:
                    inner = inner[step]
                inner[path[-1]] = odd
            else:
                changed = odd
            database = read_database(index(GCC, ZLIB, (key, changed)), "index.json")
            kept = key in database.nodes
            assert kept != bool(database.problems), (path, odd)
            if kept:  # what is kept is written: its hashes are rows' keys
                assert all(is_hash(edge.hash) for edge in database.nodes[key].edges), (path, odd)
            for problem in database.problems:
                assert problem.message.startswith(f"record {key} skipped: "), (path, odd)


def test_annotations_that_are_no_object_are_not_read(tmp_path: Path) -> None:
    """`annotations` only ever gives a migrated node's compiler: one that is not an object
    gives none, and the node is read as the others are."""
    source = write(tmp_path / "index.json", _hostile(lambda s: s.update(annotations=1)))
    report = build_index([source], tmp_path / "ix", tag="develop")
    assert report.specs == 2 and not report.problems


def test_a_dependency_missing_from_the_index_is_an_edge_without_a_spec(tmp_path: Path) -> None:
    source = write(tmp_path / "index.json", index(GCC, HDF5))  # zlib is not there
    report = build_index([source], tmp_path / "ix", tag="develop")
    [problem] = report.problems
    assert "1 dependencies are not in any index" in problem.message and "zlib/" in problem.message
    with serving(tmp_path / "ix") as gql:
        hdf5 = gql.data(
            "{ specs { nodes { name dependencies { name hash version spec { name } } } } }"
        )
        assert hdf5["specs"]["nodes"][0]["dependencies"][0] == {
            "name": "zlib",
            "hash": digest("zlib"),
            "version": None,
            "spec": None,
        }
        # The missing node is still a node of the DAG, known by its name.
        assert gql.data('{ specs(query: "^zlib") { totalCount } }')["specs"]["totalCount"] == 1
    with pytest.raises(StrictModeError, match="not in any index"):
        build_index([source], tmp_path / "strict", tag="develop", strict=True)


def test_a_v2_index_must_match_its_hash(tmp_path: Path) -> None:
    mb.write_v2_mirror(SMALL, tmp_path / "mirror")
    mb.corrupt_v2_hash(tmp_path / "mirror")
    written = (tmp_path / "mirror" / "build_cache" / "index.json.hash").read_text().strip()
    actual = hashlib.sha256(SMALL).hexdigest()
    with pytest.raises(BuildError) as raised:
        build_index([tmp_path / "mirror"], tmp_path / "ix", tag="develop")
    assert written in str(raised.value) and actual in str(raised.value)


def test_a_v3_manifest_without_a_database(tmp_path: Path) -> None:
    mirror = mb.write_v3_mirror(SMALL, tmp_path / "mirror")
    mb.drop_db_media_types(mirror.index_manifest)
    with pytest.raises(BuildError, match="lists no database Spack can read"):
        build_index([tmp_path / "mirror"], tmp_path / "ix", tag="develop")


def test_a_v3_blob_that_fails_its_checksum(tmp_path: Path) -> None:
    mirror = mb.write_v3_mirror(SMALL, tmp_path / "mirror")
    mb.corrupt_blob(tmp_path / "mirror", mirror.index_manifest)
    with pytest.raises(BuildError, match="checksum mismatch: expected sha256"):
        build_index([tmp_path / "mirror"], tmp_path / "ix", tag="develop")


def test_a_v3_mirror_takes_the_newest_database_it_can_read(tmp_path: Path) -> None:
    """Versions 7, 8 and 99 listed: 8 is read (7 is an empty decoy, 99 unknown)."""
    mb.write_v3_mirror(SMALL, tmp_path / "mirror", db_media_versions=(7, 8, 99))
    assert build_index([tmp_path / "mirror"], tmp_path / "ix", tag="develop").specs == 2


# Fetching


@pytest.fixture
def server(tmp_path: Path) -> Any:
    www = tmp_path / "www"
    mb.write_v3_mirror(SMALL, www / "v3")
    mb.write_v2_mirror(SMALL, www / "v2")
    with MirrorHTTPServer(www) as running:
        yield running


def _build(sources: list[str | Path], out: Path, cache: Path | None = None, **kw: Any) -> Any:
    with HttpReader(
        cache, timeout=kw.pop("timeout", 5.0), retries=kw.pop("retries", 2), backoff=0.01
    ) as reader:
        return build_index(sources, out, reader=reader, **kw)


def test_a_cached_body_that_is_gone_is_downloaded_again(
    server: MirrorHTTPServer, tmp_path: Path
) -> None:
    """The download cache's copy removed (by hand, by a cleaner) and its ETag left: the
    reader asks for the body, not for a 304 it could not answer from the cache (an entry
    is one whose body is there: `HttpReader._entry`)."""
    url = server.url_for("v2/build_cache/index.json")
    with HttpReader(tmp_path / "fetch") as reader:
        body = reader.read(url)
        server.clear_log()
        assert reader.read(url) == body
        assert [e.status for e in server.requests("/v2/", method="GET")] == [304]
        for copy in (tmp_path / "fetch").rglob("*.body"):
            copy.unlink()
        server.clear_log()
        assert reader.read(url) == body
    assert [e.status for e in server.requests("/v2/", method="GET")] == [200]


def test_a_root_url_is_tried_as_v3_then_v2(server: MirrorHTTPServer, tmp_path: Path) -> None:
    for layout in ("v3", "v2"):
        report = _build([server.url_for(layout)], tmp_path / layout, tag="develop")
        assert report.specs == 2, layout


def test_transient_failures_are_retried(server: MirrorHTTPServer, tmp_path: Path) -> None:
    server.server_error("/v2/build_cache/index.json.hash", times=2)
    assert _build([server.url_for("v2")], tmp_path / "ix", tag="develop").specs == 2
    statuses = [e.status for e in server.requests("/v2/build_cache/index.json.hash")]
    assert statuses == [500, 500, 200]


def test_a_failure_names_the_url_and_status_and_publishes_nothing(
    server: MirrorHTTPServer, tmp_path: Path
) -> None:
    out = tmp_path / "ix"
    _build([server.url_for("v2")], out, tag="develop")
    served = out.resolve()
    server.server_error("/v2/build_cache/index.json")
    with pytest.raises(BuildError) as raised:
        _build([server.url_for("v2")], out, tag="develop")
    assert server.url_for("v2/build_cache/index.json") in str(raised.value)
    assert "HTTP 500" in str(raised.value) and "nothing was published" in str(raised.value)
    assert out.resolve() == served  # the served index is left alone


def test_a_stalled_body_times_out_naming_the_url(server: MirrorHTTPServer, tmp_path: Path) -> None:
    server.stall("/v3/blobs/", after_bytes=10)
    started = time.monotonic()
    with pytest.raises(BuildError, match="timed out"):
        _build([server.url_for("v3")], tmp_path / "ix", tag="develop", timeout=0.5, retries=1)
    assert time.monotonic() - started < 10


def test_an_unreachable_url_is_named(tmp_path: Path) -> None:
    with MirrorHTTPServer(tmp_path) as gone:
        url = gone.url_for("v3")
    with pytest.raises(BuildError, match=f"{url}.*cannot connect"):
        _build([url], tmp_path / "ix", tag="develop", retries=0)


def test_a_listing_entry_that_fails_is_a_problem_and_the_rest_loads(
    server: MirrorHTTPServer, tmp_path: Path
) -> None:
    mb.write_listing(
        server.root / "listing.json",
        {"develop": [("root", "v2"), ("e4s", "missing")], "other": [("root", "v3")]},
    )
    report = _build([server.url_for("listing.json")], tmp_path / "ix")
    assert report.tags == {"develop": 2, "other": 2}
    [problem] = report.problems
    assert problem.path == server.url_for("missing")
    assert (
        "stack e4s of tag develop" in problem.message and "no build cache there" in problem.message
    )


@pytest.mark.parametrize(
    ("layout", "small"), [("v3", "index.manifest.json"), ("v2", "index.json.hash")]
)
def test_reindexing_an_unchanged_mirror_downloads_only_its_manifest_or_hash(
    server: MirrorHTTPServer, tmp_path: Path, layout: str, small: str
) -> None:
    cache = tmp_path / "cache"
    _build([server.url_for(layout)], tmp_path / "first", cache, tag="develop")
    server.clear_log()
    report = _build([server.url_for(layout)], tmp_path / "second", cache, tag="develop")
    assert report.specs == 2
    fetched = [(e.path.rsplit("/", 1)[-1], e.status) for e in server.log if e.status == 200]
    assert [name for name, _ in fetched] == [small] or fetched == [], fetched
    sent = sum(e.bytes_sent for e in server.log)
    assert sent < 1000, server.log  # the index itself was not sent again


# The API over a generated build cache


def test_a_page_with_its_dependencies_reads_per_level_not_per_spec(tmp_path: Path) -> None:
    """100 specs, their ~1,000 dependencies and those dependencies' own: one read of
    specs and one of edges per level of the answer."""
    summary = write_mirror(MirrorConfig(specs=300, packages=60, stacks=2, seed=3), tmp_path)
    build_index([summary.mirror], tmp_path / "ix", tag="develop")
    store = IndexStore(tmp_path / "ix")
    snapshot = store.snapshot()
    query = """{ specs(first: 100) { nodes { hash dependencies { name hash spec { name
                 dependencies(deptype: ["link"]) { name spec { hash } } } } } } }"""
    result = build_schema().execute_sync(query, context_value=Context(store=store))
    assert result.errors is None and result.data is not None
    nodes = result.data["specs"]["nodes"]
    edges = [d for n in nodes for d in n["dependencies"]]
    assert len(nodes) == 100 and len(edges) > 500
    assert snapshot.spec_reads == 3  # the page, its dependencies, theirs
    assert snapshot.dependency_reads == 2
    store.close()
