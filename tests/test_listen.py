"""Several workers listen on a socket each (`server/listen.py`): real sockets, a real
`cachegql serve --workers 2`, and the kernel's own view of who holds what (/proc)."""

from __future__ import annotations

import importlib.util
import io
import os
import pickle
import signal
import socket
import subprocess
import threading
import time
from contextlib import ExitStack
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from types import ModuleType
from typing import IO

import httpx
import pytest

from cachegql.index import build_index
from cachegql.server.listen import SOCKET_PER_WORKER, CannotListenError, hold_port
from tests.conftest import CLI, PAGES
from tests.remote_servers import free_port

pytestmark = pytest.mark.skipif(
    not SOCKET_PER_WORKER, reason="a socket per worker needs Linux's SO_REUSEPORT"
)

CONNECTIONS = 32
"""Spread by the kernel's hash, all of them land on one of two sockets once in 2**31 runs."""


def _sent_to_workers(held: socket.socket, workers: int) -> list[socket.socket]:
    """`held` as uvicorn's supervisor sends it to each of `workers` processes."""
    buffer = io.BytesIO()
    ForkingPickler(buffer).dump([held])
    return [pickle.loads(buffer.getvalue())[0] for _ in range(workers)]


def _accepted(listening: socket.socket) -> int:
    listening.setblocking(False)
    count = 0
    while True:
        try:
            connection, _ = listening.accept()
        except BlockingIOError:
            return count
        connection.close()
        count += 1


def test_each_worker_receives_a_socket_of_its_own_on_the_held_address() -> None:
    with ExitStack() as stack:
        held = stack.enter_context(hold_port("127.0.0.1", 0))
        address = held.getsockname()
        assert address[1] != 0, "port 0 is the system's choice, held from the start"
        received = [stack.enter_context(s) for s in _sent_to_workers(held, 2)]
        assert [s.getsockname() for s in received] == [address, address]
        assert len({held.fileno(), *(s.fileno() for s in received)}) == 3
        for listening in received:
            listening.listen(CONNECTIONS)
        clients = [
            stack.enter_context(socket.create_connection(address)) for _ in range(CONNECTIONS)
        ]
        assert clients
        counts = [0] * len(received)
        deadline = time.monotonic() + 10
        while sum(counts) < CONNECTIONS and time.monotonic() < deadline:
            counts = [c + _accepted(s) for c, s in zip(counts, received, strict=True)]
            time.sleep(0.01)
        # The held socket does not listen: every connection went to a worker's.
        assert sum(counts) == CONNECTIONS
        assert min(counts) > 0, f"the kernel gave one socket all the connections: {counts}"


@pytest.mark.parametrize("reuse_port", [False, True], ids=["plain", "SO_REUSEPORT"])
def test_an_address_something_listens_on_is_refused(reuse_port: bool) -> None:
    """Also one another `cachegql serve` listens on: SO_REUSEPORT would let this one share
    its connections, each server answering some with its own index."""
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, int(reuse_port))
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        with pytest.raises(CannotListenError) as refused:
            hold_port("127.0.0.1", port).close()
    assert str(refused.value) == (
        f"cannot listen on 127.0.0.1:{port}: [Errno 98] Address already in use"
    )


def test_a_port_held_by_a_server_still_loading_is_refused() -> None:
    """Its workers do not listen yet: only its held socket is there."""
    held = hold_port("127.0.0.1", 0)
    with held, pytest.raises(CannotListenError, match="Address already in use"):
        hold_port("127.0.0.1", held.getsockname()[1]).close()


def test_a_port_with_connections_in_time_wait_is_held() -> None:
    """Closed connections of a server run before (here without SO_REUSEPORT, as one with a
    shared socket) do not keep the next from the port."""
    with socket.socket() as listening:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = listening.accept()
            accepted.close()  # the server's side closes first: its port is in TIME_WAIT
            assert client.recv(1) == b""
    with socket.socket() as plain, pytest.raises(OSError, match="Address already in use"):
        plain.bind(("127.0.0.1", port))  # TIME_WAIT is there
    held = hold_port("127.0.0.1", port)
    with held, pytest.raises(CannotListenError, match="Address already in use"):
        hold_port("127.0.0.1", port).close()  # a second server, while the first loads


# One `cachegql serve --workers 2`


@pytest.fixture(scope="module")
def pages_ix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("listen") / "ix"
    build_index([PAGES], out)
    return out


@pytest.fixture(scope="module")
def connections() -> ModuleType:
    """The benchmark's reader of /proc (`bench/connections.py`), tested here as well."""
    path = Path(__file__).resolve().parents[1] / "bench" / "connections.py"
    spec = importlib.util.spec_from_file_location("bench_connections", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _workers(parent: int, port: int, connections: ModuleType) -> dict[int, set[str]]:
    """The listening sockets (inodes) of each of `parent`'s children that listens on `port`."""
    sockets = connections._sockets(port).items()
    listening = {inode for inode, state in sockets if state == connections._LISTEN}
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    found = {}
    for child in map(int, children):
        mine = set(connections._socket_inodes(child)) & listening
        if mine:
            found[child] = mine
    return found


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise AssertionError(f"serve exited: {log.read_text()}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


@pytest.mark.parametrize("shared", [False, True], ids=["socket-per-worker", "shared-socket"])
def test_two_workers_and_the_connections_they_hold(
    pages_ix: Path, tmp_path: Path, connections: ModuleType, shared: bool
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [CLI, "serve", "--index", str(pages_ix), "--workers", "2", "--port", str(port)]
    command += ["--reload-interval", "0"] + ["--shared-socket"] * shared
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        _wait_ready(url, process, log)
        deadline = time.monotonic() + 60
        while len(workers := _workers(process.pid, port, connections)) < 2:
            # One worker answers /readyz while the other may still be loading.
            assert time.monotonic() < deadline, (workers, log.read_text())
            time.sleep(0.1)
        assert len(workers) == 2, workers
        sockets = list(workers.values())
        if shared:
            assert sockets[0] == sockets[1], "--shared-socket: both accept from one socket"
        else:
            assert sockets[0].isdisjoint(sockets[1]), "each worker listens on its own socket"
        clients = [httpx.Client(base_url=url) for _ in range(CONNECTIONS)]
        try:
            for client in clients:  # each keeps its connection open once answered
                assert client.get("/healthz").status_code == 200
            counts = connections.connections_per_worker(list(workers), port)
        finally:
            for client in clients:
                client.close()
        assert sum(counts) == CONNECTIONS
        if not shared:
            assert min(counts) > 0, f"one worker holds every connection: {counts}"
            # A worker killed is started again by uvicorn, with a socket of its own.
            killed, survivor = workers
            os.kill(killed, signal.SIGKILL)
            deadline = time.monotonic() + 60
            while killed in (now := _workers(process.pid, port, connections)) or len(now) < 2:
                assert time.monotonic() < deadline, (now, log.read_text())
                time.sleep(0.1)
            assert now[survivor] == workers[survivor]
            assert len(set.union(*now.values())) == 2, "the new worker listens on its own"
    finally:
        process.terminate()
        process.wait(timeout=20)
    if not shared:
        assert f"listening on {url}, 2 workers with a socket each" in log.read_text()


@pytest.mark.parametrize(
    "workers",
    [["--workers", "2"], ["--workers", "2", "--shared-socket"], []],
    ids=["socket-per-worker", "shared-socket", "one-worker"],
)
def test_an_address_in_use_is_said_and_the_command_fails(
    pages_ix: Path, workers: list[str]
) -> None:
    """Said before anything claims the server listens (one worker said its URL, then
    uvicorn's own error, after its app had started)."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        command = [CLI, "serve", "--index", str(pages_ix), "--port", str(port), *workers]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr  # uvicorn's status for a start that failed
    assert f"error: cannot listen on 127.0.0.1:{port}: [Errno 98] Address already in use" in (
        done.stderr
    )
    assert "GraphiQL and the API" not in done.stderr and "startup complete" not in done.stderr
    assert "Traceback" not in done.stderr


_HOLD = """
import os, sys, time

# Run at the start of every Python process of the server under test: a worker (a process
# multiprocessing spawned) waits while the index is where the server checked it.
if "--multiprocessing-fork" in sys.argv:
    deadline = time.monotonic() + 60
    while os.path.exists(os.environ["HOLD_WHILE"]) and time.monotonic() < deadline:
        time.sleep(0.01)
"""


@pytest.mark.parametrize("shared", [False, True], ids=["socket-per-worker", "shared-socket"])
def test_workers_that_cannot_load_the_index_stop_the_server(tmp_path: Path, shared: bool) -> None:
    """The server checks the index, then its workers load it again: gone in between, each
    worker says so and the server exits with uvicorn's start failure (it used to start
    them again, and again, with a traceback each, and never exit). The workers are held
    at their start until the index is moved (`_HOLD`), whatever the machine's speed."""
    index = tmp_path / "ix"
    build_index([PAGES], index)
    port = free_port()
    command = [CLI, "serve", "--index", str(index), "--workers", "2", "--port", str(port)]
    command += ["--reload-interval", "0"] + ["--shared-socket"] * shared
    hold = tmp_path / "hold"
    hold.mkdir()
    (hold / "sitecustomize.py").write_text(_HOLD)
    paths = [str(hold), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "HOLD_WHILE": str(index)}
    stderr = subprocess.PIPE
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=stderr, text=True, env=env
    )
    lines: list[str] = []
    checked = threading.Event()  # said once the index is checked, before any worker starts

    def read(stream: IO[str]) -> None:
        for line in stream:
            lines.append(line)
            if line.startswith("GraphiQL and the API:"):
                checked.set()

    reader = threading.Thread(target=read, args=(process.stderr,), daemon=True)
    reader.start()
    try:
        assert checked.wait(60), "".join(lines)
        index.rename(tmp_path / "moved")
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(10)
        assert process.stderr is not None
        process.stderr.close()
    said = "".join(lines)
    assert process.returncode == 3, said
    assert f"cannot load its index: {index} is not an index built by 'cachegql index'" in said
    assert "could not start (its error is above), so the server stopped" in said
    assert "Traceback" not in said
    assert "died" not in said, "no worker is started again"
