"""What a request may send and hold, over real sockets: body and query-string sizes, slow
or silent clients, heads too long, too many requests at once, documents of several
operations, deeply nested JSON. Every refusal is a JSON GraphQL error with a code."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from cachegql.server.app import Settings, create_app
from cachegql.server.body import BODY_RECEIVED
from cachegql.server.protocol import protocol
from tests.conftest import CLI, LiveServer, worker_thread_held

LIMIT = 10_000
TIMEOUT = 0.5


@pytest.fixture(scope="module")
def live(pages_index: Path) -> Iterator[tuple[str, LiveServer, Any]]:
    settings = Settings(
        index=pages_index,
        reload_interval=0,
        max_body_bytes=LIMIT,
        read_timeout=TIMEOUT,
        max_requests=2,
        threads=1,
    )
    app = create_app(settings)
    server = LiveServer(app, http=protocol(head_timeout=TIMEOUT))
    with server as url:
        yield url, server, app


def _error(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"].startswith(
        ("application/json", "application/graphql-response+json")
    )
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"]
    return dict(error)


def _raw(url: str, data: bytes, wait: float = 5.0) -> bytes:
    """Send bytes on a fresh connection; what the server answers before closing it."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_body_over_the_limit_is_413(live: tuple[str, LiveServer, Any]) -> None:
    url = live[0]
    padding = " " * LIMIT
    declared = httpx.post(f"{url}/graphql", json={"query": "{ tags { name } }" + padding})
    assert declared.status_code == 413 and "10,000 bytes" in _error(declared)["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it comes
        yield b'{"query": "{ tags { name } }'
        for _ in range(20):
            yield b" " * 1000
        yield b'"}'

    streamed = httpx.post(
        f"{url}/graphql", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413 and _error(streamed)["extensions"]["code"]


def test_a_query_string_over_the_limit_is_414(live: tuple[str, LiveServer, Any]) -> None:
    url = live[0]
    response = httpx.get(f"{url}/graphql", params={"query": "{ tags { name } }" + " " * LIMIT})
    assert response.status_code == 414 and _error(response)


def test_a_body_that_comes_too_slowly_is_408(live: tuple[str, LiveServer, Any]) -> None:
    url = live[0]
    head = (
        b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: 100\r\n\r\n"
    )
    started = time.monotonic()
    answer = _raw(url, head + b'{"query": ')  # and then nothing
    assert answer.startswith(b"HTTP/1.1 408")
    assert b'"code":"BAD_USER_INPUT"' in answer
    assert time.monotonic() - started < TIMEOUT + 2


def test_silent_and_trickling_connections_are_closed(live: tuple[str, LiveServer, Any]) -> None:
    url = live[0]
    host, port = url.removeprefix("http://").split(":")
    started = time.monotonic()
    silent = socket.create_connection((host, int(port)), timeout=5)
    trickle = socket.create_connection((host, int(port)), timeout=5)
    try:
        trickle.sendall(b"GET /healthz HTTP/1.1\r\n")
        for byte in b"host: x\r\n":  # one byte at a time, never finishing the head
            try:
                trickle.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.1)
        assert silent.recv(1) == b""  # closed by the server, without a word
        answer = b""
        while chunk := trickle.recv(65536):  # a head begun: 408, then closed
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408")
    finally:
        silent.close()
        trickle.close()
    assert time.monotonic() - started < TIMEOUT + 3


def test_a_head_too_long_is_431_and_garbage_is_400(live: tuple[str, LiveServer, Any]) -> None:
    url = live[0]
    long_head = b"GET /healthz HTTP/1.1\r\n" + b"x-padding: " + b"a" * 70_000 + b"\r\n\r\n"
    answer = _raw(url, long_head)
    assert answer.startswith(b"HTTP/1.1 431")
    body = orjson.loads(answer.partition(b"\r\n\r\n")[2])
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    garbage = _raw(url, b"\x16\x03\x01 not http at all\r\n\r\n")
    assert garbage.startswith(b"HTTP/1.1 400") and b'"code"' in garbage


def test_a_large_body_sent_with_its_head_in_one_write_is_not_taken_for_head(
    pages_index: Path,
) -> None:
    """A 300 KB query in one write with its head: the bytes after the head are body,
    not a head over 64 KB (this was answered 431)."""
    app = create_app(Settings(index=pages_index, reload_interval=0))
    query = "{ tags { name } }" + " " * 300_000
    body = orjson.dumps({"query": query})
    head = (
        b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(body)
    )
    with LiveServer(app, http=protocol()) as url:
        answer = _raw(url, head + body)
        keep_alive = httpx.post(
            f"{url}/graphql", content=body, headers={"content-type": "application/json"}
        )
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert b'"tags"' in answer
    assert keep_alive.status_code == 200


def test_the_protocol_marks_a_body_received_whole_before_the_app_runs() -> None:
    """Two requests sent in one write on a kept-alive connection each have their whole
    body parsed before their app runs: their scope says so (`receive` cannot wait then);
    one whose body comes after its app began does not, and its app reads that body as it
    comes."""
    seen: list[tuple[bool, bytes]] = []
    running = threading.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        received = scope.get(BODY_RECEIVED) is True
        running.set()
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        seen.append((received, body))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    head = b"POST /x HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n"
    with LiveServer(app, http=protocol()) as url:  # type: ignore[arg-type]
        two = head + b"\r\n0123456789" + head + b"connection: close\r\n\r\nabcdefghij"
        assert _raw(url, two).count(b"HTTP/1.1 200") == 2
        host, port = url.removeprefix("http://").split(":")
        running.clear()
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(head + b"connection: close\r\n\r\n01234")
            assert running.wait(5)  # the app runs, and waits for the rest
            sock.sendall(b"56789")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
    assert seen == [(True, b"0123456789"), (True, b"abcdefghij"), (False, b"0123456789")]


def test_requests_beyond_the_cap_are_503(live: tuple[str, LiveServer, Any]) -> None:
    """Two requests in progress (held on the one worker thread), the third is refused."""
    url, server, app = live
    waiting: list[httpx.Response] = []
    query = {"query": "{ specs(first: 1) { totalCount } }"}
    threads = [
        threading.Thread(
            target=lambda: waiting.append(httpx.post(f"{url}/graphql", json=query, timeout=30))
        )
        for _ in range(2)
    ]
    with worker_thread_held(server, app):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while app.state.admission.in_progress < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        refused = httpx.post(f"{url}/graphql", json=query, timeout=10)
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert _error(refused)["extensions"]["code"] == "SERVICE_OVERLOADED"
        assert httpx.get(f"{url}/healthz").status_code == 200  # not counted
    for thread in threads:
        thread.join(timeout=30)
    assert [r.status_code for r in waiting] == [200, 200]


def test_several_operations_without_a_name_are_refused(
    live: tuple[str, LiveServer, Any],
) -> None:
    url = live[0]
    document = "query A { tags { name } } query B { tags { numSpecs } }"
    for accept in ("application/json", "application/graphql-response+json"):
        response = httpx.post(
            f"{url}/graphql", json={"query": document}, headers={"accept": accept}
        )
        assert response.status_code == 400
        assert "operationName" in _error(response)["message"]


def test_deeply_nested_json_is_answered_or_a_coded_400(
    live: tuple[str, LiveServer, Any],
) -> None:
    url = live[0]

    def nested(levels: int) -> httpx.Response:
        body = b'{"query": "{ tags { name } }", "variables": {"v": ' + b"[" * levels
        body += b"]" * levels + b"}}"
        return httpx.post(
            f"{url}/graphql", content=body, headers={"content-type": "application/json"}
        )

    assert nested(1_000).json()["data"]["tags"]  # an unused variable, however deep
    too_deep = nested(2_000)  # past orjson's 1,024 levels, within the body limit
    assert too_deep.status_code == 400 and "not valid JSON" in _error(too_deep)["message"]


def test_a_query_over_its_time_budget_is_stopped_with_a_code(pages_index: Path) -> None:
    """A budget of a microsecond: the index stops at its first check."""
    app = create_app(Settings(index=pages_index, reload_interval=0, time_budget=1e-6))
    with LiveServer(app) as url:
        slow = httpx.post(
            f"{url}/graphql", json={"query": '{ specs(search: "zlib") { totalCount } }'}
        )
        cheap = httpx.post(f"{url}/graphql", json={"query": "{ tags { name } }"})
    error = _error(slow)
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert "time budget" in error["message"]
    assert cheap.json()["data"]["tags"]  # reads no index loop: nothing to stop


def test_work_that_does_not_stop_itself_is_abandoned_after_the_grace() -> None:
    """An operation that never checks its deadline (here: it sleeps) is given up when the
    budget (twice: see server/offload.py) and the grace period are spent; its thread
    finishes alone."""
    from cachegql.index import OverBudgetError
    from cachegql.server.offload import GRACE_SECONDS, Offloader

    finished = threading.Event()

    def stuck() -> str:
        time.sleep(GRACE_SECONDS + 1)
        finished.set()
        return "late"

    async def run() -> float:
        started = time.monotonic()
        with pytest.raises(OverBudgetError):
            await Offloader(threads=1, time_budget=0.05)("{ specs { totalCount } }", stuck)
        return time.monotonic() - started

    took = asyncio.run(run())
    assert took < GRACE_SECONDS + 0.5 and not finished.is_set()
    assert finished.wait(timeout=5)


def test_an_abandoned_operation_is_answered_with_a_code(pages_index: Path) -> None:
    """What the runner gives up on is answered QUERY_TOO_COMPLEX, on either path."""
    from typing import TypeVar

    from cachegql.index import IndexStore, OverBudgetError
    from cachegql.schema import Context, build_schema

    T = TypeVar("T")

    async def gives_up(query: str | None, operation: Callable[[], T], inline: bool = False) -> T:
        raise OverBudgetError(0.25)

    store = IndexStore(pages_index)
    try:
        for compiled in (True, False):
            schema = build_schema(runner=gives_up, compiled=compiled)
            answer = asyncio.run(schema.answer("{ tags { name } }", context=Context(store)))
            assert answer.execution == "abandoned" and answer.result is not None
            assert answer.result.data is None and answer.result.errors
            error = answer.result.errors[0]
            assert error.extensions == {"code": "QUERY_TOO_COMPLEX"}
            assert "0.25" in error.message
    finally:
        store.close()


def test_the_serve_command_applies_its_limit_flags(pages_index: Path, tmp_path: Path) -> None:
    """`cachegql serve` as a user starts it: the limits given as flags hold in its worker,
    the head timeout included (uvicorn runs the guarded protocol)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    command = [CLI, "serve", "--index", str(pages_index), "--port", str(port)]
    command += ["--reload-interval", "0", "--no-access-log", "--max-body-bytes", "2000"]
    command += ["--read-timeout", "0.5", "--max-cost", "50", "--time-budget", "3"]
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            time.sleep(0.1)
        big = httpx.post(f"{url}/graphql", json={"query": "{ tags { name } }" + " " * 3000})
        assert big.status_code == 413 and "2,000 bytes" in _error(big)["message"]
        costly = httpx.post(
            f"{url}/graphql", json={"query": "{ specs(first: 100) { totalCount } }"}
        )
        error = _error(costly)
        assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX" and "50" in error["message"]
        cheap = httpx.post(f"{url}/graphql", json={"query": "{ tags { name } }"})
        assert cheap.status_code == 200 and "errors" not in cheap.json()
        started = time.monotonic()
        never_finished = _raw(url, b"GET /healthz HTTP/1.1\r\n", wait=5)
        assert never_finished.startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < 3
    finally:
        process.terminate()
        process.wait(timeout=10)
