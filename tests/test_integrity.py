"""An index that defends itself: a damaged build is refused naming the file, on start and on
reload, and a build damaged while it is served does not take the server down.

Real builds, real files, a real server: each test damages its own copy of a build of the
test pages (or of a small build cache, for the DAG), never the session's `pages_index`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index import IndexLoadError, IndexStore, build_index
from cachegql.index.disk.columns import FileArray
from cachegql.index.disk.layout import CHECKSUM, FORMAT_VERSION, file_checksum
from cachegql.index.disk.verify import IndexChangedError
from cachegql.schema import CHANGED_MESSAGE
from cachegql.server.app import Settings, create_app
from tests.conftest import CLI, PAGES, LiveServer

LOOSE = PAGES / "loose" / "zlib-develop.txt"
# What a client asks of every spec: the tarball name is the one column read from disk.
SPECS = "{ specs(first: 50) { totalCount nodes { hash name version tarball stacks } } }"
SEARCH = '{ specs(search: "zlib", first: 5) { totalCount nodes { hash name } } }'
PACKAGES = "{ packages(first: 50) { totalCount nodes { name versions stacks } } }"

Damage = Callable[[Path], object]


@pytest.fixture(scope="module")
def pages_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build of the test pages (its folder): tests damage copies of it."""
    return build_index([PAGES], tmp_path_factory.mktemp("integrity") / "ix").folder


@pytest.fixture(scope="module")
def dag_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build of a small build cache, with a DAG."""
    folder = tmp_path_factory.mktemp("integrity-dag")
    write_mirror(MirrorConfig(specs=150, packages=15, stacks=3, seed=8), folder / "cache")
    return build_index([folder / "cache" / "mirror"], folder / "ix", tag="develop").folder


def _copy(build: Path, into: Path) -> Path:
    copy = into / build.name
    shutil.copytree(build, copy)
    return copy


# Ways to damage a build. Files are named relative to the build; "resigned" damage also
# records the file's new size and checksum in the manifest, as a buggy writer would, so
# that only the loader's own checks can see it.


def _manifest(build: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((build / "manifest.json").read_text())
    return manifest


def _write_manifest(build: Path, manifest: dict[str, Any]) -> None:
    (build / "manifest.json").write_text(json.dumps(manifest))


def _resign(build: Path, name: str) -> None:
    manifest = _manifest(build)
    path = build / name
    manifest["files"][name] = {"size": path.stat().st_size, CHECKSUM: file_checksum(path)}
    _write_manifest(build, manifest)


def _steps(*steps: Damage) -> Damage:
    def damage(build: Path) -> None:
        for step in steps:
            step(build)

    return damage


def _resigned(name: str, damage: Damage) -> Damage:
    return _steps(damage, lambda b: _resign(b, name))


def _unlink(name: str) -> Damage:
    return lambda b: (b / name).unlink()


def _truncate(name: str, size: int) -> Damage:
    return lambda b: os.truncate(b / name, size)


def _write(name: str, data: bytes) -> Damage:
    return lambda b: (b / name).write_bytes(data)


def _resave(name: str, change: Callable[[Any], Any]) -> Damage:
    """Save the array `name` changed, and resign it."""

    def damage(build: Path) -> None:
        np.save(build / name, change(np.load(build / name)))

    return _resigned(name, damage)


def _flip_last_byte(name: str) -> Damage:
    def damage(build: Path) -> None:
        data = bytearray((build / name).read_bytes())
        data[-1] ^= 0x01
        (build / name).write_bytes(bytes(data))

    return damage


def _dangle(build: Path) -> None:
    (build / "tags/0/size.npy").unlink()
    (build / "tags/0/size.npy").symlink_to("size.old.npy")


def _folder_for_file(build: Path) -> None:
    (build / "tags/0/size.npy").unlink()
    (build / "tags/0/size.npy").mkdir()


def _text_file(build: Path, suffix: str) -> str:
    """The name of the tag 0 whoosh file ending with `suffix` (its names are random)."""
    names: list[str] = list(_manifest(build)["files"])
    return next(n for n in names if n.endswith(suffix))


def _damage_segment(build: Path) -> None:
    path = build / _text_file(build, ".seg")
    data = bytearray(path.read_bytes())
    data[-200:] = b"\xff" * 200
    path.write_bytes(bytes(data))


def _damage_segment_resigned(build: Path) -> None:
    _damage_segment(build)
    _resign(build, _text_file(build, ".seg"))


def _drop_toc(build: Path) -> None:
    name = _text_file(build, ".toc")
    (build / name).unlink()
    manifest = _manifest(build)
    del manifest["files"][name]
    _write_manifest(build, manifest)


def _edit_manifest(change: Callable[[dict[str, Any]], object]) -> Damage:
    def damage(build: Path) -> None:
        manifest = _manifest(build)
        change(manifest)
        _write_manifest(build, manifest)

    return damage


def _edit_json(name: str, change: Callable[[dict[str, Any]], object]) -> Damage:
    def damage(build: Path) -> None:
        stored = json.loads((build / name).read_text())
        change(stored)
        (build / name).write_text(json.dumps(stored))

    return _resigned(name, damage)


def _set_first(array: Any, value: int) -> Any:
    array = array.copy()
    array[0] = value
    return array


CODES = "tags/0/package.codes.npy"
# (damage, what the message must name, what it must say)
DAMAGES: dict[str, tuple[Damage, str, str]] = {
    "missing file": (_unlink(CODES), CODES, "is missing"),
    "extra file": (_write("tags/0/stray.npy", b"\x93NUMPY"), "tags/0/stray.npy", "does not list"),
    "extra folder": (lambda b: (b / "tags/2").mkdir(), "tags/2", "does not list"),
    "truncated file": (
        _truncate("tags/0/hash.sorted.npy", 100),
        "tags/0/hash.sorted.npy",
        "truncated",
    ),
    "emptied file": (
        _truncate("tags/0/dictionaries.json", 0),
        "tags/0/dictionaries.json",
        "truncated",
    ),
    "overwritten, same size": (_flip_last_byte(CODES), CODES, "does not match its sha256"),
    "manifest not JSON": (
        _write("manifest.json", b'{"format": 5, "build_id": '),
        "manifest.json",
        "is not valid JSON",
    ),
    "manifest not an object": (
        _write("manifest.json", b"[]"),
        "manifest.json",
        "not a JSON object",
    ),
    "manifest missing": (
        _unlink("manifest.json"),
        "manifest.json",
        "is not an index built by 'cachegql index'",
    ),
    "manifest of another format": (
        _edit_manifest(lambda m: m.update(format=FORMAT_VERSION - 1)),
        f"format {FORMAT_VERSION - 1}",
        "rebuild it with 'cachegql index'",
    ),
    "manifest without files": (
        _edit_manifest(lambda m: m.pop("files")),
        "manifest.json",
        "'files' is not an object",
    ),
    "manifest naming a file outside": (
        _edit_manifest(lambda m: m["files"].update({"../x": {"size": 1, CHECKSUM: "0" * 64}})),
        "manifest.json",
        "'../x'",
    ),
    "manifest without tags": (
        _edit_manifest(lambda m: m.update(tags=[])),
        "manifest.json",
        "'tags' is not a non-empty list",
    ),
    "missing tag folder": (
        lambda b: shutil.rmtree(b / "tags/1"),
        "tags/1",
        "(tag 'v0.22.0') is missing",
    ),
    "dangling link": (_dangle, "tags/0/size.npy", "which does not exist"),
    "folder for a file": (_folder_for_file, "tags/0/size.npy", "is a folder, not a file"),
    "bad dtype": (
        _resave(CODES, lambda a: a.astype(np.int64)),
        CODES,
        "holds int64 values, expected int32",
    ),
    "bad shape": (
        _resave(CODES, lambda a: a[:32].reshape(16, 2)),
        CODES,
        "expected one dimension",
    ),
    "bad length": (_resave("tags/0/size.npy", lambda a: a[:-1]), "tags/0/size.npy", "expected 33"),
    "code outside its dictionary": (
        _resave("tags/0/os.codes.npy", lambda a: _set_first(a, 999)),
        "tags/0/os.codes.npy",
        "expected [0, ",
    ),
    "offsets not ascending": (
        _resave("tags/0/os.offsets.npy", lambda a: _set_first(a, 5)),
        "tags/0/os.offsets.npy",
        "does not ascend",
    ),
    "not an array file": (
        _resigned("tags/0/size.npy", _write("tags/0/size.npy", b"garbage")),
        "tags/0/size.npy",
        "not a numpy array file",
    ),
    "object array": (
        _resave("tags/0/size.npy", lambda a: np.array([{}] * len(a), dtype=object)),
        "tags/0/size.npy",
        "not a readable array",
    ),
    "dictionaries not JSON": (
        _resigned("tags/0/dictionaries.json", _write("tags/0/dictionaries.json", b"{")),
        "tags/0/dictionaries.json",
        "cannot be read as JSON",
    ),
    "dictionary missing": (
        _edit_json("tags/0/dictionaries.json", lambda d: d.pop("os")),
        "tags/0/dictionaries.json",
        "has no list 'os'",
    ),
    "damaged text segment": (_damage_segment, "tags/0/text/", "does not match its sha256"),
    "damaged text segment, resigned": (
        _damage_segment_resigned,
        "tags/0/text",
        "is not a readable text index",
    ),
    "text index without its table of contents": (
        _drop_toc,
        "tags/0/text",
        "is not a readable text index",
    ),
    "tarball names shorter than their offsets": (
        _resigned("tags/0/tarball.blob", _truncate("tags/0/tarball.blob", 10)),
        "tags/0/tarball.offsets.npy",
        "the size of tarball.blob",
    ),
}

DAG_DAMAGES: dict[str, tuple[Damage, str, str]] = {
    "missing parents": (
        _unlink("tags/0/dag/parents.items.npy"),
        "tags/0/dag/parents.items.npy",
        "is missing",
    ),
    "dag.json not JSON": (
        _resigned("tags/0/dag/dag.json", _write("tags/0/dag/dag.json", b"{")),
        "tags/0/dag/dag.json",
        "is malformed",
    ),
    "edge to no node": (
        _resave("tags/0/dag/edges.targets.npy", lambda a: _set_first(a, 1 << 30)),
        "tags/0/dag",
        "the edges' targets",
    ),
    "an edge's virtuals past the sets": (
        _resave("tags/0/dag/edges.virtuals.npy", lambda a: _set_first(a, 1 << 20)),
        "tags/0/dag/edges.virtuals.npy",
        "is damaged: an edge's virtuals are none of the",
    ),
    "an edge's deptypes of another type": (
        _resave("tags/0/dag/edges.deptypes.npy", lambda a: a.astype("int32")),
        "tags/0/dag/edges.deptypes.npy",
        "uint8",
    ),
}


def _refusal(build: Path) -> str:
    with pytest.raises(IndexLoadError) as refused:
        IndexStore(build).close()
    return str(refused.value)


def test_an_intact_build_lists_every_file_with_its_checksum(pages_build: Path) -> None:
    manifest = _manifest(pages_build)
    on_disk = {
        p.relative_to(pages_build).as_posix()
        for p in pages_build.rglob("*")
        if p.is_file() and p.name != "manifest.json"
    }
    assert set(manifest["files"]) == on_disk
    name, entry = next(iter(manifest["files"].items()))
    assert entry == {
        "size": (pages_build / name).stat().st_size,
        CHECKSUM: file_checksum(pages_build / name),
    }
    store = IndexStore(pages_build)
    try:
        assert store.changed_files() == []
        assert {p.name for p in store.files_on_disk()} == {"tarball.blob"}
    finally:
        store.close()


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_a_damaged_build_is_refused_naming_the_file(
    kind: str, pages_build: Path, tmp_path: Path
) -> None:
    damage, names, says = DAMAGES[kind]
    build = _copy(pages_build, tmp_path)
    damage(build)
    message = _refusal(build)
    assert names in message and says in message, message
    assert "\n" not in message


def test_of_several_damaged_files_the_first_the_manifest_lists_is_named(
    pages_build: Path, tmp_path: Path
) -> None:
    """Files are hashed side by side; the refusal still names the first damaged file in
    the manifest's order, whichever thread finds its own damage first."""
    build = _copy(pages_build, tmp_path)
    names = list(_manifest(build)["files"])
    first, last = names[1], names[-1]
    for name in (first, last):
        _flip_last_byte(name)(build)
    for _ in range(5):
        message = _refusal(build)
        assert first in message and "does not match its sha256" in message, message


@pytest.mark.parametrize("kind", list(DAG_DAMAGES))
def test_a_damaged_dag_is_refused_naming_the_file(
    kind: str, dag_build: Path, tmp_path: Path
) -> None:
    damage, names, says = DAG_DAMAGES[kind]
    build = _copy(dag_build, tmp_path)
    damage(build)
    message = _refusal(build)
    assert names in message and says in message, message


def test_an_index_link_to_a_deleted_build_or_a_file_is_refused(
    pages_build: Path, tmp_path: Path
) -> None:
    link = tmp_path / "ix"
    link.symlink_to(tmp_path / "deleted-build")
    assert "ix is not an index built by 'cachegql index'" in _refusal(link)
    assert "not an index built" in _refusal(pages_build / "manifest.json")


# The CLI: one kind of damage per layer of checks (manifest, listing, checksum, loading, text).
CLI_DAMAGES = [
    "manifest not JSON",
    "missing file",
    "overwritten, same size",
    "bad dtype",
    "damaged text segment, resigned",
    "dangling link",
]


@pytest.mark.parametrize("kind", CLI_DAMAGES)
def test_serve_on_a_damaged_build_prints_one_error_line_and_exits_1(
    kind: str, pages_build: Path, tmp_path: Path
) -> None:
    damage, names, _ = DAMAGES[kind]
    build = _copy(pages_build, tmp_path)
    damage(build)
    result = subprocess.run(
        [CLI, "serve", "--index", str(build), "--port", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and names in lines[0], lines


# A running server offered a damaged build


def _publish_damaged(out: Path, source: Path, damage: Damage, scratch: Path) -> Path:
    """Build `source`, damage the build, and publish it at `out` as `cachegql index` does:
    the build beside the others, then the link swapped in one rename."""
    build = build_index([source], scratch / "ix").folder
    damage(build)
    final = out.with_name(out.name + ".builds") / build.name
    build.rename(final)
    link = out.with_name(f".{out.name}.swap")
    link.symlink_to(Path(final.parent.name) / final.name)
    link.replace(out)
    return final


def _post(client: httpx.Client, query: str) -> dict[str, Any]:
    response = client.post("/graphql", json={"query": query})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _wait_for(condition: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "refused index build" in r.getMessage()]


def test_a_server_keeps_its_build_when_offered_a_damaged_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "ix"
    first = build_index([PAGES], out).folder
    app = create_app(Settings(index=out, reload_interval=0.2, access_log=False))
    caplog.set_level(logging.INFO, logger="cachegql.server")
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        before = [_post(client, q) for q in (SPECS, SEARCH, PACKAGES)]
        damaged = _publish_damaged(
            out, LOOSE, DAMAGES["overwritten, same size"][0], tmp_path / "scratch"
        )
        _wait_for(lambda: bool(_refusals(caplog)))
        time.sleep(1)  # five more looks at the link: the refusal is not repeated
        refusals = _refusals(caplog)
        assert len(refusals) == 1, refusals
        assert str(damaged / "tags/0/package.codes.npy") in refusals[0]
        assert "still serving " + first.name in refusals[0]
        assert "\n" not in refusals[0]
        assert client.get("/healthz").json()["build"] == first.name
        assert [_post(client, q) for q in (SPECS, SEARCH, PACKAGES)] == before

        fixed = build_index([LOOSE], out).folder  # a good build is taken at once
        _wait_for(lambda: client.get("/healthz").json()["build"] == fixed.name)
        assert _post(client, SPECS)["data"]["specs"]["totalCount"] == 3


# A build damaged while it is served


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def served(
    pages_build: Path, tmp_path: Path
) -> Iterator[tuple[Path, httpx.Client, Path, subprocess.Popen[bytes]]]:
    """`cachegql serve` in its own process (a SIGBUS would kill it, not the tests) on a copy
    of the build: the copy, a client, the server's log and its process."""
    build = _copy(pages_build, tmp_path)
    port = _free_port()
    log = tmp_path / "serve.log"
    command = [
        CLI,
        "serve",
        "--index",
        str(build),
        "--port",
        str(port),
        "--reload-interval",
        "0.2",
        "--no-access-log",
        "--response-cache-mb",
        "0",
    ]
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:

            def up() -> bool:
                assert process.poll() is None, log.read_text()
                try:
                    return client.get("/readyz").status_code == 200
                except httpx.TransportError:
                    return False

            _wait_for(up, 60)
            yield build, client, log, process
    finally:
        process.terminate()
        process.wait(timeout=10)


def _coded(body: dict[str, Any]) -> bool:
    return bool(body.get("errors")) and all(e["extensions"].get("code") for e in body["errors"])


def _looked(name: str, effect: str) -> re.Pattern[str]:
    """The line the server's look logs for a file of its build cut short."""
    cut = rf"{re.escape(name)} was cut short \(\d+ -> 0 bytes\)"
    return re.compile(rf"{cut} since it was verified; [^\n]*{effect}")


def test_truncating_every_file_of_the_served_build_does_not_kill_the_server(
    served: tuple[Path, httpx.Client, Path, subprocess.Popen[bytes]],
) -> None:
    build, client, log, process = served
    queries = (SPECS, SEARCH, PACKAGES)
    before = [_post(client, q) for q in queries]
    for path in build.rglob("*"):
        if path.is_file():
            os.truncate(path, 0)
    for _ in range(3):
        after = [_post(client, q) for q in queries]
        assert process.poll() is None
    # Only the tarball names are read from disk: what asks for them fails with a code...
    assert _coded(after[0]), after[0]
    # ... and what does not still answers, from memory, as before.
    assert after[1:] == before[1:]
    # A page that does not ask for them, never asked before (no cached answer), reads none.
    page = _post(client, SPECS.replace(" tarball", ""))
    assert page["data"]["specs"]["nodes"] == [
        {k: v for k, v in node.items() if k != "tarball"}
        for node in before[0]["data"]["specs"]["nodes"]
    ]
    # The server looks every 0.2 s, so it may see the files cut short over two looks; a
    # failed query's own log line also says "cut short", so wait for the looks' lines.
    looked = [_looked("tarball.blob", "read it fail"), _looked("codes.npy", "copy in memory")]
    _wait_for(lambda: all(line.search(log.read_text()) for line in looked))
    # Each failed answer says why, and logs a line without a traceback.
    assert {e["message"] for e in after[0]["errors"]} == {CHANGED_MESSAGE}
    text = log.read_text()
    assert re.search(r"internal error at \['specs'.*tarball\.blob was cut short", text)
    assert "Traceback" not in text


def test_served_files_rewritten_in_place_fail_rather_than_answer_wrong(
    served: tuple[Path, httpx.Client, Path, subprocess.Popen[bytes]],
) -> None:
    """The measured failure: a same-size overwrite made `adept-utils` specs come back as
    `zstd`. Now what was copied into memory answers as before, and the tarball names,
    read from disk, are refused rather than read from the new bytes."""
    build, client, log, process = served
    queries = (SPECS, SEARCH, PACKAGES)
    before = [_post(client, q) for q in queries]
    blob = build / "tags/0/tarball.blob"
    blob.write_bytes(bytes(reversed(blob.read_bytes())))
    codes = build / "tags/0/package.codes.npy"
    codes.write_bytes(bytes(codes.stat().st_size))  # every spec of the first package
    after = [_post(client, q) for q in queries]
    assert _coded(after[0]), after[0]
    assert after[1:] == before[1:]
    assert process.poll() is None
    _wait_for(lambda: log.read_text().count("was rewritten in place since it was verified") == 2)


def test_a_file_read_from_disk_fails_cleanly_once_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "a.npy"
    np.save(path, np.arange(1000, dtype=np.int32))
    array = FileArray.npy(path, "int32", 1000)
    assert array.read(10, 13).tolist() == [10, 11, 12]
    os.truncate(path, 1000)
    with pytest.raises(IndexChangedError, match="was cut short"):
        array.read(900, 1000)
