"""Sources that must not hang or exhaust `cachegql index`: pipes, devices, link loops,
huge files, unreadable folders, and pages with a repeated key or a byte order mark.

The cases that hung or ran out of memory before run the real CLI in a subprocess with a
timeout and an address-space limit, so a regression fails the test instead of blocking
or swapping the machine; peak memory is that process's own (`wait4`).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index.ingest import (
    Location,
    NotAPageError,
    Opener,
    ReadError,
    SourceError,
    StrictModeError,
    ingest,
    iter_candidates,
    read_page,
)
from cachegql.index.ingest import pages as pages_module
from cachegql.index.ingest.files import (
    NotRegularFileError,
    TooLargeError,
    open_regular,
    read_regular_status,
)
from cachegql.index.ingest.pages import UnreadFileError
from cachegql.index.records import Problem
from tests.conftest import CLI, untraced_env
from tests.mirror_builder import write_v2_mirror, write_v2_spec_files
from tests.page_factory import fake_hash, page_text, spec, write_page

SPECS = 3
TIMEOUT = 30  # seconds: a normal run takes under one
MEMORY_LIMIT = 2 << 30  # address space of a CLI run: a read without end fails fast
MIB = 1 << 20
NOBODY = 65534
# A CLI run on three specs peaks near 60 MB; reading one of the files these tests
# plant (512 MiB, or /dev/zero until the 2 GiB limit) would go far beyond this.
PEAK_RSS_MB = 150


def _page(path: Path, package: str = "good", specs: int = SPECS) -> Path:
    details = [spec(f"{package}-{i}") for i in range(specs)]
    return write_page(path, page_text(details, title=f'"{package}"'))


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_mb: float

    @property
    def problems(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("problem: ")]


# Runs its arguments, limited in address space, in a process forked from this small one:
# a process's peak memory (`ru_maxrss`) counts the process it was forked from, and the
# test runner's is hundreds of MB. Writes the command's peak (KiB) to the file named.
_LIMITED = """
import os, resource, sys
limit, report, command = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
child = os.fork()
if child == 0:
    os.execv(command[0], command)
_, status, usage = os.wait4(child, 0)
with open(report, "w") as file:
    file.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_cli(
    *args: str | Path,
    cwd: Path,
    command: tuple[str, ...] = (CLI,),
    env: dict[str, str] | None = None,
) -> Run:
    """`cachegql ARGS`, killed (and the test failed) if it runs past TIMEOUT."""
    out, err, peak = cwd / "stdout.txt", cwd / "stderr.txt", cwd / "peak-kib.txt"
    argv = [sys.executable, "-c", _LIMITED, str(MEMORY_LIMIT), str(peak), *command]
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [*argv, *map(str, args)],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,  # a hung command is killed with its parent
        )
    try:
        process.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"cachegql {' '.join(map(str, args))} did not finish in {TIMEOUT} s (hung)")
    return Run(process.returncode, out.read_text(), err.read_text(), int(peak.read_text()) / 1024)


# Pipes and devices


def test_fifo_in_a_folder_is_noted_and_indexing_finishes(tmp_path: Path) -> None:
    """A named pipe among the pages blocked the first read forever; now it is a note."""
    _page(tmp_path / "src" / "good" / "specs.md")
    os.mkfifo(tmp_path / "src" / "pipe.md")
    run = run_cli("index", "src", "--out", "ix", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.problems == [
        "problem: src/pipe.md: a named pipe (FIFO), not a regular file; skipped without reading it"
    ]
    assert f"{SPECS} specs" in run.stdout


def test_fifo_named_as_a_source_is_noted(tmp_path: Path) -> None:
    """A pipe given by name is not read either (it used to be 'no such file or folder')."""
    _page(tmp_path / "good.md")
    os.mkfifo(tmp_path / "pipe")
    run = run_cli("index", "pipe", "good.md", "--out", "ix", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.problems == [
        "problem: pipe: a named pipe (FIFO), not a regular file; skipped without reading it"
    ]


def test_fifo_as_a_mirror_index_is_a_problem_not_a_hang(tmp_path: Path) -> None:
    """Build caches are read through the same check: a pipe as build_cache/index.json."""
    _page(tmp_path / "pages" / "specs.md")
    (tmp_path / "mirror" / "build_cache").mkdir(parents=True)
    os.mkfifo(tmp_path / "mirror" / "build_cache" / "index.json")
    run = run_cli("index", "mirror", "pages", "--tag", "develop", "--out", "ix", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.problems == [
        "problem: mirror: skipped: mirror/build_cache/index.json: "
        "a named pipe (FIFO), not a regular file; not read"
    ]


def test_links_to_dev_zero_and_dev_null_are_noted_not_read(tmp_path: Path) -> None:
    """A link to /dev/zero read until MemoryError; devices, linked or named, are skipped."""
    _page(tmp_path / "src" / "good" / "specs.md")
    (tmp_path / "src" / "zero.md").symlink_to("/dev/zero")
    (tmp_path / "src" / "null.md").symlink_to("/dev/null")
    run = run_cli("index", "src", "/dev/zero", "--out", "ix", cwd=tmp_path, env=untraced_env())
    assert run.returncode == 0, run.stderr
    assert run.problems == [
        "problem: src/null.md: a link to /dev/null, a character device, not a regular file; "
        "skipped without reading it",
        "problem: src/zero.md: a link to /dev/zero, a character device, not a regular file; "
        "skipped without reading it",
        "problem: /dev/zero: a character device, not a regular file; skipped without reading it",
    ]
    assert run.peak_rss_mb < PEAK_RSS_MB, f"peak memory {run.peak_rss_mb:.0f} MB"


def test_candidates_without_a_problem_list_raise_on_a_pipe(tmp_path: Path) -> None:
    """`iter_candidates` called on its own does not drop notes: it raises the first."""
    _page(tmp_path / "specs.md")
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(SourceError, match="pipe: a named pipe"):
        list(iter_candidates([tmp_path]))
    problems: list[Problem] = []
    assert [c.path.name for c in iter_candidates([tmp_path], problems)] == ["specs.md"]
    assert [p.path for p in problems] == [str(tmp_path / "pipe")]


def test_device_and_looping_link_named_as_sources_are_problems(tmp_path: Path) -> None:
    """Named on the command line, they were 'no such file or folder', ending the build."""
    good = _page(tmp_path / "good.md")
    (tmp_path / "self").symlink_to("self")
    result = ingest(["/dev/null", tmp_path / "self", good])
    assert [str(p) for p in result.problems] == [
        "/dev/null: a character device, not a regular file; skipped without reading it",
        f"{tmp_path}/self: a link that leads back to itself (a loop of links); skipped",
    ]
    assert result.pages == 1


def test_devices_are_refused_by_every_reader() -> None:
    """Pages and build-cache files alike: opened only when regular."""
    with pytest.raises(UnreadFileError, match="a character device, not a regular file"):
        read_page(Path("/dev/null"))
    with pytest.raises(ReadError, match="/dev/zero: a character device, not a regular file"):
        Opener().read(Location("/dev/zero"))


def test_path_swapped_for_a_pipe_after_the_check_is_refused(tmp_path: Path) -> None:
    """What is opened is checked again: a pipe put in place after the first look."""
    regular = tmp_path / "page.md"
    regular.write_text("---\n")
    os.mkfifo(tmp_path / "pipe")

    class Swapped(type(tmp_path)):  # type: ignore[misc]
        def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
            return regular.stat()  # what the path was when it was looked at

    with pytest.raises(NotRegularFileError, match="a named pipe"):
        open_regular(Swapped(tmp_path / "pipe"))


# Links


def test_link_loops_are_noted_and_never_followed(tmp_path: Path) -> None:
    """Links back to a containing folder, to themselves, to each other, to nothing:
    each is a problem naming it; links to other folders are followed, each folder once."""
    src = tmp_path / "src"
    _page(src / "pkg" / "specs.md", "pkg")
    _page(tmp_path / "outside" / "other" / "specs.md", "other")
    (src / "up").symlink_to("..")
    (src / "pkg" / "back").symlink_to("..")
    (src / "self").symlink_to("self")
    (src / "a").symlink_to("b")
    (src / "b").symlink_to("a")
    (src / "dangling").symlink_to("nowhere")
    (src / "again").symlink_to("../outside")
    (src / "linked").symlink_to("../outside")
    result = ingest([src])
    loop = "a link that leads back to itself (a loop of links); skipped"
    assert [str(p) for p in result.problems] == [
        f"{src}/a: {loop}",
        f"{src}/b: {loop}",
        f"{src}/dangling: a link to nowhere, which does not exist; skipped",
        f"{src}/self: {loop}",
        f"{src}/up: a link to {tmp_path}, a folder that contains it (a loop); not followed",
        f"{src}/pkg/back: a link to {src}, a folder that contains it (a loop); not followed",
    ]
    assert result.pages == 2  # pkg, and other through the first link to it
    assert result.merged_duplicates == 0
    with pytest.raises(StrictModeError, match="loop"):
        ingest([src], strict=True)


# Large files


def test_large_files_are_judged_by_their_start_not_read_whole(tmp_path: Path) -> None:
    """A 512 MiB file that is not a page cost 1 GB; one that starts like a page but is
    larger than any page is a problem; neither is read whole."""
    src = tmp_path / "src"
    _page(src / "good" / "specs.md")
    with (src / "blob.bin").open("wb") as blob:
        blob.truncate(512 * MIB)  # sparse: costs no disk
    huge = write_page(src / "huge.md", "---\ntitle: huge\nlayout: cache\n")
    os.truncate(huge, 80 * MIB)
    run = run_cli("index", "src", "--out", "ix", "-v", cwd=tmp_path, env=untraced_env())
    assert run.peak_rss_mb < PEAK_RSS_MB, f"peak memory {run.peak_rss_mb:.0f} MB"
    assert run.returncode == 0, run.stderr
    assert run.problems == [
        "problem: src/huge.md: starts like a cache page but is 80 MiB, more than any page can "
        "be (64 MiB); skipped without reading it"
    ]
    assert "skipped: src/blob.bin: not a cache page: no front matter" in run.stderr


def test_too_large_page_is_a_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound applies to a page that is whole and valid too."""
    monkeypatch.setattr(pages_module, "MAX_PAGE_BYTES", 100_000)
    path = _page(tmp_path / "specs.md", specs=1000)
    assert path.stat().st_size > 100_000
    with pytest.raises(UnreadFileError, match=r"is 0 MiB, more than any page can be \(0 MiB\)"):
        read_page(path)


def test_other_layout_in_a_large_file_is_decided_from_its_start(tmp_path: Path) -> None:
    """Front matter closed without `layout: cache`: not a page, whatever follows."""
    head = "---\ntitle: notes\nlayout: post\n---\n" + "text\n" * 20_000
    write_page(tmp_path / "src" / "notes.md", head.encode() + b"\xff" * 100_000)
    _page(tmp_path / "src" / "good" / "specs.md")
    result = ingest([tmp_path / "src"])
    assert result.problems == []
    assert [p.message for p in result.skipped] == [
        "not a cache page: front matter has layout 'post', not 'cache'"
    ]


def test_no_front_matter_in_a_large_file_named_as_a_source(tmp_path: Path) -> None:
    """A file named on the command line is judged by its start too."""
    path = tmp_path / "data.bin"
    path.write_bytes(b"\xff" * 200_000)
    with pytest.raises(NotAPageError, match="no front matter"):
        read_page(path)


# Unreadable folders and files


def _as_nobody(python: str) -> tuple[str, ...]:
    """`python` run as uid and gid 65534, without root's groups."""
    setpriv = shutil.which("setpriv") or "setpriv"
    return (setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python)


def _nobody_python() -> tuple[str, str] | None:
    """An interpreter that uid 65534 can run with this project importable, and the
    PYTHONPATH for it: the venv's own python is often under /root, which nobody reads."""
    if shutil.which("setpriv") is None:
        return None
    package_root = Path(pages_module.__file__).parents[3]  # the folder holding cachegql/
    pythonpath = os.pathsep.join([str(package_root), sysconfig.get_paths()["purelib"]])
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = (sys.executable, f"/usr/bin/python{version}", f"/usr/local/bin/python{version}")
    for python in candidates:
        probe = subprocess.run(
            [*_as_nobody(python), "-c", "import cachegql.server.cli"],
            env={"PYTHONPATH": pythonpath, "PATH": os.environ.get("PATH", "")},
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        if probe.returncode == 0:
            return python, pythonpath
    return None


@pytest.fixture
def unprivileged(tmp_path: Path) -> Iterator[tuple[Path, tuple[str, ...], dict[str, str] | None]]:
    """A work folder, and how to run the CLI there as a user whom `chmod 000` stops.

    As root (CI), that user is nobody (uid 65534), through setpriv and a system python;
    the folder is then outside pytest's (root-only) temporary folder, owned by nobody.
    """
    if os.geteuid() != 0:
        yield tmp_path, (CLI,), None
        return
    found = _nobody_python()
    if found is None:
        message = (
            "running as root, where chmod 000 does not stop reading, and uid 65534 cannot "
            "run this project (needs setpriv and /usr/bin/python3.X readable by all)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    python, pythonpath = found
    work = Path(tempfile.mkdtemp(prefix="cachegql-unreadable-"))
    try:
        os.chown(work, NOBODY, NOBODY)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(work),
            "XDG_CACHE_HOME": str(work / "cache"),
            "PYTHONPATH": pythonpath,
            "LANG": "C.UTF-8",
        }
        yield work, (*_as_nobody(python), "-m", "cachegql.server.cli"), env
    finally:
        shutil.rmtree(work)


def test_unreadable_folder_and_file_are_problems_and_the_rest_loads(
    unprivileged: tuple[Path, tuple[str, ...], dict[str, str] | None],
) -> None:
    """One unreadable subfolder aborted the whole build; now it and an unreadable file
    are problem lines, and `--strict` still makes them fatal."""
    work, command, env = unprivileged
    _page(work / "src" / "good" / "specs.md")
    locked = work / "src" / "locked"
    _page(locked / "specs.md", "hidden")
    _page(work / "src" / "sealed.md", "sealed")
    (work / "src" / "sealed.md").chmod(0)
    locked.chmod(0)
    try:
        run = run_cli("index", "src", "--out", "ix", cwd=work, command=command, env=env)
        strict = run_cli(
            "index", "src", "--out", "ix2", "--strict", cwd=work, command=command, env=env
        )
    finally:
        locked.chmod(0o755)
    assert run.returncode == 0, run.stderr
    assert run.problems == [
        "problem: src/locked: cannot read folder (Permission denied); "
        "skipped with everything in it",
        "problem: src/sealed.md: cannot read file: Permission denied",
    ]
    assert f"indexed 1 page, {SPECS} specs" in run.stdout
    assert strict.returncode == 1
    assert strict.stderr.startswith("error (--strict): src/locked: cannot read folder")


def test_folder_that_cannot_be_listed_is_a_problem_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same, in this process (where root reads anything): listing the folder fails."""
    _page(tmp_path / "src" / "good" / "specs.md")
    locked = tmp_path / "src" / "locked"
    _page(locked / "specs.md", "hidden")
    scandir = os.scandir

    def refusing(path: Path) -> Iterator[os.DirEntry[str]]:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    result = ingest([tmp_path / "src"])
    assert [str(p) for p in result.problems] == [
        f"{locked}: cannot read folder (Permission denied); skipped with everything in it"
    ]
    assert result.pages == 1


# Front matter


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    """A page saved with a BOM (as some Windows editors do) loads, without a problem."""
    text = page_text([spec(f"bom-{i}") for i in range(SPECS)], title='"bom"')
    write_page(tmp_path / "bom" / "specs.md", b"\xef\xbb\xbf" + text.encode())
    write_page(tmp_path / "loose.txt", b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    result = ingest([tmp_path / "bom", tmp_path / "loose.txt"])
    assert result.problems == []
    assert result.pages == 2
    assert len(result.tables["develop"]) == SPECS


def test_repeated_front_matter_key_is_a_problem_and_the_last_wins(tmp_path: Path) -> None:
    """Two `spec_details:` lines: the first list used to vanish silently. The last is
    kept, as Jekyll (YAML) reads the page: the index shows what the site shows."""
    lines = page_text([spec("first")], title='"twice"').splitlines()
    lines.insert(-1, "spec_details: " + json.dumps([spec("last-1"), spec("last-2")]))
    path = write_page(tmp_path / "twice" / "specs.md", "\n".join(lines) + "\n")
    result = ingest([tmp_path / "twice"])
    assert [str(p) for p in result.problems] == [
        f"{path}: key 'spec_details' appears 2 times in the front matter (lines 5 and 6); "
        "only the last is used, as Jekyll reads the page"
    ]
    table = result.tables["develop"]
    assert {table.record(row).hash for row in range(len(table))} == {
        fake_hash("last-1"),
        fake_hash("last-2"),
    }


def test_a_pipe_listed_as_a_regular_file_is_refused_once_open(tmp_path: Path) -> None:
    """`listed_regular` (a listing's word for it) skips the look before opening; a path
    swapped for a pipe since is opened without blocking and refused, not read."""
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(NotRegularFileError, match="a named pipe"):
        read_regular_status(tmp_path / "pipe", listed_regular=True)


def test_a_file_listed_as_regular_is_not_followed_if_a_link_since(tmp_path: Path) -> None:
    """A link swapped in for a file its folder listed as regular fails to open: the
    look before opening, which would have seen a device behind it, was skipped."""
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(OSError) as refused:
        read_regular_status(tmp_path / "zero", listed_regular=True)
    assert refused.value.errno == errno.ELOOP
    with pytest.raises(NotRegularFileError, match="a character device"):
        read_regular_status(tmp_path / "zero")


def test_a_file_longer_than_its_status_says_is_read_whole(tmp_path: Path) -> None:
    """One read of the size the status gives (plus one) is the whole file only when it
    brings exactly that size: /proc files say 0 and hold more."""
    data, status = read_regular_status("/proc/self/status", listed_regular=True)
    assert status.st_size == 0 and b"VmHWM" in data and data.endswith(b"\n")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "some").write_bytes(b"x" * 100)
    assert read_regular_status(tmp_path / "empty")[0] == b""
    assert read_regular_status(tmp_path / "some", listed_regular=True)[0] == b"x" * 100


HUGE = 64 << 30  # a sparse file of this size costs no disk, and no memory unless read


def _made_huge(path: Path) -> Path:
    """`path` made a sparse file of `HUGE` bytes (created, or extended with zeros)."""
    with path.open("ab") as file:
        file.truncate(HUGE)
    return path


def _indexed(source: Path, tmp_path: Path) -> Run:
    """`cachegql index SOURCE --tag develop`, which must succeed."""
    run = run_cli("index", source, "--tag", "develop", "--out", tmp_path / "ix", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    return run


def test_a_file_over_its_limit_is_refused_before_or_while_it_is_read(tmp_path: Path) -> None:
    """By its status when that says the size (a sparse file of 64 GiB costs nothing), and
    as it is read when it does not (/proc files say 0 bytes)."""
    sparse = _made_huge(tmp_path / "sparse")
    with pytest.raises(TooLargeError) as refused:
        read_regular_status(sparse, listed_regular=True, limit=MIB)
    assert (refused.value.size, refused.value.limit) == (HUGE, MIB)
    assert refused.value.strerror == "68,719,476,736 bytes, more than the 1,048,576 allowed"
    with pytest.raises(TooLargeError) as grown:
        read_regular_status("/proc/self/status", limit=100)
    assert grown.value.size > 100
    assert grown.value.strerror == "more than the 100 bytes allowed, as read"
    (tmp_path / "small").write_bytes(b"x" * 100)
    assert read_regular_status(tmp_path / "small", limit=100)[0] == b"x" * 100


def test_a_huge_spec_manifest_is_a_problem_not_read(tmp_path: Path) -> None:
    """A mirror's spec manifest of 64 GiB (sparse: no disk used) was read whole, a
    MemoryError then ending the build; now a problem names it, and the rest loads."""
    summary = write_mirror(MirrorConfig(specs=12, packages=4, stacks=1, seed=3), tmp_path)
    huge = _made_huge(sorted((summary.mirror / "v3" / "manifests" / "spec").glob("*/*.json"))[0])
    run = _indexed(summary.mirror, tmp_path)
    assert (
        f"problem: {huge}: spec manifest not read: 68,719,476,736 bytes, "
        "more than the 1,048,576 allowed; ignored" in run.problems
    )
    assert "12 specs" in run.stdout + run.stderr
    assert run.peak_rss_mb < PEAK_RSS_MB


def test_a_huge_spec_file_in_a_mirror_without_an_index_is_a_problem(tmp_path: Path) -> None:
    """A layout v2 mirror without an index is read spec file by spec file: one of 64 GiB
    (sparse) ended the build with a MemoryError; now it is skipped, and the rest loads."""
    summary = write_mirror(MirrorConfig(specs=12, packages=4, stacks=1, seed=3), tmp_path)
    index = tmp_path / "stacks" / "root" / "build_cache" / "index.json"
    spec_files = write_v2_spec_files(index, tmp_path / "spec-files")
    folder = write_v2_mirror(None, tmp_path / "v2", spec_files=spec_files)
    huge = _made_huge(folder / "huge-1.0-aaaa.spec.json")
    run = _indexed(folder.parent, tmp_path)
    assert (
        f"problem: {huge}: spec file skipped: 68,719,476,736 bytes, "
        "more than the 67,108,864 allowed"
    ) in run.problems
    assert f"{summary.specs} specs" in run.stdout + run.stderr
    assert run.peak_rss_mb < PEAK_RSS_MB


def test_a_malformed_legacy_yaml_spec_file_is_a_problem(tmp_path: Path) -> None:
    """A layout v2 mirror of legacy `.spec.yaml` files (PyYAML imported only to read
    them): one that is no YAML is named with what is wrong, and the rest loads."""
    summary = write_mirror(MirrorConfig(specs=12, packages=4, stacks=1, seed=3), tmp_path)
    index = tmp_path / "stacks" / "root" / "build_cache" / "index.json"
    spec_files = write_v2_spec_files(index, tmp_path / "spec-files", yaml_format=True)
    folder = write_v2_mirror(None, tmp_path / "v2", spec_files=spec_files)
    broken = folder / "broken-1.0-aaaa.spec.yaml"
    broken.write_text("spec: [unclosed\n")
    run = _indexed(folder.parent, tmp_path)
    problems = [p for p in run.problems if str(broken) in p]
    assert len(problems) == 1 and "not valid YAML" in problems[0], run.problems
    assert f"{summary.specs} specs" in run.stdout + run.stderr
