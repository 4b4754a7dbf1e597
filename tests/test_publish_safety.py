"""Publishing that cannot hurt a server: builds stay while a server may serve them, one
`cachegql index` at a time per --out, killed builds cleaned up, signals and full or
read-only disks answered in one line. Real servers, real `cachegql index` processes
and real files; states are waited for, never guessed with sleeps."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from cachegql.demo import DemoConfig, write_pages
from cachegql.index import IndexStore, build_index
from cachegql.index.disk.publish import PARTIAL, REPLACED, builds_folder
from cachegql.server.app import Settings, create_app
from tests.conftest import CLI, PAGES, LiveServer, untraced_env

LOOSE = PAGES / "loose" / "zlib-develop.txt"
SEARCH = """{ specs(search: "zlib", first: 3) { totalCount nodes { name shortHash stacks }
              facets { stacks { value count } compilers { value count } } } }"""
RELOAD = 1.0  # the server's reload interval in the publish race
WAIT = 30.0  # the bound on every wait for a state; reached only when something is broken


def _until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Wait for an observable state, polling; fail naming it if it never comes."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.001)


def _partials(out: Path) -> list[Path]:
    folder = builds_folder(out)
    return sorted(folder.glob("*" + PARTIAL)) if folder.is_dir() else []


def _complete(out: Path) -> bool:
    """Does `out` lead to a build a server can open?"""
    try:
        IndexStore(out).close()
    except Exception:
        return False
    return True


def _one_line(stderr: str) -> str:
    assert stderr.count("\n") == 1 and stderr.endswith("\n"), stderr
    assert "Traceback" not in stderr
    return stderr.rstrip("\n")


def _index(
    *args: str | Path, preexec_fn: Callable[[], None] | None = None, **popen: Any
) -> subprocess.Popen[str]:
    """`cachegql index` as started from a terminal: SIGINT at its default. A run started
    in the background by a shell without job control (`bash .ci/run &`) inherits SIGINT
    ignored, and a process rightly keeps ignoring what its parent ignored (as nohup)."""

    def as_from_a_terminal() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if preexec_fn is not None:
            preexec_fn()

    command = [CLI, "index", *map(str, args)]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_from_a_terminal,
        **popen,
    )


def _run_index(*args: str | Path, **popen: Any) -> tuple[int, str, str]:
    with _index(*args, **popen) as process:
        stdout, stderr = process.communicate(timeout=WAIT)
    return process.returncode, stdout, stderr


# A page held at the door: `cachegql index URL` stops inside its ingest, at a known
# point (after it took the lock and made its staging folder), until the test lets it on.


class Gate:
    """Holds each request until let through; counts arrivals. With `batch`, lets
    requests through by themselves once `batch` wait or none came for `quiet` seconds:
    runs that started together then ingest, write and publish in step."""

    def __init__(self, batch: int = 0, quiet: float = 0.05) -> None:
        self.batch = batch
        self.quiet = quiet
        self.arrivals = 0
        self._opened = 0
        self._last = 0.0
        self._cond = threading.Condition()

    def enter(self) -> None:
        with self._cond:
            self.arrivals += 1
            ticket, self._last = self.arrivals, time.monotonic()
            if self.batch and self.arrivals - self._opened >= self.batch:
                self._open_all()
            self._cond.notify_all()
            while self._opened < ticket:
                timed_out = not self._cond.wait(timeout=self.quiet if self.batch else WAIT)
                if timed_out and (not self.batch or time.monotonic() - self._last >= self.quiet):
                    self._open_all()

    def wait_arrivals(self, count: int) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: self.arrivals >= count, timeout=WAIT)

    def open(self) -> None:
        with self._cond:
            self._open_all()

    def _open_all(self) -> None:
        self._opened = max(self._opened, self.arrivals)
        self._cond.notify_all()


@contextlib.contextmanager
def held_page(gate: Gate) -> Iterator[str]:
    """A URL serving the loose zlib page through `gate`; append anything after it (a
    query string) to keep the runs' download caches apart."""
    body = LOOSE.read_bytes()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            gate.enter()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the run may have been killed meanwhile
                self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, *args: Any) -> None:
            pass

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/zlib-develop.txt"
    finally:
        gate.open()
        server.shutdown()
        server.server_close()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The runs' environment: their download cache in the test's folder."""
    return {**os.environ, "CACHEGQL_CACHE_DIR": str(tmp_path / "cache")}


# 1. Builds stay while a server may serve them


def test_publishing_faster_than_the_server_reloads_fails_no_request(tmp_path: Path) -> None:
    """A server reloading every second, 8 builds published in quick succession (0.04 s
    each alone, up to 0.3 s on a busy machine), a client searching throughout (the text
    index and facets: files a server opens lazily): no request fails, and the server ends
    on the newest build. (Before builds were kept for a grace period, 3 to 8% failed.)"""
    out = tmp_path / "ix"
    build_index([PAGES], out)
    app = create_app(Settings(index=out, reload_interval=RELOAD, response_cache_mb=0))
    answers: list[int] = []
    failures: list[str] = []
    stop = threading.Event()

    def search(url: str) -> None:
        with httpx.Client(base_url=url, timeout=WAIT) as client:
            while not stop.is_set():
                response = client.post("/graphql", json={"query": SEARCH})
                if response.status_code != 200 or "errors" in response.json():
                    failures.append(response.text)
                answers.append(response.status_code)
                time.sleep(0.002)  # room for the builds, in this same process

    with LiveServer(app) as url, httpx.Client(base_url=url) as probe:
        client = threading.Thread(target=search, args=(url,))
        client.start()
        try:
            _until(lambda: len(answers) > 0, "the first answer")
            started = time.monotonic()
            for _ in range(8):
                newest = build_index([LOOSE], out).folder
            assert time.monotonic() - started < 8 * RELOAD / 2, "the builds were not faster"
            _until(lambda: probe.get("/readyz").json()["build"] == newest.name, "the newest")
            seen = len(answers)
            _until(lambda: len(answers) > seen + 20, "answers from the newest build")
        finally:
            stop.set()
            client.join()
    assert failures == [], f"{len(failures)} of {len(answers)} failed, e.g. {failures[0]}"


# 2. One `cachegql index` at a time per --out


def test_concurrent_index_runs_never_leave_a_dangling_link(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """4 runs started together, ingesting in step (their one source answers them all at
    once), 3 rounds: every run succeeds, and `out` always leads to a complete build, as
    a watcher looking all along and a full load after each round see it."""
    out = tmp_path / "ix"
    looks = {"complete": 0, "dangling": 0}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            if out.is_symlink():
                looks["complete" if (out / "manifest.json").is_file() else "dangling"] += 1
            time.sleep(0.0005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with held_page(Gate(batch=4)) as url:
            for round_ in range(3):
                runs = [_index(f"{url}?{round_}-{n}", "--out", out, env=env) for n in range(4)]
                for run in runs:
                    _, stderr = run.communicate(timeout=WAIT)
                    assert run.returncode == 0, stderr
                assert _complete(out)
                assert _partials(out) == []
    finally:
        stop.set()
        watcher.join()
    assert looks["dangling"] == 0, looks
    assert looks["complete"] > 0


def test_a_second_build_waits_for_the_first_or_gives_up(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """While one build runs: another with --lock-timeout 0 fails at once, one with a short
    timeout says it waits then fails, one with the default waits and then publishes; the
    first one's staging folder is never touched, and both builds are published in order."""
    out = tmp_path / "ix"
    initial = build_index([PAGES], out).folder
    gate = Gate()
    with held_page(gate) as url, _index(url, "--out", out, env=env) as first:
        gate.wait_arrivals(1)  # the first build holds the lock, in its ingest
        [staging] = _partials(out)

        code, _, stderr = _run_index(LOOSE, "--out", out, "--lock-timeout", "0")
        assert code == 1
        assert _one_line(stderr).startswith(
            f"error: another 'cachegql index' (pid {first.pid}) is building {out}; "
        )

        code, _, stderr = _run_index(LOOSE, "--out", out, "--lock-timeout", "0.2")
        waiting, error = stderr.splitlines()
        assert code == 1
        assert waiting.startswith(f"waiting for another 'cachegql index' (pid {first.pid}) ")
        assert error.startswith("error: another 'cachegql index'") and "waited 0.2 s" in error

        with _index(LOOSE, "--out", out) as second:
            assert second.stderr is not None
            assert second.stderr.readline().startswith("waiting for another 'cachegql index'")
            assert _partials(out) == [staging]  # nobody removed the running build's folder
            gate.open()
            first_err = first.communicate(timeout=WAIT)[1]
            second_err = second.communicate(timeout=WAIT)[1]
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second_err
    first_build = builds_folder(out) / staging.name.removesuffix(PARTIAL)
    assert (first_build.with_name(first_build.name + REPLACED)).is_file()  # then replaced
    assert out.resolve() not in (initial, first_build)  # by the second build
    assert _complete(out)


# 3 and 4. Killed and interrupted builds


@pytest.mark.parametrize(
    ("stop", "code"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_stopped_build_cleans_up_and_says_so_in_one_line(
    tmp_path: Path, env: dict[str, str], stop: signal.Signals, code: int
) -> None:
    """Stopped in its ingest: exit 128 + signal, one line, no traceback, its staging
    folder removed, `out` as it was (the lock goes with the process, whatever ends it)."""
    out = tmp_path / "ix"
    build_index([PAGES], out)
    link = out.readlink()
    gate = Gate()
    with held_page(gate) as url, _index(url, "--out", out, env=env) as run:
        gate.wait_arrivals(1)
        assert len(_partials(out)) == 1
        run.send_signal(stop)
        stdout, stderr = run.communicate(timeout=WAIT)
    assert run.returncode == code
    assert _one_line(stderr) == f"stopped by {stop.name}; nothing was published"
    assert stdout == ""
    assert _partials(out) == []
    assert out.readlink() == link


def _stop_in_write_phase(out: Path, stop: signal.Signals) -> subprocess.Popen[str]:
    """Start `cachegql index` and send it `stop` while it writes its build: once its
    staging folder holds tags, it is paused (SIGSTOP), the state checked, then stopped.
    A run that finishes first (its write phase is ~60 ms) is tried again.

    The run is not traced for coverage: a signal that lands inside coverage's tracer,
    between its data lock's acquire and release (Python code), unwinds with the lock
    held, and the run's next traced line waits for it forever."""
    for _ in range(5):
        run = _index(PAGES, "--out", out, env=untraced_env())
        while run.poll() is None:
            partials = _partials(out)
            if partials and (partials[0] / "tags" / "0").exists():
                run.send_signal(signal.SIGSTOP)
                # Delivered, not only sent: a run still going could publish after the look.
                _wait_until_stopped(run)
                if _partials(out) and run.poll() is None:  # paused before its publish
                    run.send_signal(stop)
                    run.send_signal(signal.SIGCONT)
                    return run
                run.send_signal(signal.SIGCONT)
        run.communicate(timeout=WAIT)
    pytest.fail("never caught `cachegql index` writing its build")


def _wait_until_stopped(run: subprocess.Popen[str]) -> None:
    """Until the kernel shows `run` stopped (state T in /proc), or it has ended."""
    deadline = time.monotonic() + WAIT
    while run.poll() is None and time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{run.pid}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):  # gone meanwhile
            return
        if state in ("T", "t"):
            return
        time.sleep(0.001)


@pytest.mark.parametrize(
    "stop", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name
)
def test_a_build_stopped_while_writing_leaves_nothing_behind(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """SIGINT or SIGTERM while writing: the run removes its half-written build itself.
    SIGKILL: the half-written build stays, `out` is untouched, and the next build removes
    it at once (its writer is gone: the lock is free), not hours later."""
    out = tmp_path / "ix"
    build_index([LOOSE], out)
    link = out.readlink()
    with _stop_in_write_phase(out, stop) as run:
        try:
            _, stderr = run.communicate(timeout=WAIT)
        except subprocess.TimeoutExpired:
            run.kill()  # a failure, not a suite that waits forever on leaving the block
            raise
    assert out.readlink() == link
    assert _complete(out)
    if stop == signal.SIGKILL:
        assert run.returncode == -signal.SIGKILL
        [leftover] = _partials(out)
        assert (leftover / "tags" / "0").is_dir()
        code, _, stderr = _run_index(LOOSE, "--out", out, "-q")
        assert code == 0, stderr
        assert not leftover.exists()
        assert out.readlink() != link
    else:
        assert run.returncode == 128 + stop
        assert _one_line(stderr) == f"stopped by {stop.name}; nothing was published"
    assert _partials(out) == []


# 5. Paths that cannot hold an index, full disks


def test_out_where_no_folder_can_be_is_refused_before_reading_sources(tmp_path: Path) -> None:
    """--out under a file, or under /proc (both refuse root too): exit 1 with one line,
    before the sources are read (a missing source would be reported first otherwise)."""
    missing = tmp_path / "no-such-source"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    under_file = blocker / "ix"
    code, stdout, stderr = _run_index(PAGES, missing, "--out", under_file)
    assert code == 1 and stdout == ""
    assert _one_line(stderr) == (
        f"error: cannot write the index at {under_file}: {blocker} is not a folder"
    )
    under_proc = Path("/proc") / f"cachegql-test-{os.getpid()}" / "ix"
    code, stdout, stderr = _run_index(PAGES, missing, "--out", under_proc)
    assert code == 1 and stdout == ""
    assert _one_line(stderr).startswith(f"error: cannot write the index at {under_proc}: /proc/")


def _without_override() -> list[str]:
    """A command prefix under which permission bits apply: none for a user; for root,
    `setpriv` dropping the capabilities that let root write anywhere."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root ignores permission bits, and no setpriv here to drop that")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def test_a_folder_without_write_permission_is_refused_before_reading_sources(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(0o555)
    out = parent / "ix"
    command = [*_without_override(), CLI, "index", str(PAGES), str(tmp_path / "none")]
    try:
        done = subprocess.run([*command, "--out", str(out)], capture_output=True, text=True)
    finally:
        parent.chmod(0o755)
    assert done.returncode == 1
    assert _one_line(done.stderr) == (
        f"error: cannot write the index at {out}: {out}.builds: Permission denied"
    )


def test_a_write_that_fails_midway_removes_the_build_and_keeps_the_index(
    tmp_path: Path,
) -> None:
    """A write refused by the system mid-build (here the file size limit: EFBIG, as a full
    disk gives ENOSPC; the tmpfs test below has the real thing where it can run): one
    line, nothing published, no staging folder left."""
    out = tmp_path / "ix"
    build_index([LOOSE], out)
    link = out.readlink()

    def limit_file_size() -> None:  # the index's largest files are 19 KB
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    code, stdout, stderr = _run_index(
        PAGES, "--out", out, preexec_fn=limit_file_size, env=untraced_env()
    )
    assert code == 1 and stdout == ""
    assert _one_line(stderr) == (
        f"error: writing the new build of {out} failed: File too large; nothing was published"
    )
    assert _partials(out) == []
    assert out.readlink() == link and _complete(out)


# A small tmpfs, mounted in a private mount namespace (`unshare`): no root needed where
# user namespaces are allowed, and nothing to unmount. Elsewhere these tests skip.
MOUNT_THEN_RUN = 'mount -t tmpfs -o "$1" tmpfs "$2" && shift 2 && exec "$@"'
IN_NAMESPACE = ["unshare", "-rm", "sh", "-c", MOUNT_THEN_RUN, "sh"]


def _in_tmpfs(options: str, mount: Path, *command: str | Path) -> subprocess.CompletedProcess[str]:
    mount.mkdir(exist_ok=True)
    if shutil.which("unshare") is None:
        pytest.skip("no unshare here to mount a private tmpfs")
    probe = subprocess.run([*IN_NAMESPACE, "size=1m", mount, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {probe.stderr!r}")
    return subprocess.run(
        [*IN_NAMESPACE, options, mount, *map(str, command)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_read_only_file_system_is_refused_before_reading_sources(tmp_path: Path) -> None:
    mount = tmp_path / "ro"
    out = mount / "ix"
    done = _in_tmpfs("ro,size=1m", mount, CLI, "index", PAGES, tmp_path / "nothing", "--out", out)
    assert done.returncode == 1
    assert _one_line(done.stderr) == (
        f"error: cannot write the index at {out}: {out}.builds: Read-only file system"
    )


# Run inside the namespace, where the tmpfs is: builds on a disk filled to two levels.
FULL_DISK = """
import json, os, subprocess, sys
cli, mount, small, large = sys.argv[1:]
out = os.path.join(mount, "ix")

def index(source):
    done = subprocess.run([cli, "index", source, "--out", out], capture_output=True, text=True)
    return {"code": done.returncode, "stderr": done.stderr}

def fill(leave):
    stat = os.statvfs(mount)
    with open(os.path.join(mount, "filler"), "ab") as filler:
        filler.write(bytes(max(0, stat.f_bavail * stat.f_frsize - leave)))

def state():
    return {"link": os.readlink(out), "entries": sorted(os.listdir(out + ".builds"))}

report = {"first": index(small), "before": state()}
fill(512 * 1024)
report["no_space"] = index(small)
os.remove(os.path.join(mount, "filler"))
fill(1536 * 1024)
report["mid_write"] = index(large)
report["after"] = state()
report["query"] = subprocess.run([cli, "query", "zlib", "--index", out], capture_output=True).returncode
print(json.dumps(report))
"""  # noqa: E501


def test_a_full_disk_is_refused_before_or_cleaned_up_after(tmp_path: Path) -> None:
    """Under 1 MiB free: refused before the ingest. Room to start but not to finish
    (a 2.3 MB build in 1.5 MiB): ENOSPC mid-write is one line, the staging folder goes,
    and the published index still answers."""
    large = tmp_path / "pages"
    write_pages(DemoConfig(specs=5000), large)
    mount = tmp_path / "disk"
    done = _in_tmpfs("size=4m", mount, sys.executable, "-c", FULL_DISK, CLI, mount, LOOSE, large)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    out = mount / "ix"
    assert report["first"]["code"] == 0, report
    assert report["no_space"]["code"] == 1
    assert _one_line(report["no_space"]["stderr"]).startswith(
        f"error: not enough free space for a new build of {out}: "
    )
    assert report["mid_write"]["code"] == 1
    assert _one_line(report["mid_write"]["stderr"]) == (
        f"error: writing the new build of {out} failed: No space left on device; "
        "nothing was published"
    )
    assert report["after"] == report["before"]
    assert report["query"] == 0
