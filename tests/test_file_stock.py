"""`FileStock`: many files as one digest of their names, sizes and times, in order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cachegql.index.ingest.file_stock import FileStock, statuses_now
from cachegql.index.ingest.files import read_regular_status
from cachegql.index.ingest.identity import RecordingOpener
from cachegql.index.ingest.locations import Location, Opener


def _digest(paths: list[Path], kind: str = "files") -> str | None:
    stock = FileStock(kind)
    for path in paths:
        stock.add(str(path))
    return stock.digest()


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / f"file-{n}.json" for n in range(5)]
    for n, path in enumerate(paths):
        path.write_bytes(b"x" * n)
    return paths


def test_the_status_a_file_was_read_with_stands_for_it_as_it_is_now(files: list[Path]) -> None:
    read = FileStock("files")
    for path in files:
        read.add(str(path), read_regular_status(path)[1])
    assert read.digest() == _digest(files) is not None


def test_a_digest_is_of_the_names_sizes_times_order_and_kind(files: list[Path]) -> None:
    before = _digest(files)
    assert _digest(files) == before
    assert _digest(files, kind="other") != before
    assert _digest(files[::-1]) != before
    assert _digest(files[:-1]) != before

    status = files[2].stat()
    os.utime(files[2], ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))  # touched only
    touched = _digest(files)
    assert touched != before
    # Its time put back: still seen, by its status's change time.
    os.utime(files[2], ns=(status.st_atime_ns, status.st_mtime_ns))
    assert _digest(files) not in (before, touched)

    # Rewritten to the same size with its time put back, or its mode changed: seen alike.
    for change in ("rewritten", "chmod"):
        before = _digest(files)
        status = files[3].stat()
        if change == "rewritten":
            files[3].write_bytes(b"y" * 3)
        else:
            files[3].chmod(0o600)
        os.utime(files[3], ns=(status.st_atime_ns, status.st_mtime_ns))
        assert files[3].stat().st_size == status.st_size
        assert _digest(files) != before

    before = _digest(files)
    renamed = files[1].rename(files[1].with_name("renamed.json"))  # its times kept
    assert _digest([files[0], renamed, *files[2:]]) != before


def test_a_file_that_cannot_be_looked_at_leaves_no_digest(files: list[Path]) -> None:
    files[4].unlink()
    assert _digest(files) is None
    dangling = files[0].parent / "dangling.json"
    dangling.symlink_to(files[0].parent / "nowhere")
    assert _digest([*files[:4], dangling]) is None
    assert _digest(files[:4]) is not None


def test_more_files_than_a_line_holds(tmp_path: Path) -> None:
    """Past a line's 10,000 files: every file counts, and a status given (as a reader
    gives the one it read with) is the status looked up now."""
    paths = []
    for n in range(10_005):
        path = tmp_path / f"{n:05}.json"
        path.touch()
        paths.append(path)
    whole = _digest(paths)
    assert whole is not None
    assert _digest(paths[:-1]) != whole
    again = FileStock("files")
    for path in paths:
        again.add(str(path), path.stat())
    assert again.digest() == whole


def test_a_folder_read_twice_with_different_stocks_stands_for_nothing() -> None:
    """A mirror listed twice in one tag is read twice; if its manifests changed in
    between, neither stock is what the tag holds."""
    opener = RecordingOpener(Opener())
    folder = Location("/mirror/v3/manifests/spec")
    opener.stocked(folder, "a")
    opener.stocked(folder, "a")
    assert opener.file_stocks[folder.text] == "a"
    opener.stocked(folder, "b")
    assert opener.file_stocks[folder.text] is None
    opener.stocked(folder, "b")
    assert opener.file_stocks[folder.text] is None


def test_statuses_now_are_those_of_the_paths_folder_by_folder(tmp_path: Path) -> None:
    paths: list[str] = []
    for folder in ("a", "b", "a-link"):
        if folder == "a-link":
            (tmp_path / folder).symlink_to("a")
        else:
            (tmp_path / folder).mkdir()
        for n in range(3):
            file = tmp_path / folder / f"{n}.json"
            if folder != "a-link":
                file.write_bytes(b"y" * n)
            paths.append(str(file))
    paths += [str(tmp_path / "b" / "gone.json"), str(tmp_path / "no-folder" / "x.json")]
    found = list(statuses_now(iter(paths)))
    assert [path for path, _ in found] == paths
    for text, status in found[:-2]:
        assert status is not None
        now = os.stat(text)  # noqa: PTH116
        assert (status.st_ino, status.st_size, status.st_mtime_ns) == (
            now.st_ino,
            now.st_size,
            now.st_mtime_ns,
        )
    assert found[-2][1] is None and found[-1][1] is None


def test_statuses_now_of_bare_names_are_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "here.json").write_bytes(b"here")
    monkeypatch.chdir(tmp_path)
    ((_, status),) = statuses_now(["here.json"])
    assert status is not None and status.st_ino == (tmp_path / "here.json").stat().st_ino


def test_statuses_now_close_their_folders(tmp_path: Path) -> None:
    descriptors = Path("/proc/self/fd")
    open_now = len(list(descriptors.iterdir()))
    paths = [str(tmp_path / f"{n}.json") for n in range(3)]
    assert len(list(statuses_now(paths))) == 3
    early = statuses_now(paths)
    next(early)
    early.close()
    assert len(list(descriptors.iterdir())) == open_now
